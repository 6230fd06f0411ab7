// tools/coact-profile/validate_report.cpp: step 7 of `coact-profile
// validate` (the protocol is in validate.cpp): the error summary, coverage
// and agreement counts, and the table or the --json document.
#include "validate_session.hpp"

namespace coact::profile_tool::validation {

int report(Session& ss) {
  ValidateArgs& a = ss.a;
  const std::string& out_dir = ss.out_dir;
  std::vector<Row>& rows = ss.rows;
  json& skipped = ss.skipped;
  json& timing = ss.timing;
  bool& failed = ss.failed;
  const int chunks = ss.chunks;
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
      j["rows"].push_back(
          {{"workload", r.workload},
           {"program", r.program},
           {"stage", r.stage},
           {"change", r.change.empty() ? json(nullptr) : json(r.change)},
           {"region", r.region},
           {"region_kind", r.region_kind},
           {"s", json_num(r.s)},
           {"predicted", json_num(r.predicted)},
           {"predicted_ci", json::array({json_num(r.predicted_lo), json_num(r.predicted_hi)})},
           {"predicted_interval", r.predicted_interval.empty() ? json(nullptr) : json(r.predicted_interval)},
           {"predicted_systematic", r.predicted_systematic},
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
    j["real_rounds"] = {{"min", a.real_chunks},
                        {"max", std::max(a.real_chunks, a.real_max_rounds)},
                        {"se_pts", a.real_se_pts},
                        {"run_s", a.real_run_s}};
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

}  // namespace coact::profile_tool::validation
