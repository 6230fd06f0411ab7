// tuning_test.cpp: resolve_tuning() — defaults, precedence, and one test per
// error class. The environment is always injected through TuningSources::env
// (the real one is never mutated); config files live in a fresh temp dir.

#include <coact/runtime/tuning.hpp>

#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/temp_dir.hpp"

namespace Catch {
template <>
struct StringMaker<coact::SchedulerTuning> {
  static std::string convert(const coact::SchedulerTuning& t) {
    auto opt = [](const auto& o) { return o ? fmt::format("{}", *o) : std::string("auto"); };
    return fmt::format(
        "{{workers={} spin={} peer_steal={} mails={} us={} stride={} valve={} handoff={} sticky={} "
        "backstop={}}}",
        t.workers, t.spin_window_us, t.peer_steal, t.batch_max_mails, t.batch_max_us, t.clock_check_stride,
        opt(t.local_time_budget_us), opt(t.handoff_cost_ns), t.local_sticky_max, t.local_chain_backstop);
  }
};
}  // namespace Catch

namespace {

using Catch::Matchers::Contains;
using coact::resolve_tuning;
using coact::SchedulerTuning;
using coact::tuning_error;
using coact::TuningSources;
using coact::test::TempDir;

// Captures what is written to std::cerr for the lifetime of the object
// (resolution must write nothing there).
class cerr_capture {
 public:
  cerr_capture() : old_(std::cerr.rdbuf(buf_.rdbuf())) {}
  ~cerr_capture() { std::cerr.rdbuf(old_); }
  cerr_capture(const cerr_capture&) = delete;
  cerr_capture& operator=(const cerr_capture&) = delete;
  std::string text() const { return buf_.str(); }

 private:
  std::ostringstream buf_;
  std::streambuf* old_;
};

// Sources with an empty injected environment (nothing leaks in from the real one).
TuningSources isolated() {
  TuningSources s;
  s.env = std::vector<std::string>{};
  return s;
}

std::string error_of(const TuningSources& s) {
  try {
    (void)resolve_tuning(s);
  } catch (const tuning_error& e) {
    return e.what();
  }
  FAIL("resolve_tuning did not throw tuning_error");
  return {};
}

}  // namespace

TEST_CASE("tuning defaults are the documented ones", "[tuning]") {
  cerr_capture err;
  const SchedulerTuning t = resolve_tuning(isolated());
  CHECK(t.workers == 0);
  CHECK(t.spin_window_us == 50);
  CHECK_FALSE(t.peer_steal);
  CHECK(t.batch_max_mails == 64);
  CHECK(t.batch_max_us == 200);
  CHECK(t.clock_check_stride == 64);
  CHECK_FALSE(t.local_time_budget_us.has_value());  // valve adaptive
  CHECK_FALSE(t.handoff_cost_ns.has_value());       // calibrated
  CHECK(t.local_sticky_max == 256);
  CHECK(t.local_chain_backstop == 64);
  CHECK(t == SchedulerTuning{});
  CHECK(err.text().empty());
}

TEST_CASE("effective_workers resolves 0 to the usable CPUs and keeps an explicit count", "[tuning]") {
  SchedulerTuning t;
  t.workers = 0;
  CHECK(t.effective_workers() >= 1);
  CHECK(t.effective_workers() <= 1024);
  t.workers = 3;
  CHECK(t.effective_workers() == 3);
}

