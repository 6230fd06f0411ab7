// coact/causal/controller.hpp: the causal-profiling controller — runs virtual
// speedup experiments one after another and writes the profile.
//
// Provides: Options, Controller::start / stop / wait / start_from_env, the
// COACT_CAUSAL_* options (options_from, options_from_env, to_env), and the
// SweepSummary. Design: docs/DESIGN.md "Causal profiling" ("Experiment"); Coz,
// Curtsinger & Berger, SOSP 2015, §3 and libcoz/profiler.cpp
// (profiler_thread): one experiment at a time, a cool-off between them, the
// window doubled while progress points see too few visits.
//
// A sweep, on the controller's own thread: wait for progress points, then
// repeatedly pick a region and a speedup, run one experiment window (wall
// clock), write it, adapt the window, cool down — until stop(), the
// experiment count or the duration. What it writes: profile_writer.hpp (the
// record formats, including names / warning / error / summary). The numbered
// steps are at the top of causal/src/controller.cpp.
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
#include <string_view>
#include <utility>
#include <vector>

#include <coact/options.hpp>

namespace coact::causal {

/// Sweep options. Each field names its key (coact/options.hpp; options_from).
/// How the controller draws the region of each experiment (Options::region_weight).
enum class RegionWeight { evidence, time, uniform };

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
  /// the only region whose name contains it); empty: draw (controller.cpp step 3).
  std::string fixed_region;
  /// COACT_CAUSAL_REGION_WEIGHT: how step 3 of controller.cpp draws a region.
  ///  - evidence (default): the regions that decide the ranking. Each region
  ///    above `time_share_floor_pct` first gets `min_experiments` experiments;
  ///    then mostly the leader or its closest challenger (the one whose
  ///    interval reaches highest), whichever is less certain, and otherwise
  ///    any region in proportion to its interval's squared width. A region
  ///    below the floor is drawn rarely: it cannot move the program much.
  ///  - time: in proportion to the running time in the last window (as Coz).
  ///  - uniform: every region that ran equally (coact-profile validate, so
  ///    every stage gets its share).
  RegionWeight region_weight = RegionWeight::evidence;
  /// COACT_CAUSAL_MIN_EXPERIMENTS: non-zero-speedup experiments a region needs
  /// before it is ranked (the sweep's estimates and coact-plot's default). 2..1000.
  uint32_t min_experiments = 6;
  /// COACT_CAUSAL_TIME_SHARE_FLOOR_PCT: with the evidence draw, regions below
  /// this share of all regions' running time (since the sweep began) are
  /// drawn only occasionally and do not hold up `until_settled`. 0..100.
  uint32_t time_share_floor_pct = 2;
  /// COACT_CAUSAL_UNTIL_SETTLED: end the sweep (reason "settled") once every
  /// region above the floor is ranked and the leader's lower bound is above
  /// every other ranked region's upper bound (or, with settle_width_pct, every
  /// ranked interval is narrower than that); `duration` / `max_experiments`
  /// still bound it.
  bool until_settled = false;
  /// COACT_CAUSAL_SETTLE_WIDTH_PCT: also settled when every ranked region's
  /// 95% interval at the ranking speedup is narrower than this many points; 0: off.
  uint32_t settle_width_pct = 0;
  /// COACT_CAUSAL_FIXED_SPEEDUP: 0..100 (%); unset: draw (controller.cpp step 4).
  std::optional<uint32_t> fixed_speedup_pct;
  /// COACT_CAUSAL_ALTERNATE_SPEEDUP: 0..100 (%), only with fixed_speedup_pct:
  /// the experiments alternate between the two speedups in the order
  /// A B B A A B B A ... (A = fixed_speedup_pct), so one process measures
  /// both and neither a difference between processes nor a linear drift in
  /// the program's rate biases their comparison. unset: every experiment at A.
  std::optional<uint32_t> alternate_speedup_pct;
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
  /// COACT_CAUSAL_SHARD ("K/N"): this sweep is shard `shard` (0-based) of
  /// `shards` independent sweeps of one program whose profiles are merged
  /// (coact-plot, scripts/slurm-sweep.sh). A sharded sweep draws with its own
  /// seed (the seed above mixed with the shard, so shards never repeat each
  /// other's draws even with one --seed) and writes "shard", "shards" and
  /// "host" into its startup, experiment and summary JSON records.
  /// shards == 0: not sharded (nothing is added). Precondition: shard < shards.
  uint32_t shard = 0;
  uint32_t shards = 0;
  /// COACT_CAUSAL_SAMPLING: 1 samples every runtime worker and registered
  /// thread on its CPU clock during the sweep, so sampled source lines
  /// become regions (line_region.hpp); 0 (default): handler and scope
  /// regions only.
  bool sampling = false;
  /// COACT_CAUSAL_SAMPLE_PERIOD_US: CPU time between samples (Coz: 1000). 10..1'000'000.
  std::chrono::microseconds sample_period{1000};
  /// COACT_CAUSAL_LINE_EXPERIMENT_PERIOD_US: CPU time between samples while an
  /// experiment selects a line region (LineSamplingOptions::experiment_period);
  /// 0 (default): sample_period / 8. 0 or 10..1'000'000.
  std::chrono::microseconds line_experiment_period{0};
  /// COACT_CAUSAL_PAYING_BASELINE: a sweep at fixed speedup 0 takes the
  /// pay path of a sweep that can inject delay (a pay at every pay point and
  /// before each send from a handler, hooks.hpp) instead of skipping it. For
  /// a speedup-0 baseline run in its own process and compared with
  /// fixed-speedup runs in others: the paths' own cost can differ by as
  /// much as a small virtual speedup's effect (sweep.cpp step 1). Default
  /// off.
  bool paying_baseline = false;
  /// COACT_CAUSAL_PROFILE_ONLY: run no experiment, only record the profile of
  /// where the time goes (controller.cpp step 11: the "profile" record;
  /// profile.coz's samples records), with sampled lines when `sampling` is
  /// on: sampling's cost without a sweep's. Excludes fixed_region,
  /// fixed_speedup_pct and max_experiments.
  bool profile_only = false;
  /// COACT_CAUSAL_PRINT_NOTES: the sweep's warning and error records are
  /// also printed on stderr ("coact causal: ..."). Off when a tool that reads
  /// the records prints them itself (coact-profile run), so the user reads
  /// each once.
  bool print_notes = true;
  /// COACT_CAUSAL_SOURCE_SCOPE (comma-separated Coz patterns, '%' = any
  /// characters, matched against full source paths): which lines can be
  /// regions; empty (default): the program's own sources (symbolizer.hpp).
  std::vector<std::string> source_scope;
  /// COACT_CAUSAL_SAMPLE_SIGNAL: the signal of `sampling`'s samples: "rt"
  /// (default: a real-time signal no handler uses, picked at start), "prof"
  /// (SIGPROF) or "rtmin+N" (sampler.hpp parse_sample_signal, "The sampling signal").
  std::string sample_signal = "rt";
};

