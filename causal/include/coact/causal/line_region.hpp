// coact/causal/line_region.hpp: sampled-line regions — CPU-time samples
// attributed to source lines, and virtual speedup of a selected line by
// Coz's per-sample rule (docs/DESIGN.md "Region"; Coz, Curtsinger & Berger,
// SOSP 2015, §3.2: "each sample in the selected line inserts a delay of
// period x speedup into the other threads").
//
// What: while line sampling runs (start_line_sampling, called by the
// controller when Options::sampling is on), a drainer thread wakes every
// drain interval (10 ms while an experiment selects a line, else
// base_drain_interval: 64 ms at a 1 ms period), takes every thread's raw
// samples (sampler.hpp), unwinds
// and symbolizes them (symbolizer.hpp) and attributes each to its first
// in-scope frame's line L. Each sample counts (1 + timer overrun) periods of
// CPU time for two line regions (region.hpp, RegionKind::line):
//   * "path.cpp:41"             — the line, whoever called it;
//   * "H @ path.cpp:41"         — the line while region H (the innermost
//     handler on the sampled thread, else its innermost COACT_SCOPE) ran,
//     so a shared function gets one curve per calling handler.
// visits += periods, cycles += periods x period: the controller draws lines
// by their sampled time as it draws handlers by their running time.
//
// Virtual speedup: when the selected region is one of a sample's two line
// regions, and the sample was taken in the running experiment (same
// epoch), x = periods x period x s is added to G (add_global_delay) and
// credited to the sampled thread (sampler's per-thread credit, taken at its
// next pay point, dropped at its next resume, where L = G covers it): every
// other thread owes x, the sampled thread does not — the delay ledger, pay
// points and credits then work as for handler regions. Where: at
// begin_experiment the selected line's addresses are published to the
// signal handler (sampler.hpp set_sample_target), which injects x for a
// sample whose PC is on them at the moment it is taken; the drainer injects
// only the rest (samples that reach the line through deeper frames, or taken
// before the publication). Injecting at drain time instead (every 10 ms) made
// the other threads pay ~10 samples' delay in one payment, at whatever they
// ran then: fork_join_lines' B branch (0.75 ms of slack per round) then
// outlasted A and delayed the critical path, and line predictions came out a
// third to two thirds low. end_experiment first drains (the end-experiment
// hook), so an experiment's last samples are counted in it.
//
// Experiment period: while an experiment selects a line region (at any
// speedup, 0 included, so that its baseline is perturbed alike) every
// sampler is re-armed at LineSamplingOptions::experiment_period (default
// period / kExperimentPeriodDivisor: 125 µs for Coz's 1 ms), and back at
// its end; each sample weighs the period it was taken at (RawSample::
// period_ns), so line regions' cycles stay CPU time, while their visits
// count samples (more of them during line experiments). Why: a sample's
// delay reaches G only when the sample is taken, up to one period after
// the CPU time it stands for, and in steps of period x s. A thread that
// makes another runnable within that lag escapes the delay. In the
// known-answer shared_callee (A's handler calls work() for 2 units = 1 ms,
// B's for 1 unit, concurrently) about one 1-ms sample of work@A fell in
// each round: B owed its 0.75 ms (s = 0.75) only in rounds where that
// sample came before B answered, so B rarely became the critical path past
// s = 1/2, and work@A at s = 0.75 predicted 0.727 against 0.499. (A worker
// that is always busy, spinning included, is sampled periodically in wall
// time, so the sample's phase in a ~1-ms round drifts slowly instead of
// being drawn afresh each round.) Sampling 8x faster only during line
// experiments bounds the lag and the steps to 125 µs x s at the cost of 8x
// the samples there (docs/design/sampling.md).
//
// Threads: start / stop / drain_line_samples / stats from any thread; one
// internal mutex serialises draining (the drainer thread and the
// end-experiment hook). Blocking: start reads the executable's compilation
// unit headers (and, with scope patterns, every loaded library's; a library
// dlopen()ed later is read by the drainer: Symbolizer::refresh) (milliseconds;
// a unit's line rows are read by the drainer when a sample first lands in
// it); stop joins the drainer.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <coact/causal/sampler.hpp>
#include <coact/causal/symbolizer.hpp>

