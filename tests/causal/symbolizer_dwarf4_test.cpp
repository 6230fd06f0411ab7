// The symbolizer on a DWARF 4 unit: this file is compiled with -gdwarf-4
// (tests/CMakeLists.txt; GCC 12 defaults to DWARF 5, and Coz's reader needs
// 4), whose line-program header lists directories and files in the older
// layout the symbolizer parses for display names.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include <coact/causal/symbolizer.hpp>

namespace {
volatile uint64_t g_dwarf4_sink = 0;

__attribute__((noinline)) void dwarf4_work(int n) {
  for (int i = 0; i < n; ++i) g_dwarf4_sink = g_dwarf4_sink * 31 + static_cast<uint64_t>(i);  // dwarf4_work body
}
}  // namespace

TEST_CASE("symbolizer: a DWARF 4 unit's lines are named by its header's file table, read on first use", "[sampler]") {
  dwarf4_work(3);
  coact::causal::Symbolizer lazy;
  INFO("symbolizer: " << lazy.error());
  REQUIRE(lazy.has_lines());
  const size_t at_start = lazy.loaded_units();  // a CU without address ranges is read at once (one under TSan)
  CHECK(at_start <= 1);
  const auto pc = reinterpret_cast<uint64_t>(&dwarf4_work) + 8;
  const coact::causal::SourceLine* l = lazy.line_of(pc, false);
  REQUIRE(l != nullptr);
  CHECK(lazy.loaded_units() == at_start + 1);  // this file's CU only
  CHECK(l->in_scope);
  CHECK(l->file.ends_with("tests/causal/symbolizer_dwarf4_test.cpp"));
  // The short name: this file's path was found in the DWARF 4 header (a
  // path missing from the headers would be shown whole).
  CHECK(l->name.rfind("symbolizer_dwarf4_test.cpp:", 0) == 0);
  CHECK(l->function.find("dwarf4_work") != std::string::npos);
  coact::causal::Symbolizer eager;
  eager.load_all();
  const coact::causal::SourceLine* e = eager.line_of(pc, false);
  REQUIRE(e != nullptr);
  CHECK(e->name == l->name);
  CHECK(e->file == l->file);
  // The line's addresses: read from the units whose file tables list this
  // file (this file's unit only), the same as from every unit.
  const auto ranges = lazy.ranges_of(*l);
  CHECK_FALSE(ranges.empty());
  CHECK(ranges == eager.ranges_of(*e));
  CHECK(lazy.loaded_units() < lazy.units() / 2);
}
