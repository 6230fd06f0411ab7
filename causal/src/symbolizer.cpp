// causal/src/symbolizer.cpp: PCs to source lines with elfutils libdwfl
// (coact/causal/symbolizer.hpp).
//
// The main executable is found as the module containing the program's entry
// point (getauxval(AT_ENTRY)); with scope patterns every other object the
// program built (and any a pattern names by its path) is read the same way,
// at start (libdwfl's report of /proc/PID/maps) and, for objects dlopen()ed
// later, by refresh() (the loader's list: dl_iterate_phdr, at each object's
// load bias). CU ranges of all objects share one table (objects do not
// overlap). Each object's line table is read per compilation unit,
// on first use: the constructor reads only each CU's address ranges
// (dwarf_ranges) and the file table in the header of its line program (the
// display names need every in-scope file's path); a PC's CU is found by
// those ranges, and that CU's dwarf_getsrclines rows, biased to run-time
// addresses, are sorted by address with end-of-sequence rows first among
// equal addresses, so the last row at or below a PC is the row that covers
// it (an end-of-sequence row covers nothing). Reading every CU's rows at
// start-up cost the archiver ~0.057 s of CPU (0.033 s of it libdw decoding
// 27 line programs, 314,000 rows); a profile-only run touches a few CUs.
#include <coact/causal/symbolizer.hpp>

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <elfutils/libdwfl.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <unordered_set>

#ifndef COACT_SOURCE_ROOT
#define COACT_SOURCE_ROOT ""
#endif

