// causal/src/sweep/records.cpp: what a sweep says besides its experiments:
// the early warnings while no experiment is written (note_miss), the filter
// problems, the "names", "profile", "sampler", "warning", "error" and
// "summary" records (formats in controller.cpp's opening comment), and step
// 11, the end of a sweep (finish). Runs on the sweep's own thread;
// finish_summary tells Controller's API that the sweep is over.
#include "sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/causal/line_region.hpp>
#include <coact/causal/sampler.hpp>

namespace coact::causal::detail {

void Sweep::note_miss() {
  if (early_names_written_ || summary_.experiments != 0) return;
  const auto elapsed = steady::now() - t_start_;
  if (elapsed < kGraceWindows * o_.experiment) return;
  early_names_written_ = true;
  auto warn = [&](const std::string& what, const std::string& message, const std::vector<std::string>& names) {
    w_->json_line(dump_record({{"type", "warning"}, {"what", what}, {"message", message}, {"names", names}}));
  };
  const auto problems = filter_problems();
  for (const auto& [what, message, names] : problems) warn(what, message + " (so far)", names);
  if (problems.empty()) {
    std::vector<std::string> names;
    for (ProgressPoint* p : selected_points()) names.push_back(p->name());
    const double secs = std::chrono::duration<double>(elapsed).count();
    const std::string limit =
        o_.duration.count() != 0
            ? fmt::format("the sweep runs on until its duration ({} s)", o_.duration.count())
            : fmt::format(
                  "the sweep stops experimenting if none is reached in its first {:.0f} s",
                  std::chrono::duration<double>(std::max<steady::duration>(kGiveUpMin, kGiveUpWindows * max_window_))
                      .count());
    warn("no_progress",
         names.empty() ? fmt::format("no {}progress point has been reached in {:.1f} s (so far); {}",
                                     o_.progress.empty() ? "" : "matching ", secs, limit)
                       : fmt::format("no visit of {} in {:.1f} s (so far); {}", fmt::join(names, ", "), secs, limit),
         names);
  }
  write_names();
}

std::vector<Sweep::Problem> Sweep::filter_problems() {
  std::vector<Problem> out;
  const auto regions = region_snapshot();
  const auto points = progress_points();
  auto unmatched = [](const std::vector<std::string>& entries, auto&& has) {
    std::vector<std::string> miss;
    for (const auto& e : entries) {
      if (!has(e)) miss.push_back(e);
    }
    return miss;
  };
  auto region_has = [&](const std::string& e, bool handlers_only) {
    return std::any_of(regions.begin(), regions.end(), [&](const RegionStats& r) {
      return (!handlers_only || r.kind == RegionKind::handler) && r.name.find(e) != std::string::npos;
    });
  };
  auto m = unmatched(o_.progress, [&](const std::string& e) {
    return std::any_of(points.begin(), points.end(), [&](ProgressPoint* p) {
      return !p->handler_completion() && p->name().find(e) != std::string::npos;
    });
  });
  if (!m.empty()) {
    out.push_back({"unknown_progress",
                   fmt::format("COACT_CAUSAL_PROGRESS: no progress point matches '{}'", fmt::join(m, "', '")), m});
  }
  m = unmatched(o_.progress_handlers, [&](const std::string& e) { return region_has(e, true); });
  if (!m.empty()) {
    out.push_back({"unknown_handler",
                   fmt::format("COACT_CAUSAL_PROGRESS_HANDLER: no handler region matches '{}'", fmt::join(m, "', '")),
                   m});
  }
  m = unmatched(o_.region_filter, [&](const std::string& e) { return region_has(e, false); });
  if (!m.empty()) {
    out.push_back(
        {"unknown_region", fmt::format("COACT_CAUSAL_REGION_FILTER: no region matches '{}'", fmt::join(m, "', '")), m});
  }
  if (!o_.fixed_region.empty() && fixed_id_ == kNoRegion) {
    (void)resolve_fixed(regions);
    if (fixed_id_ == kNoRegion) {
      std::string message =
          fixed_ambiguous_.empty()
              ? fmt::format("COACT_CAUSAL_FIXED_REGION: no region is named '{}'", o_.fixed_region)
              : fmt::format("COACT_CAUSAL_FIXED_REGION: '{}' matches {} regions ({}); give the exact name",
                            o_.fixed_region, fixed_ambiguous_.size(), fmt::join(fixed_ambiguous_, "; "));
      out.push_back({"unknown_region", std::move(message), {o_.fixed_region}});
    }
  }
  return out;
}

void Sweep::write_names() {
  nlohmann::ordered_json regions = nlohmann::ordered_json::array();
  for (const auto& r : region_snapshot()) {
    regions.push_back({{"name", r.name}, {"kind", to_string(r.kind)}, {"visits", r.visits}});
  }
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (ProgressPoint* p : progress_points()) {
    points.push_back({{"name", p->name()},
                      {"kind", to_string(p->kind())},
                      {"handler", p->handler_completion()},
                      {"visits", p->visits()}});
  }
  w_->json_line(dump_record({{"type", "names"}, {"regions", std::move(regions)}, {"progress", std::move(points)}}));
}

void Sweep::write_profile_record(uint64_t runtime_ns) {
  std::vector<RegionStats> regions = region_snapshot();
  for (auto& r : regions) {  // this run's share (the counters are the process's)
    if (auto it = last_.find(r.id); it != last_.end()) {
      r.visits -= std::min(r.visits, it->second.first);
      r.cycles -= std::min(r.cycles, it->second.second);
    }
  }
  std::erase_if(regions, [](const RegionStats& r) { return r.visits == 0; });
  std::stable_sort(regions.begin(), regions.end(),
                   [](const RegionStats& a, const RegionStats& b) { return a.cycles > b.cycles; });
  nlohmann::ordered_json rs = nlohmann::ordered_json::array();
  for (const auto& r : regions) {
    rs.push_back({{"name", r.name},
                  {"kind", to_string(r.kind)},
                  {"visits", r.visits},
                  {"time_ns", calibrate::cycles_to_duration(r.cycles, hz_).count()}});
  }
  w_->json_line(dump_record({{"type", "profile"}, {"runtime_ns", runtime_ns}, {"regions", std::move(rs)}}));
}

void Sweep::write_sampler_record() {
  const LineSamplingStats ls = line_sampling_stats();
  const SamplerStats ss = sampler_stats();
  nlohmann::ordered_json unsampled = nlohmann::ordered_json::array();
  for (const auto& u : ss.unsampled) unsampled.push_back({{"tid", u.tid}, {"name", u.name}});
  w_->json_line(dump_record({{"type", "sampler"},
                             {"period_ns", ss.period_ns},
                             {"samples", ls.samples},
                             {"periods", ls.periods},
                             {"attributed", ls.attributed},
                             {"dropped", ss.dropped},
                             {"delayed", ls.delayed},
                             {"line_regions", ls.line_regions},
                             {"threads_sampled", ss.threads_registered},
                             {"threads_exited", ss.threads_exited},
                             {"unsampled_threads", std::move(unsampled)},
                             {"symbolizer_error", ls.symbolizer_error},
                             {"experiment_period_ns", ls.experiment_period_ns},
                             {"samples_cpu_timer", ss.samples_cpu_timer},
                             {"samples_perf_event", ss.samples_perf_event},
                             {"threads_perf_event", ss.threads_perf_event},
                             {"signal", ss.signal_name},
                             {"foreign_handler", ss.foreign_handler},
                             {"handler_replaced", ss.handler_replaced},
                             {"foreign_signals", ss.foreign_signals},
                             {"no_debug_info", ls.no_debug_info}}));
}

void Sweep::error(const std::string& what, const std::string& message, const std::vector<std::string>& names) {
  if (o_.print_notes) std::fprintf(stderr, "coact causal: %s\n", message.c_str());
  summary_.errors.push_back(message);
  w_->json_line(dump_record({{"type", "error"}, {"what", what}, {"message", message}, {"names", names}}));
}

void Sweep::finish(const std::string& reason) {
  end_experiment();
  if (sampling_) {
    stop_line_sampling();
    write_sampler_record();
  }
  g_sweep_active.store(false, std::memory_order_relaxed);
  set_completion_handlers({});
  const auto runtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - t_start_).count();
  std::vector<RegionCount> samples;
  for (const auto& r : region_snapshot()) samples.push_back({r.name, r.visits});
  w_->runtime(static_cast<uint64_t>(runtime_ns), samples);
  write_names();
  if (o_.profile_only) {
    write_profile_record(static_cast<uint64_t>(runtime_ns));
    finish_summary(reason);
    return;
  }
  const auto problems = filter_problems();
  for (const auto& p : problems) error(p.what, p.message, p.names);
  warn_filter_without_experiments(problems.empty());
  // A filter that matched nothing has said why nothing was recorded.
  if (summary_.experiments == 0 && problems.empty()) {
    std::vector<std::string> names;
    bool moved = false;
    for (ProgressPoint* p : selected_points()) {
      names.push_back(p->name());
      auto it = start_counts_.find(p);
      moved |= p->visits() + p->departures() > (it == start_counts_.end() ? 0 : it->second);
    }
    const double secs = static_cast<double>(runtime_ns) / 1e9;
    if (names.empty()) {
      error("no_progress",
            fmt::format("no progress point was reached in {:.1f} s: the program never hit a {}progress point; add "
                        "COACT_PROGRESS / COACT_BEGIN / COACT_END, or name a handler with "
                        "COACT_CAUSAL_PROGRESS_HANDLER",
                        secs, o_.progress.empty() ? "" : "matching "),
            names);
    } else if (!moved) {
      error("no_progress",
            fmt::format("no progress point was reached in {:.1f} s ({} experiment window(s)): no visit of {}", secs,
                        windows_, fmt::join(names, ", ")),
            names);
    } else {
      error("no_experiments",
            fmt::format("no experiment finished in {:.1f} s although {} moved: the sweep ended before a window "
                        "of {} ms completed with progress, or no region ran",
                        secs, fmt::join(names, ", "), window_.count()),
            names);
    }
  }
  finish_summary(reason);
}

