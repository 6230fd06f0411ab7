// Tests for coact/causal/profile_writer.hpp: profile.coz lines carry exactly
// Coz 0.2.2's field names, JSON lines parse, and a writer destroyed or killed
// mid-run leaves only whole experiments.
#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <coact/causal/profile_writer.hpp>

namespace ca = coact::causal;
namespace fs = std::filesystem;

using coact::test::read_file;
using coact::test::TempDir;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);  // blank lines: page padding, skipped by every reader
  }
  return out;
}

// Every line of a JSON-lines file, each required to be one valid JSON object
// (no blank lines: line-by-line JSONL readers must accept the file), without
// the writer's {"type":"pad"} page-padding records.
std::vector<nlohmann::json> json_records(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  size_t lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    INFO("JSON line " << lineno << ": '" << line.substr(0, 80) << "'");
    const auto j = nlohmann::json::parse(line, nullptr, false);
    REQUIRE(j.is_object());
    REQUIRE(j.contains("type"));
    if (j["type"] != "pad") out.push_back(j);
  }
  return out;
}

struct CozRecord {
  std::string type;
  std::vector<std::string> keys;  // in order
  std::map<std::string, std::string> fields;
};

// Coz's text format: tab-separated, first field the record type, then key=value
// split at the first '=' (the viewer's and coact_plot.py's reading).
CozRecord parse_coz(const std::string& line) {
  CozRecord r;
  std::vector<std::string> parts;
  size_t pos = 0;
  for (;;) {
    const size_t tab = line.find('\t', pos);
    parts.push_back(line.substr(pos, tab == std::string::npos ? std::string::npos : tab - pos));
    if (tab == std::string::npos) break;
    pos = tab + 1;
  }
  r.type = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    REQUIRE(eq != std::string::npos);
    r.keys.push_back(parts[i].substr(0, eq));
    r.fields[parts[i].substr(0, eq)] = parts[i].substr(eq + 1);
  }
  return r;
}

ca::ExperimentRecord sample_experiment(uint64_t index) {
  ca::ExperimentRecord e;
  e.index = index;
  e.region = "app::Parser::on(app::Line)";
  e.speedup_pct = 25;
  e.duration_ns = 500'000'000;
  e.delay_ns = 100'000'000;
  e.effective_ns = 400'000'000;
  e.visits = 1234;
  e.region_ns = 300'000'000;
  e.throughput = {{"lines", 1000}, {"app::Sink::on(app::Line)", 990}};
  e.latency = {{"request", 900, 880, 20}};
  e.handlers = {{"app::Parser::on(app::Line)", 1234, 300'000'000}, {"app::Sink::on(app::Line)", 990, 5'000'000}};
  return e;
}

void check_coz_line_fields(const CozRecord& r) {
  using V = std::vector<std::string>;
  if (r.type == "startup") {
    CHECK(r.keys == V{"time"});
  } else if (r.type == "experiment") {
    CHECK(r.keys == V{"selected", "speedup", "duration", "selected-samples"});
  } else if (r.type == "throughput-point") {
    CHECK(r.keys == V{"name", "delta"});
  } else if (r.type == "latency-point") {
    CHECK(r.keys == V{"name", "arrivals", "departures", "difference"});
  } else if (r.type == "runtime") {
    CHECK(r.keys == V{"time"});
  } else if (r.type == "samples") {
    CHECK(r.keys == V{"location", "count"});
  } else {
    FAIL("unexpected profile.coz record type " << r.type);
  }
}

}  // namespace

TEST_CASE("speedup is written with two decimals", "[causal][writer]") {
  CHECK(ca::format_speedup(0) == "0.00");
  CHECK(ca::format_speedup(5) == "0.05");
  CHECK(ca::format_speedup(25) == "0.25");
  CHECK(ca::format_speedup(100) == "1.00");
  CHECK(ca::format_speedup(250) == "1.00");  // clamped
}

