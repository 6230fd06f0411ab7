// tests/support/runtime_fixture.hpp: run a test body on a fresh Runtime and
// check what it left behind (model: marl's src/marl_test.h fixture over
// worker counts, which also checks nothing leaked).
//
//   const uint32_t workers = GENERATE(1u, 2u, 4u, 8u);  // kTestWorkerCounts
//   coact::test::run_checked(workers, [&](coact::Runtime& rt) { ...; rt.run(); });
//
// After the body returns, with the runtime still up: no actor is live, no
// timer is pending, and the drop counters (dropped_dead, dropped_unresolved)
// equal what the test expects (0 unless it says otherwise). Then the runtime
// is destroyed. Checks are Catch CHECKs naming the worker count. Thread: the
// test's thread; the body may block (rt.run()).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <utility>

#include <coact/runtime/runtime.hpp>

#include "support/watchdog.hpp"

namespace coact::test {

/// The worker counts runtime tests sweep (CONTRIBUTING.md, "Test").
inline constexpr uint32_t kTestWorkerCounts[] = {1, 2, 4, 8};

/// Drops a test expects to leave in the stats (default: none).
struct ExpectedDrops {
  uint64_t dead = 0;        ///< RuntimeStats::dropped_dead
  uint64_t unresolved = 0;  ///< RuntimeStats::dropped_unresolved
};

/// Boots Runtime(tuning), runs body(rt), then checks the leftovers (header
/// comment). Returns the stats read after the body.
template <class Body>
RuntimeStats run_checked(const SchedulerTuning& tuning, Body&& body, ExpectedDrops expected = {}) {
  Runtime rt(tuning);
  body(rt);
  const RuntimeStats s = rt.stats();
  INFO("workers=" << tuning.workers);
  CHECK(s.live == 0u);
  CHECK(rt.pending_timers() == 0u);
  CHECK(s.dropped_dead == expected.dead);
  CHECK(s.dropped_unresolved == expected.unresolved);
  return s;
}

/// run_checked(tuning_for(workers), ...).
template <class Body>
RuntimeStats run_checked(uint32_t workers, Body&& body, ExpectedDrops expected = {}) {
  return run_checked(tuning_for(workers), std::forward<Body>(body), expected);
}

}  // namespace coact::test
