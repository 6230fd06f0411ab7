// The symbolizer on shared libraries: a library dlopen()ed after the
// Symbolizer was built is found by refresh() (the drainer's re-scan), its
// lines named under a --source-scope pattern, and a library without debug
// information is listed once. The libraries are tests/solib's plugin
// builds (COACT_SOLIB_MODULE, COACT_SOLIB_NODEBUG, COACT_SOLIB_SHARED:
// tests/CMakeLists.txt), each loaded once per process, in this order, by the
// one test case below (a dlopen() cannot be undone for the next case, and a
// Symbolizer built after another read a library's file can place that
// library at the other's mapping of the file: libdwfl's report of
// /proc/PID/maps takes a file's lowest mapping as its start).
// Regression: `--sampling --source-scope '%plugin%'` on a program whose hot
// code was in a dlopen()ed or linked library gave no line region at all and
// said nothing (the symbolizer read only the main executable).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

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

TEST_CASE("symbolizer: libraries dlopen()ed after start are read by refresh(), named under a pattern, "
          "and one without debug information is listed once",
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
  {
    Symbolizer main_only;
    CHECK(main_only.objects() == 1);
    CHECK_FALSE(main_only.refresh());
    CHECK_FALSE(main_only.in_scope_at(ranges.front().first, false));
  }
  // A library without debug information: listed (and said) once, however
  // often the loader's list changes afterwards.
  const uint64_t bare = plugin_entry(COACT_SOLIB_NODEBUG);
  REQUIRE(sym.refresh());
  CHECK(sym.known_address(bare));
  CHECK(sym.line_of(bare, false) == nullptr);
  const auto& without = sym.objects_without_lines();
  REQUIRE(without == std::vector<std::string>{COACT_SOLIB_NODEBUG});
  const uint64_t linked = plugin_entry(COACT_SOLIB_SHARED);  // the SHARED build: another new object
  REQUIRE(sym.refresh());
  CHECK(sym.rescans() == 3);
  CHECK(without == std::vector<std::string>{COACT_SOLIB_NODEBUG});
  const coact::causal::SourceLine* other = nullptr;
  for (uint64_t pc = linked; pc < linked + 64 && other == nullptr; ++pc) {
    const coact::causal::SourceLine* l = sym.line_of(pc, false);
    if (l != nullptr && l->line == kPluginLine) other = l;
  }
  REQUIRE(other != nullptr);
  CHECK(other->name == loop->name);  // the same source file and line, in another object: one line, one region
}

TEST_CASE("symbolizer: a file merely mapped (not loaded) is no object, and the span around its mappings is unknown",
          "[sampler]") {
  // The shape a sanitizer's deleted rodata file or libelf's mmap of an ELF
  // file gives /proc/PID/maps: one file mapped at two places with a hole
  // between them, which libdwfl's report takes as one module spanning both
  // (and a later dlopen() can place a library in the hole). Regression: the
  // Symbolizer took such spans as loaded code, so a library dlopen()ed into
  // one was "known" and never read.
  const std::string copy =
      (std::filesystem::temp_directory_path() / ("coact-mapped-" + std::to_string(getpid()) + ".so")).string();
  std::filesystem::copy_file(COACT_SOLIB_MODULE, copy, std::filesystem::copy_options::overwrite_existing);
  const int fd = open(copy.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const long page = sysconf(_SC_PAGESIZE);
  constexpr size_t kPages = 64;
  auto* span = static_cast<char*>(mmap(nullptr, kPages * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(span != MAP_FAILED);
  REQUIRE(mmap(span, page, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == span);
  char* last = span + (kPages - 1) * page;
  REQUIRE(mmap(last, page, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == last);
  REQUIRE(munmap(span + page, (kPages - 2) * page) == 0);  // the hole
  {
    coact::causal::Symbolizer sym(coact::causal::SourceScope::parse("%coact-mapped-%"));
    CHECK(sym.error().empty());
    CHECK_FALSE(sym.known_address(reinterpret_cast<uint64_t>(span)));
    CHECK_FALSE(sym.known_address(reinterpret_cast<uint64_t>(span + (kPages / 2) * page)));
    CHECK_FALSE(sym.known_address(reinterpret_cast<uint64_t>(last)));
    // Loaded code is known: this function's own address (the main program).
    CHECK(sym.known_address(reinterpret_cast<uint64_t>(&plugin_entry)));
  }
  munmap(span, page);
  munmap(last, page);
  close(fd);
  std::filesystem::remove(copy);
}
