// Tests for coact/calibrate/handoff.hpp: the futex ping-pong probe, the
// break-even rule, the EWMA estimate and COACT_HANDOFF_COST_NS validation.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include <coact/calibrate/handoff.hpp>

namespace cc = coact::calibrate;
using namespace std::chrono_literals;

TEST_CASE("hand-off probe returns a positive median under 1 ms", "[calibrate]") {
  const cc::HandoffProbeResult r = cc::probe_handoff_cost({500, 50});
  INFO("median " << r.median.count() << " ns, p10 " << r.p10.count() << " ns, p90 " << r.p90.count() << " ns");
  CHECK(r.samples == 500u);
  CHECK(r.median > 0ns);
  CHECK(r.median < 1ms);
  CHECK(r.min <= r.p10);
  CHECK(r.p10 <= r.median);
  CHECK(r.median <= r.p90);
  CHECK(r.p90 <= r.max);
  CHECK_THROWS_AS(cc::probe_handoff_cost({0, 0}), std::invalid_argument);
}

TEST_CASE("wake break-even is twice the hand-off cost", "[calibrate]") {
  STATIC_REQUIRE(cc::wake_break_even(5us) == 10us);
  cc::HandoffEstimate e(7us);
  CHECK(e.wake_break_even() == 14us);
}

TEST_CASE("hand-off EWMA converges to a steady input", "[calibrate]") {
  cc::HandoffEstimate e(1000ns);
  CHECK(e.cost() == 1000ns);
  CHECK_FALSE(e.pinned());
  // Half-life of alpha = 1/16 is ~11 samples: after 11 samples of 5000 the
  // estimate has covered about half of the 4000 ns gap.
  for (int i = 0; i < 11; ++i) e.observe(5000ns);
  CHECK(e.cost() > 2800ns);
  CHECK(e.cost() < 3200ns);
  for (int i = 0; i < 300; ++i) e.observe(5000ns);
  CHECK(std::abs(e.cost().count() - 5000) <= 1);
  // And back down.
  for (int i = 0; i < 300; ++i) e.observe(200ns);
  CHECK(std::abs(e.cost().count() - 200) <= 1);
  // Absurd samples are clamped, not overflowed.
  e.observe(std::chrono::nanoseconds(-5));
  e.observe(std::chrono::hours(1));
  CHECK(e.cost() > 0ns);
  CHECK(e.cost() <= 1s);
}

TEST_CASE("hand-off EWMA loses no update under concurrent observers", "[calibrate]") {
  // With identical samples the result after N updates does not depend on
  // their order, so 4 threads x 12 concurrent observes must land exactly where
  // 48 sequential ones do; a lost update would leave it visibly short (each of
  // the last updates still moves the estimate by ~3 us of 1 ms).
  constexpr int kThreads = 4;
  constexpr int kEach = 12;
  cc::HandoffEstimate sequential(0ns);
  for (int i = 0; i < kThreads * kEach; ++i) sequential.observe(1ms);
  for (int round = 0; round < 50; ++round) {
    cc::HandoffEstimate e(0ns);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < kEach; ++i) e.observe(1ms);
      });
    }
    for (auto& t : threads) t.join();
    REQUIRE(e.cost() == sequential.cost());
  }
}

TEST_CASE("a pinned hand-off estimate ignores observations", "[calibrate]") {
  cc::HandoffEstimate e(1000ns, 3333ns);
  CHECK(e.pinned());
  CHECK(e.cost() == 3333ns);
  for (int i = 0; i < 100; ++i) e.observe(10us);
  CHECK(e.cost() == 3333ns);
}