/// The JSON path used when COACT_CAUSAL_JSON_OUTPUT is unset: `coz_path` with a
/// trailing ".coz" replaced by ".jsonl", else with ".jsonl" appended.
std::string default_json_output(const std::string& coz_path);

/// Parses a shard "K/N" (decimal digits only, 1 <= N <= 100000, 0 <= K < N)
/// into `shard` and `shards`. Returns false (outputs unchanged) for anything
/// else. Pure; any thread. Used by options_from (COACT_CAUSAL_SHARD) and by
/// coact-profile run --shard.
bool parse_shard(std::string_view text, uint32_t& shard, uint32_t& shards);

/// The seed a shard draws with: `seed` mixed with the shard index (splitmix64
/// of both), so that shards of one sweep given one seed draw differently and
/// each is reproducible. Pure; any thread.
uint64_t shard_seed(uint64_t seed, uint32_t shard);

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
  std::string
      reason;  ///< "stopped", "duration", "experiments", "settled", "no_region", "no_progress" ("" if none ran).
  bool settled = false;             ///< The ranking had settled by the last experiment (Options::until_settled's rule).
  std::string leader;               ///< The leading region of the last estimates ("" if none ranked).
  std::vector<std::string> errors;  ///< Messages of the end "error" records (also printed on stderr).
};

class Controller {
 public:
  /// Starts a sweep on a new thread (controller.cpp, steps 1-11). Returns once the
  /// outputs are open and the startup records are written.
  /// Errors: std::logic_error if a sweep is running or causal profiling is
  /// compiled out (COACT_CAUSAL=OFF); std::invalid_argument for inconsistent
  /// options (message names the field); std::system_error if an output file
  /// cannot be opened; options::option_error from tsc_hz() (a bad COACT_* key).
  /// Any thread; blocks for the first tsc_hz() calibration (<= ~70 ms).
  static void start(const Options& options);

  /// Ends the sweep (controller.cpp step 11) and joins the controller thread; returns the
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
  /// Errors: options::option_error (options_from; or a COACT_CAUSAL_OUTPUT /
  /// COACT_CAUSAL_JSON_OUTPUT that cannot be written: a missing or read-only
  /// directory, a read-only file, checked before anything is written), and as
  /// start(). Any thread; meant for runtime boot.
  static bool start_from_env();
};

}  // namespace coact::causal
