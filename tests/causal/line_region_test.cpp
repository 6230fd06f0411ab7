// Sampled-line regions: samples become line regions (overall and qualified by
// the running region) in proportion to CPU time, and a selected line injects
// Coz's per-sample delay, credited back to the sampled thread.
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/line_region.hpp>
#include <coact/causal/region.hpp>
#include <coact/causal/testing.hpp>

#include "support/watchdog.hpp"

namespace ca = coact::causal;
using namespace std::chrono_literals;

namespace line_test {

std::atomic<uint64_t> g_sink{0};

uint64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(t.tv_nsec);
}

// The shared callee: ~`cpu` of CPU time, all of it on one source line.
__attribute__((noinline)) void work(std::chrono::nanoseconds cpu) {
  const uint64_t end = thread_cpu_ns() + static_cast<uint64_t>(cpu.count());
  uint64_t x = 1;
  while (thread_cpu_ns() < end) for (int i = 0; i < 50000; ++i) x = x * 6364136223846793005ull + 1;  // WORK_LINE
  g_sink.fetch_add(x, std::memory_order_relaxed);
}

void caller_a(std::chrono::nanoseconds cpu) {
  COACT_SCOPE("line-test/A");
  work(cpu);
}
void caller_b(std::chrono::nanoseconds cpu) {
  COACT_SCOPE("line-test/B");
  work(cpu);
}

// Line regions whose name contains `part`, by name.
std::map<std::string, ca::RegionStats> lines_with(const std::string& part) {
  std::map<std::string, ca::RegionStats> out;
  for (auto& r : ca::region_snapshot()) {
    if (r.kind == ca::RegionKind::line && r.name.find(part) != std::string::npos) out[r.name] = r;
  }
  return out;
}

}  // namespace line_test

TEST_CASE("line regions: samples of a shared callee split by caller", "[causal][line]") {
  std::lock_guard ledger(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "line regions by caller");
  (void)coact::calibrate::tsc_hz();
  ca::g_sweep_active.store(true);
  // Counters are cumulative over the process (other tests sample work() too): deltas.
  std::map<std::string, uint64_t> before, before_cycles;
  for (const auto& [name, r] : line_test::lines_with("line_region_test.cpp:")) {
    before[name] = r.visits;
    before_cycles[name] = r.cycles;
  }
  REQUIRE(ca::start_line_sampling(ca::LineSamplingOptions{1ms, {}, 5ms}));
  std::thread t([] {
    ca::register_sampled_thread();
    for (int i = 0; i < 30; ++i) {
      line_test::caller_a(14ms);
      line_test::caller_b(7ms);
    }
  });
  t.join();
  ca::stop_line_sampling();
  ca::g_sweep_active.store(false);
  const auto stats = ca::line_sampling_stats();
  INFO("samples " << stats.samples << " periods " << stats.periods << " attributed " << stats.attributed
                  << " symbolizer: " << stats.symbolizer_error);
  REQUIRE(stats.attributed > 0);
  auto lines = line_test::lines_with("line_region_test.cpp:");
  for (auto& [name, r] : lines) r.visits -= before[name];
  std::string overall, at_a, at_b;
  for (const auto& [name, r] : lines) {
    INFO(name << " visits " << r.visits);
    if (r.visits < 20) continue;
    if (name.starts_with("line-test/A @ ")) at_a = name;
    else if (name.starts_with("line-test/B @ ")) at_b = name;
    else if (name.find(" @ ") == std::string::npos) overall = name;
  }
  REQUIRE(!overall.empty());
  REQUIRE(!at_a.empty());
  REQUIRE(!at_b.empty());
  CHECK(at_a.ends_with(overall));
  CHECK(at_b.ends_with(overall));
  const double a = static_cast<double>(lines.at(at_a).visits);
  const double b = static_cast<double>(lines.at(at_b).visits);
  const double all = static_cast<double>(lines.at(overall).visits);
  INFO("A " << a << " B " << b << " overall " << all);
  // 420 ms vs 210 ms of CPU: A's share 2/3. CPU-clock timers fire at the
  // scheduler tick, and under load one signal can stand for ~10 periods, so
  // the share is estimated from tens of samples: measured 0.53 once (ctest
  // -j2, load ~12, ~60 signals); +-0.2 separates "split by caller" from
  // "not split" (A alone: 1, B alone: 0).
  CHECK(a / (a + b) == Approx(2.0 / 3.0).margin(0.2));
  CHECK(all == Approx(a + b).epsilon(0.05));        // the same samples, both callers
  CHECK(all >= 400);                                // ~630 periods of 1 ms
  // Outside experiments every sample is one 1-ms period (other tests' line
  // experiments sampled faster: their samples weigh less; deltas only).
  const auto total = ca::region_stats(lines.at(overall).id);
  CHECK(total.cycles - before_cycles[overall] == lines.at(overall).visits * coact::calibrate::duration_to_cycles(1ms));
}

