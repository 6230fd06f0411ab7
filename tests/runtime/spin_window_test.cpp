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

TEST_CASE("wake latency: the margin is the largest whose expected spin fits the budget", "[spin_window]") {
  // A steady 12 µs lateness: every wake is 12..14 µs late, so a margin up to
  // 12 µs costs no spin at all (the free part of L); past it each ns of
  // margin costs about one ns per wake. Budget at 5 ms: min(5 ms / 100, 10 µs) = 10 µs.
  WakeLatency lat(1'500);  // seeded with a 1.5 µs hand-off
  for (int i = 0; i < 400; ++i) lat.observe(12'500);
  CHECK(lat.quantile_ns(0.5) == 14'000);
  CHECK(lat.expected_spin_ns(12'000) < 100);  // only the seed sample spins
  // Capped by q99 (14 µs): margins past nearly every wake buy nothing.
  CHECK(lat.margin_ns(5'000'000, kCeiling) == 14'000);
  CHECK(lat.expected_spin_ns(lat.margin_ns(5'000'000, kCeiling)) <= 10'000);
  // 100 µs interval: budget 1 µs: the margin stops just past the floor of L.
  const uint64_t m1 = lat.margin_ns(100'000, kCeiling);
  CHECK(m1 >= 12'000);
  CHECK(m1 <= 12'500);
  CHECK(lat.expected_spin_ns(m1) <= 1'000);
  CHECK(lat.margin_ns(40'000, kCeiling) == 5'000);  // at most 1/8 of the interval
  CHECK(lat.margin_ns(5'000'000, 0) == 0);          // spinning off: no early wake
}

TEST_CASE("wake latency: a spread-out latency gets a margin bounded by the CPU budget, not its tail", "[spin_window]") {
  // Half the wakes 2 µs late, half 82 µs late (a VM whose vCPU is sometimes
  // halted). The old EWMA rule took latency + 2·deviation: the 50 µs ceiling,
  // about 24 µs of spin per period. Now: at 5 ms the expected spin is at most
  // 10 µs (0.2 % of a core); at 1 ms 10 µs (1 %); at 100 ms a fixed 10 µs (0.01 %).
  WakeLatency lat(1'500);
  for (int i = 0; i < 1000; ++i) lat.observe(i % 2 == 0 ? 2'000 : 82'000);
  for (const uint64_t interval : {1'000'000ull, 5'000'000ull, 20'000'000ull, 100'000'000ull}) {
    const uint64_t m = lat.margin_ns(interval, kCeiling);
    CAPTURE(interval, m);
    CHECK(lat.expected_spin_ns(m) <= 10'000);
    CHECK(m >= 15'000);  // ~ 2 µs + 2·10 µs: half the wakes spin (m - 2 µs)
    CHECK(m <= 25'000);
  }
  // 200 µs: budget 2 µs (and 1/8 of the interval: 25 µs).
  CHECK(lat.expected_spin_ns(lat.margin_ns(200'000, kCeiling)) <= 2'000);
  // The histogram follows a changed machine: after 2000 wakes 30 µs late the
  // old mode has decayed away and the margin reaches the new floor for free.
  for (int i = 0; i < 2000; ++i) lat.observe(30'500);
  CHECK(lat.quantile_ns(0.05) == 32'000);
  CHECK(lat.margin_ns(5'000'000, kCeiling) >= 30'000);
  // A descheduled wake (seconds late) lands in the overflow bucket: it moves
  // no margin by more than one sample's weight.
  lat.observe(500'000'000);
  CHECK(lat.margin_ns(5'000'000, kCeiling) >= 30'000);
}
