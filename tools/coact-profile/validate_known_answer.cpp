// tools/coact-profile/validate_known_answer.cpp: steps 2-4 and 6 of
// `coact-profile validate` (the protocol is in validate.cpp): per
// known-answer workload, the interleaved chunks of sweeps and really-faster
// runs, the estimator's predictions, and Coz's on the rows' own lines.
#include "validate_session.hpp"

namespace coact::profile_tool::validation {

int Session::known_answer_rows() {
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
        if (!std::isnan(p->lo)) {
          r.predicted_interval =
              fmt::format("estimator at s: {} ({} runs){}", p->interval, p->runs, systematic_note(p->systematic));
          r.predicted_systematic = p->systematic;
        }
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
  return 0;
}

}  // namespace coact::profile_tool::validation
