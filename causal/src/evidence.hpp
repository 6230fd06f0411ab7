// The sweep's running estimate of each region's effect, used to decide which
// region the next experiment selects (Options::region_weight = evidence), to
// tell the user how sure the ranking is while the sweep runs (the "estimates"
// record, which coact-profile's status line shows), and to end the sweep once
// the ranking has settled (Options::until_settled).
//
// The estimator is the line model of reports/coact_reports/estimate.py (its
// module comment is the specification; tests/reports/test_estimate.py,
// SweepAgreesWithEstimatorTest, holds both to the same numbers on a sweep's
// profile):
//  1. Per progress point, the baseline is every speedup-0 experiment pooled
//     (whatever region it named: at speedup 0 nothing is delayed), after
//     dropping outlying values (Hampel's rule on log values, >= 10
//     experiments, at most a tenth of them); its relative standard error is
//     the ratio estimator's.
//  2. A region's non-zero-speedup experiments give y = 1 - value / baseline;
//     y outside [-1, 2] is dropped. With >= 10 points, points whose residual
//     from the duration-weighted line y = b s is an outlier by Hampel's rule
//     (at most a tenth, the most extreme first) are dropped and the line
//     refitted.
//  3. The 95% interval of b: Student t with min(n - 1, m - 1) degrees of
//     freedom on the weighted residual variance, the baseline's relative error
//     propagated through the fit and added in quadrature. The printed interval
//     (the record, the settle test) also holds kSystematic of b, in
//     quadrature; the draw weighs the statistical one, which more experiments
//     narrow. The ranking key is b x rank_at with that interval scaled.
//  4. Ranked: n >= min_experiments at >= 3 distinct speedups, a baseline of
//     >= 3 experiments, and an interval. The final table may still choose a
//     bent curve for a region (the estimator's model rule); the sweep's
//     allocation and stop rule use the line.
//
// Threads: owned and called by the controller thread only. Not a public header.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <coact/causal/student_t.hpp>

namespace coact::causal::detail {

/// One written experiment, as the estimator needs it.
struct Observation {
  uint32_t region = 0;
  double speedup = 0;               ///< fraction, 0..1
  double duration_ns = 0;           ///< effective duration (wall minus injected delay)
  std::vector<std::string> points;  ///< progress-point names, parallel to num / den
  std::vector<double> num, den;     ///< value = num / den (throughput: duration / delta)
};

/// The profiler's own error every printed interval holds, a fraction of the
/// estimate, added in quadrature to the statistical half-width: estimate.py's
/// SYSTEMATIC (its module doc, "The profiler's own error"); the estimates
/// record carries it, so estimate.py reproduces a record's intervals.
inline constexpr double kSystematic = 0.02;

/// A region's line fit at one progress point.
struct RegionEstimate {
  uint32_t region = 0;
  std::string name;
  uint32_t experiments = 0;  ///< non-zero-speedup points behind the fit (outliers excluded)
  uint32_t outliers = 0;
  uint32_t levels = 0;  ///< distinct non-zero speedups
  double slope = 0;     ///< b of y = b s
  double half = 0;      ///< statistical 95% half-width of b (drives the draw); NaN: no interval
  bool ranked = false;
  /// The printed half-width of b: the statistical one with kSystematic of b
  /// added in quadrature (NaN where there is no interval).
  double printed_half() const { return std::hypot(half, kSystematic * slope); }
  double key(double at) const { return slope * at; }
  double lo(double at) const { return (slope - printed_half()) * at; }
  double hi(double at) const { return (slope + printed_half()) * at; }
};

/// The estimates at one progress point.
struct PointEstimates {
  std::string point;
  double baseline = 0;  ///< pooled value (ns per visit, or ns of latency); NaN: none
  uint32_t baseline_experiments = 0;
  std::vector<RegionEstimate> regions;  ///< every region with a non-zero-speedup experiment
  int leader = -1;                      ///< index into regions of the best ranked key; -1: none ranked
  bool separated = false;               ///< the leader's lower bound is above every other ranked upper bound
  double widest = 0;                    ///< the widest ranked interval of the key (points as a fraction)
};

using coact::causal::student_t95;  // coact/causal/student_t.hpp

/// The estimates of every progress point named in `obs` (sorted by name).
/// `names` maps a region id to its name. Pure.
std::vector<PointEstimates> estimate(const std::vector<Observation>& obs,
                                     const std::unordered_map<uint32_t, std::string>& names, uint32_t min_experiments);

}  // namespace coact::causal::detail
