// Loaded-object scanning: the constructor (libdwfl's report of
// /proc/PID/maps, the main executable found by its entry point),
// read_new_objects / read_object (each in-scope object's CU ranges and file
// tables, rows left for first use), the display names of in-scope files
// (name_files), and refresh() (objects dlopen()ed since, by the loader's
// list). Called by the symbolizer's owner (the sampler's consumer thread);
// a refresh runs only when the loader's object count changed.
#include "detail/symbolizer_impl.hpp"

namespace coact::causal {

namespace {

// One pass over the loader's list (dl_iterate_phdr): its count of objects
// loaded so far (glibc's dlpi_adds, the same in every entry) and, when
// asked, each object's path, load bias and PT_LOAD segments.
struct LoaderScan {
  struct Loaded {
    std::string path;  // "" for the main program, no '/' for the vDSO
    uint64_t bias = 0;
  };
  unsigned long long adds = 0;
  bool want_objects = false;
  std::vector<Loaded> loaded;
  std::vector<std::pair<uint64_t, uint64_t>> segments;  // run-time [lo, hi) of every PT_LOAD

  void run() {
    (void)dl_iterate_phdr(
        [](dl_phdr_info* info, size_t size, void* arg) -> int {
          auto& sc = *static_cast<LoaderScan*>(arg);
          if (size < offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)) return 1;
          sc.adds = info->dlpi_adds;
          if (!sc.want_objects) return 1;
          sc.loaded.push_back(Loaded{info->dlpi_name != nullptr ? info->dlpi_name : "", info->dlpi_addr});
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const auto& ph = info->dlpi_phdr[i];
            if (ph.p_type == PT_LOAD && ph.p_memsz > 0) {
              sc.segments.emplace_back(info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
            }
          }
          return 0;
        },
        this);
  }
};

// Replaces what the Symbolizer holds as loaded (segments and objects) by
// one scan's list.
void note_loaded(Symbolizer::Impl& m, LoaderScan& scan) {
  std::sort(scan.segments.begin(), scan.segments.end());
  m.loaded_segments = std::move(scan.segments);
  m.loaded_objects.clear();
  for (const auto& l : scan.loaded) m.loaded_objects.emplace(l.path, l.bias);
  m.loader_adds = scan.adds;
}

}  // namespace

Symbolizer::Symbolizer(SourceScope scope) : impl_(std::make_unique<Impl>()), scope_(std::move(scope)) {
  Impl& m = *impl_;
  m.callbacks.find_elf = dwfl_linux_proc_find_elf;
  m.callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
  m.callbacks.debuginfo_path = &m.debuginfo_path;
  m.dwfl = dwfl_begin(&m.callbacks);
  if (m.dwfl == nullptr) {
    error_ = std::string("dwfl_begin: ") + dwfl_errmsg(-1);
    return;
  }
  // The loader's list before the report: an object dlopen()ed during it
  // is reported again by refresh(), which libdwfl answers with the module
  // it has.
  LoaderScan loader;
  loader.want_objects = true;
  loader.run();
  note_loaded(m, loader);
  if (dwfl_linux_proc_report(m.dwfl, getpid()) != 0 || dwfl_report_end(m.dwfl, nullptr, nullptr) != 0) {
    error_ = std::string("dwfl_linux_proc_report: ") + dwfl_errmsg(-1);
    return;
  }
  m.attached = dwfl_attach_state(m.dwfl, nullptr, getpid(), &kUnwindCallbacks, &m);
  m.main = dwfl_addrmodule(m.dwfl, static_cast<Dwarf_Addr>(getauxval(AT_ENTRY)));
  if (m.main == nullptr) {
    error_ = "the main executable was not found among the process's modules";
    return;
  }
  m.scope = &scope_;
  m.every_object = !scope_.patterns.empty();
  m.read_new_objects(scope_);
  if (m.cus.empty()) {
    error_ = m.every_object ? "no DWARF line table in the main executable or any loaded library (build with -g)"
                            : "no DWARF line table in the main executable (build with -g)";
  }
}

