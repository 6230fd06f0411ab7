// Tests for coact/calibrate/calibration_file.hpp: round trip, malformed files
// ignored with a warning, atomic write, default path rule.
#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <coact/calibrate/calibration_file.hpp>

namespace cc = coact::calibrate;
namespace fs = std::filesystem;

using coact::test::TempDir;

namespace {

// A fresh directory under $TMPDIR (mkdtemp), removed on scope exit.
cc::Calibration sample() {
  cc::Calibration c;
  c.tsc_hz = 2'793'438'000;
  c.invariant_tsc = true;
  c.handoff_cost_ns = 9'250;
  c.wake_break_even_ns = 18'500;
  c.cores = 2;
  c.cpu_model = "Intel(R) Xeon(R) Processor @ 2.80GHz \"quoted\"";
  c.measured_at = "2024-05-01T12:00:00Z";
  return c;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

}  // namespace

TEST_CASE("calibration file round trips through save and load", "[calibrate]") {
  TempDir dir;
  const fs::path path = dir.path / "nested" / "coact" / "calibration.json";  // parents created
  const cc::Calibration c = sample();
  cc::save_calibration(c, path);
  std::ostringstream warn;
  const auto loaded = cc::load_calibration(path, warn);
  REQUIRE(loaded.has_value());
  CHECK(*loaded == c);
  CHECK(warn.str().empty());
  CHECK((fs::status(path).permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read));
  // The JSON form parses back to the same record too.
  CHECK(cc::calibration_from_json(cc::to_json(c)) == c);
}

TEST_CASE("atomic write replaces the file and leaves no temporary behind", "[calibrate]") {
  TempDir dir;
  const fs::path path = dir.path / "calibration.json";
  cc::Calibration c = sample();
  cc::save_calibration(c, path);
  c.handoff_cost_ns = 12'000;
  c.wake_break_even_ns = 24'000;
  cc::save_calibration(c, path);  // overwrite
  CHECK(names_in(dir.path) == std::vector<std::string>{"calibration.json"});
  std::ostringstream warn;
  const auto loaded = cc::load_calibration(path, warn);
  REQUIRE(loaded.has_value());
  CHECK(loaded->handoff_cost_ns == 12'000u);

  // A failing save (the "directory" is a regular file) throws naming the path
  // and leaves nothing behind.
  const fs::path blocker = dir.path / "blocker";
  write_file(blocker, "x");
  const fs::path bad = blocker / "calibration.json";
  REQUIRE_THROWS_WITH(cc::save_calibration(c, bad), Catch::Contains(bad.string()));
  CHECK(names_in(dir.path).size() == 2u);  // calibration.json + blocker
}

TEST_CASE("a missing calibration file is silently absent", "[calibrate]") {
  TempDir dir;
  std::ostringstream warn;
  CHECK_FALSE(cc::load_calibration(dir.path / "nope.json", warn).has_value());
  CHECK_FALSE(cc::load_calibration(dir.path / "no_dir" / "nope.json", warn).has_value());
  CHECK(warn.str().empty());
}

TEST_CASE("a malformed calibration file is ignored with a warning naming path and problem", "[calibrate]") {
  TempDir dir;
  const fs::path path = dir.path / "calibration.json";
  const std::string good = cc::to_json(sample());
  const auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    s.replace(at, from.size(), to);
    return s;
  };
  const std::map<std::string, std::pair<std::string, std::string>> cases = {
      {"truncated", {good.substr(0, good.size() / 2), "not valid JSON"}},
      {"not an object", {"[1,2,3]", "not a JSON object"}},
      {"empty", {"", "not valid JSON"}},
      {"wrong schema", {replace("\"schema\": 1", "\"schema\": 2"), "schema"}},
      {"missing tsc_hz", {replace("\"tsc_hz\": 2793438000,", ""), "missing key \"tsc_hz\""}},
      {"tsc_hz out of range", {replace("2793438000", "5"), "\"tsc_hz\" = 5 is out of range"}},
      {"negative handoff", {replace("\"handoff_cost_ns\": 9250", "\"handoff_cost_ns\": -3"), "handoff_cost_ns"}},
      {"tsc_hz as string", {replace("2793438000", "\"2793438000\""), "\"tsc_hz\" must be a non-negative integer"}},
      {"invariant as int", {replace("\"invariant_tsc\": true", "\"invariant_tsc\": 1"), "invariant_tsc"}},
      {"zero cores", {replace("\"cores\": 2", "\"cores\": 0"), "cores"}},
  };
  for (const auto& [name, text_and_problem] : cases) {
    INFO(name);
    write_file(path, text_and_problem.first);
    std::ostringstream warn;
    CHECK_FALSE(cc::load_calibration(path, warn).has_value());
    CHECK_THAT(warn.str(), Catch::Contains("ignoring calibration file '" + path.string() + "'") &&
                               Catch::Contains(text_and_problem.second));
  }
  // Unknown keys are tolerated (forward compatible).
  write_file(path, replace("\"schema\": 1,", "\"schema\": 1, \"future_field\": [1],"));
  std::ostringstream warn;
  CHECK(cc::load_calibration(path, warn).has_value());
  CHECK(warn.str().empty());
}

TEST_CASE("default calibration path follows COACT_CALIBRATION_FILE, XDG_CACHE_HOME, HOME", "[calibrate]") {
  std::map<std::string, std::string> env;
  const auto lookup = [&](const char* key) -> const char* {
    auto it = env.find(key);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  env = {{"XDG_CACHE_HOME", "/xdg"}, {"HOME", "/home/u"}};
  CHECK(cc::default_calibration_path("/x/cal.json", lookup) == fs::path("/x/cal.json"));
  CHECK(cc::default_calibration_path("", lookup) == fs::path("/xdg/coact/calibration.json"));
  env = {{"XDG_CACHE_HOME", ""}, {"HOME", "/home/u"}};
  CHECK(cc::default_calibration_path("", lookup) == fs::path("/home/u/.cache/coact/calibration.json"));
  env = {};
  const fs::path fallback = cc::default_calibration_path("", lookup);  // password database
  CHECK((fallback.empty() || fallback.filename() == "calibration.json"));
}

TEST_CASE("machine facts are sane", "[calibrate]") {
  CHECK(cc::online_cores() >= 1u);
  CHECK_FALSE(cc::current_cpu_model().empty());
  const std::string t = cc::iso8601_utc_now();
  CHECK(t.size() == 20u);
  CHECK(t[4] == '-');
  CHECK(t[10] == 'T');
  CHECK(t.back() == 'Z');
}
