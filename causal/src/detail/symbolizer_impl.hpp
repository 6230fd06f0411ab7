// Internal definitions the symbolizer's files share: Symbolizer::Impl
// (libdwfl's session, the objects, CUs, rows, files and the CFI rule
// cache), a line-table row, the debug sections a line-header read needs,
// and the functions one file defines for another. Included only by
// dwarf_line_header.cpp, source_scope.cpp, unwinder.cpp, object_scan.cpp
// and line_lookup.cpp, which compile as ONE unit (causal/CMakeLists.txt,
// unity group "symbolizer"): its anonymous-namespace definitions exist
// once, in that unit. How the symbolizer works follows.
//
// The symbolizer: PCs to source lines with elfutils libdwfl
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
#pragma once

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
#include <set>
#include <string_view>
#include <unordered_set>

#ifndef COACT_SOURCE_ROOT
#define COACT_SOURCE_ROOT ""
#endif

namespace coact::causal {

// In a named namespace: Symbolizer::Impl, a class with linkage, holds rows.
namespace detail {
struct Row {
  uint64_t addr;
  uint32_t file;  // index into files
  uint32_t line;
  bool end;  // end of sequence
};
}  // namespace detail

namespace {

using detail::Row;

struct Section {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

struct DebugSections {
  Section line, line_str, str;
};

// Defined in one symbolizer file, used by another (the definition says what it does).
bool header_files(const DebugSections& secs, uint64_t off, const char* comp_dir, std::vector<std::string>& out);
Section section_named(Elf* elf, const char* wanted);
std::string file_path(const char* dir, const char* name, const char* comp_dir);
extern const Dwfl_Thread_Callbacks kUnwindCallbacks;

}  // namespace

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
    Dwarf_Addr bias = 0;      // run-time address - link-time address
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
  // The run-time addresses of every object in the loader's list (its
  // PT_LOAD segments, dl_iterate_phdr) at construction or the last
  // refresh(), sorted by lo; and which objects (path, load bias) that list
  // held. Not libdwfl's module ranges: its report of /proc/PID/maps also
  // turns files mapped for reading (a sanitizer's deleted rodata file,
  // libelf's mmap of an ELF file) into modules, whose spans can cover
  // where a later dlopen() places a library.
  std::vector<std::pair<uint64_t, uint64_t>> loaded_segments;
  std::set<std::pair<std::string, uint64_t>> loaded_objects;
  bool in_module(uint64_t addr) const {
    auto it = std::upper_bound(loaded_segments.begin(), loaded_segments.end(), addr,
                               [](uint64_t a, const std::pair<uint64_t, uint64_t>& r) { return a < r.first; });
    return it != loaded_segments.begin() && addr < std::prev(it)->second;
  }
  bool every_object = false;                // scope patterns: libraries' sources can be named too
  unsigned long long loader_adds = 0;       // dl_iterate_phdr's dlpi_adds when the modules were last reported
  std::vector<std::string> without_lines;   // objects said to have no line table (Symbolizer::objects_without_lines)
  std::vector<std::string> in_scope_paths;  // every in-scope file of every object's headers (display names)
  size_t rescans = 0;
  // Compilation units of the objects; a CU's rows are read on first use.
  struct Cu {
    Dwarf_Die* die;  // libdwfl's: lives as long as dwfl
    const char* comp_dir;
    uint32_t object;  // index into objects
    bool loaded = false;
    bool may_be_in_scope = true;            // some file of its header's table is in scope (else no row of it can be)
    size_t paths_begin = 0, paths_end = 0;  // its header's files in the constructor's list
    std::vector<Row> rows;                  // sorted by address, end-of-sequence rows first among equal addresses
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
  std::vector<std::string> shown;                      // display name of each file
  const SourceScope* scope = nullptr;
  void load(uint32_t cu);
  void load_all();
  const Row* row_at(uint64_t addr, const Row** next);
  std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<SourceLine>> lines;  // (file, line) -> line
  // Unwinding rules by lookup address (a frame's PC; a return address - 1).
  struct Rule {
    enum Kind : uint8_t { kOther, kStep, kOutermost } kind = kOther;  // kOther: libdwfl unwinds the sample
    uint8_t cfa_reg = 0;                                              // DWARF register: 7 rsp, 6 rbp (any at frame 0)
    enum Rbp : uint8_t { kSame, kSaved, kLost } rbp = kSame;
    int64_t cfa_off = 0;
    int64_t ra_off = 0;   // return address at CFA + ra_off
    int64_t rbp_off = 0;  // kSaved: caller's rbp at CFA + rbp_off
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

}  // namespace coact::causal
