// The sweep's running estimates (evidence.hpp): the line model of
// reports/coact_reports/estimate.py, step by step as numbered there.
#include "evidence.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace coact::causal {

double student_t95(uint32_t df) {
  // The 0.975 quantile (two-sided 95%): df 1..30 from a table, beyond that
  // Hill's expansion around the normal quantile to 1/df^4 (error < 3e-8).
  static constexpr double kTable[] = {
      0,           12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581837, 2.446911849, 2.364624251,
      2.306004135, 2.262157163,  2.228138852, 2.200985160, 2.178812830, 2.160368656, 2.144786688, 2.131449546,
      2.119905299, 2.109815578,  2.100922040, 2.093024054, 2.085963447, 2.079613845, 2.073873068, 2.068657610,
      2.063898562, 2.059538553,  2.055529439, 2.051830516, 2.048407142, 2.045229642, 2.042272456};
  if (df == 0) return std::nan("");
  if (df <= 30) return kTable[df];
  const double z = 1.959963984540054, n = df;
  const double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
  return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * n * n * n) +
         (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * n * n * n * n);
}

}  // namespace coact::causal

namespace coact::causal::detail {

namespace {

constexpr double kOutlierMads = 3.5;  // Hampel's rule
constexpr size_t kOutlierMinN = 10;
constexpr double kOutlierMaxShare = 0.10;  // at most this share of the points, the most extreme first
constexpr uint32_t kMinLevels = 3;
constexpr uint32_t kMinBaseline = 3;
constexpr double kMinY = -1.0, kMaxY = 2.0;
constexpr double kMinSe = 1e-9;  // a standard error below this is no interval (exact data), never a zero-width one

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// True at each outlier by Hampel's rule, at most kOutlierMaxShare of the
// values, the most extreme first (nothing below kOutlierMinN values or with
// a zero MAD). Ties in deviation keep the earlier value first, as
// estimate.py's stable sort does.
std::vector<bool> hampel(const std::vector<double>& v) {
  std::vector<bool> out(v.size(), false);
  if (v.size() < kOutlierMinN) return out;
  const double med = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - med));
  const double mad = 1.4826 * median(dev);
  if (!(mad > 0)) return out;
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return dev[a] > dev[b]; });
  const auto most = static_cast<size_t>(static_cast<double>(v.size()) * kOutlierMaxShare);
  for (size_t k = 0; k < most; ++k) {
    if (dev[order[k]] > kOutlierMads * mad) out[order[k]] = true;
  }
  return out;
}

struct Pt {
  double s, y, w;
};

}  // namespace

