// `coact-profile validate`: compare the profiler's predictions with programs
// that really are faster (the known-answer workloads of bench/causal, and the
// real programs: the archiver of examples/dedup, the fan-out/fan-in
// analytics job of examples/analytics).
//
// Protocol (numbered steps; tools/coact-profile/README.md says why each is so):
//  1. Find the programs: coact-known-answer (--known-answer, else next to
//     this tool's build tree, bench/causal/, else PATH), coact-dedup
//     (--dedup, else examples/dedup/ of the build tree) and coact-analytics
//     (--analytics, else examples/analytics/); ask coact-known-answer
//     --list for each workload's stages, regions and ideal curves.
//  2. For each workload, `chunks` rounds, so that a change in the machine's
//     load during the run falls on both sides of the comparison:
//       a. a sweep chunk: the program under COACT_CAUSAL=1 for sweep_s/chunks
//          seconds, default draws (Coz's speedup draw, uniform over regions)
//          restricted by a region filter to the workload's stages, appending
//          to one JSON-lines profile;
//       b. the real programs: baseline, then each row's actually-faster
//          program (--speed STAGE=r), then baseline again, actual_s each.
//  3. Predicted speedup at r for a stage: the one estimator the plots use
//     (reports/coact_reports/estimate.py, run as `python3 -m
//     coact_reports.estimate PROFILE --json --at r ...`; estimator.hpp): the
//     experiments of the stage's region pooled per speedup, the baseline its
//     pooled speedup-0 experiments, a duration-weighted fit through the
//     origin (the estimator's one model per region: a line, or a line
//     bending once at a measured speedup where that fits better: the known
//     answers have knees) evaluated at r, with the estimator's 95% interval.
//     Chunks dropped as contended (4) are left out of the profile it reads.
//  4. Actual speedup = 1 − period(fast) / period(baseline), each fast run
//     against the mean of its chunk's two baseline runs; a row's actual is
//     the median over its chunks (each chunk's value is in --json's
//     actual_chunks). A chunk whose baselines (real runs, or the median
//     speedup-0 experiment) are slower than --contended-factor x the
//     workload's ideal period had a core taken by another process: its
//     experiments and runs are dropped and the chunk redone, up to --retries
//     times (then kept, and the rows say so). A really-faster run slower than
//     --contended-factor x its own ideal period (the workload's x (1 − the
//     row's ideal speedup)) is redone alone, up to --retries times.
//  5. The real programs, each if found, one row per stage variant (the
//     stage, its handler region, the program's options that make exactly
//     that handler really faster). The archiver (coact-dedup, progress
//     point "chunks"; dedup_variants): Compressor --level --dedup-fast-level
//     (default 1, against the default 3), Reader --fast-reader, Chunker
//     --fast-chunker, Fingerprinter --fingerprint sha1, Index --fast-index,
//     Writer --fast-writer; --dedup-stage picks rows. The analytics job
//     (coact-analytics, progress point "jobs"; analytics_variants): Worker
//     --fast-parse; --no-analytics skips it. The service (coact-kv under
//     redis-benchmark load, examples/kv/kv_under_load.py, progress point
//     "kv.replies"; kv_variants): Shard --fast-shard; --no-kv skips it.
//     Per row, in turn, --real-chunks
//     rounds of: a. the baseline, the variant and the baseline again
//     (--real-run-s each), each under a fixed-speedup-0 sweep of the row's
//     handler with 1 s windows, measuring the program's rate and the mean
//     handler time per visit: r = 1 − t_variant / t_baseline. The rate is
//     whole passes per second where the program reports them (the
//     archiver's --summary-json: a run ends at a pass boundary, and a pass
//     is a fixed number of progress visits), else progress visits per
//     second of the windows (the analytics job: no phases). Actual speedup
//     = 1 − rate(baseline) / rate(variant) per round; the row's actual is
//     the mean over the rounds, with a Student-t 95% interval over them
//     ("actual_ci"). b. The prediction at s = r: per round, runs of the
//     baseline under fixed-region sweeps of the handler at speedups 0,
//     round(100 r) %, 0 (--dedup-sweep-s in all, at least 2.5 windows a
//     run; --real-experiment-ms windows). A round's prediction is measured
//     as the truth is, over whole runs: 1 − rate(at 0) / rate(at p), a
//     run's rate being its progress visits per effective second, scaled
//     to r along the line through the origin; the row's prediction is the
//     mean over rounds with a Student-t 95% interval ("predicted_rounds",
//     "predicted_ci"). The estimator's per-window fit of the same profiles
//     is reported beside it ("window_predicted", "window_predicted_ci"):
//     the archiver's rate swings with the phase of each pass (walk,
//     chunking, the Writer's metadata at the end), and windows a fraction
//     of a pass long see that swing. Fixed speedups, not a
//     default sweep, for the same reason: a default sweep's handful of
//     windows near s = r is noisier than the same seconds spent at s = r. A
//     variant whose handler was not
//     measurably faster (r rounds to 0 %) gets no prediction and says so.
//  6. --with-coz, per known-answer workload after its chunks: every row
//     whose stage has a source line of its own (--list's "line": a line
//     region, or a handler whose loop is one line of its body) is predicted
//     by Coz too. For each such line: `coz run --fixed-line LINE
//     --fixed-speedup 0`, then one run per row at round(100 s) %, then 0 %
//     again (--coz-s each, on coact-known-answer-coz: Coz's progress point at
//     the same iteration, debug information Coz can read); Coz's profile.coz
//     records read by the same estimator (coact_reports.profile reads Coz's
//     format), degree 1 through the origin and the pooled point at s, as for
//     the archiver in 5b. A row without a line of its own (its loop is
//     spin_cycles, shared by all stages), or a line Coz recorded no usable
//     experiments for, gets no Coz estimate and says why (coz_reason).
//  7. Print the table (workload, region, s, predicted, its 95% interval,
//     actual, error in points; with --with-coz Coz's prediction and error)
//     and the mean and maximum absolute error, and in how many rows the 95%
//     interval holds the actual ("ci_covers_actual" of "rows_with_ci" in the
//     JSON); --json prints one JSON object
//     instead, each row with "program" ("real": the archiver, the analytics
//     job, the service; "known_answer"), each with "actual_ci" (real rows: around the
//     rounds' mean; known-answer rows: the chunks' mean, whose median is
//     "actual"), real rows with "actual_measure",
//     and "agree_within_noise" of "rows_with_both_ci" (rows whose
//     prediction and actual are within both half-widths in quadrature)
//     and "predicted_ci" ([lo, hi]: the estimator's "ci" at s for a
//     known-answer row, step 5b's interval for a real row; nulls where
//     there is none). Exit 0, or 1 if a program failed.
//  --no-known-answer skips steps 2-4 and 6 (only the real programs' rows).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <coact/causal/student_t.hpp>