TEST_CASE("profile.coz experiment records use Coz 0.2.2's exact field names", "[causal][writer]") {
  const std::string text = ca::format_coz_experiment(sample_experiment(0));
  CHECK(text ==
        "experiment\tselected=app::Parser::on(app::Line)\tspeedup=0.25\tduration=400000000\tselected-samples=1234\n"
        "throughput-point\tname=lines\tdelta=1000\n"
        "throughput-point\tname=app::Sink::on(app::Line)\tdelta=990\n"
        "latency-point\tname=request\tarrivals=900\tdepartures=880\tdifference=20\n");
  for (const auto& line : lines_of(text)) check_coz_line_fields(parse_coz(line));
  // duration= is the effective duration (wall minus injected delay).
  CHECK(parse_coz(lines_of(text)[0]).fields["duration"] == "400000000");
  CHECK(ca::format_coz_startup(42) == "startup\ttime=42\n");
  CHECK(ca::format_coz_runtime(7, {{"a", 3}, {"b", 0}}) == "runtime\ttime=7\nsamples\tlocation=a\tcount=3\n");
}

TEST_CASE("tabs and newlines in names cannot split a profile.coz record", "[causal][writer]") {
  auto e = sample_experiment(0);
  e.region = "bad\tname\nhere";
  e.throughput = {{"p\tq", 1}};
  e.latency.clear();
  const auto lines = lines_of(ca::format_coz_experiment(e));
  REQUIRE(lines.size() == 2u);
  CHECK(parse_coz(lines[0]).fields["selected"] == "bad name here");
  CHECK(parse_coz(lines[1]).fields["name"] == "p q");
}

TEST_CASE("JSON experiment lines parse and carry every field", "[causal][writer]") {
  const std::string line = ca::format_json_experiment(sample_experiment(3));
  REQUIRE(line.back() == '\n');
  REQUIRE(line.find('\n') == line.size() - 1);
  const auto j = nlohmann::json::parse(line);
  CHECK(j["type"] == "experiment");
  CHECK(j["index"] == 3);
  CHECK(j["region"] == "app::Parser::on(app::Line)");
  CHECK(j["speedup"].get<double>() == Approx(0.25));
  CHECK(j["duration_ns"] == 500'000'000);
  CHECK(j["delay_ns"] == 100'000'000);
  CHECK(j["effective_ns"] == 400'000'000);
  CHECK(j["visits"] == 1234);
  CHECK(j["progress"]["lines"] == 1000);
  CHECK(j["progress"]["app::Sink::on(app::Line)"] == 990);
  CHECK(j["progress"]["request"]["arrivals"] == 900);  // the form coact_plot.py reads
  CHECK(j["latency"]["request"]["departures"] == 880);
  CHECK(j["latency"]["request"]["difference"] == 20);
  CHECK(j["handlers"].size() == 2);
  CHECK(j["handlers"]["app::Parser::on(app::Line)"]["visits"] == 1234);
  CHECK(j["handlers"]["app::Sink::on(app::Line)"]["ns"] == 5'000'000);
  ca::ExperimentRecord none = sample_experiment(4);
  none.handlers.clear();
  CHECK_FALSE(nlohmann::json::parse(ca::format_json_experiment(none)).contains("handlers"));
  // Many handlers: the first ones (the controller gives them most time
  // first) within the budget, the rest counted, the line within a page.
  ca::ExperimentRecord many = sample_experiment(5);
  many.handlers.clear();
  for (int i = 0; i < 200; ++i) many.handlers.push_back({"app::Stage" + std::to_string(i) + "::on(app::Msg)", 1, 1});
  const std::string long_line = ca::format_json_experiment(many);
  CHECK(long_line.size() <= 4096u);
  const auto lj = nlohmann::json::parse(long_line);
  CHECK(lj["handlers"].contains("app::Stage0::on(app::Msg)"));
  CHECK(lj["handlers"].size() > 10u);
  CHECK(lj["handlers"].size() + lj["handlers_omitted"].get<size_t>() == 200u);
  // Names are escaped by nlohmann-json: quotes and control characters
  // round-trip; invalid UTF-8 (a name from a binary) is replaced, not thrown.
  ca::ExperimentRecord odd = sample_experiment(6);
  odd.region = "a\"b\\c\n\x01tab\there\x1f";
  odd.throughput = {{"bad\xff\xfeutf8", 7}};
  const auto oj = nlohmann::json::parse(ca::format_json_experiment(odd));
  CHECK(oj["region"] == "a\"b\\c\n\x01tab\there\x1f");
  CHECK(oj["progress"].contains("bad\xef\xbf\xbd\xef\xbf\xbdutf8"));
}

