// The causal-profiling controller (coact/causal/controller.hpp). The step
// numbers in the code below refer to this list.
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
//     grew since the previous pick (they ran in the last window and
//     cooldown), by Options::region_weight: evidence (the default:
//     pick_by_evidence(); controller.hpp says what it favours; it reads the
//     running estimates of step 8), time (probability proportional to the
//     exclusive time each ran since that pick, as Coz, whose next line is the
//     one the next sample lands in) or uniform. None ran: sleep a window and
//     retry.
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
//     counted in SweepSummary::empty_experiments. A written experiment updates
//     the running estimates (observe(): an "estimates" record) and with
//     Options::until_settled a settled ranking ends the sweep after step 9
//     (reason "settled").
//  9. Adapt (Coz): min_delta = the smallest delta over the selected points
//     (latency: min of arrivals and departures). min_delta < Options::min_delta
//     doubles the window (capped at max_experiment); min_delta > 2·min_delta
//     halves it while it is at least twice the initial window.
// 10. Cooldown (Options::cooldown, wall clock) so threads pay their debt
//     before the next experiment; then back to 2 unless stop() was called,
//     max_experiments experiments were written, or duration has passed — or,
//     without a duration, no experiment has been written after
//     max(5 s, 2 x the window cap) (16 s with the defaults): the sweep then
//     stops experimenting with a "no_progress" error (reason "no_progress", or
//     "no_region" when points moved but a filter or fixed region matched nothing;
//     the program runs on). Three initial windows (1.5 s) without an
//     experiment already write "warning" records (see below).
// 11. End: clear g_sweep_active, detach completion points, write the runtime
//     and samples records, a "names" record, one "error" record per problem
//     with its message also on stderr — a filter or fixed region that matched
//     nothing; and, when no experiment was written, either "no_progress" (no
//     selected progress point moved during the whole sweep, or none exists)
//     or "no_experiments" (points moved but no window completed with
//     progress, and no filter problem explains it) — then a "summary" record.
//
// JSON records besides startup / experiment / runtime (profile_writer.hpp),
// all one line each:
//   {"type":"names","regions":[{"name":..,"kind":"handler"|"scope","visits":N},..],
//    "progress":[{"name":..,"kind":"throughput"|"latency","handler":bool,"visits":N},..]}
//     at the end, and once early when no experiment was written in the first
//     three windows (with "warning" records: the filter entries that match
//     nothing, else "no_progress"), so the user of a long-running program,
//     and a killed run's profile, learn it early.
//   {"type":"warning"|"error","what":"no_progress"|"no_experiments"|
//    "unknown_region"|"unknown_progress"|"unknown_handler","message":..,
//    "names":[the filter entries, or the progress points concerned]}
//   {"type":"summary","experiments":N,"empty_experiments":N,
//    "progress_reached":bool,"reason":"stopped"|"duration"|"experiments"|"settled"|"no_region"|"no_progress",
//    "settled":bool,"leader":name|null}  (settled and leader: not in a profile-only run)
//   {"type":"estimates",...} after each written experiment: the running ranking
//     (causal/src/evidence.hpp; the Options::region_weight draw and until_settled use it)
#include <coact/causal/controller.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <set>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/causal/line_region.hpp>
#include <coact/causal/profile_writer.hpp>
#include <coact/causal/progress.hpp>
#include <coact/causal/region.hpp>
#include <coact/options.hpp>

#include "evidence.hpp"

namespace coact::causal {

// ---- options (declared in calibrate/src/options.cpp) ---------------------------

namespace {

constexpr std::string_view kEnable = "COACT_CAUSAL";
constexpr std::string_view kProgress = "COACT_CAUSAL_PROGRESS";
constexpr std::string_view kProgressHandler = "COACT_CAUSAL_PROGRESS_HANDLER";
constexpr std::string_view kRegionFilter = "COACT_CAUSAL_REGION_FILTER";
constexpr std::string_view kFixedRegion = "COACT_CAUSAL_FIXED_REGION";
constexpr std::string_view kFixedSpeedup = "COACT_CAUSAL_FIXED_SPEEDUP";
constexpr std::string_view kExperimentMs = "COACT_CAUSAL_EXPERIMENT_MS";
constexpr std::string_view kMaxExperimentMs = "COACT_CAUSAL_MAX_EXPERIMENT_MS";
constexpr std::string_view kCooldownMs = "COACT_CAUSAL_COOLDOWN_MS";
constexpr std::string_view kDurationS = "COACT_CAUSAL_DURATION_S";
constexpr std::string_view kExperiments = "COACT_CAUSAL_EXPERIMENTS";
constexpr std::string_view kMinDelta = "COACT_CAUSAL_MIN_DELTA";
constexpr std::string_view kOutput = "COACT_CAUSAL_OUTPUT";
constexpr std::string_view kJsonOutput = "COACT_CAUSAL_JSON_OUTPUT";
constexpr std::string_view kSeed = "COACT_CAUSAL_SEED";
constexpr std::string_view kRegionWeight = "COACT_CAUSAL_REGION_WEIGHT";
constexpr std::string_view kSampling = "COACT_CAUSAL_SAMPLING";
constexpr std::string_view kSamplePeriodUs = "COACT_CAUSAL_SAMPLE_PERIOD_US";
constexpr std::string_view kSourceScope = "COACT_CAUSAL_SOURCE_SCOPE";
constexpr std::string_view kLineExperimentPeriodUs = "COACT_CAUSAL_LINE_EXPERIMENT_PERIOD_US";
constexpr std::string_view kSampleSignal = "COACT_CAUSAL_SAMPLE_SIGNAL";
constexpr std::string_view kProfileOnly = "COACT_CAUSAL_PROFILE_ONLY";
constexpr std::string_view kBufferedBaseline = "COACT_CAUSAL_BUFFERED_BASELINE";
constexpr std::string_view kMinExperiments = "COACT_CAUSAL_MIN_EXPERIMENTS";
constexpr std::string_view kTimeShareFloorPct = "COACT_CAUSAL_TIME_SHARE_FLOOR_PCT";
constexpr std::string_view kUntilSettled = "COACT_CAUSAL_UNTIL_SETTLED";
constexpr std::string_view kSettleWidthPct = "COACT_CAUSAL_SETTLE_WIDTH_PCT";
constexpr std::string_view kShard = "COACT_CAUSAL_SHARD";

std::string_view to_string(RegionWeight w) {
  switch (w) {
    case RegionWeight::evidence:
      return "evidence";
    case RegionWeight::time:
      return "time";
    case RegionWeight::uniform:
      return "uniform";
  }
  return "evidence";
}

[[noreturn]] void bad_value(std::string_view key, std::string_view value, std::string_view accepted) {
  throw options::option_error(fmt::format("{}='{}': expected {}", key, value, accepted));
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += sep;
    out += v[i];
  }
  return out;
}

std::string json_array(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i > 0 ? "," : "") + json_quote(v[i]);
  return out + "]";
}

}  // namespace

std::string default_json_output(const std::string& coz_path) {
  if (coz_path.size() >= 4 && coz_path.compare(coz_path.size() - 4, 4, ".coz") == 0) {
    return coz_path.substr(0, coz_path.size() - 4) + ".jsonl";
  }
  return coz_path + ".jsonl";
}

