// Accuracy of virtual speedup on the known-answer workloads
// (bench/causal/known_answer.hpp), in process, through the Controller API:
// for each workload and stage, sweeps with a fixed region and a fixed
// speedup (0, then each s) measure the predicted program speedup
// y(s) = 1 − rate(0) / rate(s) (rates over effective time, as in the
// profile), and the test asserts the slope of the curve against the known
// answer:
//   fork_join A, pipeline A, timer_stage A: slope 1 on [0, 1/2] (the fit
//     through the origin of y(0.25), y(0.5)), then flat: y(0.75) − y(0.5) ≈ 0
//     (Coz overshoots this plateau by 13 points);
//   ping_pong A: slope 2/3; ping_pong B: slope 1/3 (fits through the origin
//     of y(0.25), y(0.5), y(0.75)) — the handoff Coz misses through futexes;
//   fork_join B, pipeline B (off the critical path) and timer_stage T (a
//     timer wait, not computation): y(0.5) ≈ 0;
//   farm A (short instances of one handler region running at once on both
//     workers) at 0.25 and 0.5, farm B at 0.5: y(s) against the program
//     really made s faster in the same process (measure_real), within ±5
//     points. Three runs: differences −3.2…+1.0 points (sd ≈ 1.4; the real
//     side's own noise is ~2 points at 0.25). Before Runtime::run() credited
//     its caller, the archiver with this shape predicted −17 % where +15 %
//     was measured; the farm itself was already within 4 points.
//
// Tolerances, from measured noise (2-core KVM guest, other engineers'
// builds sharing it; five runs of this file, tools/coact-profile/README.md):
// each y is the median of 3 rounds (5 for a single-s case) of
// 1 − rate(0)/rate(s) over 300 ms windows. Across the five runs the
// standard deviation of a y was 0.1-1.4 points (largest: fork_join A at
// 0.25), its mean within 0.7 points of the known answer, and no single y
// more than 2.7 points from it. A slope through the origin from s = 0.25
// and 0.5 then has sd ≈ 0.014·0.25/(0.25² + 0.5²) ≈ 0.011 at worst; with
// three points ≈ 0.005. The bounds are ±0.08 on slopes (≥ 7 sd) and ±5
// points on plateaus and zeros (≥ 3.5 sd of the noisiest y, about twice
// the largest deviation seen), so a correct profiler fails them about
// never, while the semantics they guard against are far outside: delay
// added only at a region's end gives y(0.75) ≈ 0.75 instead of 0.5 on
// fork_join (25 points), no credit for a woken worker gives slope 0 on
// ping_pong B.
//
// Contention: when another process takes one of the two cores, the
// workloads' true curves change (fork_join becomes serial) and the known
// answers no longer hold. A round whose baseline period is more than 15 %
// above the ideal (known_answer::ideal_period_units) is redone, up to
// kMaxRetries times per round; a case whose rounds stay contended is
// skipped with a WARN (it would measure the machine, not the profiler).
//
// Time: 5 workloads, 11 (workload, stage) cases, 80 rounds of about 1 s:
// ~90 s on a quiet machine, ~4 min at worst (every round redone twice); the
// three sleepers shapes (1 s windows, A's two curves and B's) add ~4 min.
// The cases hold test_ledger_mutex() (the ledger and the selection are
// process-global). Sanitizer builds skip them (see kSanitized).
#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/controller.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/testing.hpp>
#include <coact/runtime/runtime.hpp>

#include "known_answer.hpp"    // target coact_known_answer
#include "worker_pinning.hpp"

namespace ka = coact::known_answer;
namespace ca = coact::causal;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

using coact::test::TempDir;

