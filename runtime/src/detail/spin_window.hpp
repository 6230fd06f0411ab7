// runtime/src/detail/spin_window.hpp: how long an idle worker spins before it
// parks (SpinWindow), and how early the timekeeper wakes before its deadline
// (WakeLatency). Both are per-machine, live-measured decisions; neither takes
// part in the lost-wakeup argument (spin_park.hpp): that argument holds for
// any spin length, including zero, because a spinner always leaves the spin
// state through register-then-unspin and its recheck.
//
// SpinWindow: spinning that pays for itself (the adaptive spin of Go's and
// tokio's searching workers, and of glibc's adaptive mutex). One per worker,
// touched only by its worker thread. The window W lies in [0, ceiling],
// ceiling = spin_window_us (COACT_SPIN_WINDOW_US, the knob; 0 turns spinning off). W starts at
// the ceiling (the behaviour of a fixed window) and moves only on evidence,
// gathered after each idle episode:
//   found(t):  the spin found shared work after t ns: spinning paid, W doubles
//              (at least 2t), up to the ceiling.
//   parked(spun, slept, for_work, break_even): the spin found nothing and the
//              worker parked for `slept` ns. If it was woken with shared work
//              waiting after at most the calibrated wake break-even (2x the
//              live hand-off cost, calibrate/handoff.hpp), a spin of
//              2·(spun + slept) would have caught the work for less than the
//              park + wake cost: W grows to that (at most the ceiling).
//              Otherwise -- a timed-out timekeeper, a long sleep, a spurious
//              or shutdown wake -- W halves; below 1 µs it is 0 (one scan).
// The break-even bound is the spin-then-block rule (spinning as long as a
// block costs is 2-competitive; Karlin, Manasse, McGeoch, Owicki, SOSP 1991):
// a spin is only bought where a park would have cost at least as much. So a
// worker that fires one periodic timer with nothing else runnable stops
// spinning after a handful of periods (each timed-out park halves W), while
// a worker whose spins keep finding work keeps the full window.
// Fairness: the window changes how long an idle worker looks for work, never
// the order in which work is taken (acquire order, BatchBudget and the
// backstops are untouched).
//
// WakeLatency: prompt idle timers. The timekeeper's timed park returns some
// time after the requested instant (the kernel timer and scheduler wake-up
// path). Estimate it as an EWMA of observed lateness plus twice an EWMA of its
// mean deviation (Jacobson/Karels' RTT estimator, alpha 1/8 and 1/4, SIGCOMM
// 1988), seeded at boot with the calibrated hand-off cost (a futex wake by
// another thread: the same kernel path) and refined by every timed-out park.
// The timekeeper parks until deadline - margin and spins the remainder, where
// margin = min(latency + 2·deviation, ceiling, interval / 8) (interval: the
// time to the deadline when it parks). CPU budget: at most `margin` of
// spinning per timed park, never more than 1/8 of the parked interval, never
// more than the spin ceiling (50 µs default); with a steady estimate the
// spin is about latency + 2·deviation per timer period (e.g. 10 µs per 5 ms
// period = 0.2% of a core). Shared by all workers (whoever is timekeeper);
// samples from concurrent observers may overwrite each other (a lost sample,
// never a torn value: one relaxed word each).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace coact::detail {

class SpinWindow {
 public:
  /// The window to spin now (ns), at most `ceiling`. Owner thread.
  uint64_t window_ns(uint64_t ceiling) noexcept {
    if (!init_) {
      w_ = ceiling;
      init_ = true;
    }
    w_ = std::min(w_, ceiling);
    return w_;
  }
  /// The spin found shared work `waited_ns` after it began. Owner thread.
  void found(uint64_t waited_ns, uint64_t ceiling) noexcept {
    w_ = std::min(ceiling, std::max({2 * w_, 2 * waited_ns, kMinGrowNs}));
  }
  /// The spin of `spun_ns` found nothing and the worker slept `slept_ns`;
  /// `for_work`: it was woken with shared work waiting. Owner thread.
  void parked(uint64_t spun_ns, uint64_t slept_ns, bool for_work, uint64_t break_even_ns,
              uint64_t ceiling) noexcept {
    if (for_work && slept_ns <= break_even_ns) {
      w_ = std::min(ceiling, std::max(2 * w_, 2 * (spun_ns + slept_ns)));
    } else {
      w_ = w_ / 2 < kMinGrowNs ? 0 : w_ / 2;
    }
  }
  uint64_t current_ns() const noexcept { return w_; }

 private:
  static constexpr uint64_t kMinGrowNs = 1000;  // below 1 µs a window is one scan
  uint64_t w_ = 0;
  bool init_ = false;
};

class WakeLatency {
 public:
  /// Seeds the estimate (ns): the calibrated hand-off cost, deviation half of it.
  explicit WakeLatency(uint64_t seed_ns) noexcept
      : lat_(seed_ns << kFrac), dev_((seed_ns / 2) << kFrac) {}

  /// One observed lateness of a timed park (ns past the requested wake),
  /// clamped to 1 ms (a descheduled waker is not a wake latency). Any thread.
  void observe(uint64_t late_ns) noexcept {
    const int64_t x = int64_t(std::min<uint64_t>(late_ns, 1'000'000) << kFrac);
    const int64_t lat = int64_t(lat_.load(std::memory_order_relaxed));
    const int64_t dev = int64_t(dev_.load(std::memory_order_relaxed));
    const int64_t err = x - lat;
    lat_.store(uint64_t(lat + err / 8), std::memory_order_relaxed);
    dev_.store(uint64_t(dev + ((err < 0 ? -err : err) - dev) / 4), std::memory_order_relaxed);
  }
  /// Estimated wake latency (ns). Any thread.
  uint64_t latency_ns() const noexcept { return lat_.load(std::memory_order_relaxed) >> kFrac; }
  /// Mean deviation of the wake latency (ns). Any thread.
  uint64_t deviation_ns() const noexcept { return dev_.load(std::memory_order_relaxed) >> kFrac; }
  /// How early to wake before a deadline `interval_ns` away (see the file
  /// comment): min(latency + 2·deviation, ceiling, interval / 8). Any thread.
  uint64_t margin_ns(uint64_t interval_ns, uint64_t ceiling_ns) const noexcept {
    return std::min({latency_ns() + 2 * deviation_ns(), ceiling_ns, interval_ns / 8});
  }

 private:
  static constexpr unsigned kFrac = 4;  // fixed point: 1/16 ns
  // Relaxed: self-contained values; no other memory is published through them.
  std::atomic<uint64_t> lat_;
  std::atomic<uint64_t> dev_;
};

}  // namespace coact::detail
