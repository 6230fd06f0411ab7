// coact/causal/symbolizer.hpp: program counters to source lines, outside the
// signal handler (sampled-line regions; docs/DESIGN.md "Region").
//
// What: the DWARF line tables (elfutils libdw/libdwfl) of the main
// executable and, when the source scope has patterns, of every loaded
// library (linked, or dlopen()ed: see refresh()), each read per compilation
// unit on first use: construction reads each CU's
// address ranges and the file table of its line program's header (display
// names need every in-scope file), not the rows; the first PC looked up in a
// CU reads that CU's rows into an address-sorted table (a profile without a
// line experiment touches a few of the program's CUs; reading all of them at
// start-up cost the example archiver ~0.057 s of CPU). A PC maps to its row
// (file, line) by binary search, and to its function by the
// ELF symbol table (its function symbols sorted by address once, at the first
// new line; dwfl_module_addrname, which scans the whole table per call, only
// for addresses no sized symbol covers; demangled). Results are cached per
// address. A source scope decides which lines can be regions (Coz's
// --source-scope): by default the main executable's own sources — every file
// except system headers and libraries (paths under /usr/) and coact's own
// library sources (runtime/, causal/, calibrate/ of the source tree coact was
// built from: the scheduler is not a candidate region). Under the default
// rule shared libraries are not read (as Coz's default binary scope, the
// main executable); with patterns every loaded object's sources are matched,
// so --source-scope '%plugin%' names a plugin's lines. An object without a
// line table that the program built (not under /usr/ or /lib*/) or whose
// path a pattern matches is said once on stderr and listed by
// objects_without_lines() (the sampler record's no_debug_info and symbolizer_error).
// Libraries present at construction are placed by libdwfl's report of
// /proc/PID/maps, which takes a file's lowest mapping as its start: a
// library file the process had also mapped itself at a lower address (a
// second Symbolizer, or the program reading the file with libelf) is placed
// there and its lines are not found; one Symbolizer per process
// (line_region.cpp) is built before it maps any. Libraries found by
// refresh() are placed by the loader's own list.
// A sample is attributed to its first frame (interrupted PC, then return
// addresses) whose line is in scope, as Coz attributes to the first in-scope
// frame of its callchain. Inlined frames are not expanded: a PC inside code
// inlined from an out-of-scope header counts for the next physical frame.
//
// Unwinding (unwind()): libdwfl's frame unwinder attached to this process
// with callbacks that serve the registers and stack bytes the signal handler
// copied (sampler.hpp), as perf's unwind-libdw does for `perf record
// --call-graph dwarf`.
//
// Threads: a Symbolizer is used by one thread at a time (the drainer).
// Blocking: the constructor reads CU headers (~5 ms of CPU for the
// archiver's 27 CUs); a lookup in a CU not yet read reads its rows
// (milliseconds for a large CU), ranges_of those of the CUs that list the
// line's file. Errors: construction never throws for missing debug
// information — the table is then empty and every lookup says "not in
// scope"; error() tells why.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <coact/causal/sampler.hpp>

