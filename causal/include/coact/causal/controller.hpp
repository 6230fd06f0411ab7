// coact/causal/controller.hpp: the causal-profiling controller — runs virtual
// speedup experiments one after another and writes the profile.
//
// Provides: Options, Controller::start / stop / wait / start_from_env, the
// COACT_CAUSAL_* options (options_from, options_from_env, to_env), and the
// SweepSummary. Design: DESIGN.md "Causal profiling" ("Controller"); Coz,
// Curtsinger & Berger, SOSP 2015, §3 and libcoz/profiler.cpp
// (profiler_thread): one experiment at a time, a cool-off between them, the
// window doubled while progress points see too few visits.
//
// The sweep (numbered steps, on the controller's own std::thread; all sleeps
// are wall-clock condition-variable waits, never virtual time, and are cut
// short by stop()):
//  1. calibrate::tsc_hz() (add_delay's precondition), open the outputs, write
//     the startup records, attach handler-completion points
//     (Options::progress_handlers), set g_sweep_active, and sleep one cooldown
//     so regions that run get counted.
//  2. Progress points: the declared points matching Options::progress (all if
//     empty) plus the handler-completion points. While there are none, sleep
//     a window and retry (Coz also waits for its first progress point); no
//     experiment is recorded.
//  3. Region: the fixed region if given (Options::fixed_region: an exact name,
//     else the only region containing it; waits while none matches), else one
//     drawn among the regions matching Options::region_filter whose visits
//     grew since the previous pick, i.e. that ran in the last window and
//     cooldown: with probability proportional to the exclusive time each ran
//     since that pick (Options::time_weighted, the default: as Coz, whose next
//     line is the one the next sample lands in), or uniformly. Time weighting
//     spends a sweep on the regions that can matter: a region's virtual
//     speedup by s shortens the program by at most s times the time it runs.
//     Measured on the archiver (100 s sweep, 14 regions): uniform picks gave
//     the once-per-pass handlers (Start, FilesDone, EndOfStream) as many
//     experiments as the Compressor (3-13 each, curves within noise). None
//     ran: sleep a window and retry.
//  4. Speedup: Options::fixed_speedup_pct if set, else Coz's draw: r uniform in
//     0..27; r <= 7 gives 0, else (r − 7)·5 %. So P(0) = 8/28 ≈ 0.29 and each
//     of 5..100 % has 1/28 (SpeedupDivisions = 20, ZeroSpeedupWeight = 7 in
//     libcoz/profiler.h; its comment's "~25%" and some READMEs' "50%" are
//     not what the code draws). Since every region's curve needs its own
//     baseline, ~29 % of each region's experiments are speedup 0.
//  5. Start: snapshot the progress counters, the region's counters, G and the
//     wall clock; begin_experiment(region, speedup).
//  6. Sleep the window (wall clock). stop() during the window abandons the
//     experiment (nothing is written for it).
//  7. Stop: end_experiment(); read the clock, G and the counters again.
//  8. Record: duration_ns = wall time of the window; delay_ns = G's growth
//     converted with tsc_hz; effective_ns = duration_ns − delay_ns (this goes
//     into profile.coz's duration=, as Coz does, so its viewer's rates are
//     right); throughput deltas; latency arrivals, departures and the number
//     in flight at the end (difference); the region's visits and exclusive
//     time. An experiment in which no selected progress point moved at all is
//     not written (every rate would be 0/duration: no information) and is
//     counted in SweepSummary::empty_experiments.
//  9. Adapt (Coz): min_delta = the smallest delta over the selected points
//     (latency: min of arrivals and departures). min_delta < Options::min_delta
//     doubles the window (capped at max_experiment); min_delta > 2·min_delta
//     halves it while it is at least twice the initial window.
// 10. Cooldown (Options::cooldown, wall clock) so threads pay their debt
//     before the next experiment; then back to 2 unless stop() was called,
//     max_experiments experiments were written, or duration has passed.
// 11. End: clear g_sweep_active, detach completion points, write the runtime
//     and samples records, a "names" record, one "error" record per problem
//     with its message also on stderr — a filter or fixed region that matched
//     nothing; and, when no experiment was written, either "no_progress" (no
//     selected progress point moved during the whole sweep, or none exists)
//     or "no_experiments" (points moved but no window completed with
//     progress, and no filter problem explains it) — then a "summary" record.
//
// JSON records besides startup / experiment / runtime (all one line each):
//   {"type":"names","regions":[{"name":..,"kind":"handler"|"scope","visits":N},..],
//    "progress":[{"name":..,"kind":"throughput"|"latency","handler":bool,"visits":N},..]}
//     at the end, and once early when a filter has matched nothing for three
//     windows (with a "warning" record), so a killed run still lists names.
//   {"type":"warning"|"error","what":"no_progress"|"no_experiments"|
//    "unknown_region"|"unknown_progress"|"unknown_handler","message":..,
//    "names":[the filter entries, or the progress points concerned]}
//   {"type":"summary","experiments":N,"empty_experiments":N,
//    "progress_reached":bool,"reason":"stopped"|"duration"|"experiments"|"error"}
//
// Threads: start / stop / wait / running may be called from any thread; one
// sweep runs per process at a time (the selection and g_sweep_active are
// process-global). stop() blocks until the controller thread has written the
// end records and exited. Lifetime: the controller's state is a leaked
// process-wide object; start_from_env() registers an atexit handler that
// calls stop(), so a program that exits normally writes its end records.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <coact/options.hpp>

