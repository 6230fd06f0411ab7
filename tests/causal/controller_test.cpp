// Tests for coact/causal/controller.hpp: the COACT_CAUSAL_* environment, and
// sweeps over synthetic workloads on plain threads (no actor runtime): fixed
// region and speedup, handler-completion progress, no progress at all, and an
// unknown fixed region. Sweeps move G, so they hold test_ledger_mutex().
#include <catch2/catch.hpp>

#include "support/spin.hpp"

#include "support/temp_dir.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include <nlohmann/json.hpp>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/controller.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/causal/option_fields.hpp>
#include <coact/causal/progress.hpp>
#include <coact/causal/region.hpp>
#include <coact/causal/testing.hpp>

#include <coact/runtime/tuning.hpp>  // before watchdog.hpp, which includes it inside its namespace

#include "support/watchdog.hpp"

namespace ca = coact::causal;
namespace cal = coact::calibrate;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

namespace controller_test {
struct Stage {};
struct Item {};
}  // namespace controller_test

using coact::test::TempDir;

using coact::test::spin_for;
namespace {

std::vector<std::string> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);  // blank lines: page padding
  }
  return out;
}

std::vector<json> records(const fs::path& p, const std::string& type) {
  std::vector<json> out;
  for (const auto& l : read_lines(p)) {
    auto j = json::parse(l);
    if (j["type"] == type) out.push_back(std::move(j));
  }
  return out;
}