namespace coact::causal {

namespace {

// Coz's wildcard match: '%' matches any run of characters (libcoz/util.h).
bool wildcard_match(std::string_view s, std::string_view p) {
  size_t si = 0, pi = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '%') {
      star = pi++;
      mark = si;
    } else if (pi < p.size() && p[pi] == s[si]) {
      ++pi;
      ++si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '%') ++pi;
  return pi == p.size();
}

bool starts_with_dir(std::string_view path, std::string_view dir) {
  return !dir.empty() && path.size() > dir.size() && path.substr(0, dir.size()) == dir && path[dir.size()] == '/';
}

std::string demangle(const char* sym) {
  if (sym == nullptr) return {};
  int status = 0;
  char* d = abi::__cxa_demangle(sym, nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? std::string(d) : std::string(sym);
  std::free(d);
  return out;
}

struct Row {
  uint64_t addr;
  uint32_t file;  // index into files
  uint32_t line;
  bool end;       // end of sequence
};

// ---- the file tables of .debug_line headers (DWARF 2-5, DWARF spec 6.2.4) ----

struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;
  uint64_t fixed(size_t n) {
    if (static_cast<size_t>(end - p) < n) {
      ok = false;
      p = end;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);  // little-endian (x86-64)
    p += n;
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (int shift = 0; p < end; shift += 7) {
      const uint8_t b = *p++;
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok = false;
    return 0;
  }
  const char* cstr() {
    const uint8_t* z = static_cast<const uint8_t*>(std::memchr(p, 0, static_cast<size_t>(end - p)));
    if (z == nullptr) {
      ok = false;
      p = end;
      return "";
    }
    const char* s = reinterpret_cast<const char*>(p);
    p = z + 1;
    return s;
  }
  void skip(uint64_t n) {
    if (static_cast<uint64_t>(end - p) < n) {
      ok = false;
      p = end;
    } else {
      p += n;
    }
  }
};

struct Section {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

struct DebugSections {
  Section line, line_str, str;
};

// A string at `off` of a string section (nullopt if outside it).
std::optional<const char*> string_at(const Section& s, uint64_t off) {
  if (s.data == nullptr || off >= s.size || std::memchr(s.data + off, 0, s.size - off) == nullptr) return std::nullopt;
  return reinterpret_cast<const char*>(s.data + off);
}

// One attribute of a DWARF 5 directory or file entry: its string (paths) or
// number (directory index); false for a form this reader does not know.
bool read_form(Reader& r, uint64_t form, size_t offset_size, const DebugSections& secs, const char*& str,
               uint64_t& num) {
  switch (form) {
    case DW_FORM_string: str = r.cstr(); return r.ok;
    case DW_FORM_line_strp:
    case DW_FORM_strp: {
      const auto s = string_at(form == DW_FORM_strp ? secs.str : secs.line_str, r.fixed(offset_size));
      if (!s) return false;
      str = *s;
      return r.ok;
    }
    case DW_FORM_udata: num = r.uleb(); return r.ok;
    case DW_FORM_data1: num = r.fixed(1); return r.ok;
    case DW_FORM_data2: num = r.fixed(2); return r.ok;
    case DW_FORM_data4: num = r.fixed(4); return r.ok;
    case DW_FORM_data8: num = r.fixed(8); return r.ok;
    case DW_FORM_data16: r.skip(16); return r.ok;
    case DW_FORM_block: r.skip(r.uleb()); return r.ok;
    default: return false;
  }
}

// A file's path as the symbolizer names it: joined with its directory (as
// libdw's dwarf_linesrc), then with the CU's compilation directory if still
// relative, lexically normalised.
std::string file_path(const char* dir, const char* name, const char* comp_dir) {
  if (name == nullptr) return "?";
  if (*name == '\0') {  // (no producer writes one) as the path operations would
    std::filesystem::path q = dir != nullptr ? std::filesystem::path(dir) : std::filesystem::path();
    if (q.is_relative() && comp_dir != nullptr) q = std::filesystem::path(comp_dir) / q;
    return q.lexically_normal().string();
  }
  // Joined as strings, lexically normalised only where a "." or ".."
  // component or an empty one ("//", a trailing '/') is in the path: the
  // filesystem::path operations were three quarters of reading every
  // header's file table (33 of 45 M instructions for the archiver).
  std::string p = name;
  if (p.front() != '/' && dir != nullptr && *dir != '\0') p = std::string(dir) + "/" + p;
  if (p.front() != '/' && comp_dir != nullptr && *comp_dir != '\0') p = std::string(comp_dir) + "/" + p;
  bool clean = p.back() != '/';
  for (size_t i = 0; clean && i < p.size(); ++i) {
    if (p[i] != '/' && i != 0) continue;
    const size_t start = p[i] == '/' ? i + 1 : i;  // a component starts here
    const size_t end = std::min(p.find('/', start), p.size());
    const std::string_view c(p.data() + start, end - start);
    clean = !(c.empty() && end < p.size()) && c != "." && c != "..";
  }
  return clean ? p : std::filesystem::path(p).lexically_normal().string();
}

// Appends the paths of the file table of the line program at `off` (the
// CU's DW_AT_stmt_list) to `out`, but for pseudo-files ("<built-in>": no
// row names one, and joined with a directory it would look like a source). False if the header is malformed or uses
// a form this reader does not know (the caller then reads every CU's rows).
bool header_files(const DebugSections& secs, uint64_t off, const char* comp_dir, std::vector<std::string>& out) {
  if (secs.line.data == nullptr || off >= secs.line.size) return false;
  Reader r{secs.line.data + off, secs.line.data + secs.line.size};
  size_t offset_size = 4;
  uint64_t length = r.fixed(4);
  if (length == 0xffffffffu) {
    offset_size = 8;
    length = r.fixed(8);
  }
  if (!r.ok || length > static_cast<uint64_t>(r.end - r.p)) return false;
  r.end = r.p + length;
  const uint64_t version = r.fixed(2);
  if (version < 2 || version > 5) return false;
  if (version >= 5) r.skip(2);  // address_size, segment_selector_size
  const uint64_t header_length = r.fixed(offset_size);
  if (!r.ok || header_length > static_cast<uint64_t>(r.end - r.p)) return false;
  r.end = r.p + header_length;  // the file table lies inside the header
  r.skip(version >= 4 ? 5 : 4);  // minimum_instruction_length, [maximum_operations_per_instruction], default_is_stmt, line_base, line_range
  const uint64_t opcode_base = r.fixed(1);
  r.skip(opcode_base > 0 ? opcode_base - 1 : 0);
  if (!r.ok) return false;
  std::vector<const char*> dirs;
  if (version < 5) {
    dirs.push_back(comp_dir);  // directory 0: the compilation directory
    for (;;) {
      const char* d = r.cstr();
      if (!r.ok) return false;
      if (*d == '\0') break;
      dirs.push_back(d);
    }
    for (;;) {
      const char* name = r.cstr();
      if (!r.ok) return false;
      if (*name == '\0') break;
      const uint64_t dir = r.uleb();
      (void)r.uleb();  // modification time
      (void)r.uleb();  // length
      if (!r.ok) return false;
      if (*name != '<') out.push_back(file_path(dir < dirs.size() ? dirs[dir] : nullptr, name, comp_dir));
    }
    return true;
  }
  // DWARF 5: entry formats, then entries, for directories and then files.
  auto entries = [&](bool files) {
    std::vector<std::pair<uint64_t, uint64_t>> format(r.fixed(1));
    for (auto& [type, form] : format) {
      type = r.uleb();
      form = r.uleb();
    }
    const uint64_t count = r.uleb();
    if (!r.ok) return false;
    for (uint64_t i = 0; i < count; ++i) {
      const char* path = nullptr;
      uint64_t dir = 0;
      for (const auto& [type, form] : format) {
        const char* str = nullptr;
        uint64_t num = 0;
        if (!read_form(r, form, offset_size, secs, str, num)) return false;
        if (type == DW_LNCT_path) path = str;
        if (type == DW_LNCT_directory_index) dir = num;
      }
      if (!files) {
        dirs.push_back(path);
      } else if (path == nullptr || *path != '<') {
        out.push_back(file_path(dir < dirs.size() ? dirs[dir] : nullptr, path, comp_dir));
      }
    }
    return r.ok;
  };
  return entries(false) && entries(true);
}

// A debug section's bytes (decompressed), or empty.
Section section_named(Elf* elf, const char* wanted) {
  size_t shstrndx = 0;
  if (elf == nullptr || elf_getshdrstrndx(elf, &shstrndx) != 0) return {};
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name == nullptr || std::strcmp(name, wanted) != 0) continue;
    if ((shdr.sh_flags & SHF_COMPRESSED) != 0 && elf_compress(scn, 0, 0) < 0) return {};
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (d == nullptr || d->d_buf == nullptr) return {};
    return Section{static_cast<const uint8_t*>(d->d_buf), d->d_size};
  }
  return {};
}

// The loader's count of objects loaded so far (glibc's dlpi_adds).
unsigned long long loader_adds_now() {
  unsigned long long adds = 0;
  (void)dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* arg) {
        if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)) {
          *static_cast<unsigned long long*>(arg) = info->dlpi_adds;
        }
        return 1;
      },
      &adds);
  return adds;
}

}  // namespace

