// The one estimator of "predicted program speedup at virtual speedup s":
// reports/coact_reports/estimate.py (the plots, the ranking table and
// `coact-plot estimate` use it), run as
//   /usr/bin/python3 -m coact_reports.estimate PROFILE... --json --at S...
// (with --fit line for a line through the origin)
// validate calls it through here instead of fitting anything itself, so the
// accuracy it reports is that of the estimator users see.
//
// Single-threaded; blocks while the Python child runs (seconds).
#pragma once

#include <string>
#include <vector>

namespace coact::profile_tool {

struct EstimateOptions {
  std::string python = "/usr/bin/python3";  // Debian's interpreter (numpy)
  std::vector<std::string> points;          // -p: progress points (empty: all)
  int min_points = 3;                       // distinct speedups a curve needs, baseline included
  int degree = 2;                           // 1: a line through the origin; 2: the estimator's own model choice
};

struct Prediction {
  std::string region, point;
  double s = 0;               // virtual speedup, fraction
  double value = 0;           // predicted program speedup (NaN when the estimator gave none)
  double lo = 0, hi = 0;      // its 95% interval (the estimator's "ci"; NaN where it gave none)
  int experiments = 0;        // experiments measured at s
  int curve_experiments = 0;  // experiments behind the whole curve
  int runs = 0;               // runs (processes) in the profile
  std::string interval;       // the estimator's "interval": "fit", "fit and runs", or why only the fit's
  double systematic = 0;      // the profiler's own error its interval holds, a fraction of the value
};

// Where the coact_reports package is: <source>/reports when this tool runs
// from its build tree, else <prefix>/share/coact/python next to an installed
// tool; empty if neither exists.
std::string reports_pythonpath();

// Runs the estimator on `profiles` (pooled), predicting at every measured
// speedup and at each of `at`, each with its 95% interval. Its stderr goes
// to `log` (empty: inherited). A line (degree 1) is asked for as --fit line.
// Errors: std::runtime_error with one line naming what failed (no package,
// the estimator's exit status). A profile with no region that has a curve
// is not an error: the result is empty.
std::vector<Prediction> run_estimator(const std::vector<std::string>& profiles, const std::vector<double>& at,
                                      const EstimateOptions& opt, const std::string& log);

// How a row's interval says it holds the profiler's own error `k` (a
// fraction of the value): ", with the profiler's own error (2 %)"; empty
// for k = 0.
std::string systematic_note(double k);

// The prediction for (region, s) in `p` (|s - s'| < 1e-6), or nullptr.
const Prediction* find_prediction(const std::vector<Prediction>& p, const std::string& region, double s);

}  // namespace coact::profile_tool