// A plain thread looping a body until destroyed; pays its debt each loop like
// a runtime worker between dispatches.
class Workload {
 public:
  template <class F>
  explicit Workload(F body)
      : t_([this, body] {
          ca::register_thread();
          while (!stop_.load(std::memory_order_relaxed)) {
            body();
            ca::on_pay_point();
          }
        }) {}
  ~Workload() {
    stop_.store(true);
    t_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread t_;
};

std::vector<const char*> envp(const std::vector<std::string>& kv) {
  std::vector<const char*> out;
  for (const auto& s : kv) out.push_back(s.c_str());
  out.push_back(nullptr);
  return out;
}

std::string error_of(const std::vector<std::string>& kv) {
  try {
    (void)ca::options_from_env(envp(kv).data());
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

ca::Options quick_options(const TempDir& dir) {
  ca::Options o;
  o.experiment = 25ms;
  o.max_experiment = 200ms;
  o.cooldown = 5ms;
  o.output = (dir.path / "profile.coz").string();
  o.json_output = (dir.path / "profile.jsonl").string();
  o.seed = 12345;
  return o;
}

}  // namespace

TEST_CASE("options_from_env: unset or 0 means no sweep", "[causal][controller]") {
  CHECK_FALSE(ca::options_from_env(envp({"PATH=/bin"}).data()));
  CHECK_FALSE(ca::options_from_env(envp({"COACT_CAUSAL=0", "COACT_CAUSAL_EXPERIMENT_MS=7"}).data()));
  CHECK_FALSE(ca::options_from_env(envp({"COACT_CAUSAL="}).data()));
  CHECK_FALSE(ca::options_from_env(envp({"COACT_CAUSAL=off"}).data()));
  // One unknown-key policy (coact/options.hpp): a typo is an error even without a sweep.
  CHECK(error_of({"COACT_CAUSAL=0", "COACT_CAUSAL_BOGUS=1"}).find("unknown key COACT_CAUSAL_BOGUS") !=
        std::string::npos);
}

TEST_CASE("options_from_env reads every COACT_CAUSAL_* key", "[causal][controller]") {
  const auto o = ca::options_from_env(envp({"COACT_CAUSAL=1", "COACT_CAUSAL_PROGRESS=a, b,",
                                            "COACT_CAUSAL_PROGRESS_HANDLER=Sink::on", "COACT_CAUSAL_REGION_FILTER=Parser",
                                            "COACT_CAUSAL_FIXED_REGION=Parser::on(Line)", "COACT_CAUSAL_FIXED_SPEEDUP=35",
                                            "COACT_CAUSAL_EXPERIMENT_MS=100", "COACT_CAUSAL_MAX_EXPERIMENT_MS=900",
                                            "COACT_CAUSAL_COOLDOWN_MS=0", "COACT_CAUSAL_DURATION_S=60",
                                            "COACT_CAUSAL_EXPERIMENTS=40", "COACT_CAUSAL_MIN_DELTA=9",
                                            "COACT_CAUSAL_OUTPUT=out/x.coz", "COACT_CAUSAL_SEED=7",
                                            "COACT_CAUSAL_REGION_WEIGHT=uniform", "COACT_CAUSAL_MIN_EXPERIMENTS=9",
                                            "COACT_CAUSAL_TIME_SHARE_FLOOR_PCT=5",
                                            "COACT_CAUSAL_SETTLE_WIDTH_PCT=3"})
                                          .data());
  REQUIRE(o);
  CHECK(o->progress == std::vector<std::string>{"a", "b"});
  CHECK(o->progress_handlers == std::vector<std::string>{"Sink::on"});
  CHECK(o->region_filter == std::vector<std::string>{"Parser"});
  CHECK(o->fixed_region == "Parser::on(Line)");
  CHECK(o->fixed_speedup_pct == 35u);
  CHECK(o->experiment == 100ms);
  CHECK(o->max_experiment == 900ms);
  CHECK(o->cooldown == 0ms);
  CHECK(o->duration == 60s);
  CHECK(o->max_experiments == 40u);
  CHECK(o->min_delta == 9u);
  CHECK(o->output == "out/x.coz");
  CHECK(o->json_output == "out/x.jsonl");  // derived
  CHECK(o->seed == 7u);
  CHECK(o->region_weight == ca::RegionWeight::uniform);
  CHECK(o->min_experiments == 9u);
  CHECK(o->time_share_floor_pct == 5u);
  CHECK(o->settle_width_pct == 3u);
  CHECK_FALSE(o->until_settled);

  // to_env round-trips.
  std::vector<std::string> kv;
  for (const auto& [k, v] : ca::to_env(*o)) kv.push_back(k + "=" + v);
  const auto back = ca::options_from_env(envp(kv).data());
  REQUIRE(back);
  CHECK(back->progress == o->progress);
  CHECK(back->fixed_speedup_pct == o->fixed_speedup_pct);
  CHECK(back->experiment == o->experiment);
  CHECK(back->json_output == o->json_output);
  CHECK(back->region_weight == o->region_weight);
  CHECK(back->min_experiments == o->min_experiments);
  CHECK(back->time_share_floor_pct == o->time_share_floor_pct);
  CHECK(back->settle_width_pct == o->settle_width_pct);
  CHECK(json::parse(ca::options_json(*o))["region_weight"] == "uniform");
  CHECK(json::parse(ca::options_json(*o))["min_experiments"] == 9);
  const auto d = ca::options_from_env(envp({"COACT_CAUSAL=1"}).data());
  CHECK(d->region_weight == ca::RegionWeight::evidence);  // the default
  CHECK(d->min_experiments == 6u);
  const auto u = ca::options_from_env(envp({"COACT_CAUSAL=1", "COACT_CAUSAL_UNTIL_SETTLED=1"}).data());
  CHECK(u->until_settled);
  std::vector<std::string> ukv;
  for (const auto& [k, v] : ca::to_env(*u)) ukv.push_back(k + "=" + v);
  CHECK(ca::options_from_env(envp(ukv).data())->until_settled);
  CHECK(json::parse(ca::options_json(*o))["fixed_speedup"].get<double>() == Approx(0.35));
}

TEST_CASE("option_fields: every COACT_CAUSAL_* key has one binding, and every binding a declared key",
          "[causal][controller][options]") {
  std::set<std::string_view> bound;
  std::set<std::string> flags;
  for (const ca::OptionField& f : ca::option_fields()) {
    INFO(f.key);
    CHECK(bound.insert(f.key).second);
    CHECK(flags.insert(ca::flag_of(f)).second);
    const coact::options::Key* k = coact::options::find(f.key);
    REQUIRE(k != nullptr);
    CHECK(k->group == "causal");
    CHECK_FALSE(k->field.empty());
  }
  for (const coact::options::Key& k : coact::options::keys()) {
    if (k.group != "causal" || k.name == "COACT_CAUSAL") continue;
    INFO(k.name);
    CHECK(bound.count(k.name) == 1);
  }
  CHECK(ca::flag_of(ca::option_fields().front()) == "--progress");
}

// A valid value other than the default, for any causal key (every one alone
// passes options_from's checks between keys).
std::string non_default_value(const coact::options::Key& k) {
  using coact::options::Type;
  switch (k.type) {
    case Type::boolean:
      return k.default_value == "true" ? "false" : "true";
    case Type::integer:
      return std::to_string(k.max);
    case Type::list:
      return "a,b";
    case Type::text:
      break;
  }
  if (k.name == "COACT_CAUSAL_SHARD") return "1/3";
  if (k.name == "COACT_CAUSAL_SAMPLE_SIGNAL") return "prof";
  if (k.name == "COACT_CAUSAL_REGION_WEIGHT") return "time";
  return "value-" + std::string(k.field);
}

TEST_CASE("option_fields: each key's value reaches Options, survives to_env and is in options_json by its TOML field",
          "[causal][controller][options]") {
  const auto d = ca::options_from_env(envp({"COACT_CAUSAL=1"}).data());
  REQUIRE(d);
  const json dj = json::parse(ca::options_json(*d));
  for (const ca::OptionField& f : ca::option_fields()) {
    const coact::options::Key& k = f.declared();
    const std::string value = non_default_value(k);
    INFO(f.key << "=" << value);
    std::vector<std::string> env{"COACT_CAUSAL=1", std::string(f.key) + "=" + value};
    // The one key that is valid only beside another.
    if (f.key == "COACT_CAUSAL_ALTERNATE_SPEEDUP") env.push_back("COACT_CAUSAL_FIXED_SPEEDUP=0");
    const auto o = ca::options_from_env(envp(env).data());
    REQUIRE(o);
    CHECK(f.text(*o) == value);  // the binding read it into its member
    CHECK(f.text(*o) != f.text(*d));
    std::vector<std::string> kv;
    bool exported = false;
    for (const auto& [key, text] : ca::to_env(*o)) {
      kv.push_back(key + "=" + text);
      exported = exported || key == f.key;
    }
    CHECK(exported);
    const auto back = ca::options_from_env(envp(kv).data());
    REQUIRE(back);
    CHECK(f.text(*back) == value);
    const json j = json::parse(ca::options_json(*o));
    REQUIRE(j.contains(std::string(k.field)));
    CHECK(j[std::string(k.field)] != dj[std::string(k.field)]);
  }
  CHECK(dj["fixed_speedup"].is_null());  // auto
  CHECK(dj["seed"] == 0);
  CHECK(dj["shard"] == "");
  CHECK(dj["paying_baseline"] == false);
  CHECK(dj["progress"] == json::array());
}

TEST_CASE("options_from_env: bad values are errors naming the key", "[causal][controller]") {
  CHECK(error_of({"COACT_CAUSAL=maybe"}).find("COACT_CAUSAL='maybe'") != std::string::npos);
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_FIXED_SPEEDUP=150"}).find("COACT_CAUSAL_FIXED_SPEEDUP='150'") !=
        std::string::npos);
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_EXPERIMENT_MS=abc"}).find("COACT_CAUSAL_EXPERIMENT_MS='abc'") !=
        std::string::npos);
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_EXPERIMENT_MS=0"}).find("1..") != std::string::npos);
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_COOLDOWN_MS=-5"}).find("COACT_CAUSAL_COOLDOWN_MS") !=
        std::string::npos);
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_EXPERIMENT_MS=100", "COACT_CAUSAL_MAX_EXPERIMENT_MS=50"})
            .find("COACT_CAUSAL_MAX_EXPERIMENT_MS") != std::string::npos);
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_OUTPUT=", "COACT_CAUSAL_JSON_OUTPUT="}).find("COACT_CAUSAL_OUTPUT") !=
        std::string::npos);
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_REGION_WEIGHT=random"}).find("one of evidence/time/uniform") !=
        std::string::npos);
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_MIN_EXPERIMENTS=1"}).find("COACT_CAUSAL_MIN_EXPERIMENTS='1'") !=
        std::string::npos);
  // A fixed experiment never ranks regions: waiting for a settled ranking would never end.
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_UNTIL_SETTLED=1", "COACT_CAUSAL_FIXED_SPEEDUP=0"})
            .find("COACT_CAUSAL_UNTIL_SETTLED='1': expected 0 when") != std::string::npos);
  const std::string typo = error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_EXPERIMENT_LEN=5"});
  CHECK(typo.find("COACT_CAUSAL_EXPERIMENT_LEN") != std::string::npos);
  CHECK(typo.find("did you mean COACT_CAUSAL_EXPERIMENT_MS?") != std::string::npos);
  CHECK(ca::default_json_output("profile.coz") == "profile.jsonl");
  CHECK(ca::default_json_output("run.txt") == "run.txt.jsonl");
  // The line-experiment period: 0 or 10..1000000 us.
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_LINE_EXPERIMENT_PERIOD_US=5"})
            .find("COACT_CAUSAL_LINE_EXPERIMENT_PERIOD_US='5'") != std::string::npos);
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_LINE_EXPERIMENT_PERIOD_US=2000000"})
            .find("COACT_CAUSAL_LINE_EXPERIMENT_PERIOD_US") != std::string::npos);
  // A profile-only run has no experiments to fix or count.
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_PROFILE_ONLY=1", "COACT_CAUSAL_FIXED_SPEEDUP=0"})
            .find("COACT_CAUSAL_FIXED_SPEEDUP is set") != std::string::npos);
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_PROFILE_ONLY=1", "COACT_CAUSAL_EXPERIMENTS=3"})
            .find("COACT_CAUSAL_PROFILE_ONLY='1'") != std::string::npos);
  // An alternate speedup alternates with the fixed one: alone it names nothing to alternate with.
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_ALTERNATE_SPEEDUP=20"})
            .find("COACT_CAUSAL_ALTERNATE_SPEEDUP='20': expected auto unless COACT_CAUSAL_FIXED_SPEEDUP is set") !=
        std::string::npos);
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_FIXED_SPEEDUP=0", "COACT_CAUSAL_ALTERNATE_SPEEDUP=101"})
            .find("COACT_CAUSAL_ALTERNATE_SPEEDUP='101'") != std::string::npos);
  const auto alt =
      ca::options_from_env(envp({"COACT_CAUSAL=1", "COACT_CAUSAL_FIXED_SPEEDUP=0", "COACT_CAUSAL_ALTERNATE_SPEEDUP=20"})
                               .data());
  REQUIRE(alt);
  CHECK(alt->alternate_speedup_pct == 20u);
  CHECK(json::parse(ca::options_json(*alt))["alternate_speedup"].get<double>() == Approx(0.2));
}