TEST_CASE("files stay valid when the writer is destroyed mid-run", "[causal][writer]") {
  TempDir dir;
  const fs::path coz = dir.path / "p.coz", json = dir.path / "p.jsonl";
  {
    ca::ProfileWriter w(coz.string(), json.string());
    w.startup(1'700'000'000'000'000'000ull, 2'400'000'000ull, 1, "{\"x\":1}");
    for (uint64_t i = 0; i < 3; ++i) w.experiment(sample_experiment(i));
    // destroyed without runtime / summary records: a sweep cut short
  }
  const auto coz_lines = lines_of(read_file(coz));
  REQUIRE(coz_lines.size() == 1u + 3u * 4u);
  CHECK(read_file(coz).back() == '\n');
  for (const auto& l : coz_lines) check_coz_line_fields(parse_coz(l));
  const auto json_lines = lines_of(read_file(json));
  REQUIRE(json_lines.size() == 4u);
  CHECK(nlohmann::json::parse(json_lines[0])["type"] == "startup");
  CHECK(nlohmann::json::parse(json_lines[0])["options"]["x"] == 1);
  for (size_t i = 1; i < json_lines.size(); ++i) CHECK(nlohmann::json::parse(json_lines[i])["index"] == i - 1);

  // A second run appends (as Coz does): a new startup record follows.
  {
    ca::ProfileWriter w(coz.string(), json.string());
    w.startup(1, 1, 1, "");
    w.runtime(5, {{"r", 1}});
    w.json_line("{\"type\":\"summary\"}");
  }
  const auto again = lines_of(read_file(coz));
  CHECK(again.size() == coz_lines.size() + 3u);
  CHECK(parse_coz(again[coz_lines.size()]).type == "startup");
  const auto json_again = lines_of(read_file(json));
  CHECK(nlohmann::json::parse(json_again.back())["type"] == "summary");
}

TEST_CASE("a writer killed mid-run leaves only whole experiments", "[causal][writer]") {
  TempDir dir;
  const fs::path coz = dir.path / "k.coz", json = dir.path / "k.jsonl";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ca::ProfileWriter w(coz.string(), json.string());
    w.startup(1, 1, 1, "");
    auto e = sample_experiment(0);
    e.region.assign(3000, 'r');  // large records make a cut more likely if writes were split
    for (uint64_t i = 0;; ++i) {
      e.index = i;
      w.experiment(e);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));

  const std::string coz_text = read_file(coz);
  const std::string json_text = read_file(json);
  REQUIRE(!coz_text.empty());
  CHECK(coz_text.back() == '\n');
  CHECK(json_text.back() == '\n');
  const auto coz_lines = lines_of(coz_text);
  REQUIRE(parse_coz(coz_lines[0]).type == "startup");
  // Every experiment is followed by all of its point lines.
  REQUIRE((coz_lines.size() - 1) % 4 == 0);
  for (size_t i = 1; i < coz_lines.size(); ++i) {
    const auto r = parse_coz(coz_lines[i]);
    check_coz_line_fields(r);
    CHECK(r.type == ((i - 1) % 4 == 0 ? "experiment" : (i - 1) % 4 == 3 ? "latency-point" : "throughput-point"));
  }
  const auto json_lines = json_records(json_text);  // every line valid JSON, padding included
  for (size_t i = 1; i < json_lines.size(); ++i) CHECK(json_lines[i]["index"] == i - 1);
  INFO("experiments written before the kill: " << json_lines.size() - 1);
  CHECK(json_lines.size() > 1u);
}

