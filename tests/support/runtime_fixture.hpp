// tests/support/runtime_fixture.hpp: run a test body on a fresh Runtime and
// check what it left behind (model: marl's src/marl_test.h fixture over
// worker counts, which also checks nothing leaked).
//
//   const uint32_t workers = GENERATE(coact::test::worker_counts());  // or (lo, hi)
//   coact::test::run_checked(workers, [&](coact::Runtime& rt) { ...; rt.run(); });
//
// After the body returns, with the runtime still up: no actor is live (or
// exactly as many as the test expects, for a body that leaves actors to the
// destructor: it ends with request_stop, or never waits for them to stop),
// no timer is pending, and the drop counters (dropped_dead,
// dropped_unresolved) equal what the test expects (0 unless it says
// otherwise; std::nullopt where a race decides the count and the test bounds
// it from the stats run_checked returns). Then the runtime is destroyed.
// Checks are Catch CHECKs naming the worker count. Thread: the test's
// thread; the body may block (rt.run()).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include <coact/runtime/runtime.hpp>

#include "support/watchdog.hpp"

namespace coact::test {

/// The worker counts runtime tests sweep (CONTRIBUTING.md, "Test").
inline constexpr uint32_t kTestWorkerCounts[] = {1, 2, 4, 8};

/// A Catch generator over the kTestWorkerCounts within [lo, hi], in order:
/// GENERATE(worker_counts()) sweeps them all; a test that needs a subset
/// (a 1-worker ordering test, a test that needs a second worker, a slow
/// stress test capped at 4) names the bounds instead of typing counts. An
/// empty subset throws (Catch reports it).
inline Catch::Generators::GeneratorWrapper<uint32_t> worker_counts(uint32_t lo = 1, uint32_t hi = UINT32_MAX) {
  std::vector<uint32_t> picked;
  for (uint32_t w : kTestWorkerCounts) {
    if (w >= lo && w <= hi) picked.push_back(w);
  }
  return Catch::Generators::from_range(picked.begin(), picked.end());
}

/// What a test expects the body to leave in the stats (default: nothing).
/// A drop count of std::nullopt is not checked here (header comment).
struct ExpectedDrops {
  std::optional<uint64_t> dead = 0;        ///< RuntimeStats::dropped_dead
  std::optional<uint64_t> unresolved = 0;  ///< RuntimeStats::dropped_unresolved
  uint64_t live = 0;  ///< RuntimeStats::live: the actors the body leaves for the destructor to stop
                      ///< (exact, not a bound)
};

/// Boots Runtime(tuning), runs body(rt), then checks the leftovers (header
/// comment). Returns the stats read after the body.
template <class Body>
RuntimeStats run_checked(const SchedulerTuning& tuning, Body&& body, ExpectedDrops expected = {}) {
  Runtime rt(tuning);
  body(rt);
  const RuntimeStats s = rt.stats();
  INFO("workers=" << tuning.workers);
  CHECK(s.live == expected.live);
  CHECK(rt.pending_timers() == 0u);
  if (expected.dead) CHECK(s.dropped_dead == *expected.dead);
  if (expected.unresolved) CHECK(s.dropped_unresolved == *expected.unresolved);
  return s;
}

/// run_checked(tuning_for(workers), ...).
template <class Body>
RuntimeStats run_checked(uint32_t workers, Body&& body, ExpectedDrops expected = {}) {
  return run_checked(tuning_for(workers), std::forward<Body>(body), expected);
}

}  // namespace coact::test