TEST_CASE("line regions: a selected line injects period x s per sample, not owed by its thread", "[causal][line]") {
  std::lock_guard ledger(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "line region delay");
  (void)coact::calibrate::tsc_hz();
  ca::register_thread();
  ca::g_sweep_active.store(true);
  // The experiment period kept at 1 ms: this test counts 1-ms periods.
  REQUIRE(ca::start_line_sampling(ca::LineSamplingOptions{1ms, {}, 5ms, 1ms}));
  // Warm-up: find the overall line region of work()'s loop.
  std::thread warm([] {
    ca::register_sampled_thread();
    line_test::work(60ms);
  });
  warm.join();
  ca::drain_line_samples();
  uint32_t line = ca::kNoRegion;
  uint64_t best = 0;
  for (const auto& [name, r] : line_test::lines_with("line_region_test.cpp:")) {
    if (name.find(" @ ") == std::string::npos && r.visits > best) {
      best = r.visits;
      line = r.id;
    }
  }
  REQUIRE(line != ca::kNoRegion);

  std::atomic<bool> done{false}, credited{false};
  std::atomic<uint64_t> credit{0};
  const uint64_t g0 = ca::global_delay_cycles();
  const uint64_t v0 = ca::region_stats(line).visits;
  ca::begin_experiment(line, 50);
  std::thread t([&] {
    ca::register_thread();
    ca::register_sampled_thread();
    line_test::work(100ms);
    done = true;
    while (!credited.load()) std::this_thread::sleep_for(1ms);
    credit = ca::detail::take_sample_credit();
  });
  while (!done.load()) std::this_thread::sleep_for(1ms);
  ca::end_experiment();  // drains first: the experiment's last samples count
  credited = true;
  t.join();
  ca::stop_line_sampling();
  ca::g_sweep_active.store(false);
  const uint64_t added = ca::global_delay_cycles() - g0;
  const uint64_t periods = ca::region_stats(line).visits - v0;  // sampled on the line during the experiment
  const uint64_t period_cycles = coact::calibrate::duration_to_cycles(1ms);
  INFO("delay added " << added << " cycles over " << periods << " periods on the line; credit " << credit.load());
  CHECK(periods >= 70);   // ~100 ms of CPU, nearly all on the loop's line
  CHECK(periods <= 130);
  CHECK(static_cast<double>(added) == Approx(static_cast<double>(periods * period_cycles) * 0.5).epsilon(0.001));  // Coz: period x s per sample
  CHECK(credit.load() == added);  // the sampled thread does not owe its own line's delay
}

