// The cheap sweep (causal/src/detail/region_state.hpp, "Handler-run sampling" and the
// slot protocol; causal/include/coact/causal/handler_fast_path.hpp): handler
// runs of a region that is not live read no TSC (but for a sample), take no
// region-stack frame and open their live slot untimed, yet a run that
// straddles an experiment is exact -- live from the experiment's start
// (payers publish for it while it runs) and charged up to the experiment's
// end even when it ends later -- whether it is a fast untimed run or a
// sampled one; and sampled handler cycles estimate the region's running time.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/causal/progress.hpp>
#include <coact/causal/region.hpp>
#include <coact/causal/testing.hpp>

#include "support/spin.hpp"
#include "support/sweep_on.hpp"
#include "support/watchdog.hpp"

namespace cal = coact::calibrate;
namespace ca = coact::causal;

namespace cheap_sweep_test {
struct Straddler {};
struct Starter {};
struct Short {};
struct Paused {};
struct Tokened {};
struct Completer {};
struct LateExit {};
struct Latecomer {};
struct Crowd {};
}  // namespace cheap_sweep_test

namespace {

using coact::test::cycles_of;
using coact::test::spin_for;
using coact::test::SweepOn;
using FastFrame = ca::detail::FastFrame;

// Begins a handler run of (type, kind) that takes the fast untimed path or,
// with `sampled`, the sampled fast path, and checks that it did. The thread
// must have run the handler a few times (its cache entry is filled and the
// countdown set after the first, sampled, run).
void enter_run(const void* type, uint32_t kind, bool sampled) {
  if (sampled) ca::detail::sample_next_handler_run(type, kind);
  ca::on_handler_enter(type, kind);
  CHECK(ca::detail::fast_frame() == (sampled ? FastFrame::sampled : FastFrame::untimed));
}

}  // namespace

TEST_CASE("cheap sweep: a handler run begun before its experiment and ending after it adds exactly s x its part inside",
          "[causal][region][ledger]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  (void)cal::tsc_hz();
  SweepOn on;
  const void* type = &typeid(cheap_sweep_test::Straddler);
  const uint32_t kind = 4242;
  const uint32_t id = ca::handler_region(type, kind);
  const uint32_t pct = GENERATE(50u, 100u);
  const bool sampled = GENERATE(false, true);
  CAPTURE(pct, sampled);
  ca::register_thread();
  // First runs: the thread takes its live slot and counter block (one-time costs).
  for (int i = 0; i < 3; ++i) {
    ca::on_handler_enter(type, kind);
    ca::on_handler_exit(type, kind);
  }
  ca::credit_resume();
  const uint64_t g0 = ca::global_delay_cycles();
  uint64_t inner = 0, outer = 0, published_mid = 0;
  enter_run(type, kind, sampled);  // nothing selected: an untimed run (or a sampled one)
  spin_for(std::chrono::milliseconds(1));
  {
    // The controller's side runs on another thread (as in a sweep): a thread
    // never publishes for its own slot.
    std::thread controller([&] {
      ca::register_thread();
      const uint64_t tb = cal::now_cycles();
      ca::begin_experiment(id, pct);
      const uint64_t t0 = cal::now_cycles();
      spin_for(std::chrono::milliseconds(2));
      // Live at the start: a payer publishes the running part while it runs.
      published_mid = ca::detail::materialize_live();
      spin_for(std::chrono::milliseconds(2));
      const uint64_t te = cal::now_cycles();
      ca::end_experiment();
      const uint64_t t1 = cal::now_cycles();
      inner = te - t0;  // surely inside the experiment
      outer = t1 - tb;  // the experiment lies within this
    });
    controller.join();
  }
  spin_for(std::chrono::milliseconds(1));  // the run outlives its experiment
  ca::on_handler_exit(type, kind);
  const uint64_t added = ca::global_delay_cycles() - g0;
  CHECK(published_mid >= cycles_of(std::chrono::milliseconds(2)) * pct / 100);
  CHECK(published_mid <= outer * pct / 100);
  // s x the part inside the experiment, whose bounds lie between the clock
  // reads around begin_experiment and end_experiment.
  CHECK(added >= inner * pct / 100);
  CHECK(added <= outer * pct / 100);
  // The sped-up thread does not owe its own region's delay: what the payers
  // published on its behalf was credited when the run ended.
  CHECK(ca::debt_cycles() == 0u);
  ca::credit_resume();
}