// True for an object a program does not build itself (the C library, the
// C++ runtime, elfutils): no line table there is the distribution's choice
// and no reason to warn.
static bool system_object(std::string_view path) noexcept {
  for (const std::string_view dir : {"/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/"}) {
    if (path.starts_with(dir)) return true;
  }
  return false;
}

// Looks at every module libdwfl knows and not seen yet: the main
// executable, and with scope patterns every other object but the vDSO and
// system objects whose path no pattern matches (reading the line tables of
// the C library, the C++ runtime and elfutils' dependencies, or looking for
// their separate debug files, was most of a start-up's cost, for sources
// no program's pattern means).
void Symbolizer::Impl::read_new_objects(const SourceScope& sc) {
  struct Found {
    Dwfl_Module* mod;
    const char* name;
    Dwarf_Addr lo, hi;
  };
  std::vector<Found> found;
  (void)dwfl_getmodules(
      dwfl,
      [](Dwfl_Module* mod, void**, const char*, Dwarf_Addr, void* arg) -> int {
        Found f{mod, nullptr, 0, 0};
        f.name = dwfl_module_info(mod, nullptr, &f.lo, &f.hi, nullptr, nullptr, nullptr, nullptr);
        static_cast<std::vector<Found>*>(arg)->push_back(f);
        return DWARF_CB_OK;
      },
      &found, 0);
  std::sort(found.begin(), found.end(), [&](const Found& a, const Found& b) {
    return (a.mod == main) != (b.mod == main) ? a.mod == main : a.lo < b.lo;  // the main executable first
  });
  const size_t first_object = objects.size();
  for (const Found& f : found) {
    if (!seen.insert(f.mod).second) continue;
    if (f.mod != main && (!every_object || f.name == nullptr || f.name[0] == '[')) continue;  // [vdso: N]
    if (f.mod != main && system_object(f.name) && !sc.matches_pattern(f.name)) continue;
    // A mapping of a file deleted since (a sanitizer's runtime maps one):
    // no object to read, and no user's library to report.
    if (f.mod != main && std::string_view(f.name).ends_with(" (deleted)")) continue;
    read_object(f.mod, f.name != nullptr ? f.name : "?", f.lo, f.hi, sc);
  }
  if (objects.size() == first_object) return;
  std::sort(cu_ranges.begin(), cu_ranges.end(), [](const CuRange& a, const CuRange& b) { return a.lo < b.lo; });
  name_files();
}

