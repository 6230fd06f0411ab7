// The symbolizer on shared libraries: a library dlopen()ed after the
// Symbolizer was built is found by refresh() (the drainer's re-scan), its
// lines named under a --source-scope pattern, and a library without debug
// information is listed once. The libraries are tests/solib's plugin
// modules (COACT_SOLIB_MODULE, COACT_SOLIB_NODEBUG: tests/CMakeLists.txt).
// Regression: `--sampling --source-scope '%plugin%'` on a program whose hot
// code was in a dlopen()ed or linked library gave no line region at all and
// said nothing (the symbolizer read only the main executable).
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <string>

#include <coact/causal/symbolizer.hpp>

namespace {
constexpr int kPluginLine = 12;  // tests/solib/solib_plugin.hpp kPluginLine

// The plugin's entry point, dlopen()ed once per process (never closed: its
// addresses must stay its own for the Symbolizers that read it).
uint64_t plugin_entry(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  INFO(path << ": " << (h == nullptr ? dlerror() : ""));
  REQUIRE(h != nullptr);
  void* f = dlsym(h, "coact_solib_work");
  REQUIRE(f != nullptr);
  return reinterpret_cast<uint64_t>(f);
}
}  // namespace

TEST_CASE("symbolizer: a library dlopen()ed after start is read by refresh() and its lines named under a pattern",
          "[sampler]") {
  using coact::causal::SourceScope;
  using coact::causal::Symbolizer;
  Symbolizer sym(SourceScope::parse("%solib_plugin%"));
  const size_t objects_at_start = sym.objects();
  CHECK(objects_at_start >= 1);
  const uint64_t entry = plugin_entry(COACT_SOLIB_MODULE);
  // Before the re-scan the plugin's code is in no module the symbolizer knows.
  CHECK_FALSE(sym.known_address(entry));
  CHECK(sym.line_of(entry, false) == nullptr);  // cached "no line": refresh() must forget it
  REQUIRE(sym.refresh());
  CHECK(sym.known_address(entry));
  CHECK(sym.objects() == objects_at_start + 1);  // the plugin (system libraries are not read: no pattern names them)
  CHECK(sym.rescans() == 1);
  CHECK_FALSE(sym.refresh());  // nothing loaded since: one dl_iterate_phdr, no re-scan
  CHECK(sym.rescans() == 1);
  // The loop's line: some address of the function's first bytes maps to it.
  const coact::causal::SourceLine* loop = nullptr;
  for (uint64_t pc = entry; pc < entry + 64 && loop == nullptr; ++pc) {
    const coact::causal::SourceLine* l = sym.line_of(pc, false);
    if (l != nullptr && l->line == kPluginLine) loop = l;
  }
  REQUIRE(loop != nullptr);
  CHECK(loop->in_scope);
  CHECK(loop->name == "solib_plugin.cpp:" + std::to_string(kPluginLine));
  CHECK(loop->function == "coact_solib_work");
  CHECK(loop->file.ends_with("tests/solib/solib_plugin.cpp"));
  // Its addresses (what the signal handler matches during an experiment) lie
  // in the plugin, around its entry point.
  const auto ranges = sym.ranges_of(*loop);
  REQUIRE_FALSE(ranges.empty());
  for (const auto& [lo, hi] : ranges) {
    CHECK(lo >= entry);
    CHECK(hi <= entry + 4096);
    CHECK(sym.known_address(lo));
  }
  CHECK(sym.objects_without_lines().empty());
  // The default scope reads the main executable only (as Coz's default binary
  // scope): the plugin's line is no candidate and nothing is re-scanned.
  Symbolizer main_only;
  CHECK(main_only.objects() == 1);
  CHECK_FALSE(main_only.refresh());
  CHECK_FALSE(main_only.in_scope_at(ranges.front().first, false));
}

TEST_CASE("symbolizer: a library without debug information is listed once, however often the loader's list changes",
          "[sampler]") {
  using coact::causal::SourceScope;
  using coact::causal::Symbolizer;
  Symbolizer sym(SourceScope::parse("%solib_plugin%"));
  const uint64_t entry = plugin_entry(COACT_SOLIB_NODEBUG);
  (void)sym.refresh();  // the nodebug module (and the other test's module, if it ran first in this process)
  CHECK(sym.known_address(entry));
  CHECK(sym.line_of(entry, false) == nullptr);
  const auto& without = sym.objects_without_lines();
  REQUIRE(std::count(without.begin(), without.end(), std::string(COACT_SOLIB_NODEBUG)) == 1);
  (void)plugin_entry(COACT_SOLIB_MODULE);  // possibly a new object: a second re-scan
  (void)sym.refresh();
  CHECK(std::count(without.begin(), without.end(), std::string(COACT_SOLIB_NODEBUG)) == 1);
  // System libraries (the C library, elfutils) are not said even when read.
  for (const auto& path : without) CHECK_FALSE(path.starts_with("/usr/"));
}
