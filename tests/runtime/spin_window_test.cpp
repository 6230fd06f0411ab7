// SpinWindow (adaptive idle spin) and WakeLatency (the timekeeper's early
// wake): the decision rules of runtime/src/detail/spin_window.hpp, driven
// with synthetic evidence (no clocks, no threads: deterministic).
#include <cstdint>

#include <catch2/catch.hpp>

#include "detail/spin_window.hpp"

using coact::detail::SpinWindow;
using coact::detail::WakeLatency;

namespace {
constexpr uint64_t kCeiling = 50'000;    // 50 µs, the default spin_window_us
constexpr uint64_t kBreakEven = 3'000;   // 2 x a 1.5 µs hand-off
}  // namespace

TEST_CASE("spin window: a timekeeper whose parks time out stops spinning within a few periods", "[spin_window]") {
  SpinWindow w;
  REQUIRE(w.window_ns(kCeiling) == kCeiling);  // starts as a fixed window would
  // One periodic 5 ms timer, nothing else runnable: every episode spins the
  // window, finds nothing, parks until the deadline (timed out: not for work).
  uint64_t spent = 0;
  for (int period = 0; period < 100; ++period) {
    const uint64_t spin = w.window_ns(kCeiling);
    spent += spin;
    w.parked(spin, 5'000'000, /*for_work=*/false, kBreakEven, kCeiling);
  }
  CHECK(w.window_ns(kCeiling) == 0);
  // Geometric decay: the whole run spun less than two full windows, not 100.
  CHECK(spent < 2 * kCeiling);
}

TEST_CASE("spin window: spins that find work keep or regain the full window", "[spin_window]") {
  SpinWindow w;
  (void)w.window_ns(kCeiling);
  for (int i = 0; i < 20; ++i) w.parked(w.window_ns(kCeiling), 1'000'000, false, kBreakEven, kCeiling);
  REQUIRE(w.window_ns(kCeiling) == 0);
  // Work shows up shortly after parking (within the break-even): a spin of
  // 2·(spun + slept) would have caught it, so the window grows to that.
  w.parked(0, 2'000, /*for_work=*/true, kBreakEven, kCeiling);
  CHECK(w.window_ns(kCeiling) == 4'000);
  // Spins that find work double the window, up to the ceiling and no further.
  for (int i = 0; i < 10; ++i) w.found(1'000, kCeiling);
  CHECK(w.window_ns(kCeiling) == kCeiling);
  // A smaller ceiling (the knob lowered) bounds it at once; 0 turns spinning off.
  CHECK(w.window_ns(10'000) == 10'000);
  CHECK(w.window_ns(0) == 0);
  w.found(500, 0);
  CHECK(w.window_ns(0) == 0);
}

TEST_CASE("spin window: a wake for work later than the break-even is no evidence for spinning", "[spin_window]") {
  SpinWindow w;
  (void)w.window_ns(kCeiling);
  for (int i = 0; i < 20; ++i) w.parked(0, 1'000'000, false, kBreakEven, kCeiling);
  REQUIRE(w.window_ns(kCeiling) == 0);
  // Woken for work, but after 10 µs of sleep > 3 µs break-even: the wake cost
  // less than spinning through the gap would have; the window stays shut.
  w.parked(0, 10'000, /*for_work=*/true, kBreakEven, kCeiling);
  CHECK(w.window_ns(kCeiling) == 0);
  // Woken within the break-even but not for work (spurious, shutdown): no growth.
  w.parked(0, 1'000, /*for_work=*/false, kBreakEven, kCeiling);
  CHECK(w.window_ns(kCeiling) == 0);
}

TEST_CASE("wake latency: EWMA of observed lateness and its deviation set the early-wake margin", "[spin_window]") {
  WakeLatency lat(1'500);  // seeded with a 1.5 µs hand-off
  CHECK(lat.latency_ns() == 1'500);
  CHECK(lat.deviation_ns() == 750);
  // A steady 12 µs lateness: the estimate converges to it, the deviation to 0.
  for (int i = 0; i < 200; ++i) lat.observe(12'000);
  CHECK(lat.latency_ns() >= 11'900);
  CHECK(lat.latency_ns() <= 12'000);
  CHECK(lat.deviation_ns() <= 100);
  // Margin = latency + 2·deviation, bounded by the ceiling and by 1/8 of the interval.
  CHECK(lat.margin_ns(5'000'000, kCeiling) >= 11'900);
  CHECK(lat.margin_ns(5'000'000, kCeiling) <= 12'200);
  CHECK(lat.margin_ns(40'000, kCeiling) == 5'000);
  CHECK(lat.margin_ns(5'000'000, 0) == 0);  // spinning off: no early wake
  // A jittery latency widens the margin (deviation) without exceeding the caps.
  for (int i = 0; i < 200; ++i) lat.observe(i % 2 == 0 ? 2'000 : 22'000);
  CHECK(lat.deviation_ns() >= 5'000);
  CHECK(lat.margin_ns(5'000'000, kCeiling) > lat.latency_ns());
  CHECK(lat.margin_ns(5'000'000, kCeiling) <= kCeiling);
  // One descheduled wake is clamped to 1 ms: it moves the estimate by at most 1/8 of that.
  const uint64_t before = lat.latency_ns();
  lat.observe(500'000'000);
  CHECK(lat.latency_ns() <= before + 1'000'000 / 8 + 1);
}
