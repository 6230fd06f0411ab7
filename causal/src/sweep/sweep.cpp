// causal/src/sweep/sweep.cpp: the experiment loop, steps 1-10 of
// controller.cpp's opening comment: start (attach completion points, start
// line sampling), pick a progress point set, a region (draw.cpp) and a
// speedup, run the window, record the experiment, adapt the window, cool
// down. Runs on the sweep's own thread.
#include "sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/causal/line_region.hpp>

namespace coact::causal::detail {

bool sleep_until(State& s, steady::time_point deadline) {
  std::unique_lock lk(s.mu);
  return !s.cv.wait_until(lk, deadline, [&] { return s.stop_requested; });
}

Sweep::Sweep(State& s, Options o, std::unique_ptr<ProfileWriter> w, uint64_t hz, uint64_t seed, std::string origin)
    : s_(s), o_(std::move(o)), w_(std::move(w)), hz_(hz), rng_(seed), origin_(std::move(origin)) {
  max_window_ = o_.max_experiment.count() != 0 ? o_.max_experiment : o_.experiment * 16;
  window_ = o_.experiment;
}

void Sweep::run() {
  t_start_ = steady::now();
  // Step 1.
  set_completion_handlers(o_.progress_handlers);
  // A sweep that may inject delay makes G nonzero before it activates the
  // hooks (one cycle, on no thread's behalf: every thread owes it, and it
  // is below the pay catch-up threshold, so no one waits for it). While
  // G == 0 a pay point is one load (hooks.hpp pay_point_is_noop), and a
  // handler's send and the dispatch loop skip the pay; without this, the
  // experiments before the first injected delay would run on that cheaper
  // path and the rest on the paying one, and a speedup-0 baseline taken
  // early would be faster than one taken late. So the pay path is the same
  // in every experiment of a sweep: skipped throughout a sweep at fixed
  // speedup 0 (unless Options::paying_baseline: a baseline for
  // fixed-speedup runs in other processes must take their path), taken
  // throughout any other. A profile-only run injects no delay either.
  const bool fixed_zero =
      o_.fixed_speedup_pct && *o_.fixed_speedup_pct == 0 && o_.alternate_speedup_pct.value_or(0) == 0;
  if ((!fixed_zero || o_.paying_baseline) && !o_.profile_only && global_delay_cycles() == 0) {
    add_global_delay(1);
  }
  g_sweep_active.store(true, std::memory_order_relaxed);
  if (o_.sampling) {
    try {
      SourceScope scope;
      scope.patterns = o_.source_scope;
      sampling_ =
          start_line_sampling(LineSamplingOptions{o_.sample_period, scope, std::chrono::milliseconds(10),
                                                  o_.line_experiment_period, parse_sample_signal(o_.sample_signal)});
      if (!sampling_)
        std::fprintf(stderr, "coact causal: sampling did not start (already running, or a fork() child)\n");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "coact causal: sampling did not start: %s\n", e.what());
    }
  }
  for (const auto& r : region_snapshot()) {
    last_[r.id] = {r.visits, r.cycles};
    start_cycles_[r.id] = r.cycles;
  }
  for (ProgressPoint* p : progress_points()) start_counts_[p] = p->visits() + p->departures();
  std::string reason = "stopped";
  if (o_.profile_only) {
    reason = profile_only_loop();
  } else if (sleep_until(s_, steady::now() + o_.cooldown)) {
    reason = loop();
  }
  finish(reason);
}

std::string Sweep::profile_only_loop() {
  for (;;) {
    const auto end = t_start_ + o_.duration;
    const auto deadline = o_.duration.count() != 0 ? end : steady::now() + std::chrono::hours(1);
    if (!sleep_until(s_, deadline)) return "stopped";
    if (o_.duration.count() != 0 && steady::now() >= end) return "duration";
  }
}