namespace {

constexpr int kRounds = 3;        // rounds per s on a curve
constexpr int kRoundsSingle = 5;  // rounds for a single-s case (a zero)
constexpr int kMaxRetries = 2;
constexpr std::chrono::milliseconds kWindow = 300ms;
// sleepers*: a 14 ms round, so 300 ms would hold only ~21 iterations (±5 %
// from where the window boundaries fall); 1 s holds ~70.
constexpr std::chrono::milliseconds kSleepersWindow = 1000ms;

std::chrono::milliseconds window_for(ka::Workload w) { return ka::is_sleepers(w) ? kSleepersWindow : kWindow; }
constexpr double kContendedFactor = 1.15;
constexpr double kSlopeTol = 0.08;
constexpr double kPointTol = 0.05;

struct Window {
  double rate = 0;       // progress visits per effective second
  double period_us = 0;  // effective µs per visit
  bool ok = false;
};

// One experiment through the Controller API: fixed region, fixed speedup,
// one window. Returns the experiment's rate over effective time.
Window controller_window(const fs::path& dir, const std::string& region, uint32_t pct,
                         std::chrono::milliseconds window = kWindow) {
  ca::Options o;
  o.progress = {ka::kProgressPoint};
  o.fixed_region = region;
  o.fixed_speedup_pct = pct;
  o.experiment = window;
  o.max_experiment = o.experiment;
  o.cooldown = 20ms;
  o.max_experiments = 1;
  o.output = "";
  o.json_output = (dir / "profile.jsonl").string();
  fs::remove(o.json_output);
  ca::Controller::start(o);
  const bool done = ca::Controller::wait(10s);
  (void)ca::Controller::stop();
  Window w;
  if (!done) return w;
  std::ifstream in(o.json_output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.front() != '{') continue;
    const json j = json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("type", "") != "experiment") continue;
    uint64_t visits = 0;
    for (const auto& [k, v] : j["progress"].items()) visits += v.get<uint64_t>();
    const double eff = static_cast<double>(j.value("effective_ns", uint64_t{0})) / 1e9;
    if (visits > 0 && eff > 0) {
      w.rate = static_cast<double>(visits) / eff;
      w.period_us = eff * 1e6 / static_cast<double>(visits);
      w.ok = true;
    }
  }
  return w;
}

struct Curve {
  std::vector<double> s;
  std::vector<double> y;  // mean predicted speedup at each s
  bool quiet = true;      // every round had an uncontended baseline
};

// Runs `w`, and for stage `key` measures y(s) for each s, kRounds rounds of
// (baseline window, window at s, baseline window).
Curve measure(ka::Workload w, const std::string& key, const std::vector<double>& speeds) {
  const ka::Config cfg{.workload = w};
  std::string region;
  for (const auto& st : ka::stages(w)) {
    if (st.key == key) region = st.region;
  }
  REQUIRE(!region.empty());
  (void)coact::calibrate::tsc_hz();
  TempDir dir;
  ka::Shared sh;
  const std::vector<pid_t> threads_before = ka::thread_ids();
  const auto tuning = ka::workload_tuning(coact::SchedulerTuning{}, cfg.unit, w);
  coact::Runtime rt(tuning);
  if (ka::pins_workers(w)) (void)ka::pin_new_threads(threads_before, static_cast<int>(tuning.workers));  // as coact-known-answer
  ka::start(rt, cfg, sh);
  const auto window = window_for(w);
  const double ideal_us = ka::ideal_period_units(w) * static_cast<double>(cfg.unit.count());
  (void)controller_window(dir.path, region, 0);  // registers the regions, warms up
  Curve c;
  for (double s : speeds) {
    std::vector<double> ys;
    const int rounds = speeds.size() == 1 ? kRoundsSingle : kRounds;
    for (int round = 0; round < rounds; ++round) {
      const size_t before = ys.size();
      for (int attempt = 0; attempt <= kMaxRetries; ++attempt) {
        const Window b0 = controller_window(dir.path, region, 0, window);
        const Window v = controller_window(dir.path, region, static_cast<uint32_t>(std::lround(s * 100)), window);
        const Window b1 = controller_window(dir.path, region, 0, window);
        if (!b0.ok || !v.ok || !b1.ok) continue;
        const bool quiet = b0.period_us < kContendedFactor * ideal_us && b1.period_us < kContendedFactor * ideal_us;
        if (!quiet && attempt < kMaxRetries) continue;
        if (!quiet) c.quiet = false;
        const double base = (b0.rate + b1.rate) / 2;
        ys.push_back(1.0 - base / v.rate);
        break;
      }
      // Every attempt's windows came back empty (the controller could not
      // finish a window in time): the machine, not the profiler.
      if (ys.size() == before) c.quiet = false;
    }
    // The median of the rounds: a round whose middle window alone was hit by
    // another process (its baselines looked quiet) does not move it.
    std::sort(ys.begin(), ys.end());
    c.s.push_back(s);
    c.y.push_back(ys.empty() ? std::nan("") : ys[ys.size() / 2]);
  }
  sh.stopping.store(true, std::memory_order_relaxed);
  rt.request_stop();
  std::string line = std::string(ka::to_string(w)) + " " + key + ":";
  for (size_t i = 0; i < c.s.size(); ++i) line += " y(" + std::to_string(c.s[i]).substr(0, 4) + ")=" + std::to_string(c.y[i]).substr(0, 6);
  std::fprintf(stderr, "accuracy: %s%s\n", line.c_str(), c.quiet ? "" : " (contended)");
  return c;
}