bool SourceScope::matches_pattern(std::string_view path) const {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return wildcard_match(path, p); });
}

SourceScope SourceScope::parse(std::string_view csv) {
  SourceScope s;
  size_t i = 0;
  while (i <= csv.size()) {
    const size_t j = std::min(csv.find(',', i), csv.size());
    std::string_view item = csv.substr(i, j - i);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) s.patterns.emplace_back(item);
    i = j + 1;
  }
  return s;
}

bool SourceScope::contains(std::string_view path) const {
  if (path.empty() || path.front() == '<') return false;  // <built-in>, <artificial>
  if (!patterns.empty()) {
    return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return wildcard_match(path, p); });
  }
  if (starts_with_dir(path, "/usr")) return false;
  // coact's own library sources: under the source tree coact was built from,
  // installed headers (include/coact/<lib>/), and the same library file
  // compiled in another checkout of coact (a shared compiler cache can hand
  // out objects whose paths name another tree: "<x>/runtime/src/f.cpp" is
  // coact's if "<root>/runtime/src/f.cpp" exists).
  const std::string_view root = COACT_SOURCE_ROOT;
  for (const char* lib : {"runtime", "causal", "calibrate"}) {
    const std::string dir = std::string("/") + lib + "/";
    if (!root.empty() && starts_with_dir(path, std::string(root) + "/" + lib)) return false;
    if (path.find(std::string("/include/coact/") + lib + "/") != std::string_view::npos) return false;
    for (const char* sub : {"src/", "include/coact/"}) {
      const size_t at = path.rfind(dir + sub);
      if (at != std::string_view::npos && !root.empty() &&
          std::filesystem::exists(std::string(root) + std::string(path.substr(at)))) {
        return false;
      }
    }
  }
  return true;
}