// Reads one object's CUs: their address ranges and their line programs'
// file tables (the rows are read on first use, Impl::load).
void Symbolizer::Impl::read_object(Dwfl_Module* mod, const char* path, uint64_t lo, uint64_t hi,
                                   const SourceScope& sc) {
  const auto object = static_cast<uint32_t>(objects.size());
  objects.push_back(Object{mod, path, 0, lo, hi, {}, false});
  std::vector<std::string> header_paths;
  Dwarf* dw = dwfl_module_getdwarf(mod, &objects.back().bias);
  DebugSections secs;
  if (dw != nullptr) {
    Elf* elf = dwarf_getelf(dw);
    secs = DebugSections{section_named(elf, ".debug_line"), section_named(elf, ".debug_line_str"),
                         section_named(elf, ".debug_str")};
  }
  bool headers_ok = secs.line.data != nullptr;
  const auto first_cu = static_cast<uint32_t>(cus.size());
  std::vector<CuRange> ranges;  // this object's, before the disjoint pass
  Dwarf_Die* cu = nullptr;
  Dwarf_Addr bias = 0;
  while (dw != nullptr && (cu = dwfl_module_nextcu(mod, cu, &bias)) != nullptr) {
    Dwarf_Attribute attr;
    Dwarf_Word stmt_list = 0;
    if (dwarf_formudata(dwarf_attr(cu, DW_AT_stmt_list, &attr), &stmt_list) != 0) continue;  // no line program
    // Relative file names (DWARF 5 directory entries relative to the
    // compilation directory, e.g. under ccache's base_dir) are joined with
    // the CU's DW_AT_comp_dir, so scopes and names see absolute paths.
    const char* comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
    const auto id = static_cast<uint32_t>(cus.size());
    cus.push_back(Cu{cu, comp_dir, object, false, true, 0, 0, {}});
    ptrdiff_t off = 0;
    Dwarf_Addr base = 0, rlo = 0, rhi = 0;
    bool ranged = false;
    while ((off = dwarf_ranges(cu, off, &base, &rlo, &rhi)) > 0) {
      if (rlo == 0 || rhi <= rlo) continue;  // a discarded function's (address 0), or empty
      ranges.push_back(CuRange{rlo + bias, rhi + bias, id});
      ranged = true;
    }
    if (!ranged) {
      // No address ranges (an unusual producer): its rows now, their span as its range.
      load(id);
      const auto& rows = cus[id].rows;
      if (!rows.empty()) ranges.push_back(CuRange{rows.front().addr, rows.back().addr + 1, id});
    }
    cus[id].paths_begin = header_paths.size();
    if (headers_ok) headers_ok = header_files(secs, stmt_list, comp_dir, header_paths);
    cus[id].paths_end = header_paths.size();
  }
  const auto end_cu = static_cast<uint32_t>(cus.size());
  if (end_cu == first_cu) {
    // No line table: said once per object (the main executable under the
    // default scope only through error(), as before libraries were read).
    const bool candidate = mod == main ? every_object : (!system_object(path) || sc.matches_pattern(path));
    if (candidate) {
      without_lines.emplace_back(path);
      std::fprintf(stderr,
                   "coact causal: %s has no debug information (no DWARF line table): none of its lines can be a "
                   "region; build it with -g\n",
                   path);
    }
    return;
  }
  // CUs claim the same addresses: an inline function's or template's
  // COMDAT copy kept from one CU, whose other CUs' debug information the
  // linker points at the kept copy too. Each address goes to the last CU
  // (by index) that claims it (the row a table of every CU's rows sorted
  // stably by address found: the last CU's), so the ranges become disjoint.
  // Objects do not overlap, so each object's ranges are made disjoint alone.
  {
    struct Event {
      uint64_t at;
      uint32_t cu;
      bool open;
    };
    std::vector<Event> events;
    events.reserve(ranges.size() * 2);
    for (const auto& r : ranges) {
      events.push_back(Event{r.lo, r.cu, true});
      events.push_back(Event{r.hi, r.cu, false});
    }
    std::sort(events.begin(), events.end(), [](const Event& x, const Event& y) { return x.at < y.at; });
    std::map<uint32_t, int> active;  // CU -> ranges of it open here
    std::vector<CuRange> disjoint;
    uint64_t from = 0;
    for (size_t i = 0; i < events.size();) {
      const uint64_t at = events[i].at;
      if (!active.empty() && at > from) {
        const uint32_t owner = active.rbegin()->first;
        if (!disjoint.empty() && disjoint.back().hi == from && disjoint.back().cu == owner) {
          disjoint.back().hi = at;
        } else {
          disjoint.push_back(CuRange{from, at, owner});
        }
      }
      for (; i < events.size() && events[i].at == at; ++i) {
        if (events[i].open) {
          ++active[events[i].cu];
        } else if (auto it = active.find(events[i].cu); it != active.end() && --it->second == 0) {
          active.erase(it);
        }
      }
      from = at;
    }
    cu_ranges.insert(cu_ranges.end(), disjoint.begin(), disjoint.end());
  }
  // A header this reader does not know: every CU's rows of this object now,
  // as before lazy loading, and the names from them.
  if (!headers_ok) {
    for (uint32_t id = first_cu; id < end_cu; ++id) load(id);
    header_paths = files;
  }
  // A CU none of whose files is in scope (coact's runtime, a library's
  // code) has no in-scope row: in_scope_at answers for it without reading
  // its rows. An in-scope file's rows lie in the CUs whose tables list it
  // (ranges_of reads only those).
  std::unordered_map<std::string_view, bool> path_in_scope;
  for (const auto& p : header_paths) path_in_scope.try_emplace(p, false);
  for (auto& [p, in] : path_in_scope) {
    in = sc.contains(p);
    if (in) in_scope_paths.emplace_back(p);
  }
  for (uint32_t id = first_cu; id < end_cu; ++id) {
    Cu& c = cus[id];
    c.may_be_in_scope = !headers_ok;
    for (size_t i = c.paths_begin; i < c.paths_end && headers_ok; ++i) {
      if (!path_in_scope[header_paths[i]]) continue;
      c.may_be_in_scope = true;
      auto& listed = cus_of_file[header_paths[i]];
      if (listed.empty() || listed.back() != id) listed.push_back(id);
    }
  }
}