TEST_CASE("every knob is read from each source", "[tuning]") {
  TempDir dir;
  const SchedulerTuning expected = [] {
    SchedulerTuning t;
    t.workers = 3;
    t.spin_window_us = 7;
    t.peer_steal = true;
    t.batch_max_mails = 11;
    t.batch_max_us = 13;
    t.clock_check_stride = 17;
    t.local_time_budget_us = 0;  // 0 = valve disabled, distinct from adaptive
    t.handoff_cost_ns = 23;
    t.local_sticky_max = 29;
    t.local_chain_backstop = 31;
    return t;
  }();

  SECTION("config file") {
    TuningSources s = isolated();
    s.config_path = dir.write("all.toml", R"([scheduler]
workers = 3
spin_window_us = 7
peer_steal = true
batch_max_mails = 11
batch_max_us = 13
clock_check_stride = 17
local_time_budget_us = 0
local_sticky_max = 29
local_chain_backstop = 31
[calibrate]
handoff_cost_ns = 23
)");
    CHECK(resolve_tuning(s) == expected);
  }
  SECTION("environment") {
    TuningSources s;
    s.env = std::vector<std::string>{
        "COACT_WORKERS=3",           "COACT_SPIN_WINDOW_US=7",      "COACT_PEER_STEAL=yes",
        "COACT_BATCH_MAX_MAILS=11",  "COACT_BATCH_MAX_US=13",       "COACT_CLOCK_CHECK_STRIDE=17",
        "COACT_LOCAL_TIME_BUDGET_US=0", "COACT_HANDOFF_COST_NS=23",   "COACT_LOCAL_STICKY_MAX=29",
        "COACT_LOCAL_CHAIN_BACKSTOP=31",
        "PATH=/usr/bin",  // non-COACT keys are none of our business
    };
    cerr_capture err;
    CHECK(resolve_tuning(s) == expected);
    CHECK(err.text().empty());
  }
  SECTION("command line, both --k=v and --k v, among the program's own args") {
    TuningSources s = isolated();
    s.args = {"input.txt",
              "--coact-workers=3",
              "--coact-spin-window-us",
              "7",
              "-v",
              "--coact-peer-steal=ON",
              "--coact-batch-max-mails=11",
              "--coact-batch-max-us=13",
              "--coact-clock-check-stride",
              "17",
              "--coact-local-time-budget-us=0",
              "--coact-handoff-cost-ns=23",
              "--coact-local-sticky-max=29",
              "--coact-local-chain-backstop=31",
              "--output",
              "x"};
    cerr_capture err;
    CHECK(resolve_tuning(s) == expected);
    CHECK(err.text().empty());
  }
}

TEST_CASE("booleans accept 1/0/true/false/yes/no/on/off in any case", "[tuning]") {
  for (const char* yes : {"1", "true", "TRUE", "Yes", "on", "oN"}) {
    TuningSources s;
    s.env = std::vector<std::string>{std::string("COACT_PEER_STEAL=") + yes};
    INFO(yes);
    CHECK(resolve_tuning(s).peer_steal);
  }
  for (const char* no : {"0", "false", "False", "NO", "off", "OFF"}) {
    TuningSources s;
    s.env = std::vector<std::string>{std::string("COACT_PEER_STEAL=") + no};
    INFO(no);
    // Start from a file that turns it on, so "off" must actually win.
    TempDir dir;
    s.config_path = dir.write("on.toml", "[scheduler]\npeer_steal = true\n");
    CHECK_FALSE(resolve_tuning(s).peer_steal);
  }
  SECTION("a bare boolean flag means true") {
    TuningSources s = isolated();
    s.args = {"--coact-peer-steal"};
    CHECK(resolve_tuning(s).peer_steal);
    s.args = {"--coact-peer-steal", "--verbose"};
    CHECK(resolve_tuning(s).peer_steal);
    s.args = {"--coact-peer-steal", "off"};
    CHECK_FALSE(resolve_tuning(s).peer_steal);
  }
}