// The really-faster program, in the same process: stage `key` of `w` made
// a fraction s faster for real (known_answer::set_speed), its rate over wall
// windows against baseline windows on either side, no sweep running. The
// median over kRounds rounds of 1 − rate(0)/rate(s), per s.
std::vector<double> measure_real(ka::Workload w, const std::string& key, const std::vector<double>& speeds) {
  const ka::Config cfg{.workload = w};
  (void)coact::calibrate::tsc_hz();
  ka::Shared sh;
  const std::vector<pid_t> threads_before = ka::thread_ids();
  const auto tuning = ka::workload_tuning(coact::SchedulerTuning{}, cfg.unit, w);
  coact::Runtime rt(tuning);
  if (ka::pins_workers(w)) (void)ka::pin_new_threads(threads_before, static_cast<int>(tuning.workers));  // as coact-known-answer
  ka::start(rt, cfg, sh);
  auto rate = [&](double s) {
    ka::set_speed(sh, w, key == "A" ? s : 0.0, key == "B" ? s : 0.0);
    std::this_thread::sleep_for(20ms);  // the stage's next runs take the new cost
    const uint64_t n0 = sh.iterations.load(std::memory_order_relaxed);
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(window_for(w));
    const uint64_t n1 = sh.iterations.load(std::memory_order_relaxed);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return static_cast<double>(n1 - n0) / secs;
  };
  std::this_thread::sleep_for(100ms);  // warm-up
  std::vector<double> out;
  for (double s : speeds) {
    std::vector<double> ys;
    for (int round = 0; round < kRounds; ++round) {
      const double b0 = rate(0), v = rate(s), b1 = rate(0);
      if (b0 > 0 && v > 0 && b1 > 0) ys.push_back(1.0 - (b0 + b1) / 2 / v);
    }
    std::sort(ys.begin(), ys.end());
    out.push_back(ys.empty() ? std::nan("") : ys[ys.size() / 2]);
  }
  sh.stopping.store(true, std::memory_order_relaxed);
  rt.request_stop();
  std::string line = std::string(ka::to_string(w)) + " " + key + " (real):";
  for (size_t i = 0; i < speeds.size(); ++i)
    line += " y(" + std::to_string(speeds[i]).substr(0, 4) + ")=" + std::to_string(out[i]).substr(0, 6);
  std::fprintf(stderr, "accuracy: %s\n", line.c_str());
  return out;
}

// Least-squares slope through the origin of the first `n` points.
double slope_through_origin(const Curve& c, size_t n) {
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < n && i < c.s.size(); ++i) {
    sxy += c.s[i] * c.y[i];
    sxx += c.s[i] * c.s[i];
  }
  return sxx > 0 ? sxy / sxx : std::nan("");
}

bool skip_if_contended(const Curve& c) {
  if (c.quiet) return false;
  WARN("another process took a core for " << kMaxRetries + 1
                                          << " baselines in a row: the known answers do not hold; case skipped");
  return true;
}

// Under a sanitizer every handler, hook and atomic costs many times its
// normal time: the workloads still run, but the curves measure the
// instrumentation. The accuracy cases only run in plain builds.
#if defined(COACT_TSAN) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

bool skip_if_sanitized() {
  if (!kSanitized) return false;
  WARN("sanitizer build: accuracy cases skipped (timing is the instrumentation's)");
  return true;
}