// Display names: the shortest path suffix (whole components) that no
// other in-scope file shares, so "zstd_wrap.cpp" unless two files have that
// name; independent of where the sources and build trees live. The files:
// every in-scope file of every object's CUs' file tables. A file named once
// keeps its name when a later object (a dlopen()ed library) brings a file
// of the same name: its lines may be regions already.
void Symbolizer::Impl::name_files() {
  std::sort(in_scope_paths.begin(), in_scope_paths.end());
  in_scope_paths.erase(std::unique(in_scope_paths.begin(), in_scope_paths.end()), in_scope_paths.end());
  auto suffix = [](const std::string& p, int parts) {
    size_t pos = p.size();
    for (int k = 0; k < parts; ++k) {
      const size_t slash = pos == 0 ? std::string::npos : p.rfind('/', pos - 1);
      if (slash == std::string::npos) return p;
      pos = slash;
    }
    return p.substr(pos + 1);
  };
  for (int parts = 1; parts < 64; ++parts) {
    std::unordered_map<std::string, int> count;
    bool pending = false;
    for (const auto& f : in_scope_paths) ++count[suffix(f, parts)];
    for (const auto& f : in_scope_paths) {
      if (names.count(f) != 0) continue;  // already named
      const std::string sfx = suffix(f, parts);
      if (count[sfx] == 1 || sfx == f) {
        names.emplace(f, sfx);
      } else {
        pending = true;
      }
    }
    if (!pending) break;
  }
  for (size_t f = 0; f < files.size(); ++f) {  // files of CUs read already
    if (auto it = names.find(files[f]); it != names.end()) shown[f] = it->second;
  }
}

bool Symbolizer::refresh() {
  Impl& m = *impl_;
  if (m.dwfl == nullptr || m.main == nullptr || !m.every_object) return false;
  // The loader's count of objects loaded so far: unchanged, nothing was
  // dlopen()ed since.
  LoaderScan scan;
  scan.run();
  if (scan.adds == m.loader_adds) return false;
  scan.want_objects = true;
  scan.loaded.clear();
  scan.run();
  // Objects new to the loader's list are reported at the bias it loaded
  // them at (whole objects only: the loader lists one after mapping it);
  // libdwfl keeps the modules it knew (dwfl_report_begin_add).
  dwfl_report_begin_add(m.dwfl);
  for (const auto& l : scan.loaded) {
    if (l.path.empty() || l.path[0] != '/') continue;  // the main program, the vDSO
    if (m.loaded_objects.contains({l.path, l.bias})) continue;
    (void)dwfl_report_elf(m.dwfl, l.path.c_str(), l.path.c_str(), -1, l.bias, false);
  }
  (void)dwfl_report_end(m.dwfl, nullptr, nullptr);
  note_loaded(m, scan);
  const size_t before = m.cus.size();
  m.read_new_objects(scope_);
  ++m.rescans;
  // Lookups made before an object was known said "no line" or "no rule".
  cache_.clear();
  m.rules.clear();
  if (m.cus.size() > before) error_.clear();
  return true;
}

}  // namespace coact::causal