TEST_CASE("line regions: a sample on the selected line injects its delay at once, credited to its thread",
          "[causal][line]") {
  // The delay of a sample on the selected line must be in G when the sample
  // is taken, not when the drainer next runs: a batch injected milliseconds
  // later is paid at once by whatever the other threads run then (an off-path
  // branch that owes several samples in one payment outlasts its slack and
  // delays the critical path). The drainer is kept from running (1 h
  // interval): G must grow while the line runs, by the samples' delay, and
  // the sampled thread must hold exactly that as its credit.
  std::lock_guard ledger(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "line delay at sample time");
  (void)coact::calibrate::tsc_hz();
  ca::register_thread();
  ca::g_sweep_active.store(true);
  REQUIRE(ca::start_line_sampling(ca::LineSamplingOptions{1ms, {}, std::chrono::hours(1), 1ms}));  // 1-ms periods counted
  std::thread warm([] {
    ca::register_sampled_thread();
    line_test::work(60ms);
  });
  warm.join();
  ca::drain_line_samples();
  uint32_t line = ca::kNoRegion;
  uint64_t best = 0;
  for (const auto& [name, r] : line_test::lines_with("line_region_test.cpp:")) {
    if (name.find(" @ ") == std::string::npos && r.visits > best) {
      best = r.visits;
      line = r.id;
    }
  }
  REQUIRE(line != ca::kNoRegion);

  const uint64_t g0 = ca::global_delay_cycles();
  const uint64_t delayed0 = ca::line_sampling_stats().delay_cycles;
  ca::begin_experiment(line, 50);
  uint64_t grown = 0, credit = 0, after_resume = 1;
  std::thread t([&] {
    ca::register_thread();
    ca::register_sampled_thread();
    line_test::work(60ms);
    grown = ca::global_delay_cycles() - g0;  // no drain has run
    credit = ca::detail::take_sample_credit();
    line_test::work(20ms);
    ca::detail::hook_resume();  // L = G covers the pending credit: it is dropped
    after_resume = ca::detail::take_sample_credit();
  });
  t.join();
  const uint64_t before_drain = ca::global_delay_cycles() - g0;
  ca::end_experiment();  // drains
  const uint64_t total = ca::global_delay_cycles() - g0;
  const uint64_t main_debt = ca::debt_cycles();
  ca::stop_line_sampling();
  ca::g_sweep_active.store(false);
  const uint64_t period_cycles = coact::calibrate::duration_to_cycles(1ms);
  INFO("grown while running " << grown << " credit " << credit << " before drain " << before_drain << " total "
                              << total << " (period x 0.5 = " << period_cycles / 2 << ")");
  CHECK(grown >= 40 * (period_cycles / 2));  // ~60 samples of 1 ms, each 0.5 ms of delay, before any drain
  CHECK(credit == grown);                    // all of it the sampled thread's own
  CHECK(after_resume == 0);
  // The drain finds them injected (counted, not injected twice): at most the
  // few samples whose PC was outside the line (in the vDSO's clock read) are
  // injected by the drain.
  CHECK(total - before_drain <= 5 * period_cycles);
  CHECK(ca::line_sampling_stats().delay_cycles - delayed0 == total);
  CHECK(main_debt >= total);  // every other thread owes it
}