struct Symbolizer::Impl {
  Dwfl* dwfl = nullptr;
  bool attached = false;
  const RawSample* current = nullptr;  // the sample being unwound
  Sample* out = nullptr;
  Symbolizer* stop_at = nullptr;  // unwind(.., true): stop at a frame in its scope
  Dwfl_Module* main = nullptr;
  // The loaded objects whose line tables were read: the main executable,
  // and with scope patterns every library too (linked, or dlopen()ed and
  // found by refresh()). Indices are stable: CUs name their object by one.
  struct Object {
    Dwfl_Module* mod;
    std::string path;
    Dwarf_Addr bias = 0;  // run-time address - link-time address
    uint64_t lo = 0, hi = 0;  // the module's run-time addresses
    // The object's function symbols by address (function names;
    // dwfl_module_addrname scans the whole symbol table on every call).
    struct Func {
      uint64_t lo, hi;
      const char* name;  // in libelf's string table: lives as long as dwfl
    };
    std::vector<Func> funcs;
    bool funcs_built = false;
  };
  std::vector<Object> objects;
  std::unordered_set<Dwfl_Module*> seen;  // modules looked at (read, or skipped as out of scope)
  // Every module's run-time addresses as its ELF file gives them (read or
  // not), sorted by lo. Not dwfl_addrmodule: libdwfl's segment table, from
  // /proc/PID/maps, gives a module the unmapped gap after its last segment
  // too, where a later dlopen() can place a library.
  std::vector<std::pair<uint64_t, uint64_t>> module_ranges;
  bool in_module(uint64_t addr) const {
    auto it = std::upper_bound(module_ranges.begin(), module_ranges.end(), addr,
                               [](uint64_t a, const std::pair<uint64_t, uint64_t>& r) { return a < r.first; });
    return it != module_ranges.begin() && addr < std::prev(it)->second;
  }
  bool every_object = false;  // scope patterns: libraries' sources can be named too
  unsigned long long loader_adds = 0;  // dl_iterate_phdr's dlpi_adds when the modules were last reported
  std::vector<std::string> without_lines;  // objects said to have no line table (Symbolizer::objects_without_lines)
  std::vector<std::string> in_scope_paths;  // every in-scope file of every object's headers (display names)
  size_t rescans = 0;
  // Compilation units of the objects; a CU's rows are read on first use.
  struct Cu {
    Dwarf_Die* die;  // libdwfl's: lives as long as dwfl
    const char* comp_dir;
    uint32_t object;  // index into objects
    bool loaded = false;
    bool may_be_in_scope = true;  // some file of its header's table is in scope (else no row of it can be)
    size_t paths_begin = 0, paths_end = 0;  // its header's files in the constructor's list
    std::vector<Row> rows;  // sorted by address, end-of-sequence rows first among equal addresses
  };
  std::vector<Cu> cus;
  struct CuRange {
    uint64_t lo, hi;  // run-time addresses
    uint32_t cu;
  };
  std::vector<CuRange> cu_ranges;  // sorted by lo
  size_t loaded_rows = 0;
  bool all_loaded = false;
  std::unordered_map<std::string, std::vector<uint32_t>> cus_of_file;  // in-scope file -> CUs whose header lists it
  std::vector<std::string> files;
  std::vector<bool> file_in_scope;
  std::unordered_map<std::string, uint32_t> file_ids;
  std::unordered_map<std::string, std::string> names;  // in-scope file path -> display name
  std::vector<std::string> shown;  // display name of each file
  const SourceScope* scope = nullptr;
  void load(uint32_t cu);
  void load_all();
  const Row* row_at(uint64_t addr, const Row** next);
  std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<SourceLine>> lines;  // (file, line) -> line
  // Unwinding rules by lookup address (a frame's PC; a return address - 1).
  struct Rule {
    enum Kind : uint8_t { kOther, kStep, kOutermost } kind = kOther;  // kOther: libdwfl unwinds the sample
    uint8_t cfa_reg = 0;        // DWARF register: 7 rsp, 6 rbp (any at frame 0)
    enum Rbp : uint8_t { kSame, kSaved, kLost } rbp = kSame;
    int64_t cfa_off = 0;
    int64_t ra_off = 0;         // return address at CFA + ra_off
    int64_t rbp_off = 0;        // kSaved: caller's rbp at CFA + rbp_off
  };
  std::unordered_map<uint64_t, Rule> rules;
  const char* function_at(uint64_t addr);
  const Object* object_at(uint64_t addr) const;
  void read_new_objects(const SourceScope& scope);
  void read_object(Dwfl_Module* mod, const char* path, uint64_t lo, uint64_t hi, const SourceScope& scope);
  void name_files();
  char* debuginfo_path = nullptr;
  Dwfl_Callbacks callbacks{};

  ~Impl() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
};

namespace {

pid_t unwind_next_thread(Dwfl*, void*, void**) { return 0; }  // only dwfl_getthread_frames is used

bool unwind_get_thread(Dwfl*, pid_t, void* dwfl_arg, void** thread_arg) {
  *thread_arg = dwfl_arg;
  return true;
}

bool unwind_memory_read(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
  const auto* raw = static_cast<Symbolizer::Impl*>(arg)->current;
  const uint64_t sp = raw->regs[7];
  // Overflow-safe: an unwind gone astray asks for addresses near 2^64, where
  // addr + 8 wrapped to a small number, passed `addr + 8 > sp + len`, and
  // the copy read raw->stack + (addr - sp) far outside the sample (SEGV
  // under TSan, whose deferred signals hand over stale registers).
  if (addr < sp) return false;
  const uint64_t off = addr - sp;
  if (off > raw->stack_len || raw->stack_len - off < sizeof(Dwarf_Word)) return false;
  std::memcpy(result, raw->stack + off, sizeof(Dwarf_Word));
  return true;
}

bool unwind_set_initial_registers(Dwfl_Thread* thread, void* arg) {
  const auto* raw = static_cast<Symbolizer::Impl*>(arg)->current;
  Dwarf_Word regs[kSampleRegs];
  for (uint32_t i = 0; i < kSampleRegs; ++i) regs[i] = raw->regs[i];
  return dwfl_thread_state_registers(thread, 0, kSampleRegs, regs);
}

int unwind_frame(Dwfl_Frame* frame, void* arg) {
  auto& m = *static_cast<Symbolizer::Impl*>(arg);
  Sample& out = *m.out;
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation) || pc == 0) return DWARF_CB_ABORT;
  if (out.depth == 0 || out.pc[out.depth - 1] != pc) {
    out.pc[out.depth++] = pc;
    // A frame in scope is where attribute() stops: no need to walk further
    // (the same address as line_of: a return address is looked up at pc - 1).
    if (m.stop_at != nullptr && m.stop_at->in_scope_at(pc, out.depth > 1)) return DWARF_CB_ABORT;
  }
  return out.depth < kSampleFrames ? DWARF_CB_OK : DWARF_CB_ABORT;
}

const Dwfl_Thread_Callbacks kUnwindCallbacks = {unwind_next_thread, unwind_get_thread, unwind_memory_read,
                                                unwind_set_initial_registers, nullptr, nullptr};

