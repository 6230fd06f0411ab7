// causal/src/sweep/sweep.hpp: the sweep's private declarations, shared by
// its files (one mechanism each):
//   controller.cpp      Controller's API (start, stop, wait, the fork hook):
//                       the State it shares with the sweep's thread;
//   controller_options.cpp  Options from the COACT_CAUSAL_* keys and back
//                       (options_from, to_env, options_json, start_from_env);
//   sweep/sweep.cpp     the experiment loop (controller.cpp's steps 1-10);
//   sweep/draw.cpp      which region to speed up next (step 3) and the
//                       running estimates that steer it (observe);
//   sweep/records.cpp   what the sweep says: the names, profile, sampler,
//                       warning, error and summary records, and step 11.
// The numbered steps are in controller.cpp's opening comment. Internal to
// libcoact_causal; everything here runs on the sweep's own thread except
// State, which start/stop/wait share with it under its mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <coact/causal/controller.hpp>
#include <coact/causal/profile_writer.hpp>
#include <coact/causal/progress.hpp>
#include <coact/causal/region.hpp>

#include "../evidence.hpp"

namespace coact::causal::detail {

using steady = std::chrono::steady_clock;

// Coz's speedup draw (libcoz/profiler.h: SpeedupDivisions = 20, ZeroSpeedupWeight = 7).
inline constexpr uint32_t kSpeedupDivisions = 20;
inline constexpr uint32_t kZeroSpeedupWeight = 7;
// Initial windows without any experiment before the early names + warning
// records (1.5 s with the default 500 ms window).
inline constexpr int kGraceWindows = 3;
// Without Options::duration, a sweep that has written no experiment after
// max(kGiveUpMin, kGiveUpWindows x the window cap) stops experimenting with a
// "no_progress" error (16 s with the defaults): a server whose progress point
// is never reached, or whose filter matches nothing, is told so while it runs.
inline constexpr std::chrono::seconds kGiveUpMin{5};
inline constexpr int kGiveUpWindows = 2;
// The ranking compares regions at this virtual speedup (coact-plot's default
// --rank-at): a handler made a quarter faster.
inline constexpr double kRankAt = 0.25;
// Evidence draw: the share of draws made by running time among every region
// that ran (so regions below the time-share floor are looked at too), and of
// the rest, the share spent on the leader or its closest challenger.
inline constexpr double kBelowFloorDraws = 0.05;
inline constexpr double kLeaderDraws = 0.75;

/// What Controller's API shares with the sweep's thread.
struct State {
  std::mutex api_mu;  // serialises start / stop (held across the join)
  std::mutex mu;      // guards the fields below
  std::condition_variable cv;
  bool stop_requested = false;  // set by stop(), read by the controller's sleeps
  bool done = false;            // set by the controller thread when it has written its end records
  SweepSummary summary;         // written by the controller thread before done
  std::thread thread;           // guarded by api_mu
  // True from start() until the sweep has written its end records. Written by
  // start() (under api_mu) and by the controller thread (under mu); read by
  // running() (relaxed: an answer that may be momentarily stale is all it
  // promises; start() re-checks under api_mu and joins a finished thread).
  std::atomic<bool> running{false};
};

/// True in a forked child that left the parent's sweep (controller.cpp):
/// no sweep starts there. Any thread.
bool left_in_forked_child() noexcept;

/// Sleeps until `deadline` (wall clock) or stop(); false if stop() was called.
bool sleep_until(State& s, steady::time_point deadline);

/// One JSON record as a line's text: invalid UTF-8 in a name (a path, an
/// argument) is replaced, never thrown.
inline std::string dump_record(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

struct PointStart {
  ProgressPoint* point;
  uint64_t count;       // visits or arrivals at the start
  uint64_t departures;  // latency only
};

/// One sweep, run by Controller::start's thread from run() to the summary
/// record; owned by that thread (a shared_ptr the thread holds).
class Sweep {
 public:
  // `origin`: JSON members added to every experiment and summary record
  // (a sharded sweep's shard, shards and host; "" otherwise).
  Sweep(State& s, Options o, std::unique_ptr<ProfileWriter> w, uint64_t hz, uint64_t seed, std::string origin);
  // The whole sweep, steps 1-11 (sweep.cpp); returns after the summary record.
  void run();

 private:
  // ---- sweep.cpp: the experiment loop -------------------------------------
  // Options::profile_only: no experiment; the regions' counters (and the
  // sampled lines') run until stop() or the duration.
  std::string profile_only_loop();
  // Steps 2-10 until the sweep ends; returns the summary's reason.
  std::string loop();
  // Every handler region's counters, by id (the experiment record's
  // "handlers": what ran beside the selected region).
  static std::vector<RegionStats> handler_stats();
  // Runs and exclusive time of each handler region between two
  // handler_stats() (a region registered in between counts from zero), most
  // time first.
  std::vector<RegionTime> handler_deltas(const std::vector<RegionStats>& before,
                                         const std::vector<RegionStats>& after) const;
  // True if a selected progress point moved since the sweep began.
  bool points_moved();
  // The progress points Options::progress and progress_handlers select.
  std::vector<ProgressPoint*> selected_points();

  // ---- draw.cpp: the region draw and the running estimates ----------------
  // Step 3: the region of the next experiment, or kNoRegion.
  uint32_t pick_region();
  // The share of all matching regions' running time since the sweep began
  // that each region in `regions` has had (0 for regions that did not run).
  std::unordered_map<uint32_t, double> time_shares(const std::vector<RegionStats>& regions) const;
  // Options::region_weight = evidence (controller.hpp says what it favours).
  // `ran`: the regions that ran since the previous pick, `time_weight`
  // their running time in that interval.
  uint32_t pick_by_evidence(const std::vector<RegionStats>& regions, const std::vector<uint32_t>& ran,
                            const std::vector<double>& time_weight);
  // True when `id` is ranked at every progress point with estimates.
  bool ranked_everywhere(uint32_t id) const;
  // Adds a written experiment to the running estimates, writes the
  // "estimates" record and updates settled_ (Options::until_settled's rule).
  void observe(uint32_t region, const ExperimentRecord& e);
  // Options::fixed_region's id (an exact name, else the only region
  // containing it), remembered once found; kNoRegion while none matches
  // (fixed_ambiguous_ then names the candidates).
  uint32_t resolve_fixed(const std::vector<RegionStats>& regions);

  // ---- records.cpp: what the sweep says -----------------------------------
  // A window passed without an experiment (no point selected, no region ran,
  // or no selected point moved). Once, if no experiment has been written
  // kGraceWindows initial windows into the sweep: warning records (the
  // filter entries that match nothing, else "no_progress") and the names, so
  // the user hears it while the program runs.
  void note_miss();
  struct Problem {
    std::string what, message;
    std::vector<std::string> names;
  };
  // Filter entries that match nothing registered (so far).
  std::vector<Problem> filter_problems();
  // The "names" record: every region and progress point with its visits.
  void write_names();
  // Options::profile_only: every region that ran, heaviest first, with its
  // visits and time (handlers and scopes: exclusive running time; sampled
  // lines: sampled CPU time, visits = sample periods).
  void write_profile_record(uint64_t runtime_ns);
  // The "sampler" record: line sampling's counters at the end.
  void write_sampler_record();
  // An "error" record, also on stderr and in SweepSummary::errors.
  void error(const std::string& what, const std::string& message, const std::vector<std::string>& names);
  // A --region-filter entry whose regions got no experiment although others
  // did (e.g. a time-weighted draw among the filter's matches spent every
  // experiment on the heaviest): said on stderr and in the profile, since
  // the plot would simply lack those regions. `matched`: no filter problem
  // (an entry that matches no region at all is an error already).
  void warn_filter_without_experiments(bool matched);
  // Step 11.
  void finish(const std::string& reason);
  // The "summary" record; tells stop() and wait() the sweep is over.
  void finish_summary(const std::string& reason);

  State& s_;
  const Options o_;
  std::unique_ptr<ProfileWriter> w_;
  const uint64_t hz_;
  std::mt19937_64 rng_;
  const std::string origin_;  // JSON members of every experiment and summary record (constructor)
  bool sampling_ = false;     // line sampling started by this sweep
  steady::time_point t_start_{};
  std::chrono::milliseconds window_{};
  std::chrono::milliseconds max_window_{};
  // region id -> (visits, exclusive cycles) at the previous pick
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> last_;
  std::unordered_map<ProgressPoint*, uint64_t> start_counts_;  // point -> visits + departures at sweep start
  std::unordered_map<uint32_t, uint64_t> start_cycles_;        // region id -> exclusive cycles at sweep start
  std::vector<Observation> observations_;                      // every written experiment (observe())
  std::unordered_map<uint32_t, std::string> names_;            // region id -> name, of the observations
  std::vector<PointEstimates> estimates_;                      // after the last written experiment
  bool settled_ = false;                                       // Options::until_settled's rule held then
  uint32_t fixed_id_ = kNoRegion;
  std::vector<std::string> fixed_ambiguous_;
  uint64_t windows_ = 0;                // finished experiment windows (written or empty)
  std::set<std::string> experimented_;  // regions of the recorded experiments
  bool early_names_written_ = false;
  SweepSummary summary_;
};

}  // namespace coact::causal::detail
