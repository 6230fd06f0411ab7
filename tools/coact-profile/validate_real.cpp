// tools/coact-profile/validate_real.cpp: step 5 of `coact-profile validate`
// (the protocol is in validate.cpp): the real programs (the archiver, the
// analytics job, the service), one row per stage variant: the real change's
// interleaved runs (A/B passes in one process where the program has them),
// then the prediction at s = r from fixed-speedup runs that alternate 0 and
// s = r in one process.
#include "validate_session.hpp"

namespace coact::profile_tool::validation {

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

void Session::real_program_rows() {
  // Step 5: the real programs, one row per stage variant.
  struct RealProgram {
    std::string workload;  // the rows' workload
    std::string path;
    std::string progress;                                  // its throughput progress point
    std::function<std::vector<std::string>(double)> argv;  // a run of `secs` seconds, the baseline's options
    std::vector<RealVariant> variants;
    // The program's option that writes its summary as JSON (empty: none).
    // Where it has "later_pass_seconds" (the archiver), a run ends at a pass
    // boundary and its rate is whole passes per second: progress per time
    // window would depend on where in a pass each window falls.
    std::string summary_flag;
    // The program's option that alternates baseline and variant units of
    // work (passes, blocks of jobs) in one run, A B B A ..., and reports
    // each arm in its summary (examples/common/alternation.hpp). Empty:
    // none; then each round runs baseline, variant, baseline as processes.
    // Needs summary_flag.
    std::string alternate_flag;
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
                        vs, "--summary-json", "--alternate"});
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
                        analytics_variants(), "--summary-json", "--alternate"});
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
                        kv_variants(), "", ""});
  }
  // Runs `prog` (the baseline, or with a variant's `flags`) for `secs`
  // under a sweep of `region` with a fixed speedup, 1 s windows; returns its
  // progress visits per effective second and the mean handler time per
  // visit of the region (ns). With `alt_pct`, the windows alternate
  // between `pct` and `alt_pct` (A B B A ...; COACT_CAUSAL_ALTERNATE_SPEEDUP):
  // the first window (start-up) is left out, and `rate` and `alt_rate` are
  // the rates over the others at each speedup.
  struct Measured {
    double rate = 0, alt_rate = 0, handler_ns = 0;
    double pass_s = 0;  // seconds per pass after the first (the program's summary; 0: none)
    json summary;       // the program's summary (null: none)
    std::string region;
    std::string profile;  // its JSON-lines file
  };
  int runs = 0;
  auto measure = [&](const RealProgram& prog, const std::string& region, const std::vector<std::string>& flags,
                     double secs, uint32_t pct, int64_t window_ms = 1000,
                     std::optional<uint32_t> alt_pct = std::nullopt) {
    ca::Options m;
    m.progress = {prog.progress};
    m.fixed_region = region;
    m.fixed_speedup_pct = pct;
    m.alternate_speedup_pct = alt_pct;
    // A prediction alternates 0 with round(100 r) % in one sweep, so its
    // windows at 0 take the pay path of its windows at r (sweep.cpp step 1).
    // The truth's runs (all at 0) skip it, baseline and variant alike, as
    // the program does without a sweep.
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
    double visits[2] = {0, 0}, eff[2] = {0, 0};  // at pct, at alt_pct
    uint64_t rv = 0, rns = 0;
    Measured out;
    out.profile = m.json_output;
    if (!prog.summary_flag.empty()) {
      std::ifstream sin(summary);
      const json sj = json::parse(sin, nullptr, false);
      if (sj.is_object()) out.summary = sj;
      if (sj.is_object() && sj.value("passes", 0) > 1) out.pass_s = sj.value("later_pass_seconds", 0.0);
    }
    std::ifstream in(m.json_output);
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
      const json j = json::parse(line, nullptr, false);
      if (!j.is_object() || j.value("type", "") != "experiment") continue;
      out.region = j.value("region", "");
      if (alt_pct && std::exchange(first, false)) continue;
      const int at = alt_pct && std::lround(j.value("speedup", 0.0) * 100) == *alt_pct && *alt_pct != pct ? 1 : 0;
      if (j.contains("progress")) {
        for (const auto& [k, v] : j["progress"].items()) visits[at] += v.get<double>();
      }
      eff[at] += static_cast<double>(j.value("effective_ns", uint64_t{0})) / 1e9;
      rv += j.value("visits", uint64_t{0});
      rns += j.value("region_ns", uint64_t{0});
    }
    out.rate = eff[0] > 0 ? visits[0] / eff[0] : 0;
    out.alt_rate = eff[1] > 0 ? visits[1] / eff[1] : 0;
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
      const int rounds = a.real_chunks;  // at least; up to max_rounds until the mean is known to real_se_pts
      const int max_rounds = std::max(a.real_chunks, a.real_max_rounds);
      bool by_pass = true;
      const bool ab = !prog.alternate_flag.empty();
      for (int c = 0; ab && c < max_rounds && !enough_rounds(speedups, rounds, max_rounds, a.real_se_pts); ++c) {
        // One process, its units of work after the first alternating
        // baseline and variant (A B B A ...), as long as the three runs
        // below: the machine's speed differs between processes by more
        // than the units within one differ, and a ratio within one run
        // cancels it.
        say(fmt::format("{} {}: real run {} of {}-{} (baseline and {} alternating; {:.0f} s)", prog.workload,
                        v.stage, c + 1, rounds, max_rounds, change, 3 * real_s));
        std::vector<std::string> flags = v.flags;
        flags.push_back(prog.alternate_flag);
        const Measured m = measure(prog, v.region, flags, 3 * real_s, 0);
        if (!m.region.empty()) region = m.region;
        const json arms = m.summary.is_object() ? m.summary.value("alternate", json()) : json();
        if (!arms.is_object()) continue;
        // Per arm: mean seconds per unit, and the region's time per visit
        // (the profiler's own counters, split at the unit boundaries).
        double pass_s[2] = {0, 0}, per_visit[2] = {0, 0};
        for (int k = 0; k < 2; ++k) {
          const json& arm = arms.value(k == 0 ? "baseline" : "variant", json::object());
          const std::vector<double> secs = arm.value("seconds", std::vector<double>{});
          if (!secs.empty()) pass_s[k] = std::accumulate(secs.begin(), secs.end(), 0.0) / double(secs.size());
          const json& regs = arm.value("regions", json::object());
          const std::string& name = region.empty() ? v.region : region;
          if (regs.contains(name) && regs[name].value("visits", 0.0) > 0)
            per_visit[k] = regs[name].value("ns", 0.0) / regs[name].value("visits", 0.0);
        }
        if (pass_s[0] <= 0 || pass_s[1] <= 0 || per_visit[0] <= 0 || per_visit[1] <= 0) continue;
        const double per_unit = arms.value("progress_per_unit", 0.0);
        speedups.push_back(1.0 - pass_s[1] / pass_s[0]);
        rate0 += per_unit / pass_s[0];
        rate1 += per_unit / pass_s[1];
        t0 += per_visit[0];
        t1 += per_visit[1];
      }
      for (int c = 0; !ab && c < max_rounds && !enough_rounds(speedups, rounds, max_rounds, a.real_se_pts); ++c) {
        say(fmt::format("{} {}: real runs {} of {}-{} (baseline, {}, baseline; {:.0f} s each)", prog.workload, v.stage,
                        c + 1, rounds, max_rounds, change, real_s));
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
      r.actual_measure = ab ? "alternating" : by_pass ? "pass_time" : "window_rate";
      if (nrun > 0 && t0 > 0) {
        // The measured speedup's own 95% interval: Student t over the rounds.
        mean_with_t95(speedups, r.actual, r.actual_lo, r.actual_hi);
        r.s = std::round(std::clamp(1.0 - t1 / t0, 0.0, 1.0) * 1e4) / 1e4;
        // 5b. The prediction at s = r: per round, the baseline under a
        // fixed-region sweep of the handler whose windows alternate 0 and
        // p = round(100 r) % (A B B A ...). A round's prediction is its
        // program-level one: 1 - rate(at 0) / rate(at p), each rate the
        // progress visits per effective second over that speedup's windows
        // (the first, start-up, left out), scaled from p to r along the line
        // through the origin. One process per round: the speed of separate
        // processes differs by as much as the effect being measured.
        // The row's prediction is the mean over rounds with a Student-t 95%
        // interval, as the truth's is. A per-window fit of
        // the same profiles (the estimator, as a default sweep's table uses)
        // is kept beside it as window_predicted: its windows, a fraction of
        // a pass each, swing with the pass's phase.
        const uint32_t pct = static_cast<uint32_t>(std::lround(r.s * 100));
        bool missing_prediction = false;
        // Each sweep run holds at least 7.5 windows (3 x 2.5).
        const double each =
            std::max(2.5 * static_cast<double>(a.real_experiment_ms) / 1e3, a.dedup_sweep_s / (3.0 * rounds));
        std::vector<std::string> profiles;
        // The variant's handler was not measurably faster (r rounds to 0 %,
        // e.g. on a loaded machine): there is no virtual speedup to sweep,
        // so no prediction (the row says why; not a failure of the run).
        for (int c = 0; c < max_rounds && pct > 0 && !enough_rounds(r.predicted_rounds, rounds, max_rounds, a.real_se_pts);
             ++c) {
          say(fmt::format("{} {}: sweep {} of {}-{}, windows alternating 0 % and {} % ({:.0f} s)", prog.workload,
                          v.stage, c + 1, rounds, max_rounds, pct, 3 * each));
          const Measured m = measure(prog, v.region, {}, 3 * each, 0, a.real_experiment_ms, pct);
          profiles.push_back(m.profile);
          if (m.rate > 0 && m.alt_rate > 0)
            r.predicted_rounds.push_back((1.0 - m.rate / m.alt_rate) * r.s / (pct / 100.0));
        }
        if (pct > 0) {
          mean_with_t95(r.predicted_rounds, r.predicted, r.predicted_lo, r.predicted_hi);
          r.predicted_interval = fmt::format("Student t over {} rounds", r.predicted_rounds.size());
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
            // The rounds' interval holds the profiler's own error too, as the
            // estimator's does (estimate.py, "The profiler's own error").
            const double k = preds.empty() ? 0.0 : preds.front().systematic;
            if (k > 0 && !std::isnan(r.predicted_lo)) {
              const double half = std::hypot((r.predicted_hi - r.predicted_lo) / 2, k * r.predicted);
              r.predicted_lo = r.predicted - half;
              r.predicted_hi = r.predicted + half;
              r.predicted_systematic = k;
              r.predicted_interval += systematic_note(k);
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
}

}  // namespace coact::profile_tool::validation
