// causal/src/sweep/draw.cpp: which region the next experiment speeds up
// (step 3 of controller.cpp's opening comment: the fixed region, or a draw
// by evidence, time or uniformly), and the running estimates that steer the
// evidence draw and decide Options::until_settled (observe, which writes the
// "estimates" record). Runs on the sweep's own thread.
#include "sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <coact/calibrate/tsc.hpp>

namespace coact::causal::detail {

uint32_t Sweep::pick_region() {
  const std::vector<RegionStats> regions = region_snapshot();
  std::vector<uint32_t> ran;
  std::vector<double> weight;  // exclusive cycles since the previous pick (at least 1)
  for (const auto& r : regions) {
    auto& [visits, cycles] = last_[r.id];
    if (r.visits > visits && (o_.region_filter.empty() || matches_any(r.name, o_.region_filter))) {
      ran.push_back(r.id);
      weight.push_back(static_cast<double>(std::max<uint64_t>(r.cycles - std::min(cycles, r.cycles), 1)));
    }
    visits = r.visits;
    cycles = r.cycles;
  }
  if (!o_.fixed_region.empty()) return resolve_fixed(regions);
  if (ran.empty()) return kNoRegion;
  switch (o_.region_weight) {
    case RegionWeight::time:
      return ran[std::discrete_distribution<size_t>(weight.begin(), weight.end())(rng_)];
    case RegionWeight::uniform:
      return ran[std::uniform_int_distribution<size_t>(0, ran.size() - 1)(rng_)];
    case RegionWeight::evidence:
      break;
  }
  return pick_by_evidence(regions, ran, weight);
}

std::unordered_map<uint32_t, double> Sweep::time_shares(const std::vector<RegionStats>& regions) const {
  std::unordered_map<uint32_t, double> share;
  double total = 0;
  for (const auto& r : regions) {
    if (!o_.region_filter.empty() && !matches_any(r.name, o_.region_filter)) continue;
    auto it = start_cycles_.find(r.id);
    const uint64_t c0 = it == start_cycles_.end() ? 0 : std::min(it->second, r.cycles);
    share[r.id] = static_cast<double>(r.cycles - c0);
    total += static_cast<double>(r.cycles - c0);
  }
  for (auto& [id, v] : share) v = total > 0 ? v / total : 0;
  return share;
}

uint32_t Sweep::pick_by_evidence(const std::vector<RegionStats>& regions, const std::vector<uint32_t>& ran,
                                 const std::vector<double>& time_weight) {
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const auto share = time_shares(regions);
  const double floor = static_cast<double>(o_.time_share_floor_pct) / 100.0;
  std::vector<uint32_t> above;
  for (uint32_t id : ran) {
    auto it = share.find(id);
    if (it != share.end() && it->second >= floor) above.push_back(id);
  }
  // Now and then, and whenever nothing above the floor ran, a draw by time
  // among every region that ran: the small ones are looked at too.
  if (above.empty() || u01(rng_) < kBelowFloorDraws) {
    return ran[std::discrete_distribution<size_t>(time_weight.begin(), time_weight.end())(rng_)];
  }
  // 1. Regions without enough evidence at some progress point first.
  std::vector<uint32_t> unexplored;
  for (uint32_t id : above) {
    if (!ranked_everywhere(id)) unexplored.push_back(id);
  }
  if (!unexplored.empty()) return unexplored[std::uniform_int_distribution<size_t>(0, unexplored.size() - 1)(rng_)];
  // 2. At one progress point (each equally often): mostly the leader or
  // its closest challenger, whichever interval is wider; else any region
  // in proportion to its interval's squared width.
  const detail::PointEstimates& pe = estimates_[std::uniform_int_distribution<size_t>(0, estimates_.size() - 1)(rng_)];
  auto find = [&](uint32_t id) -> const detail::RegionEstimate* {
    for (const auto& r : pe.regions) {
      if (r.region == id) return &r;
    }
    return nullptr;
  };
  const bool in_above_leader =
      pe.leader >= 0 && std::find(above.begin(), above.end(), pe.regions[size_t(pe.leader)].region) != above.end();
  if (in_above_leader && u01(rng_) < kLeaderDraws) {
    const detail::RegionEstimate& l = pe.regions[size_t(pe.leader)];
    const detail::RegionEstimate* c = nullptr;
    for (uint32_t id : above) {
      const detail::RegionEstimate* r = find(id);
      if (r != nullptr && r->region != l.region && r->ranked &&
          (c == nullptr || r->slope + r->half > c->slope + c->half)) {
        c = r;
      }
    }
    return c != nullptr && c->half > l.half ? c->region : l.region;
  }
  std::vector<double> w;
  for (uint32_t id : above) {
    const detail::RegionEstimate* r = find(id);
    w.push_back(r != nullptr && std::isfinite(r->half) ? std::max(r->half * r->half, 1e-12) : 1.0);
  }
  return above[std::discrete_distribution<size_t>(w.begin(), w.end())(rng_)];
}

bool Sweep::ranked_everywhere(uint32_t id) const {
  if (estimates_.empty()) return false;
  for (const auto& pe : estimates_) {
    const auto it = std::find_if(pe.regions.begin(), pe.regions.end(),
                                 [&](const detail::RegionEstimate& r) { return r.region == id; });
    if (it == pe.regions.end() || !it->ranked) return false;
  }
  return true;
}

void Sweep::observe(uint32_t region, const ExperimentRecord& e) {
  detail::Observation ob;
  ob.region = region;
  ob.speedup = static_cast<double>(e.speedup_pct) / 100.0;
  ob.duration_ns = static_cast<double>(e.effective_ns);
  const double dur = static_cast<double>(e.effective_ns);
  for (const auto& t : e.throughput) {
    ob.points.push_back(t.name);
    ob.num.push_back(dur);
    ob.den.push_back(static_cast<double>(t.delta));
  }
  for (const auto& l : e.latency) {
    ob.points.push_back(l.name);
    ob.num.push_back(static_cast<double>(l.difference) * dur);
    ob.den.push_back(static_cast<double>(l.arrivals));
  }
  observations_.push_back(std::move(ob));
  names_[region] = e.region;
  estimates_ = detail::estimate(observations_, names_, o_.min_experiments);

  const std::vector<RegionStats> regions = region_snapshot();
  const auto share = time_shares(regions);
  const double floor = static_cast<double>(o_.time_share_floor_pct) / 100.0;
  const double width = static_cast<double>(o_.settle_width_pct) / 100.0;
  bool settled = !estimates_.empty();
  nlohmann::json points = nlohmann::json::array();
  for (const auto& pe : estimates_) {
    uint32_t unranked_above_floor = 0;  // regions above the floor that ran in the sweep, not yet ranked
    for (const auto& [id, sh] : share) {
      if (sh < floor || sh <= 0) continue;
      const auto it = std::find_if(pe.regions.begin(), pe.regions.end(),
                                   [&](const detail::RegionEstimate& r) { return r.region == id; });
      if (it == pe.regions.end() || !it->ranked) ++unranked_above_floor;
    }
    const bool all_ranked = unranked_above_floor == 0;
    const bool narrow = width > 0 && pe.leader >= 0 && pe.widest * kRankAt < width;
    const bool ok = pe.leader >= 0 && all_ranked && (pe.separated || narrow);
    settled = settled && ok;
    nlohmann::json rs = nlohmann::json::array();
    for (const auto& r : pe.regions) {
      auto it = share.find(r.region);
      rs.push_back({{"name", r.name},
                    {"experiments", r.experiments},
                    {"outliers", r.outliers},
                    {"ranked", r.ranked},
                    {"key", r.key(kRankAt)},
                    {"ci", std::isfinite(r.half) ? nlohmann::json::array({r.lo(kRankAt), r.hi(kRankAt)})
                                                 : nlohmann::json::array({nullptr, nullptr})},
                    {"time_share", it == share.end() ? 0.0 : it->second}});
    }
    points.push_back({{"point", pe.point},
                      {"baseline_experiments", pe.baseline_experiments},
                      {"leader", pe.leader >= 0 ? nlohmann::json(pe.regions[size_t(pe.leader)].name) : nullptr},
                      {"settled", ok},
                      {"unranked_above_floor", unranked_above_floor},
                      {"regions", std::move(rs)}});
  }
  // Every region with an experiment, speedup 0 included: a reader of the
  // profile (estimate.py's settlement) applies the floor to the same regions.
  nlohmann::json shares = nlohmann::json::object();
  for (const auto& [id, name] : names_) {
    auto it = share.find(id);
    shares[name] = it == share.end() ? 0.0 : it->second;
  }
  settled_ = settled;
  summary_.settled = settled;
  summary_.leader.clear();
  if (!estimates_.empty() && estimates_.front().leader >= 0) {
    summary_.leader = estimates_.front().regions[size_t(estimates_.front().leader)].name;
  }
  w_->json_line(nlohmann::json{{"type", "estimates"},
                               {"experiments", summary_.experiments},
                               {"rank_at", kRankAt},
                               {"min_experiments", o_.min_experiments},
                               {"time_share_floor", floor},
                               {"time_shares", std::move(shares)},
                               {"systematic", detail::kSystematic},
                               {"settled", settled},
                               {"points", std::move(points)}}
                    .dump());
}

uint32_t Sweep::resolve_fixed(const std::vector<RegionStats>& regions) {
  if (fixed_id_ != kNoRegion) return fixed_id_;
  std::vector<const RegionStats*> partial;
  for (const auto& r : regions) {
    if (r.name == o_.fixed_region) return fixed_id_ = r.id;
    if (r.name.find(o_.fixed_region) != std::string::npos) partial.push_back(&r);
  }
  if (partial.size() == 1) return fixed_id_ = partial.front()->id;
  fixed_ambiguous_.clear();
  for (const auto* r : partial) fixed_ambiguous_.push_back(r->name);
  return kNoRegion;
}

}  // namespace coact::causal::detail