bool parse_shard(std::string_view text, uint32_t& shard, uint32_t& shards) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view k = text.substr(0, slash), n = text.substr(slash + 1);
  auto digits = [](std::string_view t) {
    return !t.empty() && t.size() <= 6 && t.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (!digits(k) || !digits(n)) return false;
  const auto kv = static_cast<uint32_t>(std::stoul(std::string(k)));
  const auto nv = static_cast<uint32_t>(std::stoul(std::string(n)));
  if (nv < 1 || nv > 100'000 || kv >= nv) return false;
  shard = kv;
  shards = nv;
  return true;
}

uint64_t shard_seed(uint64_t seed, uint32_t shard) {
  // splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
  // generators", OOPSLA 2014) of the seed advanced by shard + 1 steps.
  uint64_t z = seed + (uint64_t{shard} + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::optional<Options> options_from(const options::Values& v) {
  if (!v.boolean(kEnable)) return std::nullopt;
  Options o;
  o.progress = v.list(kProgress);
  o.progress_handlers = v.list(kProgressHandler);
  o.region_filter = v.list(kRegionFilter);
  o.fixed_region = v.text(kFixedRegion);
  if (auto pct = v.integer(kFixedSpeedup)) o.fixed_speedup_pct = static_cast<uint32_t>(*pct);
  o.experiment = std::chrono::milliseconds(*v.integer(kExperimentMs));
  o.max_experiment = std::chrono::milliseconds(*v.integer(kMaxExperimentMs));
  if (o.max_experiment.count() != 0 && o.max_experiment < o.experiment) {
    bad_value(kMaxExperimentMs, std::to_string(o.max_experiment.count()),
              fmt::format("0 (16 x {}) or at least {}={}", kExperimentMs, kExperimentMs, o.experiment.count()));
  }
  o.cooldown = std::chrono::milliseconds(*v.integer(kCooldownMs));
  o.duration = std::chrono::seconds(*v.integer(kDurationS));
  o.max_experiments = *v.integer(kExperiments);
  o.min_delta = *v.integer(kMinDelta);
  o.seed = *v.integer(kSeed);
  if (const std::string shard = v.text(kShard); !shard.empty() && !parse_shard(shard, o.shard, o.shards)) {
    bad_value(kShard, shard, "K/N with 0 <= K < N <= 100000 (this sweep's shard, 0-based, and the shard count)");
  }
  const std::string weight = v.text(kRegionWeight);
  o.region_weight = weight == "time"      ? RegionWeight::time
                    : weight == "uniform" ? RegionWeight::uniform
                                          : RegionWeight::evidence;
  o.min_experiments = static_cast<uint32_t>(*v.integer(kMinExperiments));
  o.time_share_floor_pct = static_cast<uint32_t>(*v.integer(kTimeShareFloorPct));
  o.until_settled = v.boolean(kUntilSettled);
  o.settle_width_pct = static_cast<uint32_t>(*v.integer(kSettleWidthPct));
  o.sampling = v.boolean(kSampling);
  o.sample_period = std::chrono::microseconds(*v.integer(kSamplePeriodUs));
  o.source_scope = v.list(kSourceScope);
  o.sample_signal = v.text(kSampleSignal);
  if (parse_sample_signal(o.sample_signal) < 0) {
    bad_value(kSampleSignal, o.sample_signal, "rt, prof or rtmin+N (N in 0..SIGRTMAX-SIGRTMIN)");
  }
  o.line_experiment_period = std::chrono::microseconds(*v.integer(kLineExperimentPeriodUs));
  if (o.line_experiment_period.count() > 0 && o.line_experiment_period.count() < 10) {
    bad_value(kLineExperimentPeriodUs, std::to_string(o.line_experiment_period.count()),
              "0 (the sample period / 8) or an integer in 10..1000000 (us)");
  }
  o.profile_only = v.boolean(kProfileOnly);
  o.buffered_baseline = v.boolean(kBufferedBaseline);
  if (o.profile_only) {
    for (auto [key, set] :
         {std::pair{kFixedRegion, !o.fixed_region.empty()}, std::pair{kFixedSpeedup, o.fixed_speedup_pct.has_value()},
          std::pair{kExperiments, o.max_experiments != 0}, std::pair{kUntilSettled, o.until_settled}}) {
      if (set) {
        bad_value(kProfileOnly, "1", fmt::format("0 when {} is set (a profile-only run has no experiments)", key));
      }
    }
  }
  if (o.until_settled && (!o.fixed_region.empty() || o.fixed_speedup_pct)) {
    bad_value(
        kUntilSettled, "1",
        fmt::format("0 when {} or {} is set (a fixed experiment never ranks regions)", kFixedRegion, kFixedSpeedup));
  }
  o.output = v.text(kOutput);
  o.json_output = v.is_set(kJsonOutput) ? v.text(kJsonOutput)
                  : o.output.empty()    ? std::string()
                                        : default_json_output(o.output);
  if (o.output.empty() && o.json_output.empty()) {
    bad_value(kOutput, "",
              fmt::format("a path (both {} and {} are empty: nothing would be written)", kOutput, kJsonOutput));
  }
  return o;
}

std::optional<Options> options_from_env(const char* const* envp) {
  options::Sources src;
  src.env.emplace();
  for (const char* const* e = envp; e != nullptr && *e != nullptr; ++e) src.env->emplace_back(*e);
  return options_from(options::resolve(src));
}

std::vector<std::pair<std::string, std::string>> to_env(const Options& o) {
  const Options d;
  std::vector<std::pair<std::string, std::string>> env;
  auto add = [&](std::string_view key, std::string value) { env.emplace_back(std::string(key), std::move(value)); };
  add(kEnable, "1");
  if (!o.progress.empty()) add(kProgress, join(o.progress, ","));
  if (!o.progress_handlers.empty()) add(kProgressHandler, join(o.progress_handlers, ","));
  if (!o.region_filter.empty()) add(kRegionFilter, join(o.region_filter, ","));
  if (!o.fixed_region.empty()) add(kFixedRegion, o.fixed_region);
  if (o.fixed_speedup_pct) add(kFixedSpeedup, std::to_string(*o.fixed_speedup_pct));
  if (o.experiment != d.experiment) add(kExperimentMs, std::to_string(o.experiment.count()));
  if (o.max_experiment != d.max_experiment) add(kMaxExperimentMs, std::to_string(o.max_experiment.count()));
  if (o.cooldown != d.cooldown) add(kCooldownMs, std::to_string(o.cooldown.count()));
  if (o.duration != d.duration) add(kDurationS, std::to_string(o.duration.count()));
  if (o.max_experiments != d.max_experiments) add(kExperiments, std::to_string(o.max_experiments));
  if (o.min_delta != d.min_delta) add(kMinDelta, std::to_string(o.min_delta));
  if (o.seed != d.seed) add(kSeed, std::to_string(o.seed));
  if (o.shards != 0) add(kShard, fmt::format("{}/{}", o.shard, o.shards));
  if (o.region_weight != d.region_weight) add(kRegionWeight, std::string(to_string(o.region_weight)));
  if (o.min_experiments != d.min_experiments) add(kMinExperiments, std::to_string(o.min_experiments));
  if (o.time_share_floor_pct != d.time_share_floor_pct) {
    add(kTimeShareFloorPct, std::to_string(o.time_share_floor_pct));
  }
  if (o.until_settled != d.until_settled) add(kUntilSettled, o.until_settled ? "1" : "0");
  if (o.settle_width_pct != d.settle_width_pct) add(kSettleWidthPct, std::to_string(o.settle_width_pct));
  if (o.sampling != d.sampling) add(kSampling, o.sampling ? "1" : "0");
  if (o.sample_period != d.sample_period) add(kSamplePeriodUs, std::to_string(o.sample_period.count()));
  if (!o.source_scope.empty()) add(kSourceScope, join(o.source_scope, ","));
  if (o.sample_signal != d.sample_signal) add(kSampleSignal, o.sample_signal);
  if (o.line_experiment_period != d.line_experiment_period) {
    add(kLineExperimentPeriodUs, std::to_string(o.line_experiment_period.count()));
  }
  if (o.profile_only != d.profile_only) add(kProfileOnly, o.profile_only ? "1" : "0");
  if (o.buffered_baseline != d.buffered_baseline) add(kBufferedBaseline, o.buffered_baseline ? "1" : "0");
  add(kOutput, o.output);  // always: the tool must know where to look
  add(kJsonOutput, o.json_output);
  return env;
}

std::string options_json(const Options& o) {
  return fmt::format(
      "{{\"progress\":{},\"progress_handlers\":{},\"region_filter\":{},\"fixed_region\":{},\"fixed_speedup\":{},"
      "\"experiment_ms\":{},\"max_experiment_ms\":{},\"cooldown_ms\":{},\"duration_s\":{},\"experiments\":{},"
      "\"min_delta\":{},\"region_weight\":\"{}\",\"sampling\":{},\"sample_period_us\":{},\"source_scope\":{},"
      "\"output\":{},\"json_output\":{},\"line_experiment_period_us\":{},\"profile_only\":{},"
      "\"min_experiments\":{},\"time_share_floor_pct\":{},\"until_settled\":{},\"settle_width_pct\":{},\"sample_"
      "signal\":{}}}",
      json_array(o.progress), json_array(o.progress_handlers), json_array(o.region_filter), json_quote(o.fixed_region),
      o.fixed_speedup_pct ? format_speedup(*o.fixed_speedup_pct) : std::string("null"), o.experiment.count(),
      o.max_experiment.count(), o.cooldown.count(), o.duration.count(), o.max_experiments, o.min_delta,
      to_string(o.region_weight), o.sampling ? "true" : "false", o.sample_period.count(), json_array(o.source_scope),
      json_quote(o.output), json_quote(o.json_output), o.line_experiment_period.count(),
      o.profile_only ? "true" : "false", o.min_experiments, o.time_share_floor_pct, o.until_settled ? "true" : "false",
      o.settle_width_pct, json_quote(o.sample_signal));
}

// ---- the sweep ----------------------------------------------------------------

namespace {

using steady = std::chrono::steady_clock;

// Coz's speedup draw (libcoz/profiler.h: SpeedupDivisions = 20, ZeroSpeedupWeight = 7).
constexpr uint32_t kSpeedupDivisions = 20;
constexpr uint32_t kZeroSpeedupWeight = 7;
// Initial windows without any experiment before the early names + warning
// records (1.5 s with the default 500 ms window).
constexpr int kGraceWindows = 3;
// Without Options::duration, a sweep that has written no experiment after
// max(kGiveUpMin, kGiveUpWindows x the window cap) stops experimenting with a
// "no_progress" error (16 s with the defaults): a server whose progress point
// is never reached, or whose filter matches nothing, is told so while it runs.
constexpr std::chrono::seconds kGiveUpMin{5};
// The ranking compares regions at this virtual speedup (coact-plot's default
// --rank-at): a handler made a quarter faster.
constexpr double kRankAt = 0.25;
// Evidence draw: the share of draws made by running time among every region
// that ran (so regions below the time-share floor are looked at too), and of
// the rest, the share spent on the leader or its closest challenger.
constexpr double kBelowFloorDraws = 0.05;
constexpr double kLeaderDraws = 0.75;
constexpr int kGiveUpWindows = 2;

struct State {
  std::mutex api_mu;  // serialises start / stop (held across the join)
  std::mutex mu;      // guards the fields below
  std::condition_variable cv;
  bool stop_requested = false;  // set by stop(), read by the controller's sleeps
  bool done = false;            // set by the controller thread when it has written its end records
  SweepSummary summary;         // written by the controller thread before done
  std::thread thread;           // guarded by api_mu
  // True from start() until the sweep has written its end records. Written by
  // start() (under api_mu) and by the controller thread (under mu); read by
  // running() (relaxed: an answer that may be momentarily stale is all it
  // promises; start() re-checks under api_mu and joins a finished thread).
  std::atomic<bool> running{false};
};
State*& state_ptr() {
  static State* s = new State;  // leaked: stop() may run from atexit after statics die
  return s;
}
State& state() { return *state_ptr(); }
// Set in a forked child (leave_sweep_in_forked_child): no sweep starts there.
std::atomic<bool> g_forked_child{false};

// Sleeps until `deadline` (wall clock) or stop(); false if stop() was called.
bool sleep_until(State& s, steady::time_point deadline) {
  std::unique_lock lk(s.mu);
  return !s.cv.wait_until(lk, deadline, [&] { return s.stop_requested; });
}

struct PointStart {
  ProgressPoint* point;
  uint64_t count;       // visits or arrivals at the start
  uint64_t departures;  // latency only
};

class Sweep {
 public:
  // `origin`: JSON members added to every experiment and summary record
  // (a sharded sweep's shard, shards and host; "" otherwise).
  Sweep(State& s, Options o, std::unique_ptr<ProfileWriter> w, uint64_t hz, uint64_t seed, std::string origin)
      : s_(s), o_(std::move(o)), w_(std::move(w)), hz_(hz), rng_(seed), origin_(std::move(origin)) {
    max_window_ = o_.max_experiment.count() != 0 ? o_.max_experiment : o_.experiment * 16;
    window_ = o_.experiment;
  }

  void run() {
    t_start_ = steady::now();
    // Step 1.
    set_completion_handlers(o_.progress_handlers);
    // A sweep that may inject delay makes G nonzero before it activates the
    // hooks (one cycle, on no thread's behalf: every thread owes it, and it
    // is below the pay catch-up threshold, so no one waits for it). While
    // G == 0 a pay point pays nothing and the runtime keeps direct sends on
    // (hooks.hpp pay_point_is_noop); without this, the experiments before
    // the first injected delay would run with the cheaper send path and the
    // rest without, and a speedup-0 baseline taken early would be faster
    // than one taken late. So the send path is the same in every experiment
    // of a sweep: direct throughout a sweep at fixed speedup 0 (unless
    // Options::buffered_baseline: a baseline for fixed-speedup runs in other
    // processes must take their path), buffered to the pay point throughout
    // any other. A profile-only run injects no delay either.
    const bool fixed_zero = o_.fixed_speedup_pct && *o_.fixed_speedup_pct == 0;
    if ((!fixed_zero || o_.buffered_baseline) && !o_.profile_only && global_delay_cycles() == 0) {
      add_global_delay(1);
    }
    g_sweep_active.store(true, std::memory_order_relaxed);
    if (o_.sampling) {
      try {
        SourceScope scope;
        scope.patterns = o_.source_scope;
        sampling_ =
            start_line_sampling(LineSamplingOptions{o_.sample_period, scope, std::chrono::milliseconds(10),
                                                    o_.line_experiment_period, parse_sample_signal(o_.sample_signal)});
        if (!sampling_)
          std::fprintf(stderr, "coact causal: sampling did not start (already running, or a fork() child)\n");
      } catch (const std::exception& e) {
        std::fprintf(stderr, "coact causal: sampling did not start: %s\n", e.what());
      }
    }
    for (const auto& r : region_snapshot()) {
      last_[r.id] = {r.visits, r.cycles};
      start_cycles_[r.id] = r.cycles;
    }
    for (ProgressPoint* p : progress_points()) start_counts_[p] = p->visits() + p->departures();
    std::string reason = "stopped";
    if (o_.profile_only) {
      reason = profile_only_loop();
    } else if (sleep_until(s_, steady::now() + o_.cooldown)) {
      reason = loop();
    }
    finish(reason);
  }

 private:
  // Options::profile_only: no experiment; the regions' counters (and the
  // sampled lines') run until stop() or the duration.
  std::string profile_only_loop() {
    for (;;) {
      const auto end = t_start_ + o_.duration;
      const auto deadline = o_.duration.count() != 0 ? end : steady::now() + std::chrono::hours(1);
      if (!sleep_until(s_, deadline)) return "stopped";
      if (o_.duration.count() != 0 && steady::now() >= end) return "duration";
    }
  }

  std::string loop() {
    const auto give_up = std::max<steady::duration>(kGiveUpMin, kGiveUpWindows * max_window_);
    for (;;) {
      if (o_.duration.count() != 0 && steady::now() - t_start_ >= o_.duration) return "duration";
      if (o_.duration.count() == 0 && summary_.experiments == 0 && steady::now() - t_start_ >= give_up) {
        // Progress was made but no region could be selected (a filter or
        // fixed region that matches nothing): say that, not "no progress".
        const auto problems = filter_problems();
        const bool no_region =
            std::any_of(problems.begin(), problems.end(), [](const auto& p) { return p.what == "unknown_region"; });
        return no_region && points_moved() ? "no_region" : "no_progress";
      }
      // Step 2.
      std::vector<ProgressPoint*> points = selected_points();
      if (points.empty()) {
        note_miss();
        if (!sleep_until(s_, steady::now() + window_)) return "stopped";
        continue;
      }
      // Step 3.
      const uint32_t region = pick_region();
      if (region == kNoRegion) {
        note_miss();
        if (!sleep_until(s_, steady::now() + window_)) return "stopped";
        continue;
      }
      // Step 4.
      uint32_t pct;
      if (o_.fixed_speedup_pct) {
        pct = *o_.fixed_speedup_pct;
      } else {
        const uint32_t r = std::uniform_int_distribution<uint32_t>(0, kZeroSpeedupWeight + kSpeedupDivisions)(rng_);
        pct = r <= kZeroSpeedupWeight ? 0 : (r - kZeroSpeedupWeight) * (100 / kSpeedupDivisions);
      }
      // Step 5.
      std::vector<PointStart> starts;
      starts.reserve(points.size());
      for (ProgressPoint* p : points) starts.push_back({p, p->visits(), p->departures()});
      const RegionStats r0 = region_stats(region);
      const std::vector<RegionStats> h0 = handler_stats();
      const uint64_t g0 = global_delay_cycles();
      const auto t0 = steady::now();
      begin_experiment(region, pct);
      // Step 6.
      const bool completed = sleep_until(s_, t0 + window_);
      // Step 7.
      end_experiment();
      const auto t1 = steady::now();
      const uint64_t g1 = global_delay_cycles();
      const RegionStats r1 = region_stats(region);
      const std::vector<RegionStats> h1 = handler_stats();
      if (!completed) return "stopped";
      ++windows_;
      // Step 8.
      ExperimentRecord e;
      e.origin_json = origin_;
      e.index = summary_.experiments;
      e.region = r1.name;
      e.speedup_pct = pct;
      e.duration_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
      e.delay_ns = static_cast<uint64_t>(calibrate::cycles_to_duration(g1 - g0, hz_).count());
      e.effective_ns = e.duration_ns > e.delay_ns ? e.duration_ns - e.delay_ns : 0;
      e.visits = r1.visits - r0.visits;
      e.region_ns = static_cast<uint64_t>(calibrate::cycles_to_duration(r1.cycles - r0.cycles, hz_).count());
      e.handlers = handler_deltas(h0, h1);
      uint64_t min_delta = UINT64_MAX;
      bool moved = false;
      for (const PointStart& st : starts) {
        ProgressPoint* p = st.point;
        if (p->kind() == ProgressKind::throughput) {
          const uint64_t d = p->visits() - st.count;
          e.throughput.push_back({p->name(), d});
          min_delta = std::min(min_delta, d);
          moved |= d != 0;
        } else {
          const uint64_t a = p->arrivals(), dep = p->departures();
          const uint64_t arrivals = a - st.count, departures = dep - st.departures;
          e.latency.push_back({p->name(), arrivals, departures, a > dep ? a - dep : 0});
          min_delta = std::min({min_delta, arrivals, departures});
          moved |= arrivals != 0 || departures != 0;
        }
      }
      if (moved) {
        w_->experiment(e);
        experimented_.insert(e.region);
        ++summary_.experiments;
        summary_.progress_reached = true;
        observe(region, e);
      } else {
        ++summary_.empty_experiments;
        note_miss();
      }
      // Step 9.
      if (min_delta < o_.min_delta) {
        window_ = std::min(window_ * 2, max_window_);
      } else if (min_delta > 2 * o_.min_delta && window_ >= 2 * o_.experiment) {
        window_ /= 2;
      }
      if (o_.max_experiments != 0 && summary_.experiments >= o_.max_experiments) return "experiments";
      if (o_.until_settled && settled_) return "settled";
      // Step 10.
      if (!sleep_until(s_, steady::now() + o_.cooldown)) return "stopped";
    }
  }

  // Every handler region's counters, by id (the experiment record's
  // "handlers": what ran beside the selected region).
  static std::vector<RegionStats> handler_stats() {
    std::vector<RegionStats> all = region_snapshot();
    std::erase_if(all, [](const RegionStats& r) { return r.kind != RegionKind::handler; });
    return all;
  }

  // Runs and exclusive time of each handler region between two
  // handler_stats() (a region registered in between counts from zero), most
  // time first.
  std::vector<RegionTime> handler_deltas(const std::vector<RegionStats>& before,
                                         const std::vector<RegionStats>& after) const {
    std::vector<RegionTime> out;
    size_t i = 0;
    for (const RegionStats& a : after) {
      while (i < before.size() && before[i].id < a.id) ++i;
      const bool known = i < before.size() && before[i].id == a.id;
      const uint64_t v = a.visits - (known ? before[i].visits : 0);
      const uint64_t cy = a.cycles - (known ? before[i].cycles : 0);
      if (v == 0) continue;
      out.push_back({a.name, v, static_cast<uint64_t>(calibrate::cycles_to_duration(cy, hz_).count())});
    }
    std::stable_sort(out.begin(), out.end(), [](const RegionTime& x, const RegionTime& y) { return x.ns > y.ns; });
    return out;
  }

  // True if a selected progress point moved since the sweep began.
  bool points_moved() {
    for (ProgressPoint* p : selected_points()) {
      auto it = start_counts_.find(p);
      if (p->visits() + p->departures() > (it == start_counts_.end() ? 0 : it->second)) return true;
    }
    return false;
  }

  std::vector<ProgressPoint*> selected_points() {
    std::vector<ProgressPoint*> out;
    for (ProgressPoint* p : progress_points()) {
      if (p->handler_completion()) {
        if (matches_any(p->name(), o_.progress_handlers)) out.push_back(p);
      } else if (o_.progress.empty() || matches_any(p->name(), o_.progress)) {
        out.push_back(p);
      }
    }
    return out;
  }

  uint32_t pick_region() {
    const std::vector<RegionStats> regions = region_snapshot();
    std::vector<uint32_t> ran;
    std::vector<double> weight;  // exclusive cycles since the previous pick (at least 1)
    for (const auto& r : regions) {
      auto& [visits, cycles] = last_[r.id];
      if (r.visits > visits && (o_.region_filter.empty() || matches_any(r.name, o_.region_filter))) {
        ran.push_back(r.id);
        weight.push_back(static_cast<double>(std::max<uint64_t>(r.cycles - std::min(cycles, r.cycles), 1)));
      }
      visits = r.visits;
      cycles = r.cycles;
    }
    if (!o_.fixed_region.empty()) return resolve_fixed(regions);
    if (ran.empty()) return kNoRegion;
    switch (o_.region_weight) {
      case RegionWeight::time:
        return ran[std::discrete_distribution<size_t>(weight.begin(), weight.end())(rng_)];
      case RegionWeight::uniform:
        return ran[std::uniform_int_distribution<size_t>(0, ran.size() - 1)(rng_)];
      case RegionWeight::evidence:
        break;
    }
    return pick_by_evidence(regions, ran, weight);
  }

  // The share of all matching regions' running time since the sweep began
  // that each region in `regions` has had (0 for regions that did not run).
  std::unordered_map<uint32_t, double> time_shares(const std::vector<RegionStats>& regions) const {
    std::unordered_map<uint32_t, double> share;
    double total = 0;
    for (const auto& r : regions) {
      if (!o_.region_filter.empty() && !matches_any(r.name, o_.region_filter)) continue;
      auto it = start_cycles_.find(r.id);
      const uint64_t c0 = it == start_cycles_.end() ? 0 : std::min(it->second, r.cycles);
      share[r.id] = static_cast<double>(r.cycles - c0);
      total += static_cast<double>(r.cycles - c0);
    }
    for (auto& [id, v] : share) v = total > 0 ? v / total : 0;
    return share;
  }

  // Options::region_weight = evidence (controller.hpp says what it favours).
  // `ran`: the regions that ran since the previous pick, `time_weight`
  // their running time in that interval.
  uint32_t pick_by_evidence(const std::vector<RegionStats>& regions, const std::vector<uint32_t>& ran,
                            const std::vector<double>& time_weight) {
    std::uniform_real_distribution<double> u01(0.0, 1.0);
    const auto share = time_shares(regions);
    const double floor = static_cast<double>(o_.time_share_floor_pct) / 100.0;
    std::vector<uint32_t> above;
    for (uint32_t id : ran) {
      auto it = share.find(id);
      if (it != share.end() && it->second >= floor) above.push_back(id);
    }
    // Now and then, and whenever nothing above the floor ran, a draw by time
    // among every region that ran: the small ones are looked at too.
    if (above.empty() || u01(rng_) < kBelowFloorDraws) {
      return ran[std::discrete_distribution<size_t>(time_weight.begin(), time_weight.end())(rng_)];
    }
    // 1. Regions without enough evidence at some progress point first.
    std::vector<uint32_t> unexplored;
    for (uint32_t id : above) {
      if (!ranked_everywhere(id)) unexplored.push_back(id);
    }
    if (!unexplored.empty()) return unexplored[std::uniform_int_distribution<size_t>(0, unexplored.size() - 1)(rng_)];
    // 2. At one progress point (each equally often): mostly the leader or
    // its closest challenger, whichever interval is wider; else any region
    // in proportion to its interval's squared width.
    const detail::PointEstimates& pe =
        estimates_[std::uniform_int_distribution<size_t>(0, estimates_.size() - 1)(rng_)];
    auto find = [&](uint32_t id) -> const detail::RegionEstimate* {
      for (const auto& r : pe.regions) {
        if (r.region == id) return &r;
      }
      return nullptr;
    };
    const bool in_above_leader =
        pe.leader >= 0 && std::find(above.begin(), above.end(), pe.regions[size_t(pe.leader)].region) != above.end();
    if (in_above_leader && u01(rng_) < kLeaderDraws) {
      const detail::RegionEstimate& l = pe.regions[size_t(pe.leader)];
      const detail::RegionEstimate* c = nullptr;
      for (uint32_t id : above) {
        const detail::RegionEstimate* r = find(id);
        if (r != nullptr && r->region != l.region && r->ranked &&
            (c == nullptr || r->slope + r->half > c->slope + c->half)) {
          c = r;
        }
      }
      return c != nullptr && c->half > l.half ? c->region : l.region;
    }
    std::vector<double> w;
    for (uint32_t id : above) {
      const detail::RegionEstimate* r = find(id);
      w.push_back(r != nullptr && std::isfinite(r->half) ? std::max(r->half * r->half, 1e-12) : 1.0);
    }
    return above[std::discrete_distribution<size_t>(w.begin(), w.end())(rng_)];
  }

  // True when `id` is ranked at every progress point with estimates.
  bool ranked_everywhere(uint32_t id) const {
    if (estimates_.empty()) return false;
    for (const auto& pe : estimates_) {
      const auto it = std::find_if(pe.regions.begin(), pe.regions.end(),
                                   [&](const detail::RegionEstimate& r) { return r.region == id; });
      if (it == pe.regions.end() || !it->ranked) return false;
    }
    return true;
  }

  // Adds a written experiment to the running estimates, writes the
  // "estimates" record and updates settled_ (Options::until_settled's rule).
  void observe(uint32_t region, const ExperimentRecord& e) {
    detail::Observation ob;
    ob.region = region;
    ob.speedup = static_cast<double>(e.speedup_pct) / 100.0;
    ob.duration_ns = static_cast<double>(e.effective_ns);
    const double dur = static_cast<double>(e.effective_ns);
    for (const auto& t : e.throughput) {
      ob.points.push_back(t.name);
      ob.num.push_back(dur);
      ob.den.push_back(static_cast<double>(t.delta));
    }
    for (const auto& l : e.latency) {
      ob.points.push_back(l.name);
      ob.num.push_back(static_cast<double>(l.difference) * dur);
      ob.den.push_back(static_cast<double>(l.arrivals));
    }
    observations_.push_back(std::move(ob));
    names_[region] = e.region;
    estimates_ = detail::estimate(observations_, names_, o_.min_experiments);

    const std::vector<RegionStats> regions = region_snapshot();
    const auto share = time_shares(regions);
    const double floor = static_cast<double>(o_.time_share_floor_pct) / 100.0;
    const double width = static_cast<double>(o_.settle_width_pct) / 100.0;
    bool settled = !estimates_.empty();
    nlohmann::json points = nlohmann::json::array();
    for (const auto& pe : estimates_) {
      uint32_t unranked_above_floor = 0;  // regions above the floor that ran in the sweep, not yet ranked
      for (const auto& [id, sh] : share) {
        if (sh < floor || sh <= 0) continue;
        const auto it = std::find_if(pe.regions.begin(), pe.regions.end(),
                                     [&](const detail::RegionEstimate& r) { return r.region == id; });
        if (it == pe.regions.end() || !it->ranked) ++unranked_above_floor;
      }
      const bool all_ranked = unranked_above_floor == 0;
      const bool narrow = width > 0 && pe.leader >= 0 && pe.widest * kRankAt < width;
      const bool ok = pe.leader >= 0 && all_ranked && (pe.separated || narrow);
      settled = settled && ok;
      nlohmann::json rs = nlohmann::json::array();
      for (const auto& r : pe.regions) {
        auto it = share.find(r.region);
        rs.push_back({{"name", r.name},
                      {"experiments", r.experiments},
                      {"outliers", r.outliers},
                      {"ranked", r.ranked},
                      {"key", r.key(kRankAt)},
                      {"ci", std::isfinite(r.half) ? nlohmann::json::array({r.lo(kRankAt), r.hi(kRankAt)})
                                                   : nlohmann::json::array({nullptr, nullptr})},
                      {"time_share", it == share.end() ? 0.0 : it->second}});
      }
      points.push_back({{"point", pe.point},
                        {"baseline_experiments", pe.baseline_experiments},
                        {"leader", pe.leader >= 0 ? nlohmann::json(pe.regions[size_t(pe.leader)].name) : nullptr},
                        {"settled", ok},
                        {"unranked_above_floor", unranked_above_floor},
                        {"regions", std::move(rs)}});
    }
    settled_ = settled;
    summary_.settled = settled;
    summary_.leader.clear();
    if (!estimates_.empty() && estimates_.front().leader >= 0) {
      summary_.leader = estimates_.front().regions[size_t(estimates_.front().leader)].name;
    }
    w_->json_line(nlohmann::json{{"type", "estimates"},
                                 {"experiments", summary_.experiments},
                                 {"rank_at", kRankAt},
                                 {"min_experiments", o_.min_experiments},
                                 {"time_share_floor", floor},
                                 {"settled", settled},
                                 {"points", std::move(points)}}
                      .dump());
  }

  uint32_t resolve_fixed(const std::vector<RegionStats>& regions) {
    if (fixed_id_ != kNoRegion) return fixed_id_;
    std::vector<const RegionStats*> partial;
    for (const auto& r : regions) {
      if (r.name == o_.fixed_region) return fixed_id_ = r.id;
      if (r.name.find(o_.fixed_region) != std::string::npos) partial.push_back(&r);
    }
    if (partial.size() == 1) return fixed_id_ = partial.front()->id;
    fixed_ambiguous_.clear();
    for (const auto* r : partial) fixed_ambiguous_.push_back(r->name);
    return kNoRegion;
  }

  // A window passed without an experiment (no point selected, no region ran,
  // or no selected point moved). Once,
  // if no experiment has been written kGraceWindows initial windows into the
  // sweep: warning records (the filter entries that match nothing, else
  // "no_progress") and the names, so the user hears it while the program runs.
  void note_miss() {
    if (early_names_written_ || summary_.experiments != 0) return;
    const auto elapsed = steady::now() - t_start_;
    if (elapsed < kGraceWindows * o_.experiment) return;
    early_names_written_ = true;
    auto warn = [&](const std::string& what, const std::string& message, const std::vector<std::string>& names) {
      w_->json_line(fmt::format("{{\"type\":\"warning\",\"what\":{},\"message\":{},\"names\":{}}}", json_quote(what),
                                json_quote(message), json_array(names)));
    };
    const auto problems = filter_problems();
    for (const auto& [what, message, names] : problems) warn(what, message + " (so far)", names);
    if (problems.empty()) {
      std::vector<std::string> names;
      for (ProgressPoint* p : selected_points()) names.push_back(p->name());
      const double secs = std::chrono::duration<double>(elapsed).count();
      const std::string limit =
          o_.duration.count() != 0
              ? fmt::format("the sweep runs on until its duration ({} s)", o_.duration.count())
              : fmt::format(
                    "the sweep stops experimenting if none is reached in its first {:.0f} s",
                    std::chrono::duration<double>(std::max<steady::duration>(kGiveUpMin, kGiveUpWindows * max_window_))
                        .count());
      warn("no_progress",
           names.empty() ? fmt::format("no {}progress point has been reached in {:.1f} s (so far); {}",
                                       o_.progress.empty() ? "" : "matching ", secs, limit)
                         : fmt::format("no visit of {} in {:.1f} s (so far); {}", join(names, ", "), secs, limit),
           names);
    }
    write_names();
  }

  struct Problem {
    std::string what, message;
    std::vector<std::string> names;
  };

  // Filter entries that match nothing registered (so far).
  std::vector<Problem> filter_problems() {
    std::vector<Problem> out;
    const auto regions = region_snapshot();
    const auto points = progress_points();
    auto unmatched = [](const std::vector<std::string>& entries, auto&& has) {
      std::vector<std::string> miss;
      for (const auto& e : entries) {
        if (!has(e)) miss.push_back(e);
      }
      return miss;
    };
    auto region_has = [&](const std::string& e, bool handlers_only) {
      return std::any_of(regions.begin(), regions.end(), [&](const RegionStats& r) {
        return (!handlers_only || r.kind == RegionKind::handler) && r.name.find(e) != std::string::npos;
      });
    };
    auto m = unmatched(o_.progress, [&](const std::string& e) {
      return std::any_of(points.begin(), points.end(), [&](ProgressPoint* p) {
        return !p->handler_completion() && p->name().find(e) != std::string::npos;
      });
    });
    if (!m.empty()) {
      out.push_back({"unknown_progress",
                     fmt::format("COACT_CAUSAL_PROGRESS: no progress point matches '{}'", join(m, "', '")), m});
    }
    m = unmatched(o_.progress_handlers, [&](const std::string& e) { return region_has(e, true); });
    if (!m.empty()) {
      out.push_back({"unknown_handler",
                     fmt::format("COACT_CAUSAL_PROGRESS_HANDLER: no handler region matches '{}'", join(m, "', '")), m});
    }
    m = unmatched(o_.region_filter, [&](const std::string& e) { return region_has(e, false); });
    if (!m.empty()) {
      out.push_back(
          {"unknown_region", fmt::format("COACT_CAUSAL_REGION_FILTER: no region matches '{}'", join(m, "', '")), m});
    }
    if (!o_.fixed_region.empty() && fixed_id_ == kNoRegion) {
      (void)resolve_fixed(regions);
      if (fixed_id_ == kNoRegion) {
        std::string message =
            fixed_ambiguous_.empty()
                ? fmt::format("COACT_CAUSAL_FIXED_REGION: no region is named '{}'", o_.fixed_region)
                : fmt::format("COACT_CAUSAL_FIXED_REGION: '{}' matches {} regions ({}); give the exact name",
                              o_.fixed_region, fixed_ambiguous_.size(), join(fixed_ambiguous_, "; "));
        out.push_back({"unknown_region", std::move(message), {o_.fixed_region}});
      }
    }
    return out;
  }

  void write_names() {
    std::string regions;
    for (const auto& r : region_snapshot()) {
      regions += fmt::format("{}{{\"name\":{},\"kind\":\"{}\",\"visits\":{}}}", regions.empty() ? "" : ",",
                             json_quote(r.name), to_string(r.kind), r.visits);
    }
    std::string points;
    for (ProgressPoint* p : progress_points()) {
      points += fmt::format("{}{{\"name\":{},\"kind\":\"{}\",\"handler\":{},\"visits\":{}}}", points.empty() ? "" : ",",
                            json_quote(p->name()), to_string(p->kind()), p->handler_completion() ? "true" : "false",
                            p->visits());
    }
    w_->json_line(fmt::format("{{\"type\":\"names\",\"regions\":[{}],\"progress\":[{}]}}", regions, points));
  }

  // Options::profile_only: every region that ran, heaviest first, with its
  // visits and time (handlers and scopes: exclusive running time; sampled
  // lines: sampled CPU time, visits = sample periods).
  void write_profile_record(uint64_t runtime_ns) {
    std::vector<RegionStats> regions = region_snapshot();
    for (auto& r : regions) {  // this run's share (the counters are the process's)
      if (auto it = last_.find(r.id); it != last_.end()) {
        r.visits -= std::min(r.visits, it->second.first);
        r.cycles -= std::min(r.cycles, it->second.second);
      }
    }
    std::erase_if(regions, [](const RegionStats& r) { return r.visits == 0; });
    std::stable_sort(regions.begin(), regions.end(),
                     [](const RegionStats& a, const RegionStats& b) { return a.cycles > b.cycles; });
    std::string rs;
    for (const auto& r : regions) {
      rs += fmt::format("{}{{\"name\":{},\"kind\":\"{}\",\"visits\":{},\"time_ns\":{}}}", rs.empty() ? "" : ",",
                        json_quote(r.name), to_string(r.kind), r.visits,
                        calibrate::cycles_to_duration(r.cycles, hz_).count());
    }
    w_->json_line(fmt::format("{{\"type\":\"profile\",\"runtime_ns\":{},\"regions\":[{}]}}", runtime_ns, rs));
  }

  void write_sampler_record() {
    const LineSamplingStats ls = line_sampling_stats();
    const SamplerStats ss = sampler_stats();
    std::string unsampled;
    for (const auto& u : ss.unsampled) {
      unsampled += fmt::format("{}{{\"tid\":{},\"name\":{}}}", unsampled.empty() ? "" : ",", u.tid, json_quote(u.name));
    }
    w_->json_line(fmt::format(
        "{{\"type\":\"sampler\",\"period_ns\":{},\"samples\":{},\"periods\":{},\"attributed\":{},\"dropped\":{},"
        "\"delayed\":{},\"line_regions\":{},\"threads_sampled\":{},\"threads_exited\":{},\"unsampled_threads\":[{}],"
        "\"symbolizer_error\":{},\"experiment_period_ns\":{},\"samples_cpu_timer\":{},\"samples_perf_event\":{},"
        "\"threads_perf_event\":{},\"signal\":{},\"foreign_handler\":{},\"handler_replaced\":{},"
        "\"foreign_signals\":{},\"no_debug_info\":{}}}",
        ss.period_ns, ls.samples, ls.periods, ls.attributed, ss.dropped, ls.delayed, ls.line_regions,
        ss.threads_registered, ss.threads_exited, unsampled, json_quote(ls.symbolizer_error), ls.experiment_period_ns,
        ss.samples_cpu_timer, ss.samples_perf_event, ss.threads_perf_event, json_quote(ss.signal_name),
        ss.foreign_handler ? "true" : "false", ss.handler_replaced ? "true" : "false", ss.foreign_signals,
        json_array(ls.no_debug_info)));
  }

  void error(const std::string& what, const std::string& message, const std::vector<std::string>& names) {
    std::fprintf(stderr, "coact causal: %s\n", message.c_str());
    summary_.errors.push_back(message);
    w_->json_line(fmt::format("{{\"type\":\"error\",\"what\":{},\"message\":{},\"names\":{}}}", json_quote(what),
                              json_quote(message), json_array(names)));
  }

  // Step 11.
  void finish(const std::string& reason) {
    end_experiment();
    if (sampling_) {
      stop_line_sampling();
      write_sampler_record();
    }
    g_sweep_active.store(false, std::memory_order_relaxed);
    set_completion_handlers({});
    const auto runtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - t_start_).count();
    std::vector<RegionCount> samples;
    for (const auto& r : region_snapshot()) samples.push_back({r.name, r.visits});
    w_->runtime(static_cast<uint64_t>(runtime_ns), samples);
    write_names();
    if (o_.profile_only) {
      write_profile_record(static_cast<uint64_t>(runtime_ns));
      finish_summary(reason);
      return;
    }
    const auto problems = filter_problems();
    for (const auto& p : problems) error(p.what, p.message, p.names);
    warn_filter_without_experiments(problems.empty());
    if (summary_.experiments == 0) {
      std::vector<std::string> names;
      bool moved = false;
      for (ProgressPoint* p : selected_points()) {
        names.push_back(p->name());
        auto it = start_counts_.find(p);
        moved |= p->visits() + p->departures() > (it == start_counts_.end() ? 0 : it->second);
      }
      const double secs = static_cast<double>(runtime_ns) / 1e9;
      if (names.empty()) {
        error("no_progress",
              fmt::format("no progress point was reached in {:.1f} s: the program never hit a {}progress point; add "
                          "COACT_PROGRESS / COACT_BEGIN / COACT_END, or name a handler with "
                          "COACT_CAUSAL_PROGRESS_HANDLER",
                          secs, o_.progress.empty() ? "" : "matching "),
              names);
      } else if (!moved) {
        error("no_progress",
              fmt::format("no progress point was reached in {:.1f} s ({} experiment window(s)): no visit of {}", secs,
                          windows_, join(names, ", ")),
              names);
      } else if (problems.empty()) {
        error("no_experiments",
              fmt::format("no experiment finished in {:.1f} s although {} moved: the sweep ended before a window "
                          "of {} ms completed with progress, or no region ran",
                          secs, join(names, ", "), window_.count()),
              names);
      }
    }
    finish_summary(reason);
  }

  // The "summary" record; tells stop() and wait() the sweep is over.
  void finish_summary(const std::string& reason) {
    summary_.reason = reason;
    nlohmann::json rec{{"type", "summary"},
                       {"experiments", summary_.experiments},
                       {"empty_experiments", summary_.empty_experiments},
                       {"progress_reached", summary_.progress_reached},
                       {"reason", reason}};
    if (!o_.profile_only) {
      rec["settled"] = summary_.settled;
      rec["leader"] = summary_.leader.empty() ? nlohmann::json(nullptr) : nlohmann::json(summary_.leader);
    }
    std::string line = rec.dump();
    if (!origin_.empty()) line.insert(line.size() - 1, origin_);  // before the closing brace
    w_->json_line(line);
    w_.reset();  // close the files before anyone is told we are done
    std::lock_guard lk(s_.mu);
    s_.summary = summary_;
    s_.done = true;
    s_.running.store(false, std::memory_order_relaxed);
    s_.cv.notify_all();
  }

  State& s_;
  const Options o_;
  std::unique_ptr<ProfileWriter> w_;
  const uint64_t hz_;
  std::mt19937_64 rng_;
  const std::string origin_;  // JSON members of every experiment and summary record (constructor)
  bool sampling_ = false;     // line sampling started by this sweep
  steady::time_point t_start_{};
  std::chrono::milliseconds window_{};
  std::chrono::milliseconds max_window_{};
  // region id -> (visits, exclusive cycles) at the previous pick
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> last_;
  std::unordered_map<ProgressPoint*, uint64_t> start_counts_;  // point -> visits + departures at sweep start
  std::unordered_map<uint32_t, uint64_t> start_cycles_;        // region id -> exclusive cycles at sweep start
  std::vector<detail::Observation> observations_;              // every written experiment (observe())
  std::unordered_map<uint32_t, std::string> names_;            // region id -> name, of the observations
  std::vector<detail::PointEstimates> estimates_;              // after the last written experiment
  bool settled_ = false;                                       // Options::until_settled's rule held then
  uint32_t fixed_id_ = kNoRegion;
  std::vector<std::string> fixed_ambiguous_;
  uint64_t windows_ = 0;  // finished experiment windows (written or empty)
  // A --region-filter entry whose regions got no experiment although others
  // did (e.g. a time-weighted draw among the filter's matches spent every
  // experiment on the heaviest): said on stderr and in the profile, since
  // the plot would simply lack those regions. `matched`: no filter problem
  // (an entry that matches no region at all is an error already).
  void warn_filter_without_experiments(bool matched) {
    if (!matched || summary_.experiments == 0 || o_.region_filter.empty() || !o_.fixed_region.empty()) return;
    std::vector<std::string> missed;
    for (const auto& f : o_.region_filter) {
      if (std::none_of(experimented_.begin(), experimented_.end(),
                       [&](const std::string& r) { return r.find(f) != std::string::npos; })) {
        missed.push_back(f);
      }
    }
    if (missed.empty()) return;
    const std::string message = fmt::format(
        "warning: COACT_CAUSAL_REGION_FILTER: no experiment selected a region matching '{}' ({} experiments went to "
        "{})",
        join(missed, "', '"), summary_.experiments,
        join(std::vector<std::string>(experimented_.begin(), experimented_.end()), "; "));
    std::fprintf(stderr, "coact causal: %s\n", message.c_str());
    w_->json_line(
        fmt::format("{{\"type\":\"warning\",\"what\":\"filter_without_experiments\",\"message\":{},\"names\":{}}}",
                    json_quote(message), json_array(missed)));
  }

  std::set<std::string> experimented_;  // regions of the recorded experiments
  bool early_names_written_ = false;
  SweepSummary summary_;
};

}  // namespace

namespace {
// The JSON members (each with its leading comma) that say where a sweep ran:
// the startup record's "program" (the executable's file name), "args" (its
// arguments) and "host" (gethostname), so that merging profiles can tell
// different programs and machines apart; with Options::shards also "shard"
// and "shards" — what a sharded sweep adds to its experiment and summary
// records too (`every_record`) — and, in the startup record, "base_seed":
// the seed before shard_seed() mixed the shard in (what --seed reproduces).
// Called by start(), before the sweep's thread exists.
std::string origin_members(const Options& o, bool every_record, uint64_t base_seed = 0) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string out;
  if (o.shards != 0) out += fmt::format(",\"shard\":{},\"shards\":{}", o.shard, o.shards);
  out += ",\"host\":" + json_quote(host);
  if (every_record) return out;
  if (o.shards != 0) out += fmt::format(",\"base_seed\":{}", base_seed);
  std::string exe(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  exe.resize(n > 0 ? static_cast<size_t>(n) : 0);
  out += ",\"program\":" + json_quote(exe.substr(exe.rfind('/') == std::string::npos ? 0 : exe.rfind('/') + 1));
  std::vector<std::string> args;
  if (FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    std::string all;
    char buf[4096];
    for (size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) all.append(buf, got);
    std::fclose(f);
    size_t at = 0;
    for (bool first = true; at < all.size(); first = false) {
      const size_t end = all.find('\0', at);
      if (!first) args.push_back(all.substr(at, end == std::string::npos ? std::string::npos : end - at));
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  return out + ",\"args\":" + json_array(args);
}
}  // namespace

void Controller::start(const Options& options) {
#if !COACT_CAUSAL_ENABLED
  (void)options;
  throw std::logic_error("coact causal: causal profiling is compiled out (configure with -DCOACT_CAUSAL=ON)");
#else
  State& s = state();
  std::lock_guard api(s.api_mu);
  if (s.running.load(std::memory_order_relaxed)) throw std::logic_error("coact causal: a sweep is already running");
  if (options.experiment.count() <= 0) throw std::invalid_argument("coact causal: Options::experiment must be > 0");
  if (options.max_experiment.count() != 0 && options.max_experiment < options.experiment) {
    throw std::invalid_argument("coact causal: Options::max_experiment must be 0 or >= Options::experiment");
  }
  if (options.cooldown.count() < 0 || options.duration.count() < 0) {
    throw std::invalid_argument("coact causal: Options::cooldown and Options::duration must be >= 0");
  }
  if (options.fixed_speedup_pct && *options.fixed_speedup_pct > 100) {
    throw std::invalid_argument("coact causal: Options::fixed_speedup_pct must be 0..100");
  }
  if (options.min_delta == 0) throw std::invalid_argument("coact causal: Options::min_delta must be >= 1");
  if (s.thread.joinable()) s.thread.join();  // a sweep that ended by itself
  const uint64_t hz = calibrate::tsc_hz();   // add_delay's precondition; may throw
  auto writer = std::make_unique<ProfileWriter>(options.output, options.json_output);
  uint64_t seed = options.seed;
  if (seed == 0) {
    seed = static_cast<uint64_t>(steady::now().time_since_epoch().count()) ^ (uint64_t(::getpid()) << 32);
  }
  const uint64_t base_seed = seed;
  if (options.shards != 0) {
    if (options.shard >= options.shards) {
      throw std::invalid_argument("coact causal: Options::shard must be below Options::shards");
    }
    seed = shard_seed(seed, options.shard);
  }
  const auto wall_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  writer->startup(static_cast<uint64_t>(wall_ns), hz, seed, options_json(options),
                  origin_members(options, /*every_record=*/false, base_seed));
  {
    std::lock_guard lk(s.mu);
    s.stop_requested = false;
    s.done = false;
    s.summary = SweepSummary{};
  }
  auto sweep = std::make_shared<Sweep>(s, options, std::move(writer), hz, seed,
                                       options.shards != 0 ? origin_members(options, /*every_record=*/true) : "");
  s.running.store(true, std::memory_order_relaxed);
  try {
    s.thread = std::thread([sweep] { sweep->run(); });
  } catch (...) {
    s.running.store(false, std::memory_order_relaxed);
    throw;
  }
#endif
}

SweepSummary Controller::stop() {
  State& s = state();
  std::lock_guard api(s.api_mu);
  {
    std::lock_guard lk(s.mu);
    s.stop_requested = true;
    s.cv.notify_all();
  }
  if (s.thread.joinable()) s.thread.join();
  s.running.store(false, std::memory_order_relaxed);
  std::lock_guard lk(s.mu);
  return s.summary;
}

bool Controller::wait(std::chrono::milliseconds timeout) {
  State& s = state();
  std::unique_lock lk(s.mu);
  return s.cv.wait_for(lk, timeout, [&] { return s.done; });
}

bool Controller::running() noexcept { return state().running.load(std::memory_order_relaxed); }

namespace detail {
void leave_sweep_in_forked_child() noexcept {
  // The parent's controller thread does not exist here: a fresh State (no
  // thread to join, nothing to write), built in static storage (no malloc in
  // a fork child handler). The parent's State and its writer are abandoned.
  alignas(State) static unsigned char storage[sizeof(State)];
  state_ptr() = new (storage) State;
  g_forked_child.store(true, std::memory_order_relaxed);
}
}  // namespace detail

namespace {
// A profile output the sweep could not open is a bad option value, found before
// anything is written (a missing directory used to abort the program from the
// writer's std::system_error, leaving an empty sibling file behind).
void check_output(std::string_view key, const std::string& path) {
  if (path.empty()) return;
  if (::access(path.c_str(), F_OK) == 0) {
    if (::access(path.c_str(), W_OK) == 0) return;
    throw options::option_error(std::string(key) + "='" + path +
                                "': the file exists but is not writable (expected a writable file path)");
  }
  const std::string::size_type slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  // access(W_OK) says yes to root almost everywhere (/sys included): create
  // the file to know, and leave nothing behind.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw options::option_error(std::string(key) + "='" + path + "': cannot create it in '" + dir +
                                "': " + std::strerror(errno) + " (expected a writable file path)");
  }
  ::close(fd);
  ::unlink(path.c_str());
}
}  // namespace

bool Controller::start_from_env() {
  if (g_forked_child.load(std::memory_order_relaxed)) return false;  // a forked child left the sweep
  const std::optional<Options> o = options_from(options::process());
  if (!o) return false;
  check_output(kOutput, o->output);
  check_output(kJsonOutput, o->json_output);
  // One environment sweep per process: a second Runtime boot does not start
  // another (the first one's atexit handler ends it).
  static std::mutex once_mu;
  static bool started = false;  // guarded by once_mu
  std::lock_guard lk(once_mu);
  if (started) return true;
  start(*o);
  started = true;
  std::atexit([] { (void)Controller::stop(); });
  return true;
}

}  // namespace coact::causal
