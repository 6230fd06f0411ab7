// causal/src/option_fields.cpp: the binding of every COACT_CAUSAL_* key to
// its causal::Options member (coact/causal/option_fields.hpp). A binding is
// bind<&Options::member>(key) when the member's type says how it is read
// and written (coact/options_binding.hpp's Codecs); the few that need more
// (two members, an enum, a check between a value and its member, a default
// computed from another key) have their own functions.
// Pure; any thread.
#include <coact/causal/option_fields.hpp>

#include <array>
#include <cctype>

#include <fmt/format.h>

#include <coact/causal/sampler.hpp>

namespace coact::causal {

namespace {

using namespace std::string_view_literals;

using options::bind;
using options::member_text;
using options::read_member;

using detail::bad_value;

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

// The key's choices (evidence|time|uniform) are checked by the core.
void read_region_weight(Options& o, const options::Values& v, std::string_view key) {
  const std::string& w = v.text(key);
  o.region_weight = w == "time" ? RegionWeight::time : w == "uniform" ? RegionWeight::uniform : RegionWeight::evidence;
}
std::string region_weight_text(const Options& o) { return std::string(to_string(o.region_weight)); }

void read_shard(Options& o, const options::Values& v, std::string_view key) {
  o.shard = 0;
  o.shards = 0;
  const std::string& text = v.text(key);
  if (!text.empty() && !parse_shard(text, o.shard, o.shards)) {
    bad_value(v, key, text, "K/N with 0 <= K < N <= 100000 (this sweep's shard, 0-based, and the shard count)");
  }
}
std::string shard_text(const Options& o) { return o.shards == 0 ? "" : fmt::format("{}/{}", o.shard, o.shards); }

// Unset: the profile's path with .jsonl (read after COACT_CAUSAL_OUTPUT).
void read_json_output(Options& o, const options::Values& v, std::string_view key) {
  o.json_output = v.is_set(key) ? v.text(key) : o.output.empty() ? std::string() : default_json_output(o.output);
}

void read_line_period(Options& o, const options::Values& v, std::string_view key) {
  read_member<&Options::line_experiment_period>(o, v, key);
  if (o.line_experiment_period.count() > 0 && o.line_experiment_period.count() < 10) {
    bad_value(v, key, std::to_string(o.line_experiment_period.count()),
              "0 (the sample period / 8) or an integer in 10..1000000 (us)");
  }
}

void read_sample_signal(Options& o, const options::Values& v, std::string_view key) {
  o.sample_signal = v.text(key);
  if (parse_sample_signal(o.sample_signal) < 0) {
    bad_value(v, key, o.sample_signal, "rt, prof or rtmin+N (N in 0..SIGRTMAX-SIGRTMIN)");
  }
}

constexpr std::array kFields{
    bind<&Options::progress>("COACT_CAUSAL_PROGRESS"),
    bind<&Options::progress_handlers>("COACT_CAUSAL_PROGRESS_HANDLER"),
    bind<&Options::region_filter>("COACT_CAUSAL_REGION_FILTER"),
    bind<&Options::fixed_region>("COACT_CAUSAL_FIXED_REGION"),
    OptionField{"COACT_CAUSAL_REGION_WEIGHT", &read_region_weight, &region_weight_text},
    bind<&Options::min_experiments>("COACT_CAUSAL_MIN_EXPERIMENTS"),
    bind<&Options::time_share_floor_pct>("COACT_CAUSAL_TIME_SHARE_FLOOR_PCT"),
    bind<&Options::until_settled>("COACT_CAUSAL_UNTIL_SETTLED"),
    bind<&Options::settle_width_pct>("COACT_CAUSAL_SETTLE_WIDTH_PCT"),
    bind<&Options::fixed_speedup_pct>("COACT_CAUSAL_FIXED_SPEEDUP"),
    bind<&Options::alternate_speedup_pct>("COACT_CAUSAL_ALTERNATE_SPEEDUP"),
    bind<&Options::experiment>("COACT_CAUSAL_EXPERIMENT_MS"),
    bind<&Options::max_experiment>("COACT_CAUSAL_MAX_EXPERIMENT_MS"),
    bind<&Options::cooldown>("COACT_CAUSAL_COOLDOWN_MS"),
    bind<&Options::duration>("COACT_CAUSAL_DURATION_S"),
    bind<&Options::max_experiments>("COACT_CAUSAL_EXPERIMENTS"),
    bind<&Options::min_delta>("COACT_CAUSAL_MIN_DELTA"),
    bind<&Options::output>("COACT_CAUSAL_OUTPUT", true),
    OptionField{"COACT_CAUSAL_JSON_OUTPUT", &read_json_output, &member_text<&Options::json_output>, true},
    bind<&Options::seed>("COACT_CAUSAL_SEED"),
    OptionField{"COACT_CAUSAL_SHARD", &read_shard, &shard_text},
    bind<&Options::sampling>("COACT_CAUSAL_SAMPLING"),
    bind<&Options::sample_period>("COACT_CAUSAL_SAMPLE_PERIOD_US"),
    OptionField{"COACT_CAUSAL_LINE_EXPERIMENT_PERIOD_US", &read_line_period,
                &member_text<&Options::line_experiment_period>},
    OptionField{"COACT_CAUSAL_SAMPLE_SIGNAL", &read_sample_signal, &member_text<&Options::sample_signal>},
    bind<&Options::paying_baseline>("COACT_CAUSAL_PAYING_BASELINE"),
    bind<&Options::profile_only>("COACT_CAUSAL_PROFILE_ONLY"),
    bind<&Options::print_notes>("COACT_CAUSAL_PRINT_NOTES"),
    bind<&Options::source_scope>("COACT_CAUSAL_SOURCE_SCOPE"),
};

}  // namespace

std::string flag_of(const OptionField& f) {
  std::string out = "--";
  for (char c : f.key.substr("COACT_CAUSAL_"sv.size()))
    out += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::span<const OptionField> option_fields() noexcept { return kFields; }

namespace detail {
void bad_value(const options::Values& v, std::string_view key, std::string_view value, std::string_view accepted) {
  throw options::option_error(fmt::format("{}='{}': expected {}", written_as(v, key), value, accepted));
}
}  // namespace detail

std::string written_as(const options::Values& v, std::string_view key) {
  const std::string& origin = v.entry(key).origin;
  if (origin.empty() || v.entry(key).source == options::Source::config_file) return std::string(key);
  return origin;
}

}  // namespace coact::causal
