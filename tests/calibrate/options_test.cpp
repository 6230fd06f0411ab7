// options_test.cpp: the declaration table and resolution of coact/options.hpp
// that are not the scheduler's (tests/runtime/tuning_test.cpp has precedence
// and error classes through resolve_tuning): calibrate's and causal's keys,
// typed reads, the listing, and docs/options.md's table, which must be the
// one generated from the table (so every key is documented).
#include <catch2/catch.hpp>

#include <coact/options.hpp>

#include <set>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace co = coact::options;
using Catch::Matchers::Contains;

namespace {

co::Values from_env(std::vector<std::string> env) {
  co::Sources s;
  s.env = std::move(env);
  return co::resolve(s);
}

std::string error_of(std::vector<std::string> env) {
  try {
    (void)from_env(std::move(env));
  } catch (const co::option_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the table: names are COACT_*, groups known, integer ranges sane", "[options]") {
  std::set<std::string> names;
  for (const co::Key& k : co::keys()) {
    INFO(k.name);
    CHECK(k.name.starts_with("COACT_"));
    CHECK(names.insert(std::string(k.name)).second);
    CHECK_FALSE(k.doc.empty());
    CHECK(co::find(k.name) == &k);
    CHECK_FALSE(k.name.ends_with("_USEC"));  // one unit spelling: _US
    if (k.type == co::Type::integer) CHECK(k.min <= k.max);
  }
  CHECK(co::find("COACT_NO_SUCH") == nullptr);
  // Every default resolves: the defaults pass their own validation.
  const co::Values d = co::resolve([] {
    co::Sources s;
    s.env = std::vector<std::string>{};
    return s;
  }());
  for (const co::Entry& e : d.entries()) CHECK(e.source == co::Source::default_value);
}

TEST_CASE("calibrate's keys: COACT_TSC_HZ and COACT_HANDOFF_COST_NS ranges and auto", "[options]") {
  CHECK(from_env({"COACT_TSC_HZ=2800000000"}).integer("COACT_TSC_HZ") == 2'800'000'000u);
  CHECK(from_env({"COACT_TSC_HZ=1000000"}).integer("COACT_TSC_HZ") == 1'000'000u);
  CHECK(from_env({"COACT_TSC_HZ=100000000000"}).integer("COACT_TSC_HZ") == 100'000'000'000u);
  CHECK_FALSE(from_env({"COACT_TSC_HZ=auto"}).integer("COACT_TSC_HZ"));
  CHECK_FALSE(from_env({}).integer("COACT_TSC_HZ"));
  for (const char* bad : {"999999", "100000000001", "2.8e9", "-1", "fast"}) {
    INFO(bad);
    CHECK_THAT(error_of({std::string("COACT_TSC_HZ=") + bad}),
               Contains(std::string("COACT_TSC_HZ='") + bad + "'") && Contains("1000000..100000000000 (Hz)"));
  }
  CHECK(from_env({"COACT_HANDOFF_COST_NS=9000"}).integer("COACT_HANDOFF_COST_NS") == 9000u);
  CHECK_FALSE(from_env({"COACT_HANDOFF_COST_NS=auto"}).integer("COACT_HANDOFF_COST_NS"));
  for (const char* bad : {"0", "100000001", "9us", "-4", "1.5"}) {
    INFO(bad);
    CHECK_THAT(error_of({std::string("COACT_HANDOFF_COST_NS=") + bad}),
               Contains(std::string("COACT_HANDOFF_COST_NS='") + bad + "'") && Contains("1..100000000 (ns)"));
  }
  CHECK(from_env({"COACT_CALIBRATION_FILE=/x/c.json"}).text("COACT_CALIBRATION_FILE") == "/x/c.json");
}

TEST_CASE("typed reads: lists, text choices, is_set, sources", "[options]") {
  const co::Values v = from_env({"COACT_CAUSAL_PROGRESS= a, b ,,c", "COACT_CAUSAL_REGION_WEIGHT=uniform"});
  CHECK(v.list("COACT_CAUSAL_PROGRESS") == std::vector<std::string>{"a", "b", "c"});
  CHECK(v.text("COACT_CAUSAL_REGION_WEIGHT") == "uniform");
  CHECK(v.is_set("COACT_CAUSAL_PROGRESS"));
  CHECK_FALSE(v.is_set("COACT_WORKERS"));
  CHECK(v.entry("COACT_CAUSAL_PROGRESS").source == co::Source::environment);
  CHECK(v.entry("COACT_CAUSAL_PROGRESS").origin == "COACT_CAUSAL_PROGRESS");
  CHECK_THROWS_AS(v.integer("COACT_NO_SUCH"), std::logic_error);
  CHECK_THROWS_AS(v.boolean("COACT_WORKERS"), std::logic_error);  // wrong type: a programming error
  CHECK_THAT(error_of({"COACT_CAUSAL_REGION_WEIGHT=random"}), Contains("one of evidence/time/uniform"));
  coact::test::TempDir dir;
  co::Sources s;
  s.env = std::vector<std::string>{};
  s.config_path = dir.write("c.toml", "[causal]\nprogress = [\"x\", \"y,z\"]\nenable = true\n");
  const co::Values f = co::resolve(s);
  CHECK(f.list("COACT_CAUSAL_PROGRESS") == std::vector<std::string>{"x", "y", "z"});
  CHECK(f.boolean("COACT_CAUSAL"));
  CHECK(f.entry("COACT_CAUSAL").source == co::Source::config_file);
  CHECK(f.text("COACT_CONFIG") == s.config_path);
}

TEST_CASE("a tool's own flags (Sources::given): validated like --coact-*, named as written, above the environment",
          "[options]") {
  co::Sources s;
  s.env = std::vector<std::string>{"COACT_CAUSAL_COOLDOWN_MS=20"};
  s.given.push_back({"COACT_CAUSAL_COOLDOWN_MS", "30", "--cooldown-ms"});
  const co::Values v = co::resolve(s);
  CHECK(v.integer("COACT_CAUSAL_COOLDOWN_MS") == 30u);
  CHECK(v.entry("COACT_CAUSAL_COOLDOWN_MS").source == co::Source::command_line);
  CHECK(v.entry("COACT_CAUSAL_COOLDOWN_MS").origin == "--cooldown-ms");
  s.given.push_back({"COACT_CAUSAL_COOLDOWN_MS", "700000", "--cooldown-ms"});
  std::string err;
  try {
    (void)co::resolve(s);
  } catch (const co::option_error& e) {
    err = e.what();
  }
  CHECK_THAT(err, Contains("--cooldown-ms='700000' (from command line): expected an integer in 0..600000"));
  s.given = {{"COACT_NO_SUCH", "1", "--no-such"}};
  CHECK_THROWS_AS(co::resolve(s), std::logic_error);  // a tool binding an undeclared key: a programming error
}

TEST_CASE("the listing names every key, its value and its source", "[options]") {
  co::Sources s;
  s.env = std::vector<std::string>{"COACT_WORKERS=3"};
  s.args = {"--coact-peer-steal"};
  const std::string l = co::resolve(s).listing();
  CHECK_THAT(l, Contains("COACT_WORKERS=3  (environment COACT_WORKERS;"));
  CHECK_THAT(l, Contains("COACT_PEER_STEAL=true  (command line --coact-peer-steal;"));
  for (const co::Key& k : co::keys()) CHECK_THAT(l, Contains("  " + std::string(k.name) + "="));
}

TEST_CASE("docs/options.md's table is the one generated from the declarations", "[options]") {
  // Regenerate with: coact-calibrate --print-config --markdown
  const std::string readme = coact::test::read_file(COACT_SOURCE_DIR "/docs/options.md");
  REQUIRE_FALSE(readme.empty());
  const std::string begin = "<!-- options-table: generated by `coact-calibrate --print-config --markdown` -->\n";
  const std::string end = "<!-- options-table end -->";
  const auto b = readme.find(begin);
  const auto e = readme.find(end);
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  CHECK(readme.substr(b + begin.size(), e - b - begin.size()) == co::markdown_table());
  for (const co::Key& k : co::keys()) CHECK_THAT(readme, Contains("`" + std::string(k.name) + "`"));
}