// A register rule "saved at CFA + N" (libdw: DW_OP_call_frame_cfa
// [DW_OP_plus_uconst N]); false for any other form.
bool cfa_offset(const Dwarf_Op* ops, size_t nops, int64_t& off) noexcept {
  if (ops == nullptr || nops == 0 || nops > 2 || ops[0].atom != DW_OP_call_frame_cfa) return false;
  off = nops == 2 ? (ops[1].atom == DW_OP_plus_uconst ? static_cast<int64_t>(ops[1].number) : INT64_MIN) : 0;
  return off != INT64_MIN;
}

// Reads `addr` from the sample's stack copy.
bool stack_word(const RawSample& raw, uint64_t addr, uint64_t& out) noexcept {
  const uint64_t sp = raw.regs[7];
  if (addr < sp) return false;  // overflow-safe, as unwind_memory_read
  const uint64_t off = addr - sp;
  if (off > raw.stack_len || raw.stack_len - off < 8) return false;
  std::memcpy(&out, raw.stack + off, 8);
  return true;
}

}  // namespace

// The rule at lookup address `addr` (cached).
static const Symbolizer::Impl::Rule& rule_at(Symbolizer::Impl& m, uint64_t addr) {
  using Rule = Symbolizer::Impl::Rule;
  auto [it, fresh] = m.rules.try_emplace(addr);
  if (!fresh) return it->second;
  Rule& r = it->second;
  Dwfl_Module* mod = dwfl_addrmodule(m.dwfl, addr);
  Dwarf_Addr bias = 0;
  Dwarf_CFI* cfi = mod != nullptr ? dwfl_module_eh_cfi(mod, &bias) : nullptr;
  Dwarf_Frame* frame = nullptr;
  if (cfi == nullptr || dwarf_cfi_addrframe(cfi, addr - bias, &frame) != 0 || frame == nullptr) return r;  // kOther
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  Dwarf_Op mem[3];
  // CFA = register + offset: libdw gives DW_CFA_def_cfa as DW_OP_bregx reg, offset.
  bool cfa_ok = dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1;
  if (cfa_ok && ops[0].atom == DW_OP_bregx && ops[0].number < kSampleRegs) {
    r.cfa_reg = static_cast<uint8_t>(ops[0].number);
    r.cfa_off = static_cast<int64_t>(ops[0].number2);
  } else if (cfa_ok && ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg16) {
    r.cfa_reg = static_cast<uint8_t>(ops[0].atom - DW_OP_breg0);
    r.cfa_off = static_cast<int64_t>(ops[0].number);
  } else {
    cfa_ok = false;
  }
  if (cfa_ok) {
    if (dwarf_frame_register(frame, 16, mem, &ops, &nops) == 0) {
      if (nops == 0 && ops == mem) {
        r.kind = Rule::kOutermost;  // return address undefined: the outermost frame
      } else if (cfa_offset(ops, nops, r.ra_off)) {
        r.kind = Rule::kStep;
      }
    }
    if (r.kind == Rule::kStep && dwarf_frame_register(frame, 6, mem, &ops, &nops) == 0) {
      if (nops == 0) {
        r.rbp = ops == nullptr ? Rule::kSame : Rule::kLost;
      } else if (cfa_offset(ops, nops, r.rbp_off)) {
        r.rbp = Rule::kSaved;
      } else {
        r.kind = Rule::kOther;
      }
    } else if (r.kind == Rule::kStep) {
      r.kind = Rule::kOther;
    }
  }
  std::free(frame);
  return r;
}

// Unwinds `raw` by cached rules into `out`, as libdwfl would (unwind_frame's
// rules: frame 0 at its PC, then return addresses looked up at pc - 1;
// repeated PCs skipped; stop at a frame in `stop_at`, at kSampleFrames, at
// the outermost frame, or where the stack copy ends). False if some frame
// needs libdwfl (Rule::kOther, an unknown register): the caller unwinds
// the sample with libdwfl.
static bool unwind_cached(Symbolizer::Impl& m, const RawSample& raw, Sample& out,
                          Symbolizer* stop_at) {
  using Rule = Symbolizer::Impl::Rule;
  uint64_t pc = raw.pc(), sp = raw.regs[7], rbp = raw.regs[6];
  bool rbp_known = true;
  out.depth = 0;
  for (uint32_t frame = 0;; ++frame) {
    if (pc == 0) break;
    if (out.depth == 0 || out.pc[out.depth - 1] != pc) {
      out.pc[out.depth++] = pc;
      if (stop_at != nullptr && stop_at->in_scope_at(pc, out.depth > 1)) break;
    }
    if (out.depth >= kSampleFrames) break;
    const Rule& r = rule_at(m, frame == 0 ? pc : pc - 1);
    if (r.kind == Rule::kOther) return false;
    if (r.kind == Rule::kOutermost) break;
    uint64_t base = 0;
    if (frame == 0) {
      if (r.cfa_reg >= kSampleRegs) return false;
      base = raw.regs[r.cfa_reg];
    } else if (r.cfa_reg == 7) {
      base = sp;
    } else if (r.cfa_reg == 6 && rbp_known) {
      base = rbp;
    } else {
      return false;  // a CFA in a register only libdwfl tracks
    }
    const uint64_t cfa = base + static_cast<uint64_t>(r.cfa_off);
    uint64_t ra = 0;
    if (!stack_word(raw, cfa + static_cast<uint64_t>(r.ra_off), ra)) break;  // past the copy: libdwfl stops too
    if (r.rbp == Rule::kSaved) {
      if (!stack_word(raw, cfa + static_cast<uint64_t>(r.rbp_off), rbp)) rbp_known = false;
    } else if (r.rbp == Rule::kLost) {
      rbp_known = false;
    }
    sp = cfa;
    pc = ra;
  }
  if (out.depth == 0) {
    out.pc[0] = raw.pc();
    out.depth = 1;
  }
  return true;
}