TEST_CASE("cheap sweep: a run still going when its region is selected counts from the experiment's start",
          "[causal][region][ledger]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  (void)cal::tsc_hz();
  SweepOn on;
  const void* type = &typeid(cheap_sweep_test::Starter);
  const uint32_t kind = 4243;
  const uint32_t id = ca::handler_region(type, kind);
  const bool sampled = GENERATE(false, true);
  CAPTURE(sampled);
  ca::register_thread();
  for (int i = 0; i < 3; ++i) {
    ca::on_handler_enter(type, kind);
    ca::on_handler_exit(type, kind);
  }
  // Another experiment at speedup 0 is on when the run begins: still untimed.
  ca::begin_experiment(id, 0);
  ca::credit_resume();
  const uint64_t g0 = ca::global_delay_cycles();
  enter_run(type, kind, sampled);
  spin_for(std::chrono::milliseconds(3));  // not counted: before the experiment
  ca::begin_experiment(id, 50);
  const uint64_t t0 = cal::now_cycles();
  spin_for(std::chrono::milliseconds(2));
  ca::on_handler_exit(type, kind);
  const uint64_t in_experiment = cal::now_cycles() - t0;
  ca::end_experiment();
  const uint64_t added = ca::global_delay_cycles() - g0;
  CHECK(added >= cycles_of(std::chrono::milliseconds(2)) / 2);
  CHECK(added <= (in_experiment + cycles_of(std::chrono::microseconds(100))) / 2);
  CHECK(ca::debt_cycles() == 0u);
  ca::credit_resume();
}

TEST_CASE("cheap sweep: short handler runs count every visit and estimate their cycles by sampling",
          "[causal][region]") {
  (void)cal::tsc_hz();
  SweepOn on;
  const void* type = &typeid(cheap_sweep_test::Short);
  const uint32_t kind = 4244;
  const uint32_t id = ca::handler_region(type, kind);
  constexpr int kRuns = 4000;
  // The ceiling is checked on the median ratio of three clean trials to the
  // runs' own measured time. A trial is clean when no sampled run in it (a run
  // after which the region's cycles grew) took longer than kPerturbed: one
  // sample interrupted for that long, weighted by the ~128 runs it stands for,
  // can double a trial's estimate on a busy machine, while a doubled weight
  // takes it past 1.5 in every clean trial. (Interrupted untimed runs only
  // lower the ratio, so no ceiling on it needs them excluded.) A missing
  // weight (x 1/64 or less) fails the floor in every trial, clean or not.
  const uint64_t kPerturbed = cycles_of(std::chrono::microseconds(10));
  constexpr int kCleanTrials = 3;
  constexpr int kMaxTrials = 15;
  std::vector<double> ratio;
  std::vector<double> perturbed;
  for (int trial = 0; trial < kMaxTrials && int(ratio.size()) < kCleanTrials; ++trial) {
    const auto r0 = ca::region_stats(id);
    uint64_t inside = 0;   // the runs' own time, measured around each
    uint64_t longest = 0;  // the longest sampled run
    uint64_t cycles = r0.cycles;
    for (int i = 0; i < kRuns; ++i) {
      const uint64_t a = cal::now_cycles();
      ca::on_handler_enter(type, kind);
      spin_for(std::chrono::nanoseconds(600));  // ~1.6 k cycles: below the exact-timing threshold
      ca::on_handler_exit(type, kind);
      const uint64_t run = cal::now_cycles() - a;
      inside += run;
      const uint64_t now = ca::region_stats(id).cycles;
      if (now != cycles) longest = std::max(longest, run);
      cycles = now;
    }
    const auto r1 = ca::region_stats(id);
    CHECK(r1.visits - r0.visits == uint64_t(kRuns));  // visits are exact
    // Every sample lasts at least the 600 ns spin and the weights add up to
    // the runs (but for the at most 191 after the last sample, handler_sampling.cpp's
    // largest stride): a floor that no preemption can break.
    const uint64_t est = r1.cycles - r0.cycles;
    CHECK(double(est) >= 0.95 * double(kRuns - 192) * double(cycles_of(std::chrono::nanoseconds(600))));
    (longest > kPerturbed ? perturbed : ratio).push_back(double(est) / double(inside));
  }
  std::sort(ratio.begin(), ratio.end());
  std::ostringstream clean, noisy;
  for (double r : ratio) clean << " " << r;
  for (double r : perturbed) noisy << " " << r;
  INFO("estimated / measured cycles, clean trials sorted:" << clean.str() << "; perturbed trials:" << noisy.str());
  if (int(ratio.size()) < kCleanTrials) {
    // Only a machine that interrupts one of the ~31 sampled runs for 10 us in 13 of 15 trials gets here.
    WARN("cheap sweep ceiling not checked: " << ratio.size() << " clean trials of " << kMaxTrials);
  } else {
    CHECK(ratio[1] <= 1.5);
  }
}