TEST_CASE("options_from_env: the line-experiment period and profile-only keys", "[causal][controller]") {
  const auto d = ca::options_from_env(envp({"COACT_CAUSAL=1"}).data());
  REQUIRE(d);
  CHECK(d->line_experiment_period == 0us);  // the default: sample period / 8
  CHECK_FALSE(d->profile_only);
  const auto o = ca::options_from_env(
      envp({"COACT_CAUSAL=1", "COACT_CAUSAL_LINE_EXPERIMENT_PERIOD_US=300", "COACT_CAUSAL_PROFILE_ONLY=1"}).data());
  REQUIRE(o);
  CHECK(o->line_experiment_period == 300us);
  CHECK(o->profile_only);
  std::vector<std::string> kv;
  for (const auto& [k, v] : ca::to_env(*o)) kv.push_back(k + "=" + v);
  const auto back = ca::options_from_env(envp(kv).data());
  REQUIRE(back);
  CHECK(back->line_experiment_period == 300us);
  CHECK(back->profile_only);
  const auto j = json::parse(ca::options_json(*o));
  CHECK(j["line_experiment_period_us"] == 300);
  CHECK(j["profile_only"] == true);
}

TEST_CASE("options_from_env: COACT_CAUSAL_PAYING_BASELINE reads and round-trips", "[causal][controller]") {
  const auto d = ca::options_from_env(envp({"COACT_CAUSAL=1"}).data());
  REQUIRE(d);
  CHECK_FALSE(d->paying_baseline);
  const auto o = ca::options_from_env(
      envp({"COACT_CAUSAL=1", "COACT_CAUSAL_FIXED_SPEEDUP=0", "COACT_CAUSAL_PAYING_BASELINE=1"}).data());
  REQUIRE(o);
  CHECK(o->paying_baseline);
  std::vector<std::string> kv;
  for (const auto& [k, v] : ca::to_env(*o)) kv.push_back(k + "=" + v);
  // Booleans are exported in the options core's canonical text.
  CHECK(std::find(kv.begin(), kv.end(), "COACT_CAUSAL_PAYING_BASELINE=true") != kv.end());
  const auto back = ca::options_from_env(envp(kv).data());
  REQUIRE(back);
  CHECK(back->paying_baseline);
  CHECK(error_of({"COACT_CAUSAL=1", "COACT_CAUSAL_PAYING_BASELINE=maybe"}).find("COACT_CAUSAL_PAYING_BASELINE") !=
        std::string::npos);
}

