// causal/src/symbolizer.cpp: PCs to source lines with elfutils libdwfl
// (coact/causal/symbolizer.hpp).
//
// The main executable is found as the module containing the program's entry
// point (getauxval(AT_ENTRY)); its line table is every CU's
// dwarf_getsrclines rows, biased to run-time addresses, sorted by address
// with end-of-sequence rows first among equal addresses, so the last row at
// or below a PC is the row that covers it (an end-of-sequence row covers
// nothing).
#include <coact/causal/symbolizer.hpp>

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <elfutils/libdwfl.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>

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

}  // namespace

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
  const std::vector<AddressRange>* stop_at = nullptr;  // unwind(.., true): the scope's ranges
  Dwfl_Module* main = nullptr;
  std::vector<std::string> files;
  std::vector<bool> file_in_scope;
  std::vector<Row> rows;
  std::vector<std::string> shown;  // display name of each file
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
  // The main executable's function symbols by address (function names;
  // dwfl_module_addrname scans the whole symbol table on every call).
  struct Func {
    uint64_t lo, hi;
    const char* name;  // in libelf's string table: lives as long as dwfl
  };
  std::vector<Func> funcs;
  bool funcs_built = false;
  const char* function_at(uint64_t addr);
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

// True if `addr` lies in one of the sorted, disjoint `ranges`.
bool in_ranges(const std::vector<AddressRange>& ranges, uint64_t addr) noexcept {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), addr,
                             [](uint64_t a, const AddressRange& r) { return a < r.first; });
  return it != ranges.begin() && addr < std::prev(it)->second;
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
    if (m.stop_at != nullptr && in_ranges(*m.stop_at, out.depth > 1 ? pc - 1 : pc)) return DWARF_CB_ABORT;
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
                          const std::vector<AddressRange>* stop_at) {
  using Rule = Symbolizer::Impl::Rule;
  uint64_t pc = raw.pc(), sp = raw.regs[7], rbp = raw.regs[6];
  bool rbp_known = true;
  out.depth = 0;
  for (uint32_t frame = 0;; ++frame) {
    if (pc == 0) break;
    if (out.depth == 0 || out.pc[out.depth - 1] != pc) {
      out.pc[out.depth++] = pc;
      if (stop_at != nullptr && in_ranges(*stop_at, out.depth > 1 ? pc - 1 : pc)) break;
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
  if (to_first_in_scope && in_ranges(scope_ranges_, raw.pc())) {
    out.depth = 1;  // the interrupted PC is in scope: nothing to unwind
    return out;
  }
  if (m.attached && cached_rules_ && unwind_cached(m, raw, out, to_first_in_scope ? &scope_ranges_ : nullptr)) {
    return out;
  }
  if (m.attached) {
    m.current = &raw;
    m.out = &out;
    m.stop_at = to_first_in_scope ? &scope_ranges_ : nullptr;
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
  std::unordered_map<std::string, uint32_t> file_ids;
  std::unordered_map<const char*, uint32_t> cu_files;  // this CU's file-name pointer -> file id
  Dwarf_Die* cu = nullptr;
  Dwarf_Addr bias = 0;
  while ((cu = dwfl_module_nextcu(m.main, cu, &bias)) != nullptr) {
    Dwarf_Lines* lines = nullptr;
    size_t n = 0;
    if (dwarf_getsrclines(cu, &lines, &n) != 0) continue;
    // Relative file names (DWARF 5 directory entries relative to the
    // compilation directory, e.g. under ccache's base_dir) are joined with
    // the CU's DW_AT_comp_dir, so scopes and names see absolute paths.
    Dwarf_Attribute attr;
    const char* comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
    // A CU's rows name its files by pointers into the CU's file table: the
    // path is built and normalised once per file, not once per row (per row
    // it was 85 % of the start-up: 2.9 G instructions for the archiver).
    cu_files.clear();
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
        std::filesystem::path raw_path = src != nullptr ? std::filesystem::path(src) : std::filesystem::path("?");
        if (src != nullptr && raw_path.is_relative() && comp_dir != nullptr) raw_path = std::filesystem::path(comp_dir) / raw_path;
        std::string path = raw_path.lexically_normal().string();
        auto [it, fresh] = file_ids.try_emplace(path, static_cast<uint32_t>(m.files.size()));
        if (fresh) {
          m.file_in_scope.push_back(scope_.contains(path));
          m.files.push_back(std::move(path));
        }
        cf->second = it->second;
      }
      m.rows.push_back(Row{addr + bias, cf->second, static_cast<uint32_t>(std::max(lineno, 0)), end});
    }
  }
  if (m.rows.empty()) {
    error_ = "no DWARF line table in the main executable (build with -g)";
    return;
  }
  std::stable_sort(m.rows.begin(), m.rows.end(), [](const Row& a, const Row& b) {
    return a.addr != b.addr ? a.addr < b.addr : (a.end && !b.end);
  });
  // In-scope address ranges, merged.
  for (size_t i = 0; i + 1 < m.rows.size(); ++i) {
    const Row& r = m.rows[i];
    if (r.end || !m.file_in_scope[r.file] || m.rows[i + 1].addr <= r.addr) continue;
    const AddressRange range{r.addr, m.rows[i + 1].addr};
    if (!scope_ranges_.empty() && scope_ranges_.back().second >= range.first) {
      scope_ranges_.back().second = std::max(scope_ranges_.back().second, range.second);
    } else {
      scope_ranges_.push_back(range);
    }
  }
  // Display names: the shortest path suffix (whole components) that no
  // other in-scope file shares, so "zstd_wrap.cpp" unless two files have that
  // name; independent of where the sources and build trees live.
  std::vector<size_t> in_scope;
  for (size_t f = 0; f < m.files.size(); ++f) {
    if (m.file_in_scope[f]) in_scope.push_back(f);
  }
  auto suffix = [](const std::string& p, int parts) {
    size_t pos = p.size();
    for (int k = 0; k < parts; ++k) {
      const size_t slash = pos == 0 ? std::string::npos : p.rfind('/', pos - 1);
      if (slash == std::string::npos) return p;
      pos = slash;
    }
    return p.substr(pos + 1);
  };
  m.shown.assign(m.files.size(), std::string());
  for (size_t f = 0; f < m.files.size(); ++f) m.shown[f] = m.files[f];
  for (int parts = 1; parts < 64; ++parts) {
    std::unordered_map<std::string, int> count;
    bool pending = false;
    for (size_t f : in_scope) ++count[suffix(m.files[f], parts)];
    for (size_t f : in_scope) {
      if (!m.shown[f].empty() && m.shown[f] != m.files[f]) continue;  // already named
      const std::string sfx = suffix(m.files[f], parts);
      if (count[sfx] == 1 || sfx == m.files[f]) {
        m.shown[f] = sfx + "\x01";  // mark as named (stripped below)
      } else {
        pending = true;
      }
    }
    if (!pending) break;
  }
  for (auto& n : m.shown) {
    if (!n.empty() && n.back() == '\x01') n.pop_back();
  }
}

Symbolizer::~Symbolizer() = default;

size_t Symbolizer::rows() const noexcept { return impl_->rows.size(); }

const char* Symbolizer::Impl::function_at(uint64_t addr) {
  if (!funcs_built) {
    funcs_built = true;
    const int n = dwfl_module_getsymtab(main);
    for (int i = 1; i < n; ++i) {
      GElf_Sym sym;
      GElf_Addr value = 0;
      const char* name = dwfl_module_getsym_info(main, i, &sym, &value, nullptr, nullptr, nullptr);
      if (name == nullptr || *name == '\0' || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
          sym.st_size == 0) {
        continue;
      }
      funcs.push_back(Func{value, value + sym.st_size, name});
    }
    std::sort(funcs.begin(), funcs.end(), [](const Func& a, const Func& b) { return a.lo < b.lo; });
  }
  // A function starting at or below addr that contains it (the nearest few:
  // aliases and nested symbols share addresses).
  auto it = std::upper_bound(funcs.begin(), funcs.end(), addr, [](uint64_t a, const Func& f) { return a < f.lo; });
  for (int k = 0; k < 8 && it != funcs.begin(); ++k) {
    --it;
    if (addr < it->hi) return it->name;
  }
  return dwfl_module_addrname(main, addr);  // none: libdwfl's rule (sizeless symbols)
}

const SourceLine* Symbolizer::line_of(uint64_t pc, bool return_address) {
  const uint64_t key = return_address ? (pc | (uint64_t{1} << 63)) : pc;
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  Impl& m = *impl_;
  const uint64_t addr = return_address && pc > 0 ? pc - 1 : pc;
  const SourceLine* result = nullptr;
  auto it = std::upper_bound(m.rows.begin(), m.rows.end(), addr, [](uint64_t a, const Row& r) { return a < r.addr; });
  if (it != m.rows.begin()) {
    const Row& r = *std::prev(it);
    if (!r.end && it != m.rows.end()) {
      auto& slot = m.lines[{r.file, r.line}];
      if (!slot) {
        slot = std::make_unique<SourceLine>();
        slot->file = m.files[r.file];
        slot->line = r.line;
        slot->in_scope = m.file_in_scope[r.file];
        slot->name = m.shown[r.file] + ":" + std::to_string(r.line);
        slot->function = demangle(m.function_at(addr));
      }
      result = slot.get();
    }
  }
  cache_.emplace(key, result);
  return result;
}

const SourceLine* Symbolizer::attribute(const Sample& s) {
  for (uint32_t i = 0; i < s.depth && i < kSampleFrames; ++i) {
    const SourceLine* l = line_of(s.pc[i], i > 0);
    if (l != nullptr && l->in_scope) return l;
  }
  return nullptr;
}

std::vector<AddressRange> Symbolizer::ranges_of(const SourceLine& line) const {
  const Impl& m = *impl_;
  std::vector<AddressRange> out;
  for (size_t i = 0; i + 1 < m.rows.size(); ++i) {
    const Row& r = m.rows[i];
    if (r.end || r.line != line.line || m.files[r.file] != line.file || m.rows[i + 1].addr <= r.addr) continue;
    const AddressRange range{r.addr, m.rows[i + 1].addr};
    if (!out.empty() && out.back().second >= range.first) {
      out.back().second = std::max(out.back().second, range.second);
    } else {
      out.push_back(range);
    }
  }
  return out;
}

}  // namespace coact::causal