TEST_CASE("cheap sweep: a sampled run paused by a scope counts only its own time, and a long run times the next",
          "[causal][region]") {
  (void)cal::tsc_hz();
  SweepOn on;
  const void* type = &typeid(cheap_sweep_test::Paused);
  const uint32_t kind = 4245;
  const uint32_t id = ca::handler_region(type, kind);
  const uint32_t scope = ca::scope_region("cheap-sweep-test/paused");
  for (int i = 0; i < 3; ++i) {
    ca::on_handler_enter(type, kind);
    ca::on_handler_exit(type, kind);
  }
  const auto h0 = ca::region_stats(id);
  const auto s0 = ca::region_stats(scope);
  const uint64_t a = cal::now_cycles();
  enter_run(type, kind, true);  // weight 1: its time is the region's exact time
  CHECK(ca::detail::region_depth() == 1u);
  spin_for(std::chrono::milliseconds(1));
  {
    COACT_SCOPE("cheap-sweep-test/paused");  // the sampled frame becomes a stack frame, paused
    CHECK(ca::detail::region_depth() == 2u);
    CHECK(ca::detail::fast_frame() == FastFrame::none);
    spin_for(std::chrono::milliseconds(2));
  }
  spin_for(std::chrono::milliseconds(1));
  ca::on_handler_exit(type, kind);
  const uint64_t whole = cal::now_cycles() - a;
  CHECK(ca::detail::region_depth() == 0u);
  const auto h1 = ca::region_stats(id);
  const auto s1 = ca::region_stats(scope);
  CHECK(h1.visits - h0.visits == 1u);
  CHECK(s1.visits - s0.visits == 1u);
  // Exclusive times: each at least its own spins, and together within the run.
  const uint64_t handler = h1.cycles - h0.cycles, inner = s1.cycles - s0.cycles;
  CHECK(handler >= cycles_of(std::chrono::milliseconds(2)));
  CHECK(inner >= cycles_of(std::chrono::milliseconds(2)));
  CHECK(handler + inner <= whole);
  // That run lasted >= kExactCycles: the next is timed (weight 1); after a
  // short timed run the sampling stride resumes with untimed runs. (An
  // empty run can still last ~3 us when preempted, or under a sanitizer:
  // then the run after it is timed too, so allow a few.)
  ca::on_handler_enter(type, kind);
  CHECK(ca::detail::fast_frame() == FastFrame::sampled);
  ca::on_handler_exit(type, kind);
  uint64_t runs = 1;
  FastFrame next = FastFrame::sampled;
  for (int i = 0; i < 20 && next == FastFrame::sampled; ++i, ++runs) {
    ca::on_handler_enter(type, kind);
    next = ca::detail::fast_frame();
    ca::on_handler_exit(type, kind);
  }
  CHECK(next == FastFrame::untimed);
  CHECK(ca::region_stats(id).visits - h0.visits == runs + 1);
}

