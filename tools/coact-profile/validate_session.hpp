// tools/coact-profile/validate_session.hpp: what the steps of `coact-profile
// validate` share (validate.cpp has the protocol): a row of the table, a
// real program's stage variant, the statistics and formatting helpers, and
// the Session the steps fill in turn. One thread (the tool's main).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <coact/causal/student_t.hpp>

#include "estimator.hpp"
#include "profile_reader.hpp"
#include "tool.hpp"

namespace coact::profile_tool::validation {

using json = nlohmann::json;
namespace ca = coact::causal;
using steady = std::chrono::steady_clock;
using Exp = Experiment;

struct Row {
  std::string workload, stage, region;
  std::string program = "known_answer";  // known_answer (bench/causal) | real (the archiver)
  std::string change;                    // real programs: the options that make the stage really faster
  std::string region_kind = "handler";   // handler | scope | line
  double s = 0, predicted = std::nan(""), actual = std::nan(""), ideal = std::nan("");
  // The prediction's 95% interval: the estimator's at s (known-answer rows), over the rounds (real rows, step 5b).
  double predicted_lo = std::nan(""), predicted_hi = std::nan("");
  std::string predicted_interval;   // what that interval is (--json's "predicted_interval")
  double predicted_systematic = 0;  // the profiler's own error that interval holds, a fraction of the value
  double actual_lo = std::nan(""), actual_hi = std::nan("");  // Student t over the rounds' (chunks') speedups
  std::string actual_measure;  // real rows: "pass_time" (whole passes) or "window_rate" (progress per window)
  int experiments = 0;
  int actual_runs = 0;
  std::vector<double> actual_chunks;     // the actual speedup of each kept chunk; `actual` is their median
  std::vector<double> predicted_rounds;  // real rows: each round's prediction; `predicted` is their mean
  // Real rows: the estimator's per-window fit of the prediction's profiles, and its 95% interval.
  double window_predicted = std::nan(""), window_lo = std::nan(""), window_hi = std::nan("");
  std::string note;
  std::string line;  // the stage's own source line (--list), empty if none
  double coz_predicted = std::nan("");
  int coz_experiments = 0;
  std::string coz_reason;  // why there is no Coz estimate (with --with-coz)
};

// The median of `v` (the mean of the middle two for an even count); NaN if empty.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The standard error of the mean `mean` of `v` (at least two values).
inline double standard_error(const std::vector<double>& v, double mean) {
  const size_t n = v.size();
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
}

// The mean of `v` and its Student-t 95% interval over the values (lo and hi
// stay NaN from one value, or when the values agree exactly). Empty: NaN.
inline void mean_with_t95(const std::vector<double>& v, double& mean, double& lo, double& hi) {
  const size_t n = v.size();
  if (n == 0) return;
  double sum = 0;
  for (double x : v) sum += x;
  mean = sum / static_cast<double>(n);
  if (n < 2) return;
  const double se = standard_error(v, mean);
  if (se <= 1e-12) return;
  const double half = ca::student_t95(static_cast<uint32_t>(n - 1)) * se;
  lo = mean - half;
  hi = mean + half;
}

/// Whether a real row's rounds so far (`v`, fractions) are enough: at least
/// `min_rounds`, and then either `max_rounds` or a standard error of their
/// mean of at most `se_pts` points. The rule looks only at the rounds' own
/// spread, never at the other side of the comparison, so stopping on it
/// cannot favour agreement. A round that measured nothing adds no value, so
/// callers also bound their loop by max_rounds.
inline bool enough_rounds(const std::vector<double>& v, int min_rounds, int max_rounds, double se_pts) {
  const size_t n = v.size();
  if (n < static_cast<size_t>(std::max(min_rounds, 2))) return false;
  if (n >= static_cast<size_t>(max_rounds)) return true;
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(n);
  return standard_error(v, mean) * 100 <= se_pts;
}

inline std::string fmt_num(double v, int prec = 3) {
  return std::isnan(v) ? std::string("-") : fmt::format("{:.{}f}", v, prec);
}
inline json json_num(double v) { return std::isnan(v) ? json(nullptr) : json(v); }

// Parses a known-answer run's JSON line; period in µs (0 on failure).
inline double period_of(const ChildResult& r) {
  std::string last;  // the last line that is a JSON object
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.front() == '{') last = line;
  }
  const json j = json::parse(last, nullptr, false);
  return j.is_object() ? j.value("period_us", 0.0) : 0.0;
}

inline std::string make_out_dir(const std::string& given) {
  if (!given.empty()) {
    ::mkdir(given.c_str(), 0755);
    return given;
  }
  char tmpl[] = "/tmp/coact-validate-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  return d != nullptr ? std::string(d) : std::string("/tmp");
}

// The prediction for (s, the region that is the source line `line`) among
// Coz's curves: Coz names a line by its full path, "/src/dir/file.hpp:N".
inline const Prediction* find_line_prediction(const std::vector<Prediction>& p, const std::string& line, double s) {
  for (const Prediction& x : p) {
    const bool same = x.region == line || (x.region.size() > line.size() && x.region.ends_with(line) &&
                                           x.region[x.region.size() - line.size() - 1] == '/');
    if (same && std::abs(x.s - s) < 1e-6) return &x;
  }
  return nullptr;
}

// Experiments in a Coz profile.coz (text records), 0 if it is missing.
inline int coz_experiment_count(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.starts_with("experiment\t") ? 1 : 0;
  return n;
}

// One real-program row (step 5): a stage, its handler region, and the
// program's options that make exactly that handler really faster.
struct RealVariant {
  std::string stage;
  std::string region;  // exact name or unique substring (the sweep's fixed region)
  std::vector<std::string> flags;
};

// The real programs' rows (validate_real.cpp): the archiver's stages, the
// analytics job's Worker, the service's Shard.
std::vector<RealVariant> dedup_variants(const ValidateArgs& a);
std::vector<RealVariant> analytics_variants();
std::vector<RealVariant> kv_variants();

struct Stopwatch {
  steady::time_point t0 = steady::now();
  double s() const { return std::chrono::duration<double>(steady::now() - t0).count(); }
};

// One validate run: its arguments, where it writes, the rows so far and
// what was skipped; filled by the steps in order (validate.cpp).
struct Session {
  explicit Session(ValidateArgs& args) : a(args) {}

  ValidateArgs& a;
  std::string out_dir;  // profiles and children.log
  std::string log;      // the children's output
  std::vector<Row> rows;
  json skipped = json::array();
  json timing = json::object();
  bool failed = false;  // a program exited with an error
  // Step 1's findings for steps 2-4 and 6.
  json list;             // coact-known-answer --list (null: no known-answer rows)
  std::string ka;        // coact-known-answer
  std::string progress;  // its progress point
  std::string coz, ka_coz;
  int chunks = 1;

  /// A progress line on stderr (unless --json without --verbose).
  void say(const std::string& m) const {
    if (!a.json_out || a.verbose) std::fprintf(stderr, "[validate] %s\n", m.c_str());
  }

  /// Steps 2-4 and 6: the known-answer rows (validate_known_answer.cpp). 0,
  /// or the exit status to stop with.
  int known_answer_rows();
  /// Step 5: the real programs' rows (validate_real.cpp).
  void real_program_rows();
};

/// Step 7: the table (or --json) and the summary lines. The exit status.
int report(Session& ss);

}  // namespace coact::profile_tool::validation
