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
//     Per row, in turn, at least --real-chunks rounds (then more, up to
//     --real-max-rounds, until the standard error of a side's mean is at
//     most --real-se-pts points; truth and prediction each on their own
//     rounds, so the rule never looks at the comparison) of: a. the truth,
//     under a fixed-speedup-0 sweep of the row's handler. Where the program
//     alternates a variant with the baseline in one run (the archiver's
//     --alternate: passes after the first A B B A ...; its --summary-json
//     reports each arm's pass times and region counters), one run of 3 x
//     --real-run-s: actual speedup = 1 - mean pass time(variant) / mean
//     pass time(baseline), r = 1 - t_variant / t_baseline from the handler's
//     time per visit in each arm (the analytics job: the same, by blocks of
//     jobs). Otherwise (the service: no phases, an outside client) the
//     baseline, the variant and the baseline again,
//     --real-run-s each, 1 s windows: actual = 1 - rate(baseline) /
//     rate(variant) from progress visits per second of the windows, r from
//     each run's handler time per visit. The row's actual is the mean over
//     the rounds, with a Student-t 95% interval over them ("actual_ci").
//     b. The prediction at s = r: per round, one run of the baseline under
//     a fixed-region sweep of the handler whose windows alternate 0 and
//     p = round(100 r) % (A B B A ...; Options::alternate_speedup_pct;
//     --real-experiment-ms windows, 3 x --dedup-sweep-s / (3 x
//     --real-chunks) s, at least 7.5 windows). Leaving out the first
//     window (start-up), the round's prediction is 1 - rate(at 0) / rate(at
//     p), each rate the progress visits per effective second of that
//     speedup's windows, scaled to r along the line through the origin; the
//     row's prediction is the mean over rounds with a Student-t 95%
//     interval ("predicted_rounds", "predicted_ci"). Both sides compare
//     within one process, alternating faster than the machine's speed
//     drifts: separate processes differ by several points, as much as the
//     effects measured. The estimator's per-window fit of the same profiles
//     is reported beside it ("window_predicted", "window_predicted_ci").
//     Fixed speedups, not a default sweep: a default sweep's handful of
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
//     there is none) with "predicted_interval" saying which (the
//     estimator's "interval" and its runs: with 3 or more chunks, the run
//     jackknife's where wider). Exit 0, or 1 if a program failed.
//  --no-known-answer skips steps 2-4 and 6 (only the real programs' rows).

#include "validate_session.hpp"

namespace coact::profile_tool {

using namespace validation;

namespace {

// Every value of OPTION must be one of `valid`; otherwise one line naming the
// first unknown value and the valid ones (the caller exits 2).
bool all_known(const char* option, const std::vector<std::string>& wanted, const std::vector<std::string>& valid,
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

}  // namespace

int validate(ValidateArgs& a) {
  if (a.reanalyze && a.out_dir.empty()) {
    std::fprintf(stderr, "coact-profile: validate --reanalyze: expected --out DIR, the directory of an earlier run\n");
    return 2;
  }
  Session ss(a);
  ss.out_dir = make_out_dir(a.out_dir);
  ss.log = ss.out_dir + "/children.log";
  const std::string& log = ss.log;
  json& skipped = ss.skipped;

  // Step 1.
  {
    std::vector<std::string> stages;
    for (const RealVariant& v : dedup_variants(a)) stages.push_back(v.stage);
    if (!all_known("--dedup-stage", a.dedup_stages, stages, "no such archiver stage")) return 2;
  }
  std::string& ka = ss.ka;
  ka = a.no_known_answer ? std::string()
                         : find_program(a.known_answer, "bench/causal/coact-known-answer", "coact-known-answer");
  json& list = ss.list;
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
  ss.progress = list.is_object() ? list.value("progress", "known_answer.iteration") : "";
  std::string& coz = ss.coz;  // step 6
  std::string& ka_coz = ss.ka_coz;
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
  ss.chunks = std::max(1, a.chunks);
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

  if (const int rc = ss.known_answer_rows(); rc != 0) return rc;
  ss.real_program_rows();
  return report(ss);
}

}  // namespace coact::profile_tool