namespace coact::causal {

/// Sweep options. Each field names its key (coact/options.hpp; options_from).
struct Options {
  /// COACT_CAUSAL_PROGRESS (comma-separated): declared progress points whose
  /// name contains one of these are recorded; empty: all declared points.
  std::vector<std::string> progress;
  /// COACT_CAUSAL_PROGRESS_HANDLER (comma-separated): every handler region whose
  /// name contains one of these is a throughput progress point counting its
  /// completions (no code change needed). Always recorded.
  std::vector<std::string> progress_handlers;
  /// COACT_CAUSAL_REGION_FILTER (comma-separated): only regions whose name
  /// contains one of these are selected; empty: all regions.
  std::vector<std::string> region_filter;
  /// COACT_CAUSAL_FIXED_REGION: always select this region (an exact name, else
  /// the only region whose name contains it); empty: draw (step 3).
  std::string fixed_region;
  /// COACT_CAUSAL_REGION_WEIGHT: "time" (true, default: a region is drawn with
  /// probability proportional to its running time in the last window, as
  /// Coz) or "uniform" (false: every region that ran equally; coact-profile
  /// validate uses it so that every stage gets its share of experiments).
  bool time_weighted = true;
  /// COACT_CAUSAL_FIXED_SPEEDUP: 0..100 (%); unset: draw (step 4).
  std::optional<uint32_t> fixed_speedup_pct;
  /// COACT_CAUSAL_EXPERIMENT_MS: initial window (Coz ExperimentMinTime: 500 ms). 1..3'600'000.
  std::chrono::milliseconds experiment{500};
  /// COACT_CAUSAL_MAX_EXPERIMENT_MS: cap of the adaptive window (Coz: 16 × the
  /// minimum). 0 (default) means 16 × experiment. At least experiment.
  std::chrono::milliseconds max_experiment{0};
  /// COACT_CAUSAL_COOLDOWN_MS: pause after each experiment (Coz ExperimentCoolOffTime: 10 ms). 0..600'000.
  std::chrono::milliseconds cooldown{10};
  /// COACT_CAUSAL_DURATION_S: stop starting experiments after this long; 0: no limit.
  std::chrono::seconds duration{0};
  /// COACT_CAUSAL_EXPERIMENTS: stop after this many written experiments; 0: no limit.
  uint64_t max_experiments = 0;
  /// COACT_CAUSAL_MIN_DELTA: target minimum visits per progress point per experiment (Coz ExperimentTargetDelta: 5).
  uint64_t min_delta = 5;
  /// COACT_CAUSAL_OUTPUT: profile.coz path (appended); "" disables.
  std::string output = "profile.coz";
  /// COACT_CAUSAL_JSON_OUTPUT: JSON-lines path (appended); "" disables. Unset:
  /// `output` with ".coz" replaced by ".jsonl" (or ".jsonl" appended).
  std::string json_output = "profile.jsonl";
  /// COACT_CAUSAL_SEED: seed of the region and speedup draws; 0: from the clock.
  uint64_t seed = 0;
};

/// The JSON path used when COACT_CAUSAL_JSON_OUTPUT is unset: `coz_path` with a
/// trailing ".coz" replaced by ".jsonl", else with ".jsonl" appended.
std::string default_json_output(const std::string& coz_path);

/// The sweep options from resolved options (keys declared in coact/options.hpp's
/// table, group "causal"). Returns nullopt when COACT_CAUSAL is false. Pure;
/// any thread. Errors: options::option_error for inconsistent values
/// (COACT_CAUSAL_MAX_EXPERIMENT_MS below COACT_CAUSAL_EXPERIMENT_MS; both
/// outputs empty), naming the key, the value and what is accepted.
std::optional<Options> options_from(const options::Values& values);

/// options_from(options::resolve()) over an environ-style array (NAME=VALUE
/// strings, null terminated) and nothing else: what a child started with this
/// environment will resolve. Errors: options::option_error (any bad or
/// unknown COACT_* key, or as options_from). Any thread.
std::optional<Options> options_from_env(const char* const* envp);

/// The environment that makes options_from_env return `o` (COACT_CAUSAL=1
/// first, then every key whose value differs from the default). Used by the
/// coact-profile tool. Pure.
std::vector<std::pair<std::string, std::string>> to_env(const Options& o);

/// The options as a JSON object (for the startup record). Pure.
std::string options_json(const Options& o);

/// Result of a sweep.
struct SweepSummary {
  uint64_t experiments = 0;        ///< Written experiments.
  uint64_t empty_experiments = 0;  ///< Finished but not written: no selected point moved.
  bool progress_reached = false;   ///< Some selected progress point moved in some experiment.
  std::string reason;              ///< "stopped", "duration", "experiments", "error" ("" if none ran).
  std::vector<std::string> errors; ///< Messages of the end "error" records (also printed on stderr).
};

class Controller {
 public:
  /// Starts a sweep on a new thread (the steps above). Returns once the
  /// outputs are open and the startup records are written.
  /// Errors: std::logic_error if a sweep is running or causal profiling is
  /// compiled out (COACT_CAUSAL=OFF); std::invalid_argument for inconsistent
  /// options (message names the field); std::system_error if an output file
  /// cannot be opened; options::option_error from tsc_hz() (a bad COACT_* key).
  /// Any thread; blocks for the first tsc_hz() calibration (<= ~70 ms).
  static void start(const Options& options);

  /// Ends the sweep (step 11) and joins the controller thread; returns the
  /// summary of the last sweep (also when it had already ended by itself, or
  /// an empty summary if none ever ran). Idempotent. Any thread but the
  /// controller's; blocks for at most one window's bookkeeping.
  static SweepSummary stop();

  /// Waits until the sweep ends by itself (max_experiments or duration) or
  /// `timeout` passes; true if it ended. Any thread; blocks.
  static bool wait(std::chrono::milliseconds timeout);

  /// True from start() until the sweep has written its end records. Any thread.
  static bool running() noexcept;

  /// COACT_CAUSAL set (options::process()): start a sweep with
  /// options_from(options::process()) and register (once) an atexit handler
  /// that stops it. Returns false if COACT_CAUSAL is not set; true once a
  /// sweep was started.
  /// At most one environment sweep per process: later calls (a second Runtime
  /// boot) start nothing and return true, even if that sweep has ended.
  /// Errors: options::option_error (options_from), and as start(). Any
  /// thread; meant for runtime boot.
  static bool start_from_env();
};

}  // namespace coact::causal