void Sweep::finish_summary(const std::string& reason) {
  summary_.reason = reason;
  nlohmann::json rec{{"type", "summary"},
                     {"experiments", summary_.experiments},
                     {"empty_experiments", summary_.empty_experiments},
                     {"progress_reached", summary_.progress_reached},
                     {"reason", reason}};
  if (!o_.profile_only) {
    rec["settled"] = summary_.settled;
    rec["leader"] = summary_.leader.empty() ? nlohmann::json(nullptr) : nlohmann::json(summary_.leader);
  }
  std::string line = rec.dump();
  if (!origin_.empty()) line.insert(line.size() - 1, origin_);  // before the closing brace
  w_->json_line(line);
  w_.reset();  // close the files before anyone is told we are done
  std::lock_guard lk(s_.mu);
  s_.summary = summary_;
  s_.done = true;
  s_.running.store(false, std::memory_order_relaxed);
  s_.cv.notify_all();
}

void Sweep::warn_filter_without_experiments(bool matched) {
  if (!matched || summary_.experiments == 0 || o_.region_filter.empty() || !o_.fixed_region.empty()) return;
  std::vector<std::string> missed;
  for (const auto& f : o_.region_filter) {
    if (std::none_of(experimented_.begin(), experimented_.end(),
                     [&](const std::string& r) { return r.find(f) != std::string::npos; })) {
      missed.push_back(f);
    }
  }
  if (missed.empty()) return;
  const std::string message = fmt::format(
      "warning: COACT_CAUSAL_REGION_FILTER: no experiment selected a region matching '{}' ({} experiments went to "
      "{})",
      fmt::join(missed, "', '"), summary_.experiments, fmt::join(experimented_, "; "));
  if (o_.print_notes) std::fprintf(stderr, "coact causal: %s\n", message.c_str());
  w_->json_line(dump_record(
      {{"type", "warning"}, {"what", "filter_without_experiments"}, {"message", message}, {"names", missed}}));
}

}  // namespace coact::causal::detail