Sample Symbolizer::unwind(const RawSample& raw, bool to_first_in_scope) {
  Impl& m = *impl_;
  Sample out{};
  out.region = raw.region;
  out.overrun = raw.overrun;
  out.tid = raw.tid;
  out.pc[0] = raw.pc();
  if (to_first_in_scope && in_scope_at(raw.pc(), false)) {
    out.depth = 1;  // the interrupted PC is in scope: nothing to unwind
    return out;
  }
  if (m.attached && cached_rules_ && unwind_cached(m, raw, out, to_first_in_scope ? this : nullptr)) {
    return out;
  }
  if (m.attached) {
    m.current = &raw;
    m.out = &out;
    m.stop_at = to_first_in_scope ? this : nullptr;
    out.depth = 0;
    (void)dwfl_getthread_frames(m.dwfl, raw.tid, unwind_frame, &m);
    m.current = nullptr;
    m.out = nullptr;
    m.stop_at = nullptr;
  }
  if (out.depth == 0) {
    out.pc[0] = raw.pc();
    out.depth = 1;
  }
  return out;
}

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
  m.loader_adds = loader_adds_now();  // before the report: a dlopen() during it is found by refresh()
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
    if (f.hi > f.lo) module_ranges.emplace_back(f.lo, f.hi);
    if (f.mod != main && (!every_object || f.name == nullptr || f.name[0] == '[')) continue;  // [vdso: N]
    if (f.mod != main && system_object(f.name) && !sc.matches_pattern(f.name)) continue;
    read_object(f.mod, f.name != nullptr ? f.name : "?", f.lo, f.hi, sc);
  }
  std::sort(module_ranges.begin(), module_ranges.end());
  if (objects.size() == first_object) return;
  std::sort(cu_ranges.begin(), cu_ranges.end(), [](const CuRange& a, const CuRange& b) { return a.lo < b.lo; });
  name_files();
}

// Reads one object's CUs: their address ranges and their line programs'
// file tables (the rows are read on first use, Impl::load).
void Symbolizer::Impl::read_object(Dwfl_Module* mod, const char* path, uint64_t lo, uint64_t hi, const SourceScope& sc) {
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

// The object whose module holds `addr` (null if none).
const Symbolizer::Impl::Object* Symbolizer::Impl::object_at(uint64_t addr) const {
  for (const Object& o : objects) {
    if (addr >= o.lo && addr < o.hi) return &o;
  }
  return nullptr;
}

// Reads CU `id`'s rows (and registers their files).
void Symbolizer::Impl::load(uint32_t id) {
  Cu& c = cus[id];
  if (c.loaded) return;
  c.loaded = true;
  Dwarf_Lines* lines = nullptr;
  size_t n = 0;
  if (dwarf_getsrclines(c.die, &lines, &n) != 0) return;
  // A CU's rows name its files by pointers into the CU's file table: the
  // path is built and normalised once per file, not once per row (per row
  // it would dominate the start-up of a large program).
  std::unordered_map<const char*, uint32_t> cu_files;  // this CU's file-name pointer -> file id
  c.rows.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Dwarf_Line* l = dwarf_onesrcline(lines, i);
    Dwarf_Addr addr = 0;
    int lineno = 0;
    bool end = false;
    if (l == nullptr || dwarf_lineaddr(l, &addr) != 0 || dwarf_lineno(l, &lineno) != 0 ||
        dwarf_lineendsequence(l, &end) != 0) {
      continue;
    }
    const char* src = dwarf_linesrc(l, nullptr, nullptr);
    auto [cf, cu_fresh] = cu_files.try_emplace(src, 0);
    if (cu_fresh) {
      std::string path = file_path(nullptr, src, c.comp_dir);
      auto [it, fresh] = file_ids.try_emplace(path, static_cast<uint32_t>(files.size()));
      if (fresh) {
        file_in_scope.push_back(scope->contains(path));
        const auto name = names.find(path);
        shown.push_back(name != names.end() ? name->second : path);  // out of scope (or not in a header): the path
        files.push_back(std::move(path));
      }
      cf->second = it->second;
    }
    c.rows.push_back(Row{addr + objects[c.object].bias, cf->second, static_cast<uint32_t>(std::max(lineno, 0)), end});
  }
  // libdw hands the rows sorted by address already: most units need no
  // sort, so it is skipped when they are.
  const auto by_address = [](const Row& a, const Row& b) {
    return a.addr != b.addr ? a.addr < b.addr : (a.end && !b.end);
  };
  if (!std::is_sorted(c.rows.begin(), c.rows.end(), by_address)) std::stable_sort(c.rows.begin(), c.rows.end(), by_address);
  loaded_rows += c.rows.size();
}