#include "estimator.hpp"
#include "profile_reader.hpp"
#include "tool.hpp"

namespace coact::profile_tool {

namespace {

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
  double actual_lo = std::nan(""), actual_hi = std::nan("");        // Student t over the rounds' (chunks') speedups
  std::string actual_measure;  // real rows: "pass_time" (whole passes) or "window_rate" (progress per window)
  int experiments = 0;
  int actual_runs = 0;
  std::vector<double> actual_chunks;  // the actual speedup of each kept chunk; `actual` is their median
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
double median_of(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The mean of `v` and its Student-t 95% interval over the values (lo and hi
// stay NaN from one value, or when the values agree exactly). Empty: NaN.
void mean_with_t95(const std::vector<double>& v, double& mean, double& lo, double& hi) {
  const size_t n = v.size();
  if (n == 0) return;
  double sum = 0;
  for (double x : v) sum += x;
  mean = sum / static_cast<double>(n);
  if (n < 2) return;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  const double se = std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
  if (se <= 1e-12) return;
  const double half = ca::student_t95(static_cast<uint32_t>(n - 1)) * se;
  lo = mean - half;
  hi = mean + half;
}

std::string fmt_num(double v, int prec = 3) {
  return std::isnan(v) ? std::string("-") : fmt::format("{:.{}f}", v, prec);
}
json json_num(double v) { return std::isnan(v) ? json(nullptr) : json(v); }

// Parses a known-answer run's JSON line; period in µs (0 on failure).
double period_of(const ChildResult& r) {
  std::string last;  // the last line that is a JSON object
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.front() == '{') last = line;
  }
  const json j = json::parse(last, nullptr, false);
  return j.is_object() ? j.value("period_us", 0.0) : 0.0;
}

std::string make_out_dir(const std::string& given) {
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
const Prediction* find_line_prediction(const std::vector<Prediction>& p, const std::string& line, double s) {
  for (const Prediction& x : p) {
    const bool same = x.region == line || (x.region.size() > line.size() && x.region.ends_with(line) &&
                                           x.region[x.region.size() - line.size() - 1] == '/');
    if (same && std::abs(x.s - s) < 1e-6) return &x;
  }
  return nullptr;
}

// Experiments in a Coz profile.coz (text records), 0 if it is missing.
int coz_experiment_count(const std::string& path) {
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

// Every stage whose handler has more than a few percent of the archiver's
// handler time (`coact-profile run --profile-only` on /usr/share/doc): the
// Compressor (the one row before there was a table), then pipeline order.
std::vector<RealVariant> dedup_variants(const ValidateArgs& a) {
  return {
      {"Compressor", a.dedup_region, {"--level", std::to_string(a.dedup_fast_level)}},
      {"Reader", "coact::dedup::Reader::on(coact::dedup::Pump)", {"--fast-reader"}},
      {"Chunker", "coact::dedup::Chunker::on(coact::dedup::Block)", {"--fast-chunker"}},
      {"Fingerprinter", "coact::dedup::Fingerprinter::on(coact::dedup::RawChunk)", {"--fingerprint", "sha1"}},
      {"Index", "coact::dedup::Index::on(coact::dedup::HashedChunk)", {"--fast-index"}},
      {"Writer", "coact::dedup::Writer::on(coact::dedup::PackedChunk)", {"--fast-writer"}},
  };
}

// The analytics job's rows: its Workers' handler has nearly all of its time.
std::vector<RealVariant> analytics_variants() {
  return {{"Worker", "coact::analytics::Worker::on(coact::analytics::Batch)", {"--fast-parse"}}};
}

// The service's row: the shards' planted work (--shard-cost-ns) halved.
std::vector<RealVariant> kv_variants() {
  return {{"Shard", "coact::kv::Shard::on(coact::kv::ShardBatch)", {"--fast-shard"}}};
}

struct Stopwatch {
  steady::time_point t0 = steady::now();
  double s() const { return std::chrono::duration<double>(steady::now() - t0).count(); }
};

}  // namespace

// Every value of OPTION must be one of `valid`; otherwise one line naming the
// first unknown value and the valid ones (the caller exits 2).
static bool all_known(const char* option, const std::vector<std::string>& wanted, const std::vector<std::string>& valid,
                      const char* problem) {
  for (const auto& want : wanted) {
    if (std::find(valid.begin(), valid.end(), want) != valid.end()) continue;
    std::string list;
    for (const auto& v : valid) list += (list.empty() ? "" : ", ") + v;
    std::fprintf(stderr, "coact-profile: validate %s '%s': %s (expected one of: %s)\n", option, want.c_str(), problem,
                 list.c_str());
    return false;
  }
  return true;
}

int validate(ValidateArgs& a) {
  if (a.reanalyze && a.out_dir.empty()) {
    std::fprintf(stderr, "coact-profile: validate --reanalyze: expected --out DIR, the directory of an earlier run\n");
    return 2;
  }
  const std::string out_dir = make_out_dir(a.out_dir);
  const std::string log = out_dir + "/children.log";
  auto say = [&](const std::string& m) {
    if (!a.json_out || a.verbose) std::fprintf(stderr, "[validate] %s\n", m.c_str());
  };
  std::vector<Row> rows;
  json skipped = json::array();
  json timing = json::object();
  bool failed = false;

  // Step 1.
  {
    std::vector<std::string> stages;
    for (const RealVariant& v : dedup_variants(a)) stages.push_back(v.stage);
    if (!all_known("--dedup-stage", a.dedup_stages, stages, "no such archiver stage")) return 2;
  }
  const std::string ka = a.no_known_answer
                             ? std::string()
                             : find_program(a.known_answer, "bench/causal/coact-known-answer", "coact-known-answer");
  json list;
  if (a.no_known_answer) {
    skipped.push_back({{"what", "known-answer workloads"}, {"why", "--no-known-answer"}});
  } else if (ka.empty()) {
    const std::string why =
        "coact-known-answer not found (configure with -DCOACT_BUILD_BENCH=ON, or pass --known-answer PATH)";
    std::fprintf(stderr, "coact-profile: %s\n", why.c_str());
    skipped.push_back({{"what", "known-answer workloads"}, {"why", why}});
  } else {
    const ChildResult r = run_child({ka, "--list"}, child_env({}), log);
    list = json::parse(r.out, nullptr, false);
    if (!exited_ok(r) || !list.is_object()) {
      std::fprintf(stderr, "coact-profile: %s --list failed (see %s)\n", ka.c_str(), log.c_str());
      return 1;
    }
  }
  const std::string progress = list.is_object() ? list.value("progress", "known_answer.iteration") : "";
  std::string coz, ka_coz;  // step 6
  if (a.with_coz && !a.no_known_answer) {
    coz = a.coz.find('/') != std::string::npos ? a.coz : on_path(a.coz);
    if (coz.empty() || ::access(coz.c_str(), X_OK) != 0) {
      std::fprintf(
          stderr,
          "coact-profile: validate --with-coz: '%s' not found (install Debian's coz-profiler, or pass --coz PATH)\n",
          a.coz.c_str());
      return 2;
    }
    ka_coz = a.known_answer_coz;
    if (ka_coz.empty() && !ka.empty()) {  // beside coact-known-answer
      const std::string beside = ka.substr(0, ka.find_last_of('/') + 1) + "coact-known-answer-coz";
      if (ka.find('/') != std::string::npos && ::access(beside.c_str(), X_OK) == 0) ka_coz = beside;
    }
    if (ka_coz.empty()) ka_coz = find_program("", "bench/causal/coact-known-answer-coz", "coact-known-answer-coz");
    if (ka_coz.empty() || ::access(ka_coz.c_str(), X_OK) != 0) {
      std::fprintf(stderr,
                   "coact-profile: validate --with-coz: coact-known-answer-coz not found '%s' (build it: it needs "
                   "/usr/include/coz.h from coz-profiler; or pass --known-answer-coz PATH)\n",
                   ka_coz.c_str());
      return 2;
    }
  }
  const int chunks = std::max(1, a.chunks);
  if (list.is_object()) {  // -w NAME must name a workload (else the run would silently skip it)
    std::vector<std::string> names;
    for (const auto& w : list["workloads"]) names.push_back(w.value("name", ""));
    if (!all_known("--workload", a.workloads, names, "no such known-answer workload")) return 2;
    std::vector<std::string> keys;  // --stage KEY must name a stage of a selected workload
    for (const auto& w : list["workloads"]) {
      if (!a.workloads.empty() &&
          std::find(a.workloads.begin(), a.workloads.end(), w.value("name", "")) == a.workloads.end()) {
        continue;
      }
      for (const auto& st : w["stages"]) {
        const std::string key = st.value("stage", "");
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
      }
    }
    if (!all_known("--stage", a.stages, keys, "no such stage in the selected workloads")) return 2;
  }

  // Steps 2-4 per workload.
  for (const auto& w : list.is_object() ? list["workloads"] : json::array()) {
    const std::string name = w.value("name", "");
    if (!a.workloads.empty() && std::find(a.workloads.begin(), a.workloads.end(), name) == a.workloads.end()) continue;
    if (!a.stages.empty()) {  // a workload none of whose stages is asked for has no rows
      bool any = false;
      for (const auto& st : w["stages"]) {
        any = any || std::find(a.stages.begin(), a.stages.end(), st.value("stage", "")) != a.stages.end();
      }
      if (!any) continue;
    }
    Stopwatch sw;
    // The rows: the first (bottleneck) stage at 0.25, 0.5, 0.75; every other stage at 0.5.
    std::vector<Row> wrows;
    bool first = true;
    std::vector<std::string> filter;
    for (const auto& st : w["stages"]) {
      filter.push_back(st.value("region", ""));
      if (!a.stages.empty() && std::find(a.stages.begin(), a.stages.end(), st.value("stage", "")) == a.stages.end()) {
        first = false;
        continue;
      }
      const std::vector<double> ss = first ? std::vector<double>{0.25, 0.5, 0.75} : std::vector<double>{0.5};
      for (double s : ss) {
        Row r;
        r.workload = name;
        r.stage = st.value("stage", "");
        r.region = st.value("region", "");
        r.region_kind = st.value("region_kind", "handler");
        r.line = st.value("line", "");
        r.s = s;
        const auto& ideal = st["ideal"];
        r.ideal = ideal.at(static_cast<size_t>(std::lround(s * 20))).get<double>();
        wrows.push_back(r);
      }
      first = false;
    }
    ca::Options o;
    o.progress = {progress};
    o.region_filter = filter;
    o.region_weight =
        ca::RegionWeight::uniform;  // every stage its share of experiments (a stage of 1/64 unit is still a row)
    o.sampling = w.value("sampling", false);  // line stages: sampled-line regions
    o.line_experiment_period = std::chrono::microseconds(a.line_experiment_period_us);
    o.output = out_dir + "/" + name + ".coz";
    o.json_output = out_dir + "/" + name + ".jsonl";
    // --reanalyze reads what an earlier run left: a selected workload
    // without its profile there is a wrong --out, not a row of nulls.
    if (a.reanalyze && ::access(o.json_output.c_str(), R_OK) != 0) {
      std::fprintf(stderr,
                   "coact-profile: validate --reanalyze --out '%s': no profile of workload %s there (expected %s, "
                   "written by an earlier `coact-profile validate --out %s`; -w picks the workloads it ran)\n",
                   out_dir.c_str(), name.c_str(), o.json_output.c_str(), out_dir.c_str());
      return 2;
    }
    if (!a.reanalyze) {
      std::remove(o.output.c_str());
      std::remove(o.json_output.c_str());
    }
    const double chunk_s = a.sweep_s / chunks;
    o.duration = std::chrono::seconds(static_cast<int64_t>(std::ceil(chunk_s)));
    // Each row's actual speedup per kept chunk (step 4): the row's actual is
    // their median, so one real run that a passing process slowed (which the
    // chunk's baselines cannot see) moves no row by its whole error.
    std::vector<std::vector<double>> per_chunk(wrows.size());
    const std::string unit = std::to_string(a.unit_us);
    auto actual_run = [&](const std::string& speed) {
      std::vector<std::string> argv{ka,          "--workload", name, "--seconds", fmt::format("{}", a.actual_s),
                                    "--unit-us", unit};
      if (!speed.empty()) {
        argv.push_back("--speed");
        argv.push_back(speed);
      }
      const ChildResult r = run_child(argv, child_env({}), log);
      if (!exited_ok(r)) failed = true;
      return period_of(r);
    };
    // A chunk is contended when its baselines (the real baseline runs, and
    // the median of its speedup-0 experiments) run more than
    // contended_factor x the ideal period: another process took one of the
    // two cores, and the known answers (and the program's curve) changed
    // under the measurement. Such a chunk is redone, up to `retries` times.
    const double ideal_us = w.value("ideal_period_units", 2.0) * static_cast<double>(a.unit_us);
    const double limit_us = a.contended_factor * ideal_us;
    double sweep_wall = 0;
    int chunk_index = -1;  // startup records seen so far in the profile
    std::vector<int> dropped;
    int contended_kept = 0, redone = 0, fast_redone = 0;
    const std::string actual_path = out_dir + "/" + name + ".actual.json";
    if (a.reanalyze) {  // the real runs' results and dropped chunks of an earlier run
      std::ifstream in(actual_path);
      const json j = json::parse(in, nullptr, false);
      if (j.is_object()) {
        per_chunk = j.value("per_chunk", per_chunk);
        per_chunk.resize(wrows.size());
        if (!j.contains("per_chunk")) {  // written before the median: the chunks' sum and count per row
          const auto sum = j.value("sum_speedup", std::vector<double>{});
          const auto n = j.value("n_speedup", std::vector<int>{});
          for (size_t i = 0; i < wrows.size() && i < sum.size() && i < n.size(); ++i) {
            if (n[i] > 0) per_chunk[i] = {sum[i] / n[i]};
          }
        }
        dropped = j.value("dropped", dropped);
        redone = j.value("redone", 0);
        contended_kept = j.value("contended", 0);
        fast_redone = j.value("fast_redone", 0);
      }
    }
    for (int c = 0; c < (a.reanalyze ? 0 : chunks); ++c) {
      for (int attempt = 0; attempt <= a.retries; ++attempt) {
        say(fmt::format("{}: sweep chunk {}/{}{} ({:.0f} s)", name, c + 1, chunks,
                        attempt > 0 ? fmt::format(", retry {}", attempt) : "", std::ceil(chunk_s)));
        Stopwatch sws;
        const ChildResult sr = run_child(
            {ka, "--workload", name, "--seconds", fmt::format("{}", std::ceil(chunk_s) + 0.5), "--unit-us", unit},
            child_env(ca::to_env(o)), log);
        sweep_wall += sws.s();
        ++chunk_index;
        if (!exited_ok(sr)) {
          std::fprintf(stderr, "coact-profile: the sweep of %s failed (see %s)\n", name.c_str(), log.c_str());
          failed = true;
        }
        say(fmt::format("{}: real runs {}/{} ({} x {:.1f} s)", name, c + 1, chunks, wrows.size() + 2, a.actual_s));
        const double base0 = actual_run("");
        std::vector<double> fast(wrows.size(), 0.0);
        for (size_t i = 0; i < wrows.size(); ++i) {
          // A really-faster run is contended when it runs more than
          // contended_factor x its own ideal period (the workload's ideal
          // period x (1 - the row's ideal speedup)): it is redone, up to
          // `retries` times, as a contended chunk is. The validation of
          // 0b6beb5 measured timer_stage A at s = 0.75 at 0.417 (every other
          // run 0.499-0.500; the workload rerun alone 0.499): one slow fast
          // run, its chunk's baselines unaffected.
          const double fast_limit_us = a.contended_factor * ideal_us * (1.0 - wrows[i].ideal);
          const std::string speed = fmt::format("{}={}", wrows[i].stage, wrows[i].s);
          fast[i] = actual_run(speed);
          for (int retry = 0; retry < a.retries && fast_limit_us > 0 && fast[i] > fast_limit_us; ++retry) {
            say(fmt::format("{}: real run {} contended (period {:.0f} us; ideal {:.0f} us): redo", name, speed, fast[i],
                            ideal_us * (1.0 - wrows[i].ideal)));
            ++fast_redone;
            fast[i] = actual_run(speed);
          }
        }
        const double base1 = actual_run("");
        std::vector<double> zero_periods;
        for (const Exp& e : read_experiments(o.json_output)) {
          if (e.chunk == chunk_index && e.s == 0 && e.rate > 0) zero_periods.push_back(1e6 / e.rate);
        }
        std::sort(zero_periods.begin(), zero_periods.end());
        const double zero_median = zero_periods.empty() ? 0 : zero_periods[zero_periods.size() / 2];
        const bool contended = base0 > limit_us || base1 > limit_us || zero_median > limit_us;
        if (contended && attempt < a.retries) {
          say(fmt::format(
              "{}: chunk contended (baseline periods {:.0f}, {:.0f}, sweep {:.0f} us; ideal {:.0f} us): redo", name,
              base0, base1, zero_median, ideal_us));
          dropped.push_back(chunk_index);
          ++redone;
          continue;
        }
        if (contended) ++contended_kept;
        const double base = (base0 > 0 && base1 > 0) ? (base0 + base1) / 2 : std::max(base0, base1);
        for (size_t i = 0; i < wrows.size(); ++i) {
          if (base > 0 && fast[i] > 0) per_chunk[i].push_back(1.0 - fast[i] / base);
        }
        break;
      }
    }
    if (!a.reanalyze) {
      std::ofstream(actual_path) << json{{"per_chunk", per_chunk},
                                         {"dropped", dropped},
                                         {"redone", redone},
                                         {"contended", contended_kept},
                                         {"fast_redone", fast_redone}}
                                        .dump()
                                 << "\n";
    }
    std::vector<Exp> ex = read_experiments(o.json_output);
    std::erase_if(ex,
                  [&](const Exp& e) { return std::find(dropped.begin(), dropped.end(), e.chunk) != dropped.end(); });
    // Step 3: the estimator, on the profile without the dropped chunks.
    std::string estimated = o.json_output;
    if (!dropped.empty()) {
      estimated = out_dir + "/" + name + ".kept.jsonl";
      if (!copy_without_chunks(o.json_output, estimated, dropped)) estimated = o.json_output;
    }
    std::vector<double> at;
    for (const Row& r : wrows) at.push_back(r.s);
    std::vector<Prediction> predictions;
    try {
      EstimateOptions eo;
      eo.python = a.python;
      eo.points = {progress};
      predictions = run_estimator({estimated}, at, eo, log);
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "coact-profile: %s\n", e.what());
      return 1;
    }
    // Step 6: Coz on the rows' own lines.
    double coz_wall = 0;
    if (a.with_coz) {
      Stopwatch swc;
      std::vector<std::string> lines;
      for (const Row& r : wrows) {
        if (!r.line.empty() && std::find(lines.begin(), lines.end(), r.line) == lines.end()) lines.push_back(r.line);
      }
      int coz_runs = 0;
      auto coz_run = [&](const std::string& line, uint32_t pct) {
        const std::string path = fmt::format("{}/{}.coz-{}.{}.coz", out_dir, name, coz_runs++, pct);
        if (a.reanalyze) return path;
        std::remove(path.c_str());  // Coz appends
        const ChildResult r =
            run_child({coz, "run", "--fixed-line", line, "--fixed-speedup", std::to_string(pct), "-o", path, "---",
                       ka_coz, "--workload", name, "--seconds", fmt::format("{}", a.coz_s), "--unit-us", unit},
                      child_env({}), log);
        if (!exited_ok(r)) failed = true;
        return path;
      };
      for (const std::string& line : lines) {
        std::vector<size_t> idx;
        for (size_t i = 0; i < wrows.size(); ++i) {
          if (wrows[i].line == line) idx.push_back(i);
        }
        say(fmt::format("{}: Coz at {}: 0 %, {} row(s), 0 % ({:.0f} s each)", name, line, idx.size(), a.coz_s));
        const std::string b0 = coz_run(line, 0);
        std::vector<std::string> fast;
        for (size_t i : idx) fast.push_back(coz_run(line, static_cast<uint32_t>(std::lround(wrows[i].s * 100))));
        const std::string b1 = coz_run(line, 0);
        const int base_n = coz_experiment_count(b0) + coz_experiment_count(b1);
        for (size_t k = 0; k < idx.size(); ++k) {
          Row& r = wrows[idx[k]];
          const int n = coz_experiment_count(fast[k]);
          if (base_n == 0 || n == 0) {
            r.coz_reason = fmt::format("Coz wrote no experiments at {} ({} baseline, {} at {:.0f} %; see {})", line,
                                       base_n, n, r.s * 100, log);
            continue;
          }
          try {
            EstimateOptions eo;
            eo.python = a.python;
            eo.points = {progress};
            eo.min_points = 2;  // two levels: 0 and round(100 s) %
            eo.degree = 1;
            const auto preds = run_estimator({b0, fast[k], b1}, {r.s}, eo, log);
            if (const Prediction* p = find_line_prediction(preds, line, r.s); p != nullptr && !std::isnan(p->value)) {
              r.coz_predicted = p->value;
              r.coz_experiments = p->curve_experiments;
            } else {
              r.coz_reason =
                  fmt::format("the estimator found no curve for {} in Coz's profiles (no progress recorded?)", line);
            }
          } catch (const std::runtime_error& e) {
            r.coz_reason = std::string("the estimator failed on Coz's profiles: ") + e.what();
          }
        }
      }
      for (Row& r : wrows) {
        if (r.line.empty()) {
          r.coz_reason = "no source line of its own for --fixed-line (its loop is spin_cycles, shared by every stage)";
        }
      }
      coz_wall = swc.s();
    }
    for (size_t i = 0; i < wrows.size(); ++i) {
      Row& r = wrows[i];
      if (const Prediction* p = find_prediction(predictions, r.region, r.s)) {
        r.predicted = p->value;
        r.predicted_lo = p->lo;
        r.predicted_hi = p->hi;
        r.experiments = p->curve_experiments;
      }
      r.actual_runs = static_cast<int>(per_chunk[i].size());
      r.actual_chunks = per_chunk[i];
      r.actual = median_of(per_chunk[i]);
      // The truth is a measurement too: the Student-t 95% interval of the
      // chunks' mean (none from one chunk), for agree_within_noise.
      double chunk_mean = 0;
      mean_with_t95(per_chunk[i], chunk_mean, r.actual_lo, r.actual_hi);
      rows.push_back(r);
    }
    for (Row& r : rows) {
      if (r.workload == name && contended_kept > 0) {
        r.note = fmt::format("{} chunk(s) contended even after {} retries", contended_kept, a.retries);
      }
    }
    timing[name] = {{"sweep_s", sweep_wall},          {"total_s", sw.s()},       {"coz_s", coz_wall},
                    {"experiments", ex.size()},       {"chunks_redone", redone}, {"chunks_contended", contended_kept},
                    {"fast_runs_redone", fast_redone}};
  }

  // Step 5: the real programs, one row per stage variant.
  struct RealProgram {
    std::string workload;  // the rows' workload
    std::string path;
    std::string progress;                                  // its throughput progress point
    std::function<std::vector<std::string>(double)> argv;  // a run of `secs` seconds, the baseline's options
    std::vector<RealVariant> variants;
    // The program's option that writes its summary as JSON with
    // "later_pass_seconds" (empty: none). A run then ends at a pass boundary
    // and its rate is whole passes per second: progress per time window
    // would depend on where in a pass each window falls.
    std::string summary_flag;
  };
  std::vector<RealProgram> programs;
  // The archive goes to tmpfs when there is one: rewriting ~55 MB per pass
  // to a disk makes writeback stalls part of the archiver's timing.
  const std::string archive =
      (::access("/dev/shm", W_OK) == 0 ? fmt::format("/dev/shm/coact-validate-{}", ::getpid()) : out_dir + "/dedup") +
      ".cdar";
  const std::string dd =
      a.no_dedup || a.reanalyze ? std::string() : find_program(a.dedup, "examples/dedup/coact-dedup", "coact-dedup");
  if (a.no_dedup || a.reanalyze) {
    skipped.push_back({{"what", "dedup"}, {"why", a.reanalyze ? "--reanalyze" : "--no-dedup"}});
  } else if (dd.empty()) {
    const std::string why = "coact-dedup not found (build examples/dedup, or pass --dedup PATH)";
    say("skipping the archiver: " + why);
    skipped.push_back({{"what", "dedup"}, {"why", why}});
  } else {
    std::vector<RealVariant> vs;
    for (const RealVariant& v : dedup_variants(a)) {
      if (a.dedup_stages.empty() ||
          std::find(a.dedup_stages.begin(), a.dedup_stages.end(), v.stage) != a.dedup_stages.end()) {
        vs.push_back(v);
      }
    }
    programs.push_back({"dedup", dd, "chunks",
                        [&](double secs) {
                          return std::vector<std::string>{dd,      "archive", a.dedup_dir, "-o",
                                                          archive, "-q",      "--seconds", fmt::format("{}", secs)};
                        },
                        vs, "--summary-json"});
  }
  const std::string an = a.no_analytics || a.reanalyze
                             ? std::string()
                             : find_program(a.analytics, "examples/analytics/coact-analytics", "coact-analytics");
  if (a.no_analytics || a.reanalyze) {
    skipped.push_back({{"what", "analytics"}, {"why", a.reanalyze ? "--reanalyze" : "--no-analytics"}});
  } else if (an.empty()) {
    const std::string why = "coact-analytics not found (build examples/analytics, or pass --analytics PATH)";
    say("skipping the analytics job: " + why);
    skipped.push_back({{"what", "analytics"}, {"why", why}});
  } else {
    programs.push_back({"analytics", an, "jobs",
                        [&](double secs) {
                          return std::vector<std::string>{an, "--seconds", fmt::format("{}", secs), "-q"};
                        },
                        analytics_variants(), ""});
  }
  // The service: coact-kv under redis-benchmark load for a run's seconds
  // (examples/kv/kv_under_load.py: the client runs beside it, then SIGTERM
  // drains it), progress point "kv.replies". The client is closed-loop (50
  // connections, each waiting for its reply), so the rate of replies is the
  // client's latency inverted. 200 us of planted work per GET in 2 shards
  // makes the shards the stage; --fast-shard halves it.
  const std::string kv =
      a.no_kv || a.reanalyze ? std::string() : find_program(a.kv, "examples/kv/coact-kv", "coact-kv");
  const std::string kv_load = source_dir() + "/examples/kv/kv_under_load.py";
  if (a.no_kv || a.reanalyze) {
    skipped.push_back({{"what", "kv"}, {"why", a.reanalyze ? "--reanalyze" : "--no-kv"}});
  } else if (kv.empty() || ::access(kv_load.c_str(), R_OK) != 0 || on_path("redis-benchmark").empty()) {
    const std::string why = kv.empty() ? "coact-kv not found (build examples/kv, or pass --kv PATH)"
                            : on_path("redis-benchmark").empty()
                                ? "redis-benchmark not found (scripts/bootstrap.sh installs redis-tools)"
                                : kv_load + " not found (validate runs the service from a source tree)";
    say("skipping the service: " + why);
    skipped.push_back({{"what", "kv"}, {"why", why}});
  } else {
    programs.push_back({"kv", kv, "kv.replies",
                        [&](double secs) {
                          return std::vector<std::string>{
                              "/usr/bin/python3",      kv_load,           "--kv",   kv,         "--seconds",
                              fmt::format("{}", secs), "--shard-cost-ns", "200000", "--shards", "2"};
                        },
                        kv_variants(), ""});
  }
  // Runs `prog` (the baseline, or with a variant's `flags`) for `secs`
  // under a sweep of `region` with a fixed speedup (`buffered`: at 0 too on
  // the send path of a sweep that injects delay), 1 s windows; returns its
  // progress visits per effective second and the mean handler time per
  // visit of the region (ns).
  struct Measured {
    double rate = 0, handler_ns = 0;
    double pass_s = 0;  // seconds per pass after the first (the program's summary; 0: none)
    std::string region;
    std::string profile;  // its JSON-lines file
  };
  int runs = 0;
  auto measure = [&](const RealProgram& prog, const std::string& region, const std::vector<std::string>& flags,
                     double secs, uint32_t pct, int64_t window_ms = 1000, bool buffered = false) {
    ca::Options m;
    m.progress = {prog.progress};
    m.fixed_region = region;
    m.fixed_speedup_pct = pct;
    // The row's sweep runs (at 0 and at round(100 r) %, separate processes)
    // share one send path: the runtime's direct sends, taken at speedup 0
    // alone, can change a program's rate by as much as a small virtual
    // speedup's effect. The truth's runs (all at 0) keep the direct path.
    m.buffered_baseline = buffered;
    m.experiment = std::chrono::milliseconds(window_ms);
    m.max_experiment = m.experiment;
    m.output = "";
    m.json_output = out_dir + fmt::format("/{}-{}.jsonl", prog.workload, runs++);
    std::vector<std::string> argv = prog.argv(secs);
    argv.insert(argv.end(), flags.begin(), flags.end());
    // One path per program, rewritten by each run (runs are sequential):
    // the runs' command lines stay identical, which the estimator checks
    // before pooling their profiles as one program's.
    const std::string summary = out_dir + "/" + prog.workload + ".summary.json";
    std::remove(summary.c_str());
    if (!prog.summary_flag.empty()) argv.insert(argv.end(), {prog.summary_flag, summary});
    const ChildResult r = run_child(argv, child_env(ca::to_env(m)), log);
    if (!exited_ok(r)) failed = true;
    double visits = 0, eff = 0;
    uint64_t rv = 0, rns = 0;
    Measured out;
    out.profile = m.json_output;
    if (!prog.summary_flag.empty()) {
      std::ifstream sin(summary);
      const json sj = json::parse(sin, nullptr, false);
      if (sj.is_object() && sj.value("passes", 0) > 1) out.pass_s = sj.value("later_pass_seconds", 0.0);
    }
    std::ifstream in(m.json_output);
    std::string line;
    while (std::getline(in, line)) {
      const json j = json::parse(line, nullptr, false);
      if (!j.is_object() || j.value("type", "") != "experiment") continue;
      out.region = j.value("region", "");
      if (j.contains("progress")) {
        for (const auto& [k, v] : j["progress"].items()) visits += v.get<double>();
      }
      eff += static_cast<double>(j.value("effective_ns", uint64_t{0})) / 1e9;
      rv += j.value("visits", uint64_t{0});
      rns += j.value("region_ns", uint64_t{0});
    }
    out.rate = eff > 0 ? visits / eff : 0;
    out.handler_ns = rv > 0 ? static_cast<double>(rns) / static_cast<double>(rv) : 0;
    return out;
  };
  for (const RealProgram& prog : programs) {
    Stopwatch sw;
    json stage_timing = json::object();
    for (const RealVariant& v : prog.variants) {
      Stopwatch swv;
      std::string change;
      for (const auto& f : v.flags) change += (change.empty() ? "" : " ") + f;
      // 5a. The real change: the baseline vs the variant, interleaved, each
      // under a fixed-speedup-0 sweep of the variant's handler.
      double t0 = 0, t1 = 0, rate0 = 0, rate1 = 0;
      std::vector<double> speedups;
      std::string region;
      const double real_s = a.real_run_s;
      const int rounds = a.real_chunks;
      bool by_pass = true;
      for (int c = 0; c < rounds; ++c) {
        say(fmt::format("{} {}: real runs {}/{} (baseline, {}, baseline; {:.0f} s each)", prog.workload, v.stage, c + 1,
                        rounds, change, real_s));
        const Measured b0 = measure(prog, v.region, {}, real_s, 0);
        const Measured f = measure(prog, v.region, v.flags, real_s, 0);
        const Measured b1 = measure(prog, v.region, {}, real_s, 0);
        if (!b0.region.empty()) region = b0.region;
        const double rb = (b0.rate + b1.rate) / 2;
        // Whole passes when the program reports them (the same ratio: a pass
        // is a fixed number of progress visits), else progress per window.
        const bool passes = b0.pass_s > 0 && f.pass_s > 0 && b1.pass_s > 0;
        by_pass = by_pass && passes;
        if (passes) {
          speedups.push_back(1.0 - f.pass_s / ((b0.pass_s + b1.pass_s) / 2));
          rate0 += rb;
          rate1 += f.rate;
          t0 += (b0.handler_ns + b1.handler_ns) / 2;
          t1 += f.handler_ns;
        } else if (rb > 0 && f.rate > 0) {
          speedups.push_back(1.0 - rb / f.rate);
          rate0 += rb;
          rate1 += f.rate;
          t0 += (b0.handler_ns + b1.handler_ns) / 2;
          t1 += f.handler_ns;
        }
      }
      const int nrun = static_cast<int>(speedups.size());
      Row r;
      r.workload = prog.workload;
      r.program = "real";
      r.stage = v.stage;
      r.change = change;
      r.region = region.empty() ? v.region : region;
      r.actual_runs = nrun;
      r.actual_chunks = speedups;
      r.actual_measure = by_pass ? "pass_time" : "window_rate";
      if (nrun > 0 && t0 > 0) {
        // The measured speedup's own 95% interval: Student t over the rounds.
        mean_with_t95(speedups, r.actual, r.actual_lo, r.actual_hi);
        r.s = std::round(std::clamp(1.0 - t1 / t0, 0.0, 1.0) * 1e4) / 1e4;
        // 5b. The prediction at s = r: the baseline under fixed-speedup
        // sweeps of the handler at 0, round(100 r) % and 0 again per round.
        // A round's prediction is its program-level one, measured as the
        // truth is: 1 - rate(the two runs at 0) / rate(the run at p), each
        // rate the run's progress visits per effective second over all its
        // windows, scaled from p to r along the line through the origin.
        // The row's prediction is the mean over rounds with a Student-t 95%
        // interval, so prediction and truth carry the same kind of noise
        // (the program's rate drifting between runs). A per-window fit of
        // the same profiles (the estimator, as a default sweep's table uses)
        // is kept beside it as window_predicted: its windows, a fraction of
        // a pass each, swing with the pass's phase.
        const uint32_t pct = static_cast<uint32_t>(std::lround(r.s * 100));
        bool missing_prediction = false;
        // Each sweep run holds at least two whole windows after start-up.
        const double each =
            std::max(2.5 * static_cast<double>(a.real_experiment_ms) / 1e3, a.dedup_sweep_s / (3.0 * rounds));
        std::vector<std::string> profiles;
        // The variant's handler was not measurably faster (r rounds to 0 %,
        // e.g. on a loaded machine): there is no virtual speedup to sweep,
        // so no prediction (the row says why; not a failure of the run).
        for (int c = 0; c < rounds && pct > 0; ++c) {
          say(fmt::format("{} {}: sweep {}/{} at 0 %, {} %, 0 % ({:.0f} s each)", prog.workload, v.stage, c + 1, rounds,
                          pct, each));
          double rates[3] = {0, 0, 0};
          int k = 0;
          for (const uint32_t p : {0u, pct, 0u}) {
            const Measured m = measure(prog, v.region, {}, each, p, a.real_experiment_ms, true);
            profiles.push_back(m.profile);
            rates[k++] = m.rate;
          }
          const double at0 = (rates[0] + rates[2]) / 2;
          if (at0 > 0 && rates[1] > 0) r.predicted_rounds.push_back((1.0 - at0 / rates[1]) * r.s / (pct / 100.0));
        }
        if (pct > 0) {
          mean_with_t95(r.predicted_rounds, r.predicted, r.predicted_lo, r.predicted_hi);
          if (r.predicted_rounds.empty()) missing_prediction = true;  // said in the row's note, and the exit status
          try {
            EstimateOptions eo;
            eo.python = a.python;
            eo.points = {prog.progress};
            eo.min_points = 2;  // two levels: 0 and round(100 r) %
            eo.degree = 1;
            const auto preds = run_estimator(profiles, {r.s}, eo, log);
            if (const Prediction* p = find_prediction(preds, r.region, r.s)) {
              r.window_predicted = p->value;
              r.window_lo = p->lo;
              r.window_hi = p->hi;
              r.experiments = p->curve_experiments;
            }
          } catch (const std::runtime_error& e) {
            std::fprintf(stderr, "coact-profile: %s\n", e.what());
            failed = true;
          }
        }
        r.note = fmt::format(
            "{} vs baseline: {} handler {:.1f} -> {:.1f} us per visit (r = {:.3f}, virtual speedup "
            "{} %); {:.1f} -> {:.1f} {}/s",
            change, v.stage, t0 / nrun / 1e3, t1 / nrun / 1e3, r.s, pct, rate0 / nrun, rate1 / nrun, prog.progress);
        if (pct == 0) r.note += "; not faster per visit, so no virtual speedup to predict";
        if (missing_prediction) {
          r.note += "; the sweep runs measured no progress (see " + log + ")";
          failed = true;
        }
      } else {
        r.note = "the " + prog.workload + " runs measured nothing (see " + log + ")";
      }
      if (a.with_coz) r.coz_reason = "real programs are not run under Coz (their real changes are options, not a line)";
      rows.push_back(r);
      stage_timing[v.stage] = swv.s();
    }
    timing[prog.workload] = {{"total_s", sw.s()}, {"stages_s", stage_timing}};
  }
  std::remove(archive.c_str());

  // Step 7.
  double sum_abs = 0, max_abs = 0;
  int n = 0;
  for (const Row& r : rows) {
    if (std::isnan(r.predicted) || std::isnan(r.actual)) continue;
    const double e = std::abs(r.predicted - r.actual) * 100;
    sum_abs += e;
    max_abs = std::max(max_abs, e);
    ++n;
  }
  const double mean_abs = n > 0 ? sum_abs / n : std::nan("");
  // Coverage: rows whose 95% interval contains the measured speedup, of the
  // rows with both (an honest interval holds the truth in ~95% of rows,
  // less the truth's own measurement noise).
  int covered = 0, with_ci = 0;
  for (const Row& r : rows) {
    if (std::isnan(r.predicted_lo) || std::isnan(r.predicted_hi) || std::isnan(r.actual)) continue;
    ++with_ci;
    covered += r.predicted_lo <= r.actual && r.actual <= r.predicted_hi ? 1 : 0;
  }
  // Agreement within the noise of both: rows where the prediction and the
  // measured speedup are no further apart than the two 95% half-widths
  // added in quadrature (a real row's truth is itself a measurement; the
  // strict count above ignores its spread).
  int agree = 0, with_both = 0;
  for (const Row& r : rows) {
    if (std::isnan(r.predicted_lo) || std::isnan(r.predicted_hi) || std::isnan(r.actual_lo) ||
        std::isnan(r.actual_hi)) {
      continue;
    }
    ++with_both;
    const double hp = (r.predicted_hi - r.predicted_lo) / 2, ha = (r.actual_hi - r.actual_lo) / 2;
    agree += std::abs(r.predicted - r.actual) <= std::sqrt(hp * hp + ha * ha) ? 1 : 0;
  }
  // Coz on the rows it predicted; coact on those of them it predicted too.
  double coz_sum = 0, coz_max = 0, both_sum = 0, both_max = 0;
  int coz_n = 0, both_n = 0;
  for (const Row& r : rows) {
    if (std::isnan(r.coz_predicted) || std::isnan(r.actual)) continue;
    const double ec = std::abs(r.coz_predicted - r.actual) * 100;
    coz_sum += ec;
    coz_max = std::max(coz_max, ec);
    ++coz_n;
    if (std::isnan(r.predicted)) continue;
    const double e = std::abs(r.predicted - r.actual) * 100;
    both_sum += e;
    both_max = std::max(both_max, e);
    ++both_n;
  }
  const double nan = std::nan("");
  if (a.json_out) {
    json j;
    j["rows"] = json::array();
    for (const Row& r : rows) {
      j["rows"].push_back({{"workload", r.workload},
                           {"program", r.program},
                           {"stage", r.stage},
                           {"change", r.change.empty() ? json(nullptr) : json(r.change)},
                           {"region", r.region},
                           {"region_kind", r.region_kind},
                           {"s", json_num(r.s)},
                           {"predicted", json_num(r.predicted)},
                           {"predicted_ci", json::array({json_num(r.predicted_lo), json_num(r.predicted_hi)})},
                           {"actual", json_num(r.actual)},
                           {"actual_ci", json::array({json_num(r.actual_lo), json_num(r.actual_hi)})},
                           {"actual_measure", r.actual_measure.empty() ? json(nullptr) : json(r.actual_measure)},
                           {"error_pts", json_num((r.predicted - r.actual) * 100)},
                           {"ideal", json_num(r.ideal)},
                           {"experiments", r.experiments},
                           {"actual_runs", r.actual_runs},
                           {"actual_chunks", r.actual_chunks},
                           {"predicted_rounds", r.predicted_rounds},
                           {"window_predicted", json_num(r.window_predicted)},
                           {"window_predicted_ci", json::array({json_num(r.window_lo), json_num(r.window_hi)})},
                           {"note", r.note}});
      if (a.with_coz) {
        json& jr = j["rows"].back();
        jr["line"] = r.line.empty() ? json(nullptr) : json(r.line);
        jr["coz_predicted"] = json_num(r.coz_predicted);
        jr["coz_error_pts"] = json_num((r.coz_predicted - r.actual) * 100);
        jr["coz_experiments"] = r.coz_experiments;
        jr["coz_reason"] = r.coz_reason.empty() ? json(nullptr) : json(r.coz_reason);
      }
    }
    if (a.with_coz) {
      j["coz_rows_compared"] = coz_n;
      j["coz_mean_abs_error_pts"] = json_num(coz_n > 0 ? coz_sum / coz_n : nan);
      j["coz_max_abs_error_pts"] = json_num(coz_n > 0 ? coz_max : nan);
      j["coact_rows_compared_on_coz_rows"] = both_n;
      j["coact_mean_abs_error_pts_on_coz_rows"] = json_num(both_n > 0 ? both_sum / both_n : nan);
      j["coact_max_abs_error_pts_on_coz_rows"] = json_num(both_n > 0 ? both_max : nan);
      j["coz_s"] = a.coz_s;
    }
    j["mean_abs_error_pts"] = json_num(mean_abs);
    j["max_abs_error_pts"] = json_num(n > 0 ? max_abs : std::nan(""));
    j["rows_compared"] = n;
    j["ci_covers_actual"] = covered;
    j["rows_with_ci"] = with_ci;
    j["agree_within_noise"] = agree;
    j["rows_with_both_ci"] = with_both;
    j["sweep_s"] = a.sweep_s;
    j["chunks"] = chunks;
    j["actual_s"] = a.actual_s;
    j["line_experiment_period_us"] = a.line_experiment_period_us;  // 0: the sample period / 8
    j["timing"] = timing;
    j["skipped"] = skipped;
    j["profiles"] = out_dir;
    std::printf("%s\n", j.dump().c_str());
  } else {
    size_t wr = 6;
    for (const Row& r : rows) wr = std::max(wr, r.region.size());
    std::printf("%-12s %-*s %6s %10s %17s %8s %17s %11s %7s %5s", "workload", static_cast<int>(wr), "region", "s",
                "predicted", "95% CI", "actual", "actual's 95% CI", "error(pts)", "ideal", "exps");
    if (a.with_coz) std::printf(" %6s %9s", "coz", "coz err");
    std::printf("\n");
    for (const Row& r : rows) {
      const std::string ci = std::isnan(r.predicted_lo) || std::isnan(r.predicted_hi)
                                 ? std::string("-")
                                 : fmt::format("[{}, {}]", fmt_num(r.predicted_lo), fmt_num(r.predicted_hi));
      const std::string aci = std::isnan(r.actual_lo) || std::isnan(r.actual_hi)
                                  ? std::string("-")
                                  : fmt::format("[{}, {}]", fmt_num(r.actual_lo), fmt_num(r.actual_hi));
      std::printf("%-12s %-*s %6s %10s %17s %8s %17s %11s %7s %5d", r.workload.c_str(), static_cast<int>(wr),
                  r.region.c_str(), fmt_num(r.s, 3).c_str(), fmt_num(r.predicted).c_str(), ci.c_str(),
                  fmt_num(r.actual).c_str(), aci.c_str(), fmt_num((r.predicted - r.actual) * 100, 1).c_str(),
                  fmt_num(r.ideal).c_str(), r.experiments);
      if (a.with_coz) {
        std::printf(" %6s %9s", fmt_num(r.coz_predicted).c_str(),
                    fmt_num((r.coz_predicted - r.actual) * 100, 1).c_str());
      }
      std::printf("\n");
      if (!r.note.empty()) std::printf("%-12s %s\n", "", r.note.c_str());
      if (a.with_coz && !r.line.empty() && !r.coz_reason.empty())
        std::printf("%-12s coz: %s\n", "", r.coz_reason.c_str());
    }
    std::printf(
        "mean |error| %s pts, max %s pts over %d rows; the 95%% interval holds the actual in %d of %d rows; "
        "sweep %.0f s per workload in %d chunks; profiles in %s\n",
        fmt_num(mean_abs, 1).c_str(), fmt_num(n > 0 ? max_abs : std::nan(""), 1).c_str(), n, covered, with_ci,
        a.sweep_s, chunks, out_dir.c_str());
    if (with_both > 0) {
      std::printf("prediction and measured speedup agree within both 95%% intervals in %d of %d rows\n", agree,
                  with_both);
    }
    if (a.with_coz) {
      std::printf(
          "Coz (coz run --fixed-line, %.0f s per run): mean |error| %s pts, max %s pts over %d rows; "
          "coact on %d of them: mean %s, max %s\n",
          a.coz_s, fmt_num(coz_n > 0 ? coz_sum / coz_n : nan, 1).c_str(), fmt_num(coz_n > 0 ? coz_max : nan, 1).c_str(),
          coz_n, both_n, fmt_num(both_n > 0 ? both_sum / both_n : nan, 1).c_str(),
          fmt_num(both_n > 0 ? both_max : nan, 1).c_str());
    }
    for (const auto& s : skipped)
      std::printf("skipped %s: %s\n", s.value("what", "").c_str(), s.value("why", "").c_str());
  }
  return failed ? 1 : 0;
}

}  // namespace coact::profile_tool