TEST_CASE("cheap sweep: a fast run that a scope made a stack frame is closed by the general exit, token or not",
          "[causal][region]") {
  // The fast exit closes a slot only while it holds exactly the fast run's
  // untimed word; a scope inside the run (or a stale pop) turns the fast
  // frame into a stack frame and marks the slot held (fast_gate.cpp unfast).
  // Without that mark, after a stale pop the token's fast exit would close
  // the slot and leave the frame on the stack (depth 1 after the exit, the
  // gate closed for the next run).
  (void)cal::tsc_hz();
  SweepOn on;
  const void* type = &typeid(cheap_sweep_test::Tokened);
  const uint32_t kind = 4246;
  const uint32_t id = ca::handler_region(type, kind);
  // Enters a run that takes the fast untimed path (a sampled run, or one
  // after a run that a sanitizer made long, is exited and retried).
  auto enter_untimed = [&] {
    for (int i = 0; i < 200; ++i) {
      void* token = ca::on_handler_enter(type, kind);
      if (ca::detail::fast_frame() == FastFrame::untimed) return token;
      ca::on_handler_exit(token, type, kind);
    }
    return static_cast<void*>(nullptr);
  };
  const uint32_t scope = ca::scope_region("cheap-sweep-test/tokened");
  for (int variant = 0; variant < 4; ++variant) {
    const bool with_token = variant % 2 == 0;
    const bool stale_pop = variant >= 2;
    void* token = enter_untimed();
    REQUIRE(token != nullptr);
    const auto h0 = ca::region_stats(id);
    if (stale_pop) {
      // A pop of a frame that is not there (region.hpp pop_region: nothing
      // happens) still makes the fast frame a stack frame, and re-opens no
      // segment: only unfast's mark keeps the fast exit off the slot.
      ca::detail::pop_region(scope, 3);
      CHECK(ca::detail::fast_frame() == FastFrame::none);
    } else {
      COACT_SCOPE("cheap-sweep-test/tokened");
      CHECK(ca::detail::region_depth() == 2u);
      CHECK(ca::detail::fast_frame() == FastFrame::none);
    }
    CHECK(ca::detail::region_depth() == 1u);
    if (with_token) {
      ca::on_handler_exit(token, type, kind);
    } else {
      ca::on_handler_exit(type, kind);
    }
    CHECK(ca::detail::region_depth() == 0u);
    CHECK(ca::region_stats(id).visits - h0.visits == 1u);
    // The gate is open again: a later run takes the fast path.
    token = enter_untimed();
    CHECK(token != nullptr);
    ca::on_handler_exit(token, type, kind);
    CHECK(ca::detail::region_depth() == 0u);
    CHECK(ca::detail::fast_frame() == FastFrame::none);
  }
}

TEST_CASE("cheap sweep: a handler-completion point counts every run once, on every path and across re-attachment",
          "[causal][region][progress]") {
  // No hook visits a handler-completion point: it reads its region's visit
  // counts while attached (region_table.cpp set_completion_handlers). Runs on the
  // fast untimed path, the sampled path, the general path (a scope inside
  // the run), with and without a token, and a run straddling an experiment
  // start all count once; re-attaching counts nothing twice; detached runs
  // do not count.
  std::lock_guard lock(ca::test_ledger_mutex());
  (void)cal::tsc_hz();
  SweepOn on;
  ca::register_thread();
  const void* type = &typeid(cheap_sweep_test::Completer);
  const uint32_t kind = 4247;
  const std::vector<std::string> filter{"cheap_sweep_test::Completer::on("};
  ca::set_completion_handlers(filter);
  const uint32_t id = ca::handler_region(type, kind);  // registered after the filter
  ca::ProgressPoint* p = ca::handler_completion_point(ca::region_name(id));
  REQUIRE(p->handler_completion());
  for (int i = 0; i < 3; ++i) ca::on_handler_exit(ca::on_handler_enter(type, kind), type, kind);
  const uint64_t p0 = p->visits();
  const uint64_t v0 = ca::region_stats(id).visits;
  CHECK(p0 == v0);  // attached before the region's first run
  uint64_t runs = 0;
  for (int i = 0; i < 40; ++i) {
    const int path = i % 4;
    void* token = nullptr;
    if (path == 2) {
      token = ca::on_handler_enter(type, kind);
      COACT_SCOPE("cheap-sweep-test/completer");  // the run becomes a stack frame
    } else {
      if (path == 1) ca::detail::sample_next_handler_run(type, kind);
      token = ca::on_handler_enter(type, kind);
    }
    if (path == 3) {
      ca::on_handler_exit(type, kind);
    } else {
      ca::on_handler_exit(token, type, kind);
    }
    ++runs;
    CHECK(ca::detail::region_depth() == 0u);
  }
  CHECK(p->visits() - p0 == runs);
  CHECK(ca::region_stats(id).visits - v0 == runs);
  // A run straddling an experiment start on its region.
  ca::credit_resume();
  enter_run(type, kind, false);
  ca::begin_experiment(id, 50);
  ca::on_handler_exit(type, kind);
  ca::end_experiment();
  ++runs;
  CHECK(p->visits() - p0 == runs);
  // Re-attached: nothing counted twice.
  ca::set_completion_handlers(filter);
  CHECK(p->visits() - p0 == runs);
  for (int i = 0; i < 5; ++i) ca::on_handler_exit(ca::on_handler_enter(type, kind), type, kind);
  runs += 5;
  CHECK(p->visits() - p0 == runs);
  // Detached: the point keeps its count and counts no more.
  ca::set_completion_handlers({});
  CHECK(p->visits() - p0 == runs);
  for (int i = 0; i < 5; ++i) ca::on_handler_exit(ca::on_handler_enter(type, kind), type, kind);
  CHECK(p->visits() - p0 == runs);
  CHECK(ca::region_stats(id).visits - v0 == runs + 5);
  // Attached again: from the region's count now.
  ca::set_completion_handlers(filter);
  for (int i = 0; i < 2; ++i) ca::on_handler_exit(ca::on_handler_enter(type, kind), type, kind);
  runs += 2;
  CHECK(p->visits() - p0 == runs);
  ca::set_completion_handlers({});
  ca::credit_resume();
}