namespace coact::causal {

/// The default experiment period is the sampling period divided by this.
inline constexpr int kExperimentPeriodDivisor = 8;

struct LineSamplingOptions {
  std::chrono::nanoseconds period{std::chrono::milliseconds(1)};  ///< CPU time per sample (Coz: 1 ms).
  SourceScope scope;                                              ///< Lines that can be regions.
  /// Drainer wake-up period while an experiment selects a line region (the
  /// perf event at `experiment_period` can fill a thread's ring, kSampleRing
  /// samples, in 64 ms at 125 µs). Outside such experiments the drainer
  /// wakes every base_drain_interval(period, drain_interval) instead.
  std::chrono::milliseconds drain_interval{10};

  /// CPU time per sample while an experiment selects a line region (header
  /// comment); 0: period / kExperimentPeriodDivisor. At least 10 µs.
  std::chrono::nanoseconds experiment_period{0};

  /// The sampling signal (sampler.hpp start_sampling's `signo`; parse_sample_signal
  /// reads COACT_CAUSAL_SAMPLE_SIGNAL): 0, a free real-time signal.
  int signal = 0;
};

/// The drainer's wake-up period outside line experiments: the time a
/// thread's ring (kSampleRing samples) takes to fill at the base `period`,
/// over 8, within [precise, 100 ms] (64 ms at Coz's 1 ms). Only the counts
/// wait for it (the controller's drawing of lines; an experiment's own
/// samples are drained by its end), and each wake of the drainer costs a
/// timed wake and, on a machine whose cores the workers fill, preempts a
/// worker: draining every 10 ms throughout was ~100 wakes a second for
/// counts nobody reads before the next experiment.
inline std::chrono::milliseconds base_drain_interval(std::chrono::nanoseconds period,
                                                     std::chrono::milliseconds precise) noexcept {
  const auto fill = std::chrono::duration_cast<std::chrono::milliseconds>(period * kSampleRing / 8);
  return std::max(precise, std::min(fill, std::chrono::milliseconds(100)));
}

struct LineSamplingStats {
  uint64_t samples = 0;               ///< Raw samples drained.
  uint64_t periods = 0;               ///< Periods they stand for (1 + overrun each).
  uint64_t attributed = 0;            ///< Samples with an in-scope frame.
  uint64_t delayed = 0;               ///< Samples of a selected line that injected delay.
  uint64_t delay_cycles = 0;          ///< Delay they injected (cycles).
  size_t line_regions = 0;            ///< Line regions registered (overall and qualified).
  uint64_t experiment_period_ns = 0;  ///< The period in use while an experiment selects a line (0 before start).
  /// Why no line could be named, or (when lines could) the objects without
  /// debug information whose lines cannot be ("" if neither).
  std::string symbolizer_error;
  /// Objects without a line table that the scope could have named (Symbolizer::objects_without_lines).
  std::vector<std::string> no_debug_info;
};

/// Starts sampling (sampler.hpp start_sampling) and the drainer. Precondition:
/// calibrate::tsc_hz() was called. Returns false if sampling could not start
/// (already running, or a fork() child). Errors: as start_sampling.
bool start_line_sampling(const LineSamplingOptions& options);

/// Stops the drainer (after a last drain) and sampling. Idempotent. Any thread.
void stop_line_sampling() noexcept;

/// Drains and attributes now (tests; the end-experiment hook). Any thread.
void drain_line_samples() noexcept;

/// Counters since the process started. Any thread.
LineSamplingStats line_sampling_stats();

}  // namespace coact::causal
