// Lookups: a PC to its object, CU, row and source line (line_of, attribute,
// in_scope_at), a CU's rows read on first use (Impl::load), function names
// (function_at), a line's address ranges (ranges_of) and the symbolizer's
// counters. Called by the sampler's consumer thread and the line-region
// setup; rows, once read, are kept for the symbolizer's life.
#include "detail/symbolizer_impl.hpp"

namespace coact::causal {

namespace {

std::string demangle(const char* sym) {
  if (sym == nullptr) return {};
  int status = 0;
  char* d = abi::__cxa_demangle(sym, nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? std::string(d) : std::string(sym);
  std::free(d);
  return out;
}

}  // namespace

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
  if (!std::is_sorted(c.rows.begin(), c.rows.end(), by_address))
    std::stable_sort(c.rows.begin(), c.rows.end(), by_address);
  loaded_rows += c.rows.size();
}

void Symbolizer::Impl::load_all() {
  if (all_loaded) return;
  for (uint32_t i = 0; i < cus.size(); ++i) load(i);
  all_loaded = true;
}

// The row covering `addr` (null if none) and the row after it (*next).
const Row* Symbolizer::Impl::row_at(uint64_t addr, const Row** next) {
  auto cr =
      std::upper_bound(cu_ranges.begin(), cu_ranges.end(), addr, [](uint64_t a, const CuRange& r) { return a < r.lo; });
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

size_t Symbolizer::loaded_units() const noexcept {
  return static_cast<size_t>(
      std::count_if(impl_->cus.begin(), impl_->cus.end(), [](const Impl::Cu& c) { return c.loaded; }));
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
    std::sort(o->funcs.begin(), o->funcs.end(),
              [](const Object::Func& a, const Object::Func& b) { return a.lo < b.lo; });
  }
  // A function starting at or below addr that contains it (the nearest few:
  // aliases and nested symbols share addresses).
  const auto& funcs = o->funcs;
  auto it =
      std::upper_bound(funcs.begin(), funcs.end(), addr, [](uint64_t a, const Object::Func& f) { return a < f.lo; });
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