void Symbolizer::Impl::load_all() {
  if (all_loaded) return;
  for (uint32_t i = 0; i < cus.size(); ++i) load(i);
  all_loaded = true;
}

// The row covering `addr` (null if none) and the row after it (*next).
const Row* Symbolizer::Impl::row_at(uint64_t addr, const Row** next) {
  auto cr = std::upper_bound(cu_ranges.begin(), cu_ranges.end(), addr,
                             [](uint64_t a, const CuRange& r) { return a < r.lo; });
  if (cr == cu_ranges.begin() || addr >= std::prev(cr)->hi) return nullptr;
  const uint32_t id = std::prev(cr)->cu;
  load(id);
  const auto& rows = cus[id].rows;
  auto it = std::upper_bound(rows.begin(), rows.end(), addr, [](uint64_t a, const Row& r) { return a < r.addr; });
  if (it == rows.begin() || it == rows.end() || std::prev(it)->end) return nullptr;
  *next = &*it;
  return &*std::prev(it);
}

Symbolizer::~Symbolizer() = default;

size_t Symbolizer::rows() const noexcept { return impl_->loaded_rows; }

bool Symbolizer::has_lines() const noexcept { return !impl_->cus.empty(); }

const std::vector<std::string>& Symbolizer::objects_without_lines() const noexcept { return impl_->without_lines; }

size_t Symbolizer::objects() const noexcept { return impl_->objects.size(); }

size_t Symbolizer::rescans() const noexcept { return impl_->rescans; }

bool Symbolizer::known_address(uint64_t pc) const noexcept {
  // Any module libdwfl was told of, read or not (a system library under the
  // default scope is known too: nothing new would be found for it).
  return impl_->in_module(pc);
}

bool Symbolizer::refresh() {
  Impl& m = *impl_;
  if (m.dwfl == nullptr || m.main == nullptr || !m.every_object) return false;
  // The loader's count of objects loaded so far (glibc's dlpi_adds, the
  // same for every object): unchanged, nothing was dlopen()ed since.
  struct Loaded {
    std::string path;
    uint64_t bias;
    uint64_t first_load;  // run-time address of its first PT_LOAD segment
  };
  struct Scan {
    unsigned long long adds = 0;
    bool want_objects = false;
    std::vector<Loaded> loaded;
  } scan;
  auto visit = [](dl_phdr_info* info, size_t size, void* arg) -> int {
    auto& sc = *static_cast<Scan*>(arg);
    if (size < offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)) return 1;
    sc.adds = info->dlpi_adds;
    if (!sc.want_objects) return 1;
    if (info->dlpi_name == nullptr || info->dlpi_name[0] != '/') return 0;  // the main program (""), the vDSO
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      if (info->dlpi_phdr[i].p_type != PT_LOAD) continue;
      sc.loaded.push_back(Loaded{info->dlpi_name, info->dlpi_addr, info->dlpi_addr + info->dlpi_phdr[i].p_vaddr});
      break;
    }
    return 0;
  };
  (void)dl_iterate_phdr(visit, &scan);
  if (scan.adds == m.loader_adds) return false;
  scan.want_objects = true;
  (void)dl_iterate_phdr(visit, &scan);
  m.loader_adds = scan.adds;
  // New objects are reported from the loader's list (whole objects only: the
  // loader lists one after mapping it) at the bias it loaded them at;
  // libdwfl keeps the modules it knew (dwfl_report_begin_add).
  dwfl_report_begin_add(m.dwfl);
  for (const Loaded& l : scan.loaded) {
    if (m.in_module(l.first_load)) continue;  // known (reported from /proc/PID/maps at start)
    (void)dwfl_report_elf(m.dwfl, l.path.c_str(), l.path.c_str(), -1, l.bias, false);
  }
  (void)dwfl_report_end(m.dwfl, nullptr, nullptr);
  const size_t before = m.cus.size();
  m.read_new_objects(scope_);
  ++m.rescans;
  // Lookups made before an object was known said "no line" or "no rule".
  cache_.clear();
  m.rules.clear();
  if (m.cus.size() > before) error_.clear();
  return true;
}