void check_plateau_workload(ka::Workload w) {
  if (skip_if_sanitized()) return;
  std::lock_guard lock(ca::test_ledger_mutex());
  const Curve c = measure(w, "A", {0.25, 0.5, 0.75});
  if (skip_if_contended(c)) return;
  INFO(ka::to_string(w) << " A: y(0.25)=" << c.y[0] << " y(0.5)=" << c.y[1] << " y(0.75)=" << c.y[2]);
  CHECK(slope_through_origin(c, 2) == Approx(1.0).margin(kSlopeTol));  // slope 1 below the plateau
  CHECK(c.y[2] - c.y[1] == Approx(0.0).margin(kPointTol));              // flat past it
  CHECK(c.y[2] == Approx(0.5).margin(kPointTol));                       // at min(s, 1/2)
}

void check_zero_stage(ka::Workload w, const std::string& key) {
  if (skip_if_sanitized()) return;
  std::lock_guard lock(ca::test_ledger_mutex());
  const Curve c = measure(w, key, {0.5});
  if (skip_if_contended(c)) return;
  INFO(ka::to_string(w) << " " << key << ": y(0.5)=" << c.y[0]);
  CHECK(c.y[0] == Approx(0.0).margin(kPointTol));
}

}  // namespace

TEST_CASE("accuracy: fork-join A follows min(s, 1/2): slope 1, then the plateau", "[causal][accuracy]") {
  check_plateau_workload(ka::Workload::fork_join);
}

TEST_CASE("accuracy: fork-join B (the short branch) predicts 0", "[causal][accuracy]") {
  check_zero_stage(ka::Workload::fork_join, "B");
}

TEST_CASE("accuracy: pipeline A (the bottleneck) follows min(s, 1/2)", "[causal][accuracy]") {
  check_plateau_workload(ka::Workload::pipeline);
}

TEST_CASE("accuracy: pipeline B (the consumer with slack) predicts 0", "[causal][accuracy]") {
  check_zero_stage(ka::Workload::pipeline, "B");
}

TEST_CASE("accuracy: ping-pong A has slope 2/3 and B slope 1/3", "[causal][accuracy]") {
  if (skip_if_sanitized()) return;
  std::lock_guard lock(ca::test_ledger_mutex());
  for (const char* key : {"A", "B"}) {
    const Curve c = measure(ka::Workload::ping_pong, key, {0.25, 0.5, 0.75});
    if (skip_if_contended(c)) continue;
    const double expected = std::string(key) == "A" ? 2.0 / 3.0 : 1.0 / 3.0;
    INFO("ping_pong " << key << ": y(0.25)=" << c.y[0] << " y(0.5)=" << c.y[1] << " y(0.75)=" << c.y[2]);
    CHECK(slope_through_origin(c, 3) == Approx(expected).margin(kSlopeTol));
  }
}

TEST_CASE("accuracy: a sleep in the other branch leaves A's curve at min(s, 1/2)", "[causal][accuracy]") {
  check_plateau_workload(ka::Workload::timer_stage);
}

TEST_CASE("accuracy: the stage that waits on a timer predicts 0", "[causal][accuracy]") {
  check_zero_stage(ka::Workload::timer_stage, "T");
}

TEST_CASE("accuracy: farm (short instances of one handler on both workers) predicts the really-faster program",
          "[causal][accuracy]") {
  // The archiver's compressor shape: kFarmWorkers actors of one type, ~31 µs
  // per job, running at once on both workers. Compared with the program
  // really made faster in the same process (not the hand-off-free ideal,
  // which over-states it by 1-4 points at these handler lengths).
  if (skip_if_sanitized()) return;
  std::lock_guard lock(ca::test_ledger_mutex());
  for (const char* key : {"A", "B"}) {
    const std::vector<double> speeds = std::string(key) == "A" ? std::vector<double>{0.25, 0.5} : std::vector<double>{0.5};
    const Curve c = measure(ka::Workload::farm, key, speeds);
    if (skip_if_contended(c)) continue;
    const std::vector<double> real = measure_real(ka::Workload::farm, key, speeds);
    for (size_t i = 0; i < speeds.size(); ++i) {
      INFO("farm " << key << " at s=" << speeds[i] << ": predicted " << c.y[i] << ", really faster " << real[i]);
      CHECK(c.y[i] == Approx(real[i]).margin(kPointTol));
    }
  }
}