std::vector<PointEstimates> estimate(const std::vector<Observation>& obs,
                                     const std::unordered_map<uint32_t, std::string>& names, uint32_t min_experiments) {
  std::set<std::string> point_names;
  for (const auto& o : obs) point_names.insert(o.points.begin(), o.points.end());
  std::vector<PointEstimates> out;
  for (const std::string& point : point_names) {
    PointEstimates pe;
    pe.point = point;
    // Step 1: the pooled baseline.
    std::vector<std::pair<double, double>> base;  // (num, den)
    for (const auto& o : obs) {
      if (o.speedup != 0) continue;
      for (size_t j = 0; j < o.points.size(); ++j) {
        if (o.points[j] == point && o.den[j] > 0 && o.num[j] > 0) base.emplace_back(o.num[j], o.den[j]);
      }
    }
    std::vector<double> logv;
    for (auto [n, d] : base) logv.push_back(std::log(n / d));
    const std::vector<bool> base_out = hampel(logv);
    double sn = 0, sd = 0;
    std::vector<std::pair<double, double>> kept;
    for (size_t i = 0; i < base.size(); ++i) {
      if (base_out[i]) continue;
      kept.push_back(base[i]);
      sn += base[i].first;
      sd += base[i].second;
    }
    const size_t m = kept.size();
    pe.baseline_experiments = static_cast<uint32_t>(m);
    pe.baseline = sd > 0 ? sn / sd : std::nan("");
    double rse = std::nan("");
    if (m >= 2 && pe.baseline > 0) {
      double ss = 0;
      for (auto [n, d] : kept) ss += (n - pe.baseline * d) * (n - pe.baseline * d);
      const double mean_den = sd / static_cast<double>(m);
      rse = std::sqrt(ss / (static_cast<double>(m) * static_cast<double>(m - 1) * mean_den * mean_den)) / pe.baseline;
    }
    if (!(pe.baseline > 0)) {
      out.push_back(std::move(pe));
      continue;
    }
    // Step 2: each region's points.
    std::map<uint32_t, std::vector<Pt>> by_region;
    for (const auto& o : obs) {
      if (o.speedup == 0) continue;
      for (size_t j = 0; j < o.points.size(); ++j) {
        if (o.points[j] != point || !(o.den[j] > 0)) continue;
        const double y = (pe.baseline - o.num[j] / o.den[j]) / pe.baseline;
        if (std::isfinite(y) && y >= kMinY && y <= kMaxY) by_region[o.region].push_back({o.speedup, y, o.duration_ns});
      }
    }
    for (auto& [region, pts] : by_region) {
      RegionEstimate re;
      re.region = region;
      auto it = names.find(region);
      re.name = it != names.end() ? it->second : std::to_string(region);
      auto fit = [](const std::vector<Pt>& p, double& b, double& rss, double& sww) {
        double wsum = 0;
        for (const auto& q : p) wsum += q.w;
        const double scale = wsum > 0 ? static_cast<double>(p.size()) / wsum : 1.0;  // weights of mean 1
        double sxy = 0, sxx = 0;
        for (const auto& q : p) {
          const double w = wsum > 0 ? q.w * scale : 1.0;
          sxy += w * q.s * q.y;
          sxx += w * q.s * q.s;
        }
        b = sxx > 0 ? sxy / sxx : 0;
        rss = 0;
        for (const auto& q : p) {
          const double w = wsum > 0 ? q.w * scale : 1.0;
          rss += w * (q.y - b * q.s) * (q.y - b * q.s);
        }
        sww = sxx;
        return scale;
      };
      double b = 0, rss = 0, sxx = 0;
      fit(pts, b, rss, sxx);
      std::vector<double> resid;
      for (const auto& q : pts) resid.push_back(q.y - b * q.s);
      const std::vector<bool> out_pts = hampel(resid);
      std::vector<Pt> kept_pts;
      for (size_t i = 0; i < pts.size(); ++i) {
        if (out_pts[i]) {
          ++re.outliers;
        } else {
          kept_pts.push_back(pts[i]);
        }
      }
      const double scale = fit(kept_pts, b, rss, sxx);
      re.slope = b;
      re.experiments = static_cast<uint32_t>(kept_pts.size());
      std::set<double> levels;
      for (const auto& q : kept_pts) levels.insert(q.s);
      re.levels = static_cast<uint32_t>(levels.size());
      // Step 3.
      re.half = std::nan("");
      const size_t n = kept_pts.size();
      if (n >= 2 && m >= 2 && sxx > 0 && std::isfinite(rse)) {
        double g = 0;
        for (const auto& q : kept_pts) g += q.w * scale * q.s * (1 - q.y);
        g /= sxx;
        const double var = rss / static_cast<double>(n - 1) / sxx + g * g * rse * rse;
        const uint32_t df = static_cast<uint32_t>(std::min(n - 1, m - 1));
        const double se = std::sqrt(std::max(var, 0.0));
        if (std::isfinite(se) && se > kMinSe) re.half = student_t95(df) * se;
      }
      // Step 4.
      re.ranked =
          re.experiments >= min_experiments && re.levels >= kMinLevels && m >= kMinBaseline && std::isfinite(re.half);
      pe.regions.push_back(std::move(re));
    }
    for (size_t i = 0; i < pe.regions.size(); ++i) {
      const auto& r = pe.regions[i];
      if (!r.ranked) continue;
      if (pe.leader < 0 || r.slope > pe.regions[static_cast<size_t>(pe.leader)].slope) pe.leader = static_cast<int>(i);
      pe.widest = std::max(pe.widest, 2 * r.printed_half());
    }
    if (pe.leader >= 0) {
      const auto& l = pe.regions[static_cast<size_t>(pe.leader)];
      pe.separated = true;
      for (size_t i = 0; i < pe.regions.size(); ++i) {
        const auto& r = pe.regions[i];
        if (static_cast<int>(i) != pe.leader && r.ranked &&
            !(r.slope + r.printed_half() < l.slope - l.printed_half())) {
          pe.separated = false;
        }
      }
    }
    out.push_back(std::move(pe));
  }
  return out;
}

}  // namespace coact::causal::detail
