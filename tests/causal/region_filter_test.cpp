// A --region-filter entry whose regions get no experiment (while others do)
// is said on stderr and as a "filter_without_experiments" warning record in
// the profile; an entry whose regions got experiments is not named.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/controller.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/progress.hpp>
#include <coact/causal/region.hpp>
#include <coact/causal/testing.hpp>

#include "support/spin.hpp"
#include "support/temp_dir.hpp"
#include "support/watchdog.hpp"

namespace ca = coact::causal;
using namespace std::chrono_literals;

TEST_CASE("a region filter whose regions get no experiment is warned about in the profile", "[causal][controller]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "filter without experiments");
  coact::test::TempDir dir("filter");
  (void)coact::calibrate::tsc_hz();
  (void)ca::scope_region("filter-test/idle");  // registered, but it never runs in the sweep: never drawn
  std::atomic<bool> quit{false};
  std::thread busy([&] {
    ca::register_thread();
    while (!quit.load()) {
      {
        COACT_SCOPE("filter-test/busy");
        coact::test::spin_for(100us);
      }
      COACT_PROGRESS("filter-test/iterations");
      ca::on_pay_point();
    }
  });
  ca::Options o;
  o.progress = {"filter-test/iterations"};
  o.region_filter = {"filter-test/busy", "filter-test/idle"};
  o.experiment = 20ms;
  o.max_experiment = 20ms;
  o.cooldown = 2ms;
  o.max_experiments = 4;
  o.output = "";
  o.json_output = (dir.path / "profile.jsonl").string();
  ca::Controller::start(o);
  REQUIRE(ca::Controller::wait(30s));
  const ca::SweepSummary s = ca::Controller::stop();
  quit.store(true);
  busy.join();
  ca::credit_resume();
  CHECK(s.experiments == 4u);
  std::ifstream in(o.json_output);
  int warnings = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.front() != '{') continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("what", "") != "filter_without_experiments") continue;
    ++warnings;
    CHECK(j["names"] == nlohmann::json::array({"filter-test/idle"}));  // busy got the experiments: not named
  }
  CHECK(warnings == 1);
}