TEST_CASE("cheap sweep: a fast run a payer timed, exited without a token after the sweep ended, is closed and credited",
          "[causal][region][ledger]") {
  // The fast enter does not read the slot (handler_fast_path.hpp, "The
  // gate"): a fast frame must be closed by its own exit. Without a token,
  // a refused fast exit after the sweep ended still takes the general exit
  // while the gate is open, which pops the frame and credits what the
  // payer published for it.
  std::lock_guard lock(ca::test_ledger_mutex());
  (void)cal::tsc_hz();
  SweepOn on;
  ca::register_thread();
  const void* type = &typeid(cheap_sweep_test::LateExit);
  const uint32_t kind = 4248;
  const uint32_t id = ca::handler_region(type, kind);
  for (int i = 0; i < 3; ++i) ca::on_handler_exit(ca::on_handler_enter(type, kind), type, kind);
  ca::credit_resume();
  const auto v0 = ca::region_stats(id).visits;
  const uint64_t g0 = ca::global_delay_cycles();
  enter_run(type, kind, false);
  ca::begin_experiment(id, 50);
  spin_for(std::chrono::milliseconds(1));
  std::thread([] { (void)ca::detail::materialize_live(); }).join();  // a payer times the slot
  ca::end_experiment();
  CHECK(ca::global_delay_cycles() > g0);
  ca::g_sweep_active.store(false);
  ca::on_handler_exit(type, kind);
  CHECK(ca::detail::region_depth() == 0u);
  CHECK(ca::detail::fast_frame() == FastFrame::none);
  CHECK(ca::region_stats(id).visits - v0 == 1u);
  ca::g_sweep_active.store(true);
  // Credited at the close: the payer's part is the thread's own (the
  // experiment ended before the exit: no tail).
  CHECK(ca::debt_cycles() == 0u);
  ca::credit_resume();
  // The gate is open and the slot closed: the next run takes the fast path.
  enter_run(type, kind, false);
  ca::on_handler_exit(type, kind);
}

TEST_CASE("cheap sweep: a run begun inside an experiment on its region counts from its enter, not the start",
          "[causal][region][ledger]") {
  // The fast enter opens the slot before it reads the live word
  // (handler_fast_path.hpp, "The handshake"): finding the region live, it
  // leaves the run to the general enter, which closes that slot as a
  // segment of length 0 and times the run from there.
  std::lock_guard lock(ca::test_ledger_mutex());
  (void)cal::tsc_hz();
  SweepOn on;
  ca::register_thread();
  const void* type = &typeid(cheap_sweep_test::Latecomer);
  const uint32_t kind = 4249;
  const uint32_t id = ca::handler_region(type, kind);
  for (int i = 0; i < 3; ++i) ca::on_handler_exit(ca::on_handler_enter(type, kind), type, kind);
  ca::credit_resume();
  ca::begin_experiment(id, 50);
  spin_for(std::chrono::milliseconds(3));  // the experiment runs before the handler does
  const uint64_t g0 = ca::global_delay_cycles();
  const uint64_t t0 = cal::now_cycles();
  void* token = ca::on_handler_enter(type, kind);
  CHECK(ca::detail::fast_frame() == FastFrame::none);  // a stack frame: the live run is timed
  CHECK(ca::detail::region_depth() == 1u);
  spin_for(std::chrono::milliseconds(1));
  std::thread([] { (void)ca::detail::materialize_live(); }).join();  // a payer publishes its part so far
  spin_for(std::chrono::milliseconds(1));
  ca::on_handler_exit(token, type, kind);
  const uint64_t run = cal::now_cycles() - t0;
  ca::end_experiment();
  const uint64_t added = ca::global_delay_cycles() - g0;
  CHECK(added >= cycles_of(std::chrono::milliseconds(2)) / 2);
  CHECK(added <= run / 2);  // not the 3 ms before the enter
  CHECK(ca::debt_cycles() == 0u);
  // The slot is closed and the gate open again: the next run is a fast
  // frame (sampled or untimed: a run of kExactCycles or more makes the next
  // one sampled, and under a sanitizer a short run can take that long).
  CHECK(ca::detail::region_depth() == 0u);
  ca::on_handler_enter(type, kind);
  CHECK(ca::detail::fast_frame() != FastFrame::none);
  ca::on_handler_exit(type, kind);
  CHECK(ca::detail::region_depth() == 0u);
  ca::credit_resume();
}