TEST_CASE("tuning precedence: argv > environment > config file > default, pairwise", "[tuning]") {
  TempDir dir;
  const std::string file = dir.write("spin.toml", "[scheduler]\nspin_window_us = 30\npeer_steal = true\n");
  const std::vector<std::string> env = {"COACT_SPIN_WINDOW_US=20", "COACT_PEER_STEAL=false"};
  const std::vector<std::string> args = {"--coact-spin-window-us=10", "--coact-peer-steal=1"};

  SECTION("config file beats default") {
    TuningSources s = isolated();
    s.config_path = file;
    auto t = resolve_tuning(s);
    CHECK(t.spin_window_us == 30);
    CHECK(t.peer_steal);
    CHECK(t.batch_max_mails == 64);  // keys the file does not set keep their default
  }
  SECTION("environment beats config file") {
    TuningSources s;
    s.env = env;
    s.config_path = file;
    auto t = resolve_tuning(s);
    CHECK(t.spin_window_us == 20);
    CHECK_FALSE(t.peer_steal);
  }
  SECTION("environment beats default") {
    TuningSources s;
    s.env = env;
    CHECK(resolve_tuning(s).spin_window_us == 20);
  }
  SECTION("argv beats environment") {
    TuningSources s;
    s.env = env;
    s.args = args;
    auto t = resolve_tuning(s);
    CHECK(t.spin_window_us == 10);
    CHECK(t.peer_steal);
  }
  SECTION("argv beats config file") {
    TuningSources s = isolated();
    s.config_path = file;
    s.args = {"--coact-spin-window-us", "10", "--coact-peer-steal=no"};
    auto t = resolve_tuning(s);
    CHECK(t.spin_window_us == 10);
    CHECK_FALSE(t.peer_steal);
  }
  SECTION("argv beats environment beats config file, all three at once") {
    TuningSources s;
    s.env = env;
    s.env->push_back("COACT_BATCH_MAX_MAILS=5");
    s.config_path = dir.write("three.toml", "[scheduler]\nspin_window_us = 30\nbatch_max_mails = 6\nworkers = 2\n");
    s.args = args;
    auto t = resolve_tuning(s);
    CHECK(t.spin_window_us == 10);  // argv
    CHECK(t.batch_max_mails == 5);    // env
    CHECK(t.workers == 2);            // file
    CHECK(t.batch_max_us == 200);   // default
  }
  SECTION("the last of a repeated argument wins") {
    TuningSources s = isolated();
    s.args = {"--coact-workers=2", "--coact-workers=5"};
    CHECK(resolve_tuning(s).workers == 5);
  }
  SECTION("'auto' returns an optional knob to adaptive over a lower-precedence pin") {
    TuningSources s;
    s.config_path = dir.write("pin.toml", "[scheduler]\nlocal_time_budget_us = 12\n[calibrate]\nhandoff_cost_ns = 900\n");
    s.env = std::vector<std::string>{"COACT_LOCAL_TIME_BUDGET_US=auto"};
    s.args = {"--coact-handoff-cost-ns=AUTO"};
    auto t = resolve_tuning(s);
    CHECK_FALSE(t.local_time_budget_us.has_value());
    CHECK_FALSE(t.handoff_cost_ns.has_value());
    s.env = std::vector<std::string>{};
    s.args = {};
    t = resolve_tuning(s);
    CHECK(t.local_time_budget_us == 12u);
    CHECK(t.handoff_cost_ns == 900u);
  }
}

TEST_CASE("config path: config_path > --coact-config > COACT_CONFIG", "[tuning]") {
  TempDir dir;
  const std::string a = dir.write("a.toml", "[scheduler]\nworkers = 1\n");
  const std::string b = dir.write("b.toml", "[scheduler]\nworkers = 2\n");
  const std::string c = dir.write("c.toml", "[scheduler]\nworkers = 3\n");
  TuningSources s;
  s.env = std::vector<std::string>{"COACT_CONFIG=" + c};
  CHECK(resolve_tuning(s).workers == 3);
  s.args = {"--coact-config=" + b};
  CHECK(resolve_tuning(s).workers == 2);
  s.args = {"--coact-config", b};
  CHECK(resolve_tuning(s).workers == 2);
  s.config_path = a;
  CHECK(resolve_tuning(s).workers == 1);

  SECTION("other subsystems' tables leave the scheduler's knobs at their defaults") {
    TuningSources t = isolated();
    t.config_path = dir.write("other.toml", "[causal]\nexperiment_ms = 20\n[calibrate]\ntsc_hz = 3000000000\n");
    cerr_capture err;
    CHECK(resolve_tuning(t) == SchedulerTuning{});
    CHECK(err.text().empty());
  }
}

// ---- errors: one test per class ----------------------------------------------