TEST_CASE("a group never crosses a page boundary; blank-line padding keeps it inside one page", "[causal][writer]") {
  TempDir dir;
  const fs::path coz = dir.path / "pad.coz";
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<size_t> starts;  // file offset at which each experiment group begins
  {
    ca::ProfileWriter w(coz.string(), "");
    w.startup(1, 1, 1, "");
    auto e = sample_experiment(0);
    e.region.assign(700, 'x');
    for (int i = 0; i < 20; ++i) w.experiment(e);
  }
  const std::string text = read_file(coz);
  const std::string group = ca::format_coz_experiment([] {
    auto e = sample_experiment(0);
    e.region.assign(700, 'x');
    return e;
  }());
  for (size_t pos = text.find("experiment\t"); pos != std::string::npos; pos = text.find("experiment\t", pos + 1)) {
    starts.push_back(pos);
  }
  REQUIRE(starts.size() == 20u);
  for (const size_t s : starts) {
    CHECK(text.compare(s, group.size(), group) == 0);
    CHECK(s / page == (s + group.size() - 1) / page);  // inside one page
  }
  CHECK(text.size() > 20 * group.size());  // some padding was needed
}

TEST_CASE("JSON lines: page padding is a valid {\"type\":\"pad\"} line, and no group crosses a page", "[causal][writer]") {
  TempDir dir;
  const fs::path json = dir.path / "pad.jsonl";
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  // Region names of many lengths, so that every remainder of a page occurs,
  // including those shorter than a pad record (filled inside the last line).
  {
    ca::ProfileWriter w("", json.string());
    w.startup(1, 1, 1, "");
    for (int i = 0; i < 400; ++i) {
      auto e = sample_experiment(static_cast<uint64_t>(i));
      e.region.assign(static_cast<size_t>(100 + (i * 37) % 900), 'x');
      w.experiment(e);
    }
  }
  const std::string text = read_file(json);
  const auto recs = json_records(text);  // REQUIREs every line to parse
  REQUIRE(recs.size() == 401u);
  for (size_t i = 1; i < recs.size(); ++i) CHECK(recs[i]["index"] == i - 1);
  size_t pads = 0, at = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; at = nl + 1, nl = text.find('\n', at)) {
    const std::string line = text.substr(at, nl - at);
    if (line.rfind("{\"type\":\"pad\"}", 0) == 0) {
      ++pads;
      CHECK((nl + 1) % page == 0);  // a pad record ends exactly at a page boundary
    } else {
      CHECK(at / page == nl / page);  // every other record stays inside one page
    }
  }
  CHECK(pads > 0u);
}

TEST_CASE("a partial last line left by a killed run is removed when the file is reopened", "[causal][writer]") {
  TempDir dir;
  const fs::path coz = dir.path / "cut.coz";
  {
    std::ofstream out(coz, std::ios::binary);
    out << "startup\ttime=1\nexperiment\tselected=a\tspeedup=0.00\tduration=5\tselected-samples=1\n"
           "throughput-point\tname=p\tdel";
  }
  { ca::ProfileWriter w(coz.string(), ""); w.startup(2, 1, 1, ""); }
  const auto lines = lines_of(read_file(coz));
  REQUIRE(lines.size() == 3u);
  CHECK(lines[1].rfind("experiment\t", 0) == 0);
  CHECK(lines[2] == "startup\ttime=2");
}

TEST_CASE("an unopenable output is a std::system_error naming the path", "[causal][writer]") {
  try {
    ca::ProfileWriter w("/nonexistent-dir/p.coz", "");
    FAIL("no exception");
  } catch (const std::system_error& e) {
    CHECK(std::string(e.what()).find("/nonexistent-dir/p.coz") != std::string::npos);
  }
}
