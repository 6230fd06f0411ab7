// causal/src/controller_options.cpp: a sweep's Options from the
// COACT_CAUSAL_* keys (declared in calibrate/src/options_table.cpp: defaults,
// accepted values, the listing; bound to Options members in
// option_fields.cpp) and back: options_from (the bindings, then the checks
// between keys), options_from_env, to_env (the environment a tool gives a
// child), options_json (the startup record's "options"), shard parsing and
// seeds, and
// Controller::start_from_env (the Runtime's boot hook). Pure functions on
// any thread, except start_from_env (see controller.hpp).
#include <coact/causal/controller.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <coact/causal/line_region.hpp>
#include <coact/causal/option_fields.hpp>
#include <coact/causal/profile_writer.hpp>
#include <coact/options.hpp>

#include "sweep/sweep.hpp"

namespace coact::causal {

namespace {

constexpr std::string_view kEnable = "COACT_CAUSAL";
constexpr std::string_view kFixedRegion = "COACT_CAUSAL_FIXED_REGION";
constexpr std::string_view kFixedSpeedup = "COACT_CAUSAL_FIXED_SPEEDUP";
constexpr std::string_view kAlternateSpeedup = "COACT_CAUSAL_ALTERNATE_SPEEDUP";
constexpr std::string_view kExperimentMs = "COACT_CAUSAL_EXPERIMENT_MS";
constexpr std::string_view kMaxExperimentMs = "COACT_CAUSAL_MAX_EXPERIMENT_MS";
constexpr std::string_view kExperiments = "COACT_CAUSAL_EXPERIMENTS";
constexpr std::string_view kOutput = "COACT_CAUSAL_OUTPUT";
constexpr std::string_view kJsonOutput = "COACT_CAUSAL_JSON_OUTPUT";
constexpr std::string_view kProfileOnly = "COACT_CAUSAL_PROFILE_ONLY";
constexpr std::string_view kUntilSettled = "COACT_CAUSAL_UNTIL_SETTLED";

using detail::bad_value;

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

// Every bound key is read by its binding (option_fields.cpp); what follows
// are the checks between keys.
std::optional<Options> options_from(const options::Values& v) {
  if (!v.boolean(kEnable)) return std::nullopt;
  Options o;
  options::read_all(option_fields(), o, v);
  if (o.max_experiment.count() != 0 && o.max_experiment < o.experiment) {
    bad_value(v, kMaxExperimentMs, std::to_string(o.max_experiment.count()),
              fmt::format("0 (16 x {}) or at least {}={}", written_as(v, kExperimentMs), written_as(v, kExperimentMs),
                          o.experiment.count()));
  }
  if (o.profile_only) {
    for (auto [key, set] :
         {std::pair{kFixedRegion, !o.fixed_region.empty()}, std::pair{kFixedSpeedup, o.fixed_speedup_pct.has_value()},
          std::pair{kAlternateSpeedup, o.alternate_speedup_pct.has_value()}, std::pair{kExperiments, o.max_experiments != 0},
          std::pair{kUntilSettled, o.until_settled}}) {
      if (set) {
        bad_value(v, kProfileOnly, "1",
                  fmt::format("0 when {} is set (a profile-only run has no experiments)", written_as(v, key)));
      }
    }
  }
  if (o.until_settled && (!o.fixed_region.empty() || o.fixed_speedup_pct)) {
    bad_value(v, kUntilSettled, "1",
              fmt::format("0 when {} or {} is set (a fixed experiment never ranks regions)",
                          written_as(v, kFixedRegion), written_as(v, kFixedSpeedup)));
  }
  if (o.alternate_speedup_pct && !o.fixed_speedup_pct) {
    bad_value(v, kAlternateSpeedup, std::to_string(*o.alternate_speedup_pct),
              fmt::format("auto unless {} is set (it alternates with that speedup)", written_as(v, kFixedSpeedup)));
  }
  if (o.output.empty() && o.json_output.empty()) {
    bad_value(v, kOutput, "",
              fmt::format("a path (both {} and {} are empty: nothing would be written)", written_as(v, kOutput),
                          written_as(v, kJsonOutput)));
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
  env.emplace_back(std::string(kEnable), "1");
  for (const OptionField& f : option_fields()) {
    std::string text = f.text(o);
    if (f.always_exported || text != f.text(d)) env.emplace_back(std::string(f.key), std::move(text));
  }
  return env;
}

// Each bound key under its TOML field, typed by its declaration; an "auto"
// integer is null. COACT_CAUSAL_FIXED_SPEEDUP and _ALTERNATE_SPEEDUP are
// recorded as fractions (fixed_speedup: 0.25), as the experiment records'
// speedups are.
std::string options_json(const Options& o) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const OptionField& f : option_fields()) {
    const options::Key& k = f.declared();
    const std::string text = f.text(o);
    nlohmann::ordered_json& out = j[std::string(k.field)];
    switch (k.type) {
      case options::Type::integer:
        if (text == "auto") {
          out = nullptr;
        } else if (f.key == kFixedSpeedup || f.key == kAlternateSpeedup) {
          out = static_cast<double>(std::stoull(text)) / 100.0;
        } else {
          out = std::stoull(text);
        }
        break;
      case options::Type::boolean:
        out = text == "true";
        break;
      case options::Type::list:
        out = nlohmann::ordered_json::array();
        for (size_t at = 0; at < text.size();) {  // the canonical text: items joined by ','
          const size_t comma = std::min(text.find(',', at), text.size());
          out.push_back(text.substr(at, comma - at));
          at = comma + 1;
        }
        break;
      case options::Type::text:
        out = text;
        break;
    }
  }
  return detail::dump_record(j);
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