TEST_CASE("tuning error: not a number names key, value, source and range", "[tuning]") {
  SECTION("environment") {
    TuningSources s;
    s.env = std::vector<std::string>{"COACT_SPIN_WINDOW_US=abc"};
    CHECK(error_of(s) ==
          "COACT_SPIN_WINDOW_US='abc' (from environment): expected an integer in 0..1000000 (us) (not a decimal number)");
  }
  SECTION("trailing garbage, sign, spaces and empty are all rejected") {
    for (const char* bad : {"12abc", "+12", " 12", "12 ", "0x10", "1e3", "1.5"}) {
      TuningSources s;
      s.env = std::vector<std::string>{std::string("COACT_BATCH_MAX_MAILS=") + bad};
      INFO(bad);
      const std::string msg = error_of(s);
      CHECK_THAT(msg, Contains("COACT_BATCH_MAX_MAILS") && Contains(std::string("'") + bad + "'") &&
                          Contains("from environment") && Contains("1..1000000"));
    }
    TuningSources s;  // an empty environment value counts as unset
    s.env = std::vector<std::string>{"COACT_BATCH_MAX_MAILS="};
    CHECK(resolve_tuning(s).batch_max_mails == 64);
    s.args = {"--coact-batch-max-mails="};
    CHECK_THAT(error_of(s), Contains("--coact-batch-max-mails=''") && Contains("1..1000000") && Contains("empty"));
  }
  SECTION("command line") {
    TuningSources s = isolated();
    s.args = {"--coact-clock-check-stride", "fast"};
    REQUIRE_THROWS_AS(resolve_tuning(s), tuning_error);
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("--coact-clock-check-stride='fast'") &&
                                               Contains("from command line") && Contains("1..4096"));
  }
  SECTION("a boolean that is not one of the words") {
    TuningSources s;
    s.env = std::vector<std::string>{"COACT_PEER_STEAL=maybe"};
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("COACT_PEER_STEAL='maybe'") && Contains("from environment") &&
                                               Contains("1/0/true/false/yes/no/on/off"));
  }
  SECTION("a missing value at the end of argv") {
    TuningSources s = isolated();
    s.args = {"--coact-workers"};
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("--coact-workers") && Contains("missing value") &&
                                               Contains("0..1024"));
  }
  SECTION("control characters in the value are escaped, the message stays one line") {
    TuningSources s;
    s.env = std::vector<std::string>{"COACT_WORKERS=4\n"};
    const std::string msg = error_of(s);
    CHECK_THAT(msg, Contains("COACT_WORKERS='4\\x0a'") && Contains("0..1024"));
    CHECK(msg.find('\n') == std::string::npos);
  }
}

TEST_CASE("tuning error: negative value names key, value, source and range", "[tuning]") {
  TempDir dir;
  SECTION("environment") {
    TuningSources s;
    s.env = std::vector<std::string>{"COACT_WORKERS=-1"};
    CHECK(error_of(s) == "COACT_WORKERS='-1' (from environment): expected an integer in 0..1024 (negative)");
  }
  SECTION("command line, space form") {
    TuningSources s = isolated();
    s.args = {"--coact-local-sticky-max", "-3"};
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("--coact-local-sticky-max='-3'") &&
                                               Contains("from command line") && Contains("1..1000000") &&
                                               Contains("negative"));
  }
  SECTION("config file") {
    TuningSources s = isolated();
    s.config_path = dir.write("neg.toml", "[scheduler]\nspin_window_us = -5\n");
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("scheduler.spin_window_us = -5") &&
                                               Contains("config file '" + s.config_path + "'") &&
                                               Contains("0..1000000") && Contains("negative"));
  }
}

TEST_CASE("tuning error: out of range names key, value, source and range", "[tuning]") {
  TempDir dir;
  SECTION("above the maximum") {
    TuningSources s;
    s.env = std::vector<std::string>{"COACT_WORKERS=1025"};
    CHECK(error_of(s) == "COACT_WORKERS='1025' (from environment): expected an integer in 0..1024 (too large)");
  }
  SECTION("below the minimum") {
    TuningSources s;
    s.env = std::vector<std::string>{"COACT_BATCH_MAX_MAILS=0"};
    CHECK(error_of(s) == "COACT_BATCH_MAX_MAILS='0' (from environment): expected an integer in 1..1000000 (too small)");
  }
  SECTION("beyond 64 bits") {
    TuningSources s;
    s.env = std::vector<std::string>{"COACT_HANDOFF_COST_NS=99999999999999999999999"};
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("COACT_HANDOFF_COST_NS='99999999999999999999999'") &&
                                               Contains("1..100000000 (ns) or 'auto'") && Contains("too large"));
  }
  SECTION("command line") {
    TuningSources s = isolated();
    s.args = {"--coact-clock-check-stride=4097"};
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("--coact-clock-check-stride='4097'") &&
                                               Contains("from command line") && Contains("1..4096"));
  }
  SECTION("config file") {
    TuningSources s = isolated();
    s.config_path = dir.write("big.toml", "[scheduler]\nbatch_max_us = 10000001\n");
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("scheduler.batch_max_us = 10000001") &&
                                               Contains("config file '" + s.config_path + "'") &&
                                               Contains("1..10000000"));
  }
  SECTION("a bad value is an error even where a higher source overrides it") {
    TuningSources s;
    s.env = std::vector<std::string>{"COACT_WORKERS=5000"};
    s.args = {"--coact-workers=4"};
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("COACT_WORKERS='5000'") && Contains("0..1024"));
  }
}