namespace {
// The sleepers shape (known_answer.hpp): A's compute is off the critical
// path (A: 4 units + a 5-unit wait, B: 8 units + a 20-unit wait, joined), so
// A's true curve is 0 and B's is the really-faster program's. Before the
// wait was stamped with the arming thread's own virtual time, the delay that
// A's speedup owed B's thread when B armed its wait was forgiven: A predicted
// about s·4/28.
//
// Where the pool parks (sleepers, sleepers_send) the workers run pinned, one
// per core (known_answer.hpp pins_workers, as coact-known-answer runs them
// for `coact-profile validate`). Unpinned, the kernel sometimes placed the
// worker woken by the fork on the forking worker's core, which then stalled
// while its sibling ran A and B after it: A was on the real program's
// critical path, by a step (a slightly faster A mostly avoided the stall)
// that a virtual speedup cannot reproduce, since it keeps A's real length.
// There the really-faster A gained nearly all of its effect already at
// s = 0.25 while the prediction grew linearly towards it, and this case
// failed the slope checks on A below (both curves rose).
//
// Pinning does not make every machine's wakes prompt: where a cross-CPU wake
// still takes a large part of a unit, the forking worker stalls anyway and
// the really-faster A gains several points. The known answer (A = 0) is then
// not this machine's answer, as when another process takes a core: the case
// warns with both curves and checks the prediction against the real program
// only.
//
// Checks: A's predicted curve and the really-faster program's, at 0.25 and
// 0.75, each within kPointTol of the other; where the real curve is flat
// (slope through the origin within kSlopeTol of 0), the predicted curve too;
// B at 0.5 within kPointTol of the really-faster program.
void check_sleepers(ka::Workload w) {
  if (skip_if_sanitized()) return;
  std::lock_guard lock(ca::test_ledger_mutex());
  const std::vector<double> speeds{0.25, 0.75};
  const Curve a = measure(w, "A", speeds);
  if (!skip_if_contended(a)) {
    const std::vector<double> real = measure_real(w, "A", speeds);
    const Curve real_curve{speeds, real, true};
    for (size_t i = 0; i < speeds.size(); ++i) {
      INFO(ka::to_string(w) << " A at s=" << speeds[i] << ": predicted " << a.y[i] << ", really faster " << real[i]);
      CHECK(a.y[i] == Approx(real[i]).margin(kPointTol));
    }
    INFO(ka::to_string(w) << " A: predicted y(0.25)=" << a.y[0] << " y(0.75)=" << a.y[1] << "; really faster "
                          << real[0] << ", " << real[1]);
    const double real_slope = slope_through_origin(real_curve, 2);
    if (std::abs(real_slope) <= kSlopeTol) {
      CHECK(slope_through_origin(a, 2) == Approx(0.0).margin(kSlopeTol));
    } else {
      WARN(ka::to_string(w) << " A: the really-faster program gained (slope " << real_slope
                            << "): this machine's wakes put A on the critical path, so the known answer 0 does not "
                               "hold; predicted y(0.25)="
                            << a.y[0] << " y(0.75)=" << a.y[1] << " checked against it only");
    }
  }
  const Curve b = measure(w, "B", {0.5});
  if (skip_if_contended(b)) return;
  const std::vector<double> real = measure_real(w, "B", {0.5});
  INFO(ka::to_string(w) << " B at s=0.5: predicted " << b.y[0] << ", really faster " << real[0]);
  CHECK(b.y[0] == Approx(real[0]).margin(kPointTol));
}
}  // namespace

TEST_CASE("accuracy: sleepers (co_await sleep, parked pool): off-path A predicts 0, B the faster program",
          "[causal][accuracy][sleepers]") {
  check_sleepers(ka::Workload::sleepers);
}

TEST_CASE("accuracy: sleepers_spin (the sleeper's worker spins): A predicts 0, B the faster program",
          "[causal][accuracy][sleepers]") {
  check_sleepers(ka::Workload::sleepers_spin);
}

TEST_CASE("accuracy: sleepers_send (send_after instead of sleep): A predicts 0, B the faster program",
          "[causal][accuracy][sleepers]") {
  check_sleepers(ka::Workload::sleepers_send);
}