TEST_CASE("line regions: a selected line's delay follows its CPU time within the experiment period, not 1 ms",
          "[causal][line]") {
  // Coz's rule injects a sample's delay when the sample is taken, so G
  // grows in steps of period x s, each up to one period after the CPU time
  // it stands for. At 1 ms a thread that runs beside the line and makes
  // another runnable within that lag escapes the delay: shared_callee's B
  // (0.5 ms beside work@A's 1 ms) mostly did, and work@A at s = 0.75
  // predicted 0.727 instead of 0.5. An experiment on a line samples at the
  // experiment period (1 ms / 8 here). Checked at random instants while a
  // thread runs the selected line: G - G0 against the thread's CPU time on
  // the line. Its slope is s (less the hrtimer's lateness per period, ~2%
  // at 125 us); its steps are what this test measures: the residuals about
  // the fitted line, uniform over one step, +-s x period / 2: +-250 us at
  // 1 ms (median |residual| ~125 us), +-31 us at 125 us (~16 us).
  std::lock_guard ledger(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "line delay steps");
  (void)coact::calibrate::tsc_hz();
  ca::register_thread();
  ca::g_sweep_active.store(true);
  REQUIRE(ca::start_line_sampling(ca::LineSamplingOptions{1ms, {}, 5ms}));  // experiment period: the default (125 us)
  std::thread warm([] {
    ca::register_sampled_thread();
    line_test::work(60ms);
  });
  warm.join();
  ca::drain_line_samples();
  uint32_t line = ca::kNoRegion;
  uint64_t best = 0;
  for (const auto& [name, r] : line_test::lines_with("line_region_test.cpp:")) {
    if (name.find(" @ ") == std::string::npos && r.visits > best) {
      best = r.visits;
      line = r.id;
    }
  }
  REQUIRE(line != ca::kNoRegion);

  // One measurement: an experiment on the line while a thread runs it;
  // returns the fit's slope and the residuals' median and p90 (us).
  struct Fit {
    double slope = 0, median = 0, p90 = 0, max = 0;
    size_t points = 0;
  };
  auto measure = [&]() -> Fit {
    const uint64_t g0 = ca::global_delay_cycles();
    ca::begin_experiment(line, 50);
    CHECK(ca::detail::armed_period_ns() == 125'000);
    std::atomic<bool> started{false}, stop{false};
    clockid_t cpu_clock{};
    int clock_rc = -1;
    std::thread t([&] {
      ca::register_thread();
      ca::register_sampled_thread();
      clock_rc = pthread_getcpuclockid(pthread_self(), &cpu_clock);
      started = true;
      while (!stop.load()) line_test::work(5ms);
    });
    while (!started.load()) std::this_thread::sleep_for(100us);
    REQUIRE(clock_rc == 0);
    auto cpu_us = [&] {
      timespec ts{};
      clock_gettime(cpu_clock, &ts);
      return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
    };
    const double hz = static_cast<double>(coact::calibrate::tsc_hz());
    std::vector<std::pair<double, double>> pts;  // (CPU us on the line, G - G0 us)
    uint32_t rng = 12345;
    for (int i = 0; i < 400 && pts.size() < 60; ++i) {
      rng = rng * 1664525u + 1013904223u;
      std::this_thread::sleep_for(std::chrono::microseconds(700 + (rng >> 22)));  // 0.7 .. 1.7 ms: no phase lock with 1 ms
      const double c1 = cpu_us();
      const double g = static_cast<double>(ca::global_delay_cycles() - g0) / hz * 1e6;
      const double c2 = cpu_us();
      if (c2 - c1 > 5) continue;  // the line ran meanwhile (this thread was descheduled): not one instant
      pts.emplace_back(c1, g);
    }
    stop = true;
    t.join();
    ca::end_experiment();
    CHECK(ca::detail::armed_period_ns() == 1'000'000);  // back to the base period
    REQUIRE(pts.size() >= 30);
    // Least squares G = a + b x CPU; residuals.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& [x, y] : pts) {
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    const double n = static_cast<double>(pts.size());
    Fit f;
    f.slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    const double a = (sy - f.slope * sx) / n;
    std::vector<double> res;
    for (const auto& [x, y] : pts) res.push_back(std::abs(y - (a + f.slope * x)));
    std::sort(res.begin(), res.end());
    f.median = res[res.size() / 2];
    f.p90 = res[res.size() * 9 / 10];
    f.max = res.back();
    f.points = pts.size();
    return f;
  };
  // Ideally |residual| is uniform in [0, s x period / 2]: median ~16 / p90
  // ~28 us at 125 us, ~125 / ~225 at 1 ms. Measured at load ~6 on 2 cores
  // (the slope drifts with the hrtimer's lateness): 125 us: median 31-60,
  // p90 62-132; the experiment period at 1 ms: median 128-235, p90 345-449.
  // Noise only adds to the steps, so a measurement under both bounds shows
  // the finer period, and one over them may be noise: CI's clean clone
  // measured median 105 / p90 254 once (slope 0.485) on an otherwise idle
  // machine. So up to three measurements; the first within the bounds
  // passes (at 1 ms every one would be over: the steps alone put the median
  // at ~125 and the p90 at ~225).
  auto good = [](const Fit& f) {
    return f.slope > 0.45 && f.slope < 0.55 && f.median < 90 && f.p90 < 200;
  };
  Fit fit;
  int attempts = 0;
  std::string tried;
  do {
    fit = measure();
    ++attempts;
    tried += " [slope " + std::to_string(fit.slope) + ", median " + std::to_string(fit.median) + ", p90 " +
             std::to_string(fit.p90) + ", max " + std::to_string(fit.max) + ", " + std::to_string(fit.points) +
             " checks]";
  } while (!good(fit) && attempts < 3);
  ca::stop_line_sampling();
  ca::g_sweep_active.store(false);
  INFO("G vs CPU on the line (s = 0.5), |residual| us, " << attempts << " measurement(s):" << tried);
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer defers a signal to the thread's next interceptor or
  // atomic, so samples arrive late and bunched: measured at load ~16, median
  // 124-185 us, slope 0.42-0.44. The timing is checked in the other builds.
  WARN("under ThreadSanitizer (signals deferred):" << tried);
#else
  CHECK(fit.slope == Approx(0.5).margin(0.05));  // the total: s x CPU time (Coz's rule)
  CHECK(fit.median < 90);
  CHECK(fit.p90 < 200);
#endif
}

TEST_CASE("line regions: a line qualified by its caller injects only for that caller's samples", "[causal][line]") {
  // work() runs under scope A on one thread and under scope B on another at
  // the same time; the experiment selects "line-test/A @ <work's line>". B's
  // samples are on the same addresses, but their region is B: they must
  // inject nothing (B's thread holds no credit, and owes A's delay), and all
  // delay injected is A's thread's credit.
  std::lock_guard ledger(ca::test_ledger_mutex());
  coact::test::Watchdog wd(60, "qualified line");
  (void)coact::calibrate::tsc_hz();
  ca::register_thread();
  ca::g_sweep_active.store(true);
  REQUIRE(ca::start_line_sampling(ca::LineSamplingOptions{1ms, {}, 5ms}));
  // Warm up until one line exists qualified by both callers (a loaded machine or a
  // sanitizer's deferred signals may leave one unsampled in a round).
  uint32_t at_a = ca::kNoRegion, at_b = ca::kNoRegion;
  for (int round = 0; round < 20 && (at_a == ca::kNoRegion || at_b == ca::kNoRegion); ++round) {
    std::thread warm([] {
      ca::register_sampled_thread();
      line_test::caller_a(40ms);
      line_test::caller_b(40ms);
    });
    warm.join();
    ca::drain_line_samples();
    // The line sampled most under both callers (a sanitizer may put some
    // samples on the clock read of work()'s loop instead of its body).
    std::map<std::string, std::pair<ca::RegionStats, ca::RegionStats>> by_line;
    for (const auto& [name, r] : line_test::lines_with("line_region_test.cpp:")) {
      if (name.starts_with("line-test/A @ ")) by_line[name.substr(14)].first = r;
      if (name.starts_with("line-test/B @ ")) by_line[name.substr(14)].second = r;
    }
    uint64_t best = 0;
    for (const auto& [line, ab] : by_line) {
      const uint64_t both = std::min(ab.first.visits, ab.second.visits);
      if (ab.first.id != ca::kNoRegion && ab.second.id != ca::kNoRegion && both >= best) {
        best = both;
        at_a = ab.first.id;
        at_b = ab.second.id;
      }
    }
  }
  REQUIRE(at_a != ca::kNoRegion);
  REQUIRE(at_b != ca::kNoRegion);
  REQUIRE(ca::region_name(at_a).substr(14) == ca::region_name(at_b).substr(14));  // the same line

  // 40 ms of CPU is ~320 samples at 125 us each (fewer if descheduled).
  // ThreadSanitizer defers a signal to the thread's next intercepted call and
  // merges those pending, so a run there may see a few: each thread works
  // until its line holds kMinSamples. The bound only has to show that B's
  // samples landed on the line under B, so that "B injected nothing" below is
  // not vacuous.
#if defined(__SANITIZE_THREAD__)
  constexpr uint64_t kMinSamples = 10;
#else
  constexpr uint64_t kMinSamples = 100;
#endif
  std::atomic<int> ready{0}, done{0};
  std::atomic<bool> go{false}, release{false};
  std::atomic<uint64_t> credit_a{0}, credit_b{0}, debt_b{0};
  auto run = [&](bool a, std::atomic<uint64_t>& credit) {
    ca::register_thread();  // before the experiment: each owes all of the other's delay
    ca::register_sampled_thread();
    ++ready;
    while (!go.load()) std::this_thread::sleep_for(100us);
    // 40 ms at a time until this caller's line holds kMinSamples (counted
    // when drained, so it may overshoot), or 20 rounds.
    const uint32_t at = a ? at_a : at_b;
    const uint64_t v0 = ca::region_stats(at).visits;
    for (int round = 0; round < 20; ++round) {
      if (a) {
        line_test::caller_a(40ms);
      } else {
        line_test::caller_b(40ms);
      }
      if (ca::region_stats(at).visits - v0 >= kMinSamples) break;
    }
    ++done;
    while (!release.load()) std::this_thread::sleep_for(1ms);
    credit = ca::detail::take_sample_credit();
    if (!a) debt_b = ca::debt_cycles();
  };
  std::thread ta([&] { run(true, credit_a); });
  std::thread tb([&] { run(false, credit_b); });
  while (ready.load() < 2) std::this_thread::sleep_for(100us);
  const uint64_t g0 = ca::global_delay_cycles();
  const uint64_t va0 = ca::region_stats(at_a).visits, vb0 = ca::region_stats(at_b).visits;
  ca::begin_experiment(at_a, 50);
  go = true;
  while (done.load() < 2) std::this_thread::sleep_for(1ms);
  ca::end_experiment();  // drains: every sample of the experiment is counted
  release = true;
  ta.join();
  tb.join();
  ca::stop_line_sampling();
  ca::g_sweep_active.store(false);
  const uint64_t added = ca::global_delay_cycles() - g0;
  const uint64_t va = ca::region_stats(at_a).visits - va0, vb = ca::region_stats(at_b).visits - vb0;
  INFO("samples A " << va << " B " << vb << "; delay added " << added << " credit A " << credit_a.load() << " B "
                    << credit_b.load() << " B's debt " << debt_b.load());
  CHECK(va >= kMinSamples);
  CHECK(vb >= kMinSamples);  // B's samples were taken on the same line, under B
  CHECK(added > 0);
  CHECK(credit_b.load() == 0);         // none of B's samples injected
  CHECK(credit_a.load() == added);     // all of it A's own
  CHECK(debt_b.load() >= added);       // B's thread owes A's delay
}

TEST_CASE("line regions: the drainer wakes less often outside line experiments", "[causal][line]") {
  // A thread's ring fills in kSampleRing periods: the base interval is an
  // eighth of that, at least the precise interval and at most 100 ms.
  CHECK(ca::base_drain_interval(1ms, 10ms) == std::chrono::milliseconds(ca::kSampleRing / 8));
  CHECK(ca::base_drain_interval(1ms, 10ms) == 64ms);
  CHECK(ca::base_drain_interval(4ms, 10ms) == 100ms);
  CHECK(ca::base_drain_interval(10us, 10ms) == 10ms);
  CHECK(ca::base_drain_interval(125us, 5ms) == 8ms);
  CHECK(ca::base_drain_interval(1ms, std::chrono::milliseconds(std::chrono::hours(1))) == std::chrono::hours(1));
}