TEST_CASE("unknown keys are errors in every source, naming the nearest declared key", "[tuning]") {
  SECTION("environment") {
    TuningSources s;
    s.env = std::vector<std::string>{"COACT_SPIN_WINDOW=20", "COACT_WORKERS=2"};
    CHECK(error_of(s) == "unknown key COACT_SPIN_WINDOW (from environment); did you mean COACT_SPIN_WINDOW_US? "
                         "(--coact-help lists every key)");
  }
  SECTION("an old spelling names its new key") {
    TuningSources s;
    s.env = std::vector<std::string>{"COACT_SPIN_WINDOW_USEC=20"};
    CHECK(error_of(s) == "COACT_SPIN_WINDOW_USEC (from environment) was renamed: use COACT_SPIN_WINDOW_US");
    s.env = std::vector<std::string>{};
    s.args = {"--coact-batch-max-usec=9"};
    CHECK(error_of(s) == "--coact-batch-max-usec (from command line) was renamed: use --coact-batch-max-us");
  }
  SECTION("other parts of coact and other programs' variables are not unknown") {
    TuningSources s;
    s.env = std::vector<std::string>{"COACT_CONFIG=",        "COACT_TSC_HZ=3000000000", "COACT_CALIBRATION_FILE=/x",
                                     "COACT_CAUSAL=0",       "COACT_BENCH_TRIALS=5",    "NOT_COACT_THING=1"};
    cerr_capture err;
    CHECK(resolve_tuning(s) == SchedulerTuning{});
    CHECK(err.text().empty());
  }
  SECTION("config file: an unknown key, a key in the wrong table, an unknown table") {
    TempDir dir;
    TuningSources s = isolated();
    s.config_path = dir.write("typo.toml", "[scheduler]\nworker = 4\n");
    CHECK(error_of(s) == "unknown key scheduler.worker (from config file '" + s.config_path +
                             "'); did you mean scheduler.workers? (--coact-help lists every key)");
    s.config_path = dir.write("moved.toml", "[scheduler]\nhandoff_cost_ns = 4\n");
    CHECK(error_of(s) == "scheduler.handoff_cost_ns (from config file '" + s.config_path +
                             "') belongs in table [calibrate]: use calibrate.handoff_cost_ns");
    s.config_path = dir.write("old.toml", "[scheduler]\nspin_window_usec = 4\n");
    CHECK_THAT(error_of(s), Contains("was renamed: use scheduler.spin_window_us"));
    s.config_path = dir.write("table.toml", "[sched]\nworkers = 4\n");
    CHECK_THAT(error_of(s), Contains("unknown table [sched]"));
  }
  SECTION("command line --coact-* options; the program's own arguments are left alone") {
    TuningSources s = isolated();
    s.args = {"--other=3", "--coact-spin-window=20"};
    CHECK_THAT(error_of(s), Contains("unknown key --coact-spin-window (from command line); did you mean "
                                     "--coact-spin-window-us?"));
    s.args = {"--other=3", "--", "--coact-spin-window=20"};  // after "--": the program's
    CHECK(resolve_tuning(s) == SchedulerTuning{});
  }
}

TEST_CASE("tuning error: unreadable config file names the path and the reason", "[tuning]") {
  TempDir dir;
  SECTION("nonexistent path") {
    TuningSources s = isolated();
    s.config_path = dir.path.string() + "/missing.toml";
    CHECK(error_of(s) == "config file '" + s.config_path + "': cannot read: No such file or directory");
  }
  SECTION("nonexistent path named by COACT_CONFIG") {
    TuningSources s;
    s.env = std::vector<std::string>{"COACT_CONFIG=" + dir.path.string() + "/nope.toml"};
    CHECK(error_of(s) == "COACT_CONFIG='" + dir.path.string() +
                             "/nope.toml': cannot read the config file: No such file or directory (expected a "
                             "readable TOML file)");
    s.env = std::vector<std::string>{};
    s.args = {"--coact-config", dir.path.string() + "/nope.toml"};
    CHECK_THAT(error_of(s), Contains("--coact-config='" + dir.path.string() + "/nope.toml': cannot read"));
  }
  SECTION("a directory") {
    TuningSources s = isolated();
    s.config_path = dir.path.string();
    CHECK(error_of(s) == "config file '" + dir.path.string() + "': cannot read: Is a directory");
  }
}

