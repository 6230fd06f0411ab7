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
// WakeLatency: prompt idle timers at a bounded CPU price. The timekeeper's
// timed park returns L ns after the requested instant (the kernel timer and
// the wake-up path; on a virtual machine also the host waking the vCPU). It
// parks until deadline - m and spins the remainder, so a wake costs
// (m - L)+ ns of spinning and is max(L - m, 0) late. m is derived from the
// measured distribution of L, not from a point estimate: a histogram of L
// (2 µs buckets up to 128 µs, an overflow bucket, counts halved every 512
// samples so it follows a changing machine; seeded with one sample at the
// calibrated hand-off cost, the same kernel wake path) gives the expected
// spin of a margin m,
//   S(m) = E[(m - L)+] = sum over samples below m of (m - L),
// and the tail a margin leaves, q99(L) - m. Two parts, the larger wins
// (I: the parked interval; both m <= min(I / 8, q99(L)): spinning past
// nearly every wake buys nothing):
//   free:  the largest m with S(m) <= min(I / 5000, 2 µs) (at most 0.02 %
//          of a core): the part of L every wake pays anyway, at no
//          measurable CPU; the 2 µs cap keeps long periods from spinning
//          for lateness their tail target does not need.
//   tail:  m = q99(L) - I / 64, cut to the largest m with S(m) <= I / 25
//          (4 % of a core). The lateness target is relative to the
//          interval, as the kernel's own select/poll slack is: a 1 ms
//          timer gets p99 wake lateness <= 16 µs, 20 ms 312 µs; I / 64
//          leaves room for the histogram's estimate of q99 and for the fire
//          and handler after the wake.
// Where the tail and the budget conflict (q99(L) - I / 64 costs more than
// I / 25), the budget wins and the timer stays late by the rest.
// An interval no longer than q05(L) is spun whole (m = I): a park would be
// late by more than the interval and cost a kernel timer wake. The margin is
// recomputed after samples/8 new samples (every sample while the histogram
// fills, every 32-64 once it is full) or for an interval more than 1/16 away
// and above the cached q05 (margin_cached_ns). Why each constant is what it
// is, with the arithmetic per interval: docs/design/wake-latency-margin.md.
// Samples come from the timekeeper only (one worker at a time, handed over
// through the timekeeper_ CAS); the buckets are relaxed atomics anyway, so a
// reader on another thread (stats) sees a lost or stale count, never a torn
// one.
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
  void parked(uint64_t spun_ns, uint64_t slept_ns, bool for_work, uint64_t break_even_ns, uint64_t ceiling) noexcept {
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
  static constexpr uint64_t kBucketNs = 2'000;        // histogram resolution
  static constexpr uint32_t kBuckets = 64;            // 0 .. 128 µs, then overflow
  static constexpr uint32_t kDecayAt = 512;           // halve all counts at this total
  static constexpr uint64_t kFreeDivisor = 5000;      // free spin: E[spin] <= I / 5000 (0.02 %) ...
  static constexpr uint64_t kFreeCapNs = 2'000;       // ... and <= 2 µs (see the file comment)
  static constexpr uint64_t kTailDivisor = 64;        // tail target: q99(L) - m <= I / 64
  static constexpr uint64_t kTailBudgetDivisor = 25;  // tail spin: E[spin] <= I / 25 (4 %)
  static constexpr uint64_t kIntervalDivisor = 8;     // margin <= I / 8

  /// Seeds the histogram with one sample (ns): the calibrated hand-off cost.
  explicit WakeLatency(uint64_t seed_ns) noexcept { observe(seed_ns); }

  /// One observed lateness of a timed park (ns past the requested wake).
  /// Timekeeper thread only (margin_cached_ns counts samples in a plain member).
  void observe(uint64_t late_ns) noexcept {
    ++observed_;
    const uint32_t b = bucket_of(late_ns);
    count_[b].store(count_[b].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    const uint32_t total = total_.load(std::memory_order_relaxed) + 1;
    if (total < kDecayAt) {
      total_.store(total, std::memory_order_relaxed);
      return;
    }
    uint32_t kept = 0;
    for (auto& c : count_) {
      const uint32_t h = c.load(std::memory_order_relaxed) / 2;
      c.store(h, std::memory_order_relaxed);
      kept += h;
    }
    total_.store(kept, std::memory_order_relaxed);
  }

  /// Samples in the histogram now (after decay).
  uint32_t samples() const noexcept { return total_.load(std::memory_order_relaxed); }

  /// The q-quantile of the observed lateness (ns, the upper edge of its
  /// bucket; kBuckets·kBucketNs if it lies in the overflow bucket).
  uint64_t quantile_ns(double q) const noexcept {
    uint32_t snap[kBuckets + 1];
    return quantile_of(snap, snapshot(snap), q);
  }
  /// Expected spin (ns) of an early wake by `m` ns: E[(m - L)+], each
  /// sample taken at its bucket's lower edge (over-estimates, never under).
  uint64_t expected_spin_ns(uint64_t m) const noexcept {
    uint32_t snap[kBuckets + 1];
    const uint64_t total = snapshot(snap);
    if (total == 0) return 0;
    uint64_t sum = 0;
    for (uint32_t b = 0; b < kBuckets && b * kBucketNs < m; ++b) sum += snap[b] * (m - b * kBucketNs);
    return sum / total;
  }

  /// margin_ns, recomputed only when the evidence or the interval changed:
  /// after max(1, samples held / 8) new samples, or for an
  /// interval more than 1/16 away from the one it was computed for and
  /// above the q05 it was computed with (a periodic timer parks for
  /// nearly the same interval every period). Between recomputations the
  /// margin scales with the interval where it was the whole interval (spun
  /// whole), and is never more than the interval, so most timed parks skip
  /// the histogram scan. Timekeeper thread only (the role is handed over through
  /// the timekeeper_ CAS, which orders these plain members).
  uint64_t margin_cached_ns(uint64_t interval_ns, uint64_t ceiling_ns) noexcept {
    if (ceiling_ns == 0) return 0;
    // Fresh enough: fewer new samples than 1/8 of those held (every 32-64
    // timed parks once the histogram is full, which keeps the recomputation
    // off most idle ticks); while it fills, after every sample, so the first
    // periods' margins come from measured lateness, not from the boot
    // hand-off cost the histogram starts with.
    const bool fresh = cache_valid_ && observed_ - cache_observed_ < std::max<uint32_t>(1, cache_total_ / 8);
    if (fresh && interval_ns >= cache_lo_ && interval_ns <= cache_hi_)
      return cache_whole_ ? interval_ns : std::min(cache_margin_, interval_ns);
    // At most the q05 it was computed with: spun whole, as margin_ns would
    // answer, without recomputing (a cluster of timers a few µs apart
    // alternates these gaps with the period's, and recomputed on each).
    if (fresh && interval_ns <= cache_q05_) return interval_ns;
    cache_total_ = samples();
    cache_q05_ = quantile_ns(0.05);
    cache_margin_ = margin_ns(interval_ns, ceiling_ns);
    cache_whole_ = cache_margin_ >= interval_ns;
    cache_observed_ = observed_;
    cache_lo_ = interval_ns - interval_ns / 16;
    cache_hi_ = interval_ns + interval_ns / 16;
    cache_valid_ = true;
    return cache_margin_;
  }

  /// How early to wake before a deadline `interval_ns` (I) away (see the
  /// file comment): m = max(m_free, m_tail), where m_free is the largest
  /// margin with E[(m - L)+] <= min(I / 5000, 2 µs) and m_tail = q99(L) - I / 64 (0 if
  /// negative), cut to the largest margin with E[(m - L)+] <= I / 25; both
  /// at most min(I / 8, q99(L)). `ceiling_ns` 0 (COACT_SPIN_WINDOW_US=0)
  /// turns the early wake off. Timekeeper thread. O(kBuckets).
  uint64_t margin_ns(uint64_t interval_ns, uint64_t ceiling_ns) const noexcept {
    if (ceiling_ns == 0) return 0;
    uint32_t snap[kBuckets + 1];
    const uint64_t total = snapshot(snap);
    if (total == 0 || ceiling_ns == 0) return 0;
    // An interval shorter than the lateness nearly every wake pays (q05) is
    // spun whole: a park would be late by more than the interval itself,
    // and its own kernel CPU is about as large (the floor in the file comment).
    if (interval_ns <= quantile_of(snap, total, 0.05)) return interval_ns;
    const uint64_t q99 = quantile_of(snap, total, 0.99);
    const uint64_t limit = std::min(interval_ns / kIntervalDivisor, q99);
    const uint64_t free_m = largest_within(snap, total, limit, std::min(interval_ns / kFreeDivisor, kFreeCapNs));
    const uint64_t target = interval_ns / kTailDivisor;
    if (q99 <= target) return free_m;
    const uint64_t tail_m =
        std::min(q99 - target, largest_within(snap, total, limit, interval_ns / kTailBudgetDivisor));
    return std::max(free_m, tail_m);
  }

 private:
  // The largest m <= limit with S(m) = E[(m - L)+] <= budget_ns. S(m)·total
  // is piecewise linear in m: on [b·w, (b+1)·w] its slope is the number of
  // samples in buckets 0..b (each taken at its bucket's lower edge).
  static uint64_t largest_within(const uint32_t (&snap)[kBuckets + 1], uint64_t total, uint64_t limit,
                                 uint64_t budget_ns) noexcept {
    const uint64_t budget = budget_ns * total;  // in sample·ns units
    uint64_t spent = 0;                         // S(b·w)·total
    uint64_t below = 0;                         // samples in buckets 0..b
    for (uint32_t b = 0; b < kBuckets; ++b) {
      const uint64_t lo = b * kBucketNs;
      if (lo >= limit) return limit;
      below += snap[b];
      const uint64_t hi = std::min(lo + kBucketNs, limit);
      const uint64_t cost = below * (hi - lo);
      if (spent + cost > budget) return lo + (below == 0 ? 0 : (budget - spent) / below);
      spent += cost;
    }
    return limit;
  }
  static uint64_t quantile_of(const uint32_t (&snap)[kBuckets + 1], uint64_t total, double q) noexcept {
    if (total == 0) return 0;
    const double want = q * double(total);
    uint64_t cum = 0;
    for (uint32_t b = 0; b < kBuckets; ++b) {
      cum += snap[b];
      if (double(cum) >= want) return (b + 1) * kBucketNs;
    }
    return kBuckets * kBucketNs;
  }
  static uint32_t bucket_of(uint64_t ns) noexcept { return uint32_t(std::min<uint64_t>(ns / kBucketNs, kBuckets)); }
  uint64_t snapshot(uint32_t (&snap)[kBuckets + 1]) const noexcept {
    uint64_t total = 0;
    for (uint32_t b = 0; b <= kBuckets; ++b) {
      snap[b] = count_[b].load(std::memory_order_relaxed);
      total += snap[b];
    }
    return total;
  }
  // Relaxed: self-contained counters; no other memory is published through them.
  std::atomic<uint32_t> count_[kBuckets + 1] = {};
  std::atomic<uint32_t> total_{0};
  // margin_cached_ns's cache and observe's sample count: timekeeper only.
  uint32_t observed_ = 0;
  uint32_t cache_observed_ = 0;
  uint32_t cache_total_ = 0;  // samples() when the cache was computed
  uint64_t cache_q05_ = 0;    // quantile_ns(0.05) then
  bool cache_valid_ = false;
  bool cache_whole_ = false;
  uint64_t cache_margin_ = 0, cache_lo_ = 0, cache_hi_ = 0;
};

}  // namespace coact::detail