namespace coact::causal {

/// Which source files can be line regions.
struct SourceScope {
  /// Coz-style patterns ('%' matches any run of characters) matched against
  /// the file's full path; a file is in scope if one matches. Empty: the
  /// default rule (file comment).
  std::vector<std::string> patterns;
  /// Parses a comma-separated list ("" → default rule). Pure.
  static SourceScope parse(std::string_view csv);
  /// True if `path` is in scope. Pure.
  bool contains(std::string_view path) const;
  /// True if a pattern matches `path` (false without patterns). Pure.
  bool matches_pattern(std::string_view path) const;
};

/// A source line of a loaded object (the main executable, or a library).
struct SourceLine {
  std::string file;  ///< Full path as in DWARF.
  uint32_t line = 0;
  std::string function;  ///< Demangled symbol containing the address ("" if none).
  std::string name;      ///< Display name "file.cpp:41": the shortest path suffix no other in-scope file shares.
  bool in_scope = false;
};

/// Half-open address interval [lo, hi).
using AddressRange = std::pair<uint64_t, uint64_t>;

class Symbolizer {
 public:
  explicit Symbolizer(SourceScope scope = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  /// The line of `pc` (a return address when `return_address`: looked up
  /// at pc − 1, inside the call instruction), or null if `pc` is outside the
  /// line tables read. Cached per address (refresh() empties the cache).
  const SourceLine* line_of(uint64_t pc, bool return_address);

  /// Unwinds a raw sample: frame 0 is its interrupted PC, then the return
  /// addresses found by libdwfl's CFI unwinder (.eh_frame / .debug_frame)
  /// over the sample's registers and stack copy (memory outside the copy
  /// reads as unavailable, which ends the walk). At most kSampleFrames.
  /// `to_first_in_scope`: stop at the first frame in scope (in_scope_at()),
  /// the one attribute() returns, so attribute() gives the same line as
  /// after a full walk; a sample whose PC is in scope is not unwound at all.
  /// Each frame's unwinding rule (CFA = rsp or rbp + offset, return
  /// address and rbp saved at CFA + offset, or unchanged) is read from
  /// libdw's CFI once per address and cached; a sample meeting a rule of
  /// another form (a DWARF expression, a CFA in another register past frame
  /// 0, an address without CFI) is unwound by libdwfl's own unwinder
  /// (far costlier per frame: it evaluates every register's rule),
  /// which gives the same frames.
  Sample unwind(const RawSample& raw, bool to_first_in_scope = false);

  /// Benchmarks and tests: false makes unwind() use libdwfl's unwinder for
  /// every sample (the reference the cached rules must agree with).
  void use_cached_rules(bool on) noexcept { cached_rules_ = on; }

  /// The first frame of `s` whose line is in scope (null if none).
  const SourceLine* attribute(const Sample& s);

  /// Address ranges (sorted, merged) whose rows are `line` (same file and
  /// number). Empty if unknown. Reads the rows of every CU whose file table
  /// lists the line's file (all CUs for a file no header listed).
  std::vector<AddressRange> ranges_of(const SourceLine& line);

  /// True if the line of `pc` (as line_of) is in scope.
  bool in_scope_at(uint64_t pc, bool return_address);

  /// True if some object read has a line table (else error() says why).
  bool has_lines() const noexcept;
  /// Objects read that have no line table and were said on stderr (paths).
  const std::vector<std::string>& objects_without_lines() const noexcept;
  /// Objects whose line tables were looked for, and refresh()es that found the loader's list changed.
  size_t objects() const noexcept;
  size_t rescans() const noexcept;
  /// True if `pc` lies in a loaded segment of an object in the loader's
  /// list when the Symbolizer was built or at the last refresh() (files
  /// merely mapped, not loaded, are not objects).
  bool known_address(uint64_t pc) const noexcept;
  /// Reads the objects loaded since construction or the last refresh()
  /// (dlopen()): when the loader's count of loaded objects (dl_iterate_phdr's
  /// dlpi_adds) changed, each object of its list that libdwfl does not know
  /// is reported at its load bias and read like those found at start; the
  /// lookup caches are emptied. Only with scope patterns (the default scope
  /// reads the main executable alone). Returns true if the list changed.
  /// Called by the drainer, never in a signal handler (dl_iterate_phdr takes
  /// the loader's lock; reading allocates). Cost without a change: one
  /// dl_iterate_phdr callback.
  bool refresh();
  /// Rows read so far (CUs are read on first use).
  size_t rows() const noexcept;
  /// Compilation units with a line program, and how many were read so far.
  size_t units() const noexcept;
  size_t loaded_units() const noexcept;
  /// Reads every CU's rows now (ranges_of does; tests compare with it).
  void load_all();
  /// Why the table is empty ("" if it is not).
  const std::string& error() const noexcept { return error_; }

  struct Impl;  ///< Implementation (src/detail/symbolizer_impl.hpp); public for its C callbacks.

 private:
  std::unique_ptr<Impl> impl_;
  SourceScope scope_;
  std::string error_;
  std::unordered_map<uint64_t, const SourceLine*> cache_;  // key: pc, or pc|1<<63 for return addresses
  bool cached_rules_ = true;
};

}  // namespace coact::causal