TEST_CASE("tuning error: malformed TOML names the path and the position", "[tuning]") {
  TempDir dir;
  TuningSources s = isolated();
  s.config_path = dir.write("bad.toml", "[scheduler]\nworkers = = 4\n");
  const std::string msg = error_of(s);
  CHECK_THAT(msg, Contains("config file '" + s.config_path + "': line 2, column "));
  SECTION("unterminated table header") {
    s.config_path = dir.write("bad2.toml", "[scheduler\n");
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("config file '" + s.config_path + "': line 1"));
  }
}

TEST_CASE("tuning error: wrong TOML type names the key, the value, the file and the expected type", "[tuning]") {
  TempDir dir;
  TuningSources s = isolated();
  SECTION("string for an integer") {
    s.config_path = dir.write("t1.toml", "[scheduler]\nspin_window_us = \"20\"\n");
    CHECK(error_of(s) == "scheduler.spin_window_us = '20' (from config file '" + s.config_path +
                             "'): wrong TOML type: expected a TOML integer in 0..1000000, got a string");
  }
  SECTION("float for an integer") {
    s.config_path = dir.write("t2.toml", "[scheduler]\nworkers = 4.0\n");
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("scheduler.workers = 4.0") &&
                                               Contains("config file '" + s.config_path + "'") &&
                                               Contains("0..1024") && Contains("got a float"));
  }
  SECTION("string for a boolean") {
    s.config_path = dir.write("t3.toml", "[scheduler]\npeer_steal = \"yes\"\n");
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("scheduler.peer_steal = 'yes'") &&
                                               Contains("config file '" + s.config_path + "'") &&
                                               Contains("TOML boolean") && Contains("got a string"));
  }
  SECTION("scheduler is not a table") {
    s.config_path = dir.write("t4.toml", "scheduler = 3\n");
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("scheduler = 3") &&
                                               Contains("config file '" + s.config_path + "'") &&
                                               Contains("expected a table"));
  }
  SECTION("an optional knob accepts \"auto\" but no other string") {
    s.config_path = dir.write("t5.toml", "[scheduler]\nlocal_time_budget_us = \"auto\"\n");
    CHECK_FALSE(resolve_tuning(s).local_time_budget_us.has_value());
    s.config_path = dir.write("t6.toml", "[scheduler]\nlocal_time_budget_us = \"off\"\n");
    REQUIRE_THROWS_WITH(resolve_tuning(s), Contains("scheduler.local_time_budget_us = 'off'") &&
                                               Contains("0..1000000") && Contains("\"auto\""));
  }
}

TEST_CASE("the scheduler's option group binds every scheduler key once, each to the member it sets", "[tuning]") {
  CHECK(coact::options::bound_keys_missing(coact::tuning_fields(), "scheduler").empty());
  std::vector<std::string_view> seen;
  for (const auto& b : coact::tuning_fields()) {
    INFO(b.key);
    CHECK(std::count(seen.begin(), seen.end(), b.key) == 0);
    seen.push_back(b.key);
    const coact::options::Key& k = b.declared();
    // A value other than the default reaches the member and reads back as the key's text.
    std::string value = k.type == coact::options::Type::boolean   ? (k.default_value == "true" ? "false" : "true")
                        : k.type == coact::options::Type::integer ? std::to_string(k.max)
                        : k.name == "COACT_TRACE"                 ? "0.5"
                                                                  : "value";
    coact::TuningSources src;
    src.env = std::vector<std::string>{std::string(b.key) + "=" + value};
    const coact::SchedulerTuning t = coact::resolve_tuning(src);
    CHECK(b.text(t) != b.text(coact::SchedulerTuning{}));
    CHECK(b.text(t) == (k.name == "COACT_TRACE" ? std::to_string(0.5) : value));
  }
}
