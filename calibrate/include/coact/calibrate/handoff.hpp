// coact/calibrate/handoff.hpp: cross-thread hand-off cost and the wake break-even.
//
// Provides: probe_handoff_cost() (two threads ping-pong through raw futex
// parkers; the median one-way park/unpark hand-off), wake_break_even() (the
// rule below), HandoffEstimate (a lock-free EWMA the scheduler refines with
// live samples, pinnable by COACT_HANDOFF_COST_NS) and initial_handoff_cost()
// (boot value: env pin > calibration file > a short probe). Design: docs/DESIGN.md
// "Calibration" and "Fairness levers" (the keep-local valve: 6x the calibrated
// hand-off, clamped 6-60 µs; the wake break-even would gate burst recruitment).
//
// Threads: probe_handoff_cost() spawns and joins one helper thread and blocks
// for the probe (~2000 round trips, tens of ms). HandoffEstimate's members
// may be called from any thread concurrently; none blocks.
// Memory ordering: HandoffEstimate holds one atomic word and publishes nothing
// else through it, so relaxed operations suffice (see the field comment).
// Lifetime: HandoffEstimate is neither copyable nor movable (it is shared by
// address between workers); it must outlive its readers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace coact::calibrate {

/// Options for probe_handoff_cost().
struct HandoffProbeOptions {
  /// Measured round trips (each yields one one-way sample = round trip / 2). >= 1.
  uint32_t round_trips = 2000;
  /// Round trips run first and discarded (thread start, page faults, cpufreq ramp-up).
  uint32_t warmup_round_trips = 200;
};

/// Distribution of the one-way hand-off over the measured round trips.
struct HandoffProbeResult {
  std::chrono::nanoseconds median{0};
  std::chrono::nanoseconds p10{0};
  std::chrono::nanoseconds p90{0};
  std::chrono::nanoseconds min{0};
  std::chrono::nanoseconds max{0};
  uint32_t samples = 0;
};

/// Measures the one-way cost of handing control to a parked thread: the caller
/// and a helper thread alternate; each side publishes the other's turn word,
/// FUTEX_WAKE_PRIVATEs it, then FUTEX_WAIT_PRIVATEs on its own turn word (no
/// spinning, so every hand-off is a real park/unpark). A sample is half a
/// round trip on CLOCK_MONOTONIC (steady_clock), so the probe does not depend
/// on tsc_hz(). Result: median / p10 / p90 after dropping the warm-up.
/// Preconditions: options.round_trips >= 1. Caller's thread; blocks for the
/// probe. Errors: std::invalid_argument for round_trips == 0; std::system_error
/// if the helper thread cannot start; aborts with a message if a futex call
/// fails with anything but EAGAIN/EINTR (a broken kernel contract).
HandoffProbeResult probe_handoff_cost(const HandoffProbeOptions& options = {});

/// The wake break-even for a hand-off cost: 2 x hand-off. Rule: giving work to
/// a parked sibling pays one hand-off before the sibling starts and (for the
/// program to gain) one more on the way back — the result, or the next mail,
/// crosses to a thread that is not the one that produced it. Work shorter than
/// two hand-offs finishes sooner run locally, so only work estimated above
/// wake_break_even() is worth a wake. Pure.
constexpr std::chrono::nanoseconds wake_break_even(std::chrono::nanoseconds handoff_cost) noexcept {
  return 2 * handoff_cost;
}

/// Live estimate of the hand-off cost: an EWMA with alpha = 1/16 over
/// observed samples (alpha: a new sample moves the estimate 6%, so a single
/// outlier — a descheduled waker — barely registers while a real shift in
/// machine load is followed within ~16-32 samples; the half-life is 11
/// samples). Kept in fixed point with 8 fractional bits, so integer
/// truncation stalls the estimate at most 1/16 ns short of a constant input.
/// Samples are clamped to 0..1 s before use.
class HandoffEstimate {
 public:
  static constexpr unsigned kAlphaShift = 4;  ///< alpha = 2^-4 = 1/16.
  static constexpr unsigned kFracBits = 8;    ///< fixed-point fraction bits.

  /// Starts at `initial` (clamped to 0..1 s). A `pin` fixes the estimate at that
  /// value for good: observe() is then ignored (for A/B runs).
  explicit HandoffEstimate(std::chrono::nanoseconds initial,
                           std::optional<std::chrono::nanoseconds> pin = std::nullopt) noexcept;

  HandoffEstimate(const HandoffEstimate&) = delete;
  HandoffEstimate& operator=(const HandoffEstimate&) = delete;

  /// Folds one measured hand-off into the estimate (lock-free CAS loop; no
  /// update is lost under concurrent observers). Ignored when pinned. Any thread.
  void observe(std::chrono::nanoseconds sample) noexcept;

  /// Current estimate (rounded to ns). Any thread; one relaxed load.
  std::chrono::nanoseconds cost() const noexcept;

  /// wake_break_even(cost()). Any thread.
  std::chrono::nanoseconds wake_break_even() const noexcept { return calibrate::wake_break_even(cost()); }

  /// True when constructed with a pin (observe() is a no-op).
  bool pinned() const noexcept { return pinned_; }

 private:
  // The estimate in ns << kFracBits. Written by observe() (CAS, any thread)
  // and the constructor; read by cost() from any thread. Relaxed: the word is
  // a self-contained value — no other memory is published through it and
  // readers only need some recent estimate; the CAS makes each update an
  // atomic read-modify-write so concurrent observe() calls never lose one.
  std::atomic<uint64_t> cost_fp_;
  const bool pinned_;  // immutable after construction
};

/// Where initial_handoff_cost() found its value.
enum class HandoffCostSource { env_pin, calibration_file, probed };

/// The boot hand-off cost.
struct InitialHandoffCost {
  std::chrono::nanoseconds cost{0};
  HandoffCostSource source = HandoffCostSource::probed;
};

/// Boot value, in order: COACT_HANDOFF_COST_NS unless "auto" (resolved by
/// coact/options.hpp); the calibration
/// file when its cpu_model and cores match this machine; else a short
/// probe_handoff_cost({500, 200}) (~2-30 ms). Any thread; may block for the
/// probe. Errors: options::option_error for a bad COACT_* key (first
/// options::process()).
InitialHandoffCost initial_handoff_cost();

}  // namespace coact::calibrate