TEST_CASE("controller: a sweep at fixed speedup 0 skips the pay path unless paying_baseline", "[causal][controller]") {
#if defined(__SANITIZE_THREAD__) || defined(COACT_TSAN)
  // Run in forked children (a child starts with no injected delay), and a
  // forked child may not start threads under ThreadSanitizer.
  WARN("ThreadSanitizer build: fork case skipped (a forked child may not start threads under TSan)");
  SUCCEED("not run under ThreadSanitizer");
  return;
#endif
  std::lock_guard lock(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "paying baseline");
  (void)cal::tsc_hz();
  // In a child: start a fixed-speedup-0 sweep, wait until it is active, and
  // exit 0 if pay points pay nothing (the runtime's sends skip the pay), 1
  // if they pay, 2 if the sweep never became active.
  auto path_in_child = [](bool paying) {
    const pid_t pid = fork();
    if (pid == 0) {
      TempDir dir;
      auto o = quick_options(dir);
      o.fixed_region = "controller-test/never-runs";
      o.fixed_speedup_pct = 0;
      o.paying_baseline = paying;
      ca::Controller::start(o);
      int code = 2;
      for (int i = 0; i < 2000 && code == 2; ++i) {
        if (ca::g_sweep_active.load()) code = ca::pay_point_is_noop() ? 0 : 1;
        std::this_thread::sleep_for(1ms);
      }
      (void)ca::Controller::stop();
      _exit(code);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    return WEXITSTATUS(status);
  };
  CHECK(path_in_child(false) == 0);  // no pay: the cheapest sweep
  CHECK(path_in_child(true) == 1);   // paying, as a sweep at any other speedup
}

TEST_CASE("controller: an alternate speedup alternates with the fixed one, A B B A", "[causal][controller]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "alternating sweep");
  TempDir dir;
  Workload w([] {
    {
      COACT_SCOPE("controller-test/busy");
      spin_for(200us);
    }
    COACT_PROGRESS("controller-test/iterations");
  });
  auto o = quick_options(dir);
  o.fixed_region = "controller-test/busy";
  o.fixed_speedup_pct = 0;
  o.alternate_speedup_pct = 40;
  o.progress = {"controller-test/iterations"};
  o.max_experiments = 8;
  ca::Controller::start(o);
  REQUIRE(ca::Controller::wait(30s));
  const ca::SweepSummary s = ca::Controller::stop();
  CHECK(s.experiments == 8u);
  const auto exps = records(dir.path / "profile.jsonl", "experiment");
  REQUIRE(exps.size() == 8u);
  const double want[] = {0, 0.4, 0.4, 0, 0, 0.4, 0.4, 0};
  for (size_t i = 0; i < exps.size(); ++i) {
    INFO("experiment " << i);
    CHECK(exps[i]["speedup"].get<double>() == Approx(want[i]));
    // Only the non-zero speedup injects delay (s x the region's time, up to
    // a straddler's few microseconds, as in the test below).
    const double delay = exps[i]["delay_ns"].get<double>(), region = exps[i]["region_ns"].get<double>();
    if (want[i] == 0) CHECK(delay < 1e6);
    if (want[i] > 0) CHECK(delay > 0.2 * region);
  }
}

TEST_CASE("controller: fixed region and speedup record experiments with s·Δ delay", "[causal][controller]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "fixed-region sweep");
  TempDir dir;
  Workload w([] {
    {
      COACT_SCOPE("controller-test/busy");
      spin_for(200us);
    }
    {
      COACT_SCOPE("controller-test/other");
      spin_for(50us);
    }
    COACT_PROGRESS("controller-test/iterations");
  });
  auto o = quick_options(dir);
  o.fixed_region = "controller-test/busy";
  o.fixed_speedup_pct = 50;
  o.progress = {"controller-test/iterations"};
  o.max_experiments = 4;
  ca::Controller::start(o);
  CHECK(ca::Controller::running());
  CHECK_THROWS_AS(ca::Controller::start(o), std::logic_error);
  REQUIRE(ca::Controller::wait(30s));
  const ca::SweepSummary s = ca::Controller::stop();
  CHECK_FALSE(ca::Controller::running());
  CHECK(s.experiments == 4u);
  CHECK(s.progress_reached);
  CHECK(s.reason == "experiments");
  CHECK(s.errors.empty());

  const fs::path jpath = dir.path / "profile.jsonl";
  const auto lines = read_lines(jpath);
  REQUIRE(!lines.empty());
  CHECK(json::parse(lines.front())["type"] == "startup");
  CHECK(json::parse(lines.back())["type"] == "summary");
  const auto exps = records(jpath, "experiment");
  REQUIRE(exps.size() == 4u);
  for (const auto& e : exps) {
    CHECK(e["region"] == "controller-test/busy");
    CHECK(e["speedup"].get<double>() == Approx(0.5));
    CHECK(e["progress"]["controller-test/iterations"].get<uint64_t>() > 0u);
    CHECK(e["visits"].get<uint64_t>() > 0u);
    const auto dur = e["duration_ns"].get<uint64_t>(), delay = e["delay_ns"].get<uint64_t>();
    CHECK(dur >= 25'000'000u);
    CHECK(e["effective_ns"].get<uint64_t>() == dur - delay);
    // delay = s · (the region's exclusive time during the window), up to a
    // region straddling the window's ends (two runs of ~200 µs, longer if
    // preempted: with live accrual a straddler's running segment is charged
    // as it runs, so a preempted one can add to either side; a CI run on a
    // loaded 2-core box measured 10.03 ms against 0.5 x 19.96 ms; the
    // upper side, +2 ms, failed 2-3 runs in 30 at load ~2 (a preempted
    // straddler charged inside the window), so both sides allow 5 ms: a
    // delay of 0 or of s x twice the region still fails).
    const double region_ns = e["region_ns"].get<double>();
    CHECK(static_cast<double>(delay) <= 0.5 * region_ns + 5'000'000);
    CHECK(static_cast<double>(delay) >= 0.5 * region_ns - 5'000'000);  // a preempted straddler
    CHECK(delay > 0u);
  }
  const auto names = records(jpath, "names");
  REQUIRE(names.size() == 1u);
  bool found = false;
  for (const auto& r : names[0]["regions"]) found |= r["name"] == "controller-test/busy";
  CHECK(found);

  // profile.coz: startup, 4 experiments each with its one throughput point, runtime, samples.
  const auto coz = read_lines(dir.path / "profile.coz");
  REQUIRE(coz.size() >= 1u + 4u * 2u + 1u);
  CHECK(coz[0].rfind("startup\ttime=", 0) == 0);
  int n_exp = 0;
  for (const auto& l : coz) {
    if (l.rfind("experiment\t", 0) == 0) {
      ++n_exp;
      CHECK(l.find("\tselected=controller-test/busy\tspeedup=0.50\tduration=") != std::string::npos);
      CHECK(l.find("\tselected-samples=") != std::string::npos);
    }
  }
  CHECK(n_exp == 4);
  CHECK(std::count_if(coz.begin(), coz.end(), [](const std::string& l) { return l.rfind("runtime\ttime=", 0) == 0; }) ==
        1);
  ca::credit_resume();
}

namespace {
// Runs a sweep over two scopes, one running 9x longer than the other, and
// returns how many experiments picked the heavy one out of `n`.
int heavy_picks(ca::RegionWeight weight, int n) {
  TempDir dir;
  Workload w([] {
    {
      COACT_SCOPE("controller-test/heavy");
      spin_for(180us);
    }
    {
      COACT_SCOPE("controller-test/light");
      spin_for(20us);
    }
    COACT_PROGRESS("controller-test/weighted");
  });
  auto o = quick_options(dir);
  o.experiment = 5ms;
  o.max_experiment = 5ms;
  o.cooldown = 1ms;
  o.region_filter = {"controller-test/heavy", "controller-test/light"};
  o.progress = {"controller-test/weighted"};
  o.fixed_speedup_pct = 0;  // no delay: only the draw is under test
  o.max_experiments = static_cast<uint64_t>(n);
  o.region_weight = weight;
  ca::Controller::start(o);
  REQUIRE(ca::Controller::wait(60s));
  (void)ca::Controller::stop();
  int heavy = 0, total = 0;
  for (const auto& e : records(dir.path / "profile.jsonl", "experiment")) {
    ++total;
    heavy += e["region"] == "controller-test/heavy" ? 1 : 0;
  }
  REQUIRE(total == n);
  return heavy;
}
}  // namespace

TEST_CASE("controller: regions are drawn in proportion to their running time, or uniformly", "[causal][controller]") {
  // 90% / 10% of the running time. Time-weighted: heavy ~ Binomial(200, 0.9),
  // mean 180, sd 4.2; uniform: Binomial(200, 0.5), mean 100, sd 7.1. The
  // bounds are > 5 sd from the other mode's mean and > 4 sd from their own.
  std::lock_guard lock(ca::test_ledger_mutex());
  coact::test::Watchdog wd(120, "weighted region draw");
  const int weighted = heavy_picks(ca::RegionWeight::time, 200);
  CHECK(weighted >= 160);
  const int uniform = heavy_picks(ca::RegionWeight::uniform, 200);
  CHECK(uniform >= 70);
  CHECK(uniform <= 130);
}

namespace {
// A sweep over two scopes on one thread, one running 9x longer than the
// other (so a virtual speedup of it shortens each iteration 9x as much).
struct TwoScopeSweep {
  TempDir dir;
  Workload w{[] {
    {
      COACT_SCOPE("controller-test/evidence-heavy");
      spin_for(180us);
    }
    {
      COACT_SCOPE("controller-test/evidence-light");
      spin_for(20us);
    }
    COACT_PROGRESS("controller-test/evidence");
  }};
  ca::Options options() const {
    auto o = quick_options(dir);
    o.experiment = 5ms;
    o.max_experiment = 5ms;
    o.cooldown = 1ms;
    o.region_filter = {"controller-test/evidence-heavy", "controller-test/evidence-light"};
    o.progress = {"controller-test/evidence"};
    return o;
  }
  ca::SweepSummary run(const ca::Options& o) {
    ca::Controller::start(o);
    REQUIRE(ca::Controller::wait(60s));
    return ca::Controller::stop();
  }
};
}  // namespace

TEST_CASE("controller: the evidence draw gives a light region enough experiments to rank", "[causal][controller]") {
  // By running time the light scope (10%) would get ~60 x 0.1 x 20/28 = 4
  // non-zero-speedup experiments of 60; the evidence draw first gives every
  // region above the time-share floor min_experiments of them.
  std::lock_guard lock(ca::test_ledger_mutex());
  coact::test::Watchdog wd(120, "evidence draw");
  TwoScopeSweep t;
  auto o = t.options();
  o.max_experiments = 60;
  const ca::SweepSummary sum = t.run(o);
  CHECK(sum.reason == "experiments");
  int light = 0;
  for (const auto& e : records(t.dir.path / "profile.jsonl", "experiment")) {
    light += e["region"] == "controller-test/evidence-light" && e["speedup"].get<double>() > 0 ? 1 : 0;
  }
  CHECK(light >= static_cast<int>(o.min_experiments));
  const auto est = records(t.dir.path / "profile.jsonl", "estimates");
  REQUIRE(est.size() == 60);
  const auto& last = est.back();
  REQUIRE(last["points"].size() == 1);
  CHECK(last["points"][0]["leader"] == "controller-test/evidence-heavy");
  // The time shares a reader needs to apply the settle rule's floor: every
  // region with an experiment, as fractions of the running time.
  CHECK(last["time_share_floor"].get<double>() == o.time_share_floor_pct / 100.0);
  const auto& shares = last["time_shares"];
  REQUIRE(shares.size() == 2);
  const double heavy_share = shares["controller-test/evidence-heavy"].get<double>();
  const double light_share = shares["controller-test/evidence-light"].get<double>();
  CHECK(light_share > 0);
  CHECK(heavy_share > light_share);
  CHECK(heavy_share + light_share <= 1 + 1e-9);
  // The printed interval holds the profiler's own error (a fraction of the
  // key) besides the statistical one.
  const double systematic = last["systematic"].get<double>();
  CHECK(systematic > 0);
  for (const auto& r : last["points"][0]["regions"]) {
    CHECK(r["ranked"] == true);
    const double lo = r["ci"][0].get<double>(), hi = r["ci"][1].get<double>(), key = r["key"].get<double>();
    CHECK(hi > lo);
    CHECK((hi - lo) / 2 >= systematic * std::abs(key) * (1 - 1e-9));
    CHECK(std::abs((hi + lo) / 2 - key) <= 1e-12 + 1e-9 * std::abs(key));
  }
}

TEST_CASE("controller: --until-settled ends the sweep once the leader's interval is above the rest",
          "[causal][controller]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  coact::test::Watchdog wd(120, "until-settled sweep");
  TwoScopeSweep t;
  auto o = t.options();
  o.until_settled = true;
  o.max_experiments = 500;  // the bound if it never settles
  const ca::SweepSummary sum = t.run(o);
  CHECK(sum.reason == "settled");
  CHECK(sum.settled);
  CHECK(sum.leader == "controller-test/evidence-heavy");
  CHECK(sum.experiments < 500);
  const auto summary = records(t.dir.path / "profile.jsonl", "summary");
  REQUIRE(summary.size() == 1);
  CHECK(summary[0]["settled"] == true);
  CHECK(summary[0]["reason"] == "settled");
  const auto est = records(t.dir.path / "profile.jsonl", "estimates");
  REQUIRE_FALSE(est.empty());
  const auto& p = est.back()["points"][0];
  double heavy_lo = 0, light_hi = 0;
  for (const auto& r : p["regions"]) {
    if (r["name"] == "controller-test/evidence-heavy") heavy_lo = r["ci"][0].get<double>();
    if (r["name"] == "controller-test/evidence-light") light_hi = r["ci"][1].get<double>();
  }
  CHECK(heavy_lo > light_hi);
}

TEST_CASE("controller: a region filter that matches nothing ends with reason no_region, not no_progress",
          "[causal][controller]") {
  // Regression: the progress point was hit all along, yet the summary said
  // "no_progress" when only the region filter was wrong.
  std::lock_guard lock(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "no-region sweep");
  TempDir dir;
  Workload w([] {
    {
      COACT_SCOPE("controller-test/no-region-scope");
      spin_for(50us);
    }
    COACT_PROGRESS("controller-test/no-region-progress");
  });
  auto o = quick_options(dir);  // 25 ms window, 200 ms cap: gives up after 5 s
  o.progress = {"controller-test/no-region-progress"};
  o.region_filter = {"controller-test/typo-matches-nothing"};
  ca::Controller::start(o);
  REQUIRE(ca::Controller::wait(20s));
  const auto s = ca::Controller::stop();
  CHECK(s.experiments == 0u);
  CHECK(s.reason == "no_region");
  const auto errors = records(dir.path / "profile.jsonl", "error");
  REQUIRE_FALSE(errors.empty());
  CHECK(errors[0]["what"] == "unknown_region");
  ca::credit_resume();
}

TEST_CASE("controller: a handler named as progress point counts its completions", "[causal][controller]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "handler-progress sweep");
  TempDir dir;
  Workload w([] {  // what the runtime's dispatch does, on a plain thread
    ca::on_handler_enter(&typeid(controller_test::Stage), 901);
    spin_for(100us);
    ca::on_handler_exit(&typeid(controller_test::Stage), 901);
  });
  auto o = quick_options(dir);
  o.progress = {"controller-test/no-declared-point-has-this-name"};
  o.progress_handlers = {"controller_test::Stage::on("};
  o.fixed_region = "controller_test::Stage::on(";
  o.max_experiments = 2;
  ca::Controller::start(o);
  REQUIRE(ca::Controller::wait(30s));
  const auto s = ca::Controller::stop();
  CHECK(s.experiments == 2u);
  const auto exps = records(dir.path / "profile.jsonl", "experiment");
  REQUIRE(exps.size() == 2u);
  const std::string region = exps[0]["region"];
  CHECK(region.rfind("controller_test::Stage::on(", 0) == 0);
  CHECK(exps[0]["progress"][region].get<uint64_t>() > 0u);
  // The declared-point filter matched nothing: reported, with the names.
  const auto errors = records(dir.path / "profile.jsonl", "error");
  REQUIRE(errors.size() == 1u);
  CHECK(errors[0]["what"] == "unknown_progress");
  ca::credit_resume();
}

TEST_CASE("controller: a sweep in which no progress point is reached says so and writes no experiment",
          "[causal][controller]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "no-progress sweep");
  TempDir dir;
  ca::progress_point("controller-test/declared-never-visited", ca::ProgressKind::throughput);
  Workload w([] {
    COACT_SCOPE("controller-test/lonely");
    spin_for(100us);
  });
  auto o = quick_options(dir);
  o.progress = {"controller-test/declared-never-visited"};
  o.max_experiment = 50ms;
  ca::Controller::start(o);
  std::this_thread::sleep_for(400ms);
  const auto s = ca::Controller::stop();
  CHECK(s.experiments == 0u);
  CHECK(s.empty_experiments > 0u);
  CHECK_FALSE(s.progress_reached);
  REQUIRE(s.errors.size() == 1u);
  CHECK(s.errors[0].find("no progress point was reached") != std::string::npos);
  CHECK(s.errors[0].find("controller-test/declared-never-visited") != std::string::npos);
  const auto jpath = dir.path / "profile.jsonl";
  CHECK(records(jpath, "experiment").empty());
  const auto errors = records(jpath, "error");
  REQUIRE(errors.size() == 1u);
  CHECK(errors[0]["what"] == "no_progress");
  CHECK(records(jpath, "summary").at(0)["progress_reached"] == false);
  for (const auto& l : read_lines(dir.path / "profile.coz")) CHECK(l.rfind("experiment", 0) != 0);
  ca::credit_resume();
}

// A progress filter that matched nothing once also drew a second error, "no
// progress point was reached ... never hit a matching progress point", which
// sent the user looking for a missing COACT_PROGRESS: the filter's error is
// the whole story.
TEST_CASE("controller: a progress filter that matches nothing is the one error, not also no_progress",
          "[causal][controller]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "unknown progress filter");
  TempDir dir;
  Workload w([] {
    COACT_SCOPE("controller-test/filtered-out");
    COACT_PROGRESS("controller-test/reached-but-not-selected");
    spin_for(100us);
  });
  auto o = quick_options(dir);
  o.progress = {"controller-test/no-point-has-this-name"};
  o.max_experiment = 50ms;
  ca::Controller::start(o);
  std::this_thread::sleep_for(400ms);
  const auto s = ca::Controller::stop();
  CHECK(s.experiments == 0u);
  const auto errors = records(dir.path / "profile.jsonl", "error");
  REQUIRE(errors.size() == 1u);
  CHECK(errors[0]["what"] == "unknown_progress");
  ca::credit_resume();
}

TEST_CASE("controller: an unknown fixed region is reported with the valid names", "[causal][controller]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "unknown-region sweep");
  TempDir dir;
  Workload w([] {
    {
      COACT_SCOPE("controller-test/known");
      spin_for(50us);
    }
    COACT_PROGRESS("controller-test/known-progress");
  });
  auto o = quick_options(dir);
  o.fixed_region = "controller-test/typo";
  o.progress = {"controller-test/known-progress"};
  ca::Controller::start(o);
  std::this_thread::sleep_for(250ms);  // > kGraceWindows windows: the early warning is written
  const auto s = ca::Controller::stop();
  CHECK(s.experiments == 0u);
  const auto jpath = dir.path / "profile.jsonl";
  const auto warnings = records(jpath, "warning");
  REQUIRE(!warnings.empty());
  CHECK(warnings[0]["what"] == "unknown_region");
  bool has_unknown = false, has_no_progress = false;
  for (const auto& e : records(jpath, "error")) {
    has_unknown |= e["what"] == "unknown_region" &&
                   e["message"].get<std::string>().find("controller-test/typo") != std::string::npos;
    has_no_progress |= e["what"] == "no_progress";
  }
  CHECK(has_unknown);
  CHECK_FALSE(has_no_progress);  // progress was reached; the unknown region is the whole story
  const auto names = records(jpath, "names");
  REQUIRE(names.size() >= 2u);  // early and final
  bool listed = false;
  for (const auto& r : names.back()["regions"]) listed |= r["name"] == "controller-test/known";
  CHECK(listed);
  ca::credit_resume();
}

TEST_CASE("controller: a sweep whose progress point is never reached warns early and gives up", "[causal][controller]") {
  // A server-like program: its handlers run, but the progress point the sweep
  // asks for is never visited, and no duration bounds the sweep. The warning
  // comes after kGraceWindows (3) initial windows; the sweep stops
  // experimenting after max(5 s, 2 x the window cap) with a no_progress error.
  std::lock_guard lock(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "no-progress sweep");
  TempDir dir;
  Workload w([] {
    COACT_SCOPE("controller-test/serving");
    spin_for(50us);
  });
  auto o = quick_options(dir);  // 25 ms window, 200 ms cap: gives up after 5 s
  o.progress = {"controller-test/never-reached"};
  const auto t0 = std::chrono::steady_clock::now();
  ca::Controller::start(o);
  const auto jpath = dir.path / "profile.jsonl";
  // The warning is written within the first second (3 windows of 25 ms, plus slack for a loaded machine).
  bool warned = false;
  while (!warned && std::chrono::steady_clock::now() - t0 < 2s) {
    std::this_thread::sleep_for(20ms);
    for (const auto& r : records(jpath, "warning")) warned |= r["what"] == "unknown_progress";
  }
  CHECK(warned);
  REQUIRE(ca::Controller::wait(20s));  // gave up by itself
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took >= 4.9);
  CHECK(took < 15.0);
  CHECK(ca::Controller::running() == false);
  const auto s = ca::Controller::stop();
  CHECK(s.experiments == 0u);
  CHECK(s.reason == "no_progress");
  REQUIRE(!s.errors.empty());
  const auto summary = records(jpath, "summary");
  REQUIRE(summary.size() == 1u);
  CHECK(summary[0]["reason"] == "no_progress");
  ca::credit_resume();
}
