// examples/common/alternation.hpp: A/B in one run, for the examples'
// --alternate (coact-dedup: passes; coact-analytics: blocks of jobs). It
// says which unit of work runs the variant, and keeps what each arm
// measured: its units' seconds and, under a causal sweep, every region's
// visits and time, split at the unit boundaries. `coact-profile validate`
// reads the result (to_json) as a real row's truth: one process compares
// the two, so the machine's speed, which differs between processes and
// drifts within one over seconds, cancels.
//
// Threads: one owner calls begin/end in turn (a driver between passes, or
// one actor's handlers); not thread-safe. Region counters only run during a
// sweep (coact/causal/region.hpp), so without one the arms hold seconds only.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <coact/calibrate/tsc.hpp>
#include <coact/causal/region.hpp>

namespace coact::examples {

class Alternation {
 public:
  /// The arm of unit `unit`: -1 for unit 0 (start-up: page cache, a
  /// profiler's symbolizer; in neither arm), then 0 (A, the baseline) and
  /// 1 (B, the variant) in the order A B B A A B B A ..., so that within
  /// every four units each arm has one earlier and one later unit and a
  /// linear drift of the machine's speed cancels.
  static int arm_of(uint64_t unit) { return unit == 0 ? -1 : static_cast<int>((unit / 2) % 2); }

  /// At the start of unit `unit`: remembers the region counters.
  void begin(uint64_t unit) {
    unit_ = unit;
    before_.clear();
    for (const causal::RegionStats& r : causal::region_snapshot()) before_[r.id] = {r.visits, r.cycles};
  }

  /// At the end of the unit begun last, which took `seconds`: adds them,
  /// and the regions' growth since begin(), to its arm (none for unit 0).
  void end(double seconds) {
    const int a = arm_of(unit_);
    if (a < 0) return;
    Arm& arm = arms_[static_cast<size_t>(a)];
    arm.seconds.push_back(seconds);
    for (const causal::RegionStats& r : causal::region_snapshot()) {
      const auto was = before_.find(r.id);  // absent: registered during the unit
      const auto [v0, c0] = was == before_.end() ? std::pair<uint64_t, uint64_t>{0, 0} : was->second;
      if (r.visits == v0) continue;
      auto& [visits, cycles] = arm.regions[r.name];
      visits += r.visits - v0;
      cycles += r.cycles - c0;
    }
  }

  /// {"order": "ABBA", "unit": UNIT, "progress_per_unit": N,
  ///  "baseline": ARM, "variant": ARM}, each ARM {"seconds": [one per
  /// unit], "regions": {NAME: {"visits": V, "ns": T}}}.
  nlohmann::json to_json(std::string_view unit, uint64_t progress_per_unit) const {
    nlohmann::json j = {{"order", "ABBA"}, {"unit", unit}, {"progress_per_unit", progress_per_unit}};
    const bool any = !arms_[0].regions.empty() || !arms_[1].regions.empty();
    const double hz = any ? static_cast<double>(calibrate::tsc_hz()) : 0;
    for (size_t a = 0; a < 2; ++a) {
      nlohmann::json regions = nlohmann::json::object();
      for (const auto& [name, vc] : arms_[a].regions)
        regions[name] = {{"visits", vc.first}, {"ns", static_cast<double>(vc.second) * 1e9 / hz}};
      j[a == 0 ? "baseline" : "variant"] = {{"seconds", arms_[a].seconds}, {"regions", regions}};
    }
    return j;
  }

 private:
  struct Arm {
    std::vector<double> seconds;
    std::map<std::string, std::pair<uint64_t, uint64_t>> regions;  // visits, TSC cycles
  };
  std::array<Arm, 2> arms_;
  uint64_t unit_ = 0;
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> before_;  // by region id: visits, cycles at begin()
};

}  // namespace coact::examples