size_t Symbolizer::loaded_units() const noexcept {
  return static_cast<size_t>(std::count_if(impl_->cus.begin(), impl_->cus.end(), [](const Impl::Cu& c) { return c.loaded; }));
}

size_t Symbolizer::units() const noexcept { return impl_->cus.size(); }

void Symbolizer::load_all() { impl_->load_all(); }

bool Symbolizer::in_scope_at(uint64_t pc, bool return_address) {
  Impl& m = *impl_;
  const uint64_t addr = return_address && pc > 0 ? pc - 1 : pc;
  auto cr = std::upper_bound(m.cu_ranges.begin(), m.cu_ranges.end(), addr,
                             [](uint64_t a, const Impl::CuRange& r) { return a < r.lo; });
  if (cr == m.cu_ranges.begin() || addr >= std::prev(cr)->hi) return false;  // no CU: no line
  const Impl::Cu& c = m.cus[std::prev(cr)->cu];
  if (!c.loaded && !c.may_be_in_scope) return false;  // answered by its header
  const SourceLine* l = line_of(pc, return_address);
  return l != nullptr && l->in_scope;
}

const char* Symbolizer::Impl::function_at(uint64_t addr) {
  auto* o = const_cast<Object*>(object_at(addr));
  if (o == nullptr) return nullptr;
  if (!o->funcs_built) {
    o->funcs_built = true;
    const int n = dwfl_module_getsymtab(o->mod);
    for (int i = 1; i < n; ++i) {
      GElf_Sym sym;
      GElf_Addr value = 0;
      const char* name = dwfl_module_getsym_info(o->mod, i, &sym, &value, nullptr, nullptr, nullptr);
      if (name == nullptr || *name == '\0' || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
          sym.st_size == 0) {
        continue;
      }
      o->funcs.push_back(Object::Func{value, value + sym.st_size, name});
    }
    std::sort(o->funcs.begin(), o->funcs.end(), [](const Object::Func& a, const Object::Func& b) { return a.lo < b.lo; });
  }
  // A function starting at or below addr that contains it (the nearest few:
  // aliases and nested symbols share addresses).
  const auto& funcs = o->funcs;
  auto it = std::upper_bound(funcs.begin(), funcs.end(), addr, [](uint64_t a, const Object::Func& f) { return a < f.lo; });
  for (int k = 0; k < 8 && it != funcs.begin(); ++k) {
    --it;
    if (addr < it->hi) return it->name;
  }
  return dwfl_module_addrname(o->mod, addr);  // none: libdwfl's rule (sizeless symbols)
}

const SourceLine* Symbolizer::line_of(uint64_t pc, bool return_address) {
  const uint64_t key = return_address ? (pc | (uint64_t{1} << 63)) : pc;
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  Impl& m = *impl_;
  const uint64_t addr = return_address && pc > 0 ? pc - 1 : pc;
  const SourceLine* result = nullptr;
  const Row* next = nullptr;
  if (const Row* r = m.row_at(addr, &next); r != nullptr) {
    auto& slot = m.lines[{r->file, r->line}];
    if (!slot) {
      slot = std::make_unique<SourceLine>();
      slot->file = m.files[r->file];
      slot->line = r->line;
      slot->in_scope = m.file_in_scope[r->file];
      slot->name = m.shown[r->file] + ":" + std::to_string(r->line);
      slot->function = demangle(m.function_at(addr));
    }
    result = slot.get();
  }
  cache_.emplace(key, result);
  return result;
}

const SourceLine* Symbolizer::attribute(const Sample& s) {
  for (uint32_t i = 0; i < s.depth && i < kSampleFrames; ++i) {
    if (!in_scope_at(s.pc[i], i > 0)) continue;  // reads no CU without an in-scope file
    return line_of(s.pc[i], i > 0);
  }
  return nullptr;
}

std::vector<AddressRange> Symbolizer::ranges_of(const SourceLine& line) {
  Impl& m = *impl_;
  // A line's code can lie in any CU whose file table lists its file (inlined
  // from a header); a file not known from the headers: every CU.
  if (const auto listed = m.cus_of_file.find(line.file); listed != m.cus_of_file.end()) {
    for (const uint32_t id : listed->second) m.load(id);
  } else {
    m.load_all();
  }
  const auto file = m.file_ids.find(line.file);
  if (file == m.file_ids.end()) return {};
  std::vector<AddressRange> found;
  for (const auto& c : m.cus) {
    for (size_t i = 0; i + 1 < c.rows.size(); ++i) {
      const Row& r = c.rows[i];
      if (r.end || r.line != line.line || r.file != file->second || c.rows[i + 1].addr <= r.addr) continue;
      found.emplace_back(r.addr, c.rows[i + 1].addr);
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<AddressRange> out;
  for (const AddressRange& range : found) {
    if (!out.empty() && out.back().second >= range.first) {
      out.back().second = std::max(out.back().second, range.second);
    } else {
      out.push_back(range);
    }
  }
  return out;
}

}  // namespace coact::causal