std::string Sweep::loop() {
  const auto give_up = std::max<steady::duration>(kGiveUpMin, kGiveUpWindows * max_window_);
  for (;;) {
    if (o_.duration.count() != 0 && steady::now() - t_start_ >= o_.duration) return "duration";
    if (o_.duration.count() == 0 && summary_.experiments == 0 && steady::now() - t_start_ >= give_up) {
      // Progress was made but no region could be selected (a filter or
      // fixed region that matches nothing): say that, not "no progress".
      const auto problems = filter_problems();
      const bool no_region =
          std::any_of(problems.begin(), problems.end(), [](const auto& p) { return p.what == "unknown_region"; });
      return no_region && points_moved() ? "no_region" : "no_progress";
    }
    // Step 2.
    std::vector<ProgressPoint*> points = selected_points();
    if (points.empty()) {
      note_miss();
      if (!sleep_until(s_, steady::now() + window_)) return "stopped";
      continue;
    }
    // Step 3.
    const uint32_t region = pick_region();
    if (region == kNoRegion) {
      note_miss();
      if (!sleep_until(s_, steady::now() + window_)) return "stopped";
      continue;
    }
    // Step 4.
    uint32_t pct;
    if (o_.fixed_speedup_pct) {
      // A B B A A B B A ...: each pair of pairs is balanced in time.
      const bool b = o_.alternate_speedup_pct && ((windows_ + 1) / 2) % 2 == 1;
      pct = b ? *o_.alternate_speedup_pct : *o_.fixed_speedup_pct;
    } else {
      const uint32_t r = std::uniform_int_distribution<uint32_t>(0, kZeroSpeedupWeight + kSpeedupDivisions)(rng_);
      pct = r <= kZeroSpeedupWeight ? 0 : (r - kZeroSpeedupWeight) * (100 / kSpeedupDivisions);
    }
    // Step 5.
    std::vector<PointStart> starts;
    starts.reserve(points.size());
    for (ProgressPoint* p : points) starts.push_back({p, p->visits(), p->departures()});
    const RegionStats r0 = region_stats(region);
    const std::vector<RegionStats> h0 = handler_stats();
    const uint64_t g0 = global_delay_cycles();
    const auto t0 = steady::now();
    begin_experiment(region, pct);
    // Step 6.
    const bool completed = sleep_until(s_, t0 + window_);
    // Step 7.
    end_experiment();
    const auto t1 = steady::now();
    const uint64_t g1 = global_delay_cycles();
    const RegionStats r1 = region_stats(region);
    const std::vector<RegionStats> h1 = handler_stats();
    if (!completed) return "stopped";
    ++windows_;
    // Step 8.
    ExperimentRecord e;
    e.origin_json = origin_;
    e.index = summary_.experiments;
    e.region = r1.name;
    e.speedup_pct = pct;
    e.duration_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    e.delay_ns = static_cast<uint64_t>(calibrate::cycles_to_duration(g1 - g0, hz_).count());
    e.effective_ns = e.duration_ns > e.delay_ns ? e.duration_ns - e.delay_ns : 0;
    e.visits = r1.visits - r0.visits;
    e.region_ns = static_cast<uint64_t>(calibrate::cycles_to_duration(r1.cycles - r0.cycles, hz_).count());
    e.handlers = handler_deltas(h0, h1);
    uint64_t min_delta = UINT64_MAX;
    bool moved = false;
    for (const PointStart& st : starts) {
      ProgressPoint* p = st.point;
      if (p->kind() == ProgressKind::throughput) {
        const uint64_t d = p->visits() - st.count;
        e.throughput.push_back({p->name(), d});
        min_delta = std::min(min_delta, d);
        moved |= d != 0;
      } else {
        const uint64_t a = p->arrivals(), dep = p->departures();
        const uint64_t arrivals = a - st.count, departures = dep - st.departures;
        e.latency.push_back({p->name(), arrivals, departures, a > dep ? a - dep : 0});
        min_delta = std::min({min_delta, arrivals, departures});
        moved |= arrivals != 0 || departures != 0;
      }
    }
    if (moved) {
      w_->experiment(e);
      experimented_.insert(e.region);
      ++summary_.experiments;
      summary_.progress_reached = true;
      observe(region, e);
    } else {
      ++summary_.empty_experiments;
      note_miss();
    }
    // Step 9.
    if (min_delta < o_.min_delta) {
      window_ = std::min(window_ * 2, max_window_);
    } else if (min_delta > 2 * o_.min_delta && window_ >= 2 * o_.experiment) {
      window_ /= 2;
    }
    if (o_.max_experiments != 0 && summary_.experiments >= o_.max_experiments) return "experiments";
    if (o_.until_settled && settled_) return "settled";
    // Step 10.
    if (!sleep_until(s_, steady::now() + o_.cooldown)) return "stopped";
  }
}

std::vector<RegionStats> Sweep::handler_stats() {
  std::vector<RegionStats> all = region_snapshot();
  std::erase_if(all, [](const RegionStats& r) { return r.kind != RegionKind::handler; });
  return all;
}

std::vector<RegionTime> Sweep::handler_deltas(const std::vector<RegionStats>& before,
                                              const std::vector<RegionStats>& after) const {
  std::vector<RegionTime> out;
  size_t i = 0;
  for (const RegionStats& a : after) {
    while (i < before.size() && before[i].id < a.id) ++i;
    const bool known = i < before.size() && before[i].id == a.id;
    const uint64_t v = a.visits - (known ? before[i].visits : 0);
    const uint64_t cy = a.cycles - (known ? before[i].cycles : 0);
    if (v == 0) continue;
    out.push_back({a.name, v, static_cast<uint64_t>(calibrate::cycles_to_duration(cy, hz_).count())});
  }
  std::stable_sort(out.begin(), out.end(), [](const RegionTime& x, const RegionTime& y) { return x.ns > y.ns; });
  return out;
}

bool Sweep::points_moved() {
  for (ProgressPoint* p : selected_points()) {
    auto it = start_counts_.find(p);
    if (p->visits() + p->departures() > (it == start_counts_.end() ? 0 : it->second)) return true;
  }
  return false;
}

std::vector<ProgressPoint*> Sweep::selected_points() {
  std::vector<ProgressPoint*> out;
  for (ProgressPoint* p : progress_points()) {
    if (p->handler_completion()) {
      if (matches_any(p->name(), o_.progress_handlers)) out.push_back(p);
    } else if (o_.progress.empty() || matches_any(p->name(), o_.progress)) {
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace coact::causal::detail