TEST_CASE("cheap sweep stress: runs on several threads straddling many experiments add exactly their overlap",
          "[causal][region][ledger][stress]") {
  // Threads run short fast handler runs of one region while a controller
  // begins and ends experiments on it at s = 100 %: G must grow by the
  // summed overlap of runs and experiments, bounded by the clock reads
  // around each enter, exit, begin and end. A run that straddles a begin
  // and exits on the fast path unclaimed (the handshake failing) would
  // leave G short of the inner bound.
  std::lock_guard lock(ca::test_ledger_mutex());
  (void)cal::tsc_hz();
  SweepOn on;
  const void* type = &typeid(cheap_sweep_test::Crowd);
  const uint32_t kind = 4251;
  const uint32_t id = ca::handler_region(type, kind);
  const int threads = GENERATE(1, 2, 4);
  CAPTURE(threads);
  coact::test::Watchdog wd(120, "cheap sweep stress, threads=" + std::to_string(threads));
  struct Run {
    uint64_t enter_before, enter_after, exit_before, exit_after;
  };
  struct Span {
    uint64_t lo, hi;
  };
  std::vector<std::vector<Run>> runs(threads);
  std::atomic<int> ready{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&, w] {
      ca::register_thread();
      for (int i = 0; i < 3; ++i) ca::on_handler_exit(ca::on_handler_enter(type, kind), type, kind);
      ready.fetch_add(1);
      std::minstd_rand rng(static_cast<uint32_t>(w) + 1);
      while (!done.load(std::memory_order_relaxed)) {
        Run r{};
        r.enter_before = cal::now_cycles();
        void* token = ca::on_handler_enter(type, kind);
        r.enter_after = cal::now_cycles();
        spin_for(std::chrono::microseconds(1 + rng() % 40));
        r.exit_before = cal::now_cycles();
        ca::on_handler_exit(token, type, kind);
        r.exit_after = cal::now_cycles();
        runs[w].push_back(r);
        if (rng() % 4 == 0) spin_for(std::chrono::microseconds(rng() % 20));  // a gap between runs
      }
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const uint64_t g0 = ca::global_delay_cycles();
  std::vector<Span> inner, outer;
  for (int e = 0; e < 40; ++e) {
    const uint64_t b0 = cal::now_cycles();
    ca::begin_experiment(id, 100);
    const uint64_t b1 = cal::now_cycles();
    spin_for(std::chrono::microseconds(300 + 50 * (e % 7)));
    const uint64_t e0 = cal::now_cycles();
    ca::end_experiment();
    const uint64_t e1 = cal::now_cycles();
    inner.push_back({b1, e0});
    outer.push_back({b0, e1});
    spin_for(std::chrono::microseconds(100 + 30 * (e % 5)));
  }
  done.store(true);
  for (auto& t : workers) t.join();
  const uint64_t added = ca::global_delay_cycles() - g0;
  auto overlap = [](uint64_t a0, uint64_t a1, const Span& s) -> uint64_t {
    const uint64_t lo = std::max(a0, s.lo), hi = std::min(a1, s.hi);
    return hi > lo ? hi - lo : 0;
  };
  uint64_t lower = 0, upper = 0;
  size_t n = 0;
  for (const auto& rs : runs) {
    n += rs.size();
    for (const Run& r : rs) {
      for (const Span& s : inner) lower += overlap(r.enter_after, r.exit_before, s);
      for (const Span& s : outer) upper += overlap(r.enter_before, r.exit_after, s);
    }
  }
  CAPTURE(n, added, lower, upper);
  CHECK(n > 100u);
  CHECK(lower > 0u);
  CHECK(added >= lower);
  // A run that began during a begin_experiment call may be claimed from the
  // experiment's start (at most the call's length early): that much slack
  // per experiment and thread.
  uint64_t calls = 0;
  for (size_t e = 0; e < inner.size(); ++e) calls += inner[e].lo - outer[e].lo;
  CHECK(added <= upper + calls * static_cast<uint64_t>(threads));
  ca::credit_resume();
}
