// causal/src/controller_options.cpp: a sweep's Options from the
// COACT_CAUSAL_* keys (declared in calibrate/src/options.cpp: defaults,
// accepted values, the listing) and back: options_from, options_from_env,
// to_env (the environment a tool gives a child), options_json (the startup
// record's "options"), shard parsing and seeds, and
// Controller::start_from_env (the Runtime's boot hook). Pure functions on
// any thread, except start_from_env (see controller.hpp).
#include <coact/causal/controller.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <coact/causal/line_region.hpp>
#include <coact/causal/profile_writer.hpp>
#include <coact/options.hpp>

#include "sweep/sweep.hpp"

namespace coact::causal {

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
  if (!o.progress.empty()) add(kProgress, fmt::format("{}", fmt::join(o.progress, ",")));
  if (!o.progress_handlers.empty()) add(kProgressHandler, fmt::format("{}", fmt::join(o.progress_handlers, ",")));
  if (!o.region_filter.empty()) add(kRegionFilter, fmt::format("{}", fmt::join(o.region_filter, ",")));
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
  if (!o.source_scope.empty()) add(kSourceScope, fmt::format("{}", fmt::join(o.source_scope, ",")));
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
  return detail::dump_record(
      {{"progress", o.progress},
       {"progress_handlers", o.progress_handlers},
       {"region_filter", o.region_filter},
       {"fixed_region", o.fixed_region},
       {"fixed_speedup",
        o.fixed_speedup_pct ? nlohmann::ordered_json(*o.fixed_speedup_pct / 100.0) : nlohmann::ordered_json(nullptr)},
       {"experiment_ms", o.experiment.count()},
       {"max_experiment_ms", o.max_experiment.count()},
       {"cooldown_ms", o.cooldown.count()},
       {"duration_s", o.duration.count()},
       {"experiments", o.max_experiments},
       {"min_delta", o.min_delta},
       {"region_weight", to_string(o.region_weight)},
       {"sampling", o.sampling},
       {"sample_period_us", o.sample_period.count()},
       {"source_scope", o.source_scope},
       {"output", o.output},
       {"json_output", o.json_output},
       {"line_experiment_period_us", o.line_experiment_period.count()},
       {"profile_only", o.profile_only},
       {"min_experiments", o.min_experiments},
       {"time_share_floor_pct", o.time_share_floor_pct},
       {"until_settled", o.until_settled},
       {"settle_width_pct", o.settle_width_pct},
       {"sample_signal", o.sample_signal}});
}

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
  if (detail::left_in_forked_child()) return false;  // a forked child left the sweep
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
