// coact/causal/profile_writer.hpp: the causal profile on disk — Coz's
// profile.coz text format and coact's JSON lines, appended record by record.
//
// Provides: ProfileWriter (two append-only files) and the pure formatters it
// uses (tests and tools call them directly).
//
// profile.coz — exactly what Debian's coz-profiler 0.2.2 writes
// (libcoz/profiler.cpp profiler_thread / log_samples, libcoz/progress_point.h
// saved::log), tab-separated key=value records, one per line:
//   startup\ttime=NS                      (wall clock, ns since the Unix epoch)
//   experiment\tselected=NAME\tspeedup=0.25\tduration=NS\tselected-samples=N
//   throughput-point\tname=NAME\tdelta=N
//   latency-point\tname=NAME\tarrivals=N\tdepartures=N\tdifference=N
//   runtime\ttime=NS                      (ns since startup)
//   samples\tlocation=NAME\tcount=N
// speedup has two decimals (Coz's stream is ios::fixed, precision(2)).
// duration= is the *effective* duration, wall time minus the delay injected
// during the experiment (Coz: `duration = elapsed - experiment_delay`), so
// Coz's viewer computes the right progress rate. selected-samples= and
// samples count= are region *visits* (coact measures regions by entry/exit,
// not by sampling): the completed runs of the selected region during the
// experiment, and of each region over the run. Tabs and newlines inside names
// are written as spaces (they would split records).
//
// JSON lines (coact; reports/coact_plot.py reads them) — one object per line:
//   {"type":"startup","time_ns":..,"tsc_hz":..,"pid":..,"seed":..,"options":{..},
//    "host":..,"program":..,"args":[..]}   (host..args: written by the controller;
//                                           a sharded sweep adds "shard":K,"shards":N
//                                           here and to its experiment and summary records,
//                                           and "base_seed" here)
//   {"type":"experiment","index":..,"region":..,"speedup":0.25,"duration_ns":..,
//    "delay_ns":..,"effective_ns":..,"visits":..,"region_ns":..,
//    "progress":{"name":count, "lat":{"arrivals":..,"departures":..,"difference":..}},
//    "latency":{"lat":{"arrivals":..,"departures":..,"difference":..}},
//    "handlers":{"Type::on(Msg)":{"visits":..,"ns":..},..},"handlers_omitted":..}
//                                          (handlers: every handler region that
//                                          completed a run during the window, the
//                                          selected one included: what ran beside
//                                          the experiment, to see whether a
//                                          virtual speedup slows the rest)
//   {"type":"runtime","time_ns":..}
//   {"type":"names",..} {"type":"warning",..} {"type":"error",..}
//   {"type":"summary",..}                  (written by the controller; the
//                                           fields: causal/src/controller.cpp)
//   {"type":"sampler","period_ns":..,"samples":..,"periods":..,"attributed":..,
//    "dropped":..,"delayed":..,"line_regions":..,"threads_sampled":..,
//    "threads_exited":..,"unsampled_threads":[{"tid":..,"name":..}],
//    "symbolizer_error":..,"experiment_period_ns":..,"samples_cpu_timer":..,
//    "samples_perf_event":..,"threads_perf_event":..,"signal":..,
//    "foreign_handler":..,"handler_replaced":..,"foreign_signals":..,
//    "no_debug_info":[path,..]}
//                                          (controller, sampling sweeps only:
//                                           threads never registered are listed;
//                                           samples by source: sampler.hpp;
//                                           no_debug_info: loaded objects the
//                                           scope could name that have no line
//                                           table, symbolizer.hpp)
//   {"type":"profile","runtime_ns":..,"regions":[{"name":..,"kind":..,
//    "visits":..,"time_ns":..},..]}     (controller, profile-only runs: every
//                                           region that ran, heaviest first)
// Sampled-line regions (line_region.hpp) are written like any region: their
// selected-samples / samples count= are CPU-time sample periods.
// "progress" holds throughput counts and latency objects together, the form
// coact_plot.py's reader takes; "latency" repeats the latency points alone.
//
// Crash safety: each file is opened O_APPEND and each record group (an
// experiment with all its progress-point lines; any other record) is written
// with one write(2) call. One call alone is not enough: Linux copies a
// buffered write page by page and stops between pages when a fatal signal
// (SIGKILL, or any signal whose default action kills) is pending
// (generic_perform_write checks fatal_signal_pending per page), so a kill can
// cut a write that crosses a page boundary — the writer test caught exactly
// that. So a group that would cross a page boundary is preceded, in the same
// write, by padding up to the boundary: in profile.coz blank lines (skipped
// by Coz's viewer, profile.ts, and by coact-plot); in the JSON-lines file one
// padding record, {"type":"pad"} followed by spaces, so that every line stays
// valid JSON for line-by-line readers (a gap shorter than that record is
// never left: such a rest of a page is filled with spaces at the end of the
// group's last line, which JSON allows). Readers skip "pad" records like any
// type they do not know. Result: a kill leaves only whole
// groups (plus padding), for every group of at most one page
// (4 KiB: a region name and ~40 progress points). A larger group can still be
// cut at a page boundary; the next ProfileWriter on the file truncates a last
// line left without its newline (a partial group's complete lines remain).
// There is no user-space buffer, hence nothing to flush: the data is in the
// page cache when write returns (it survives the process, not a machine crash).
//
// Threads: a ProfileWriter is used by one thread at a time (the controller's).
// Blocking: every call does file I/O. Errors: the constructor throws
// std::system_error naming the path; later write errors are reported once on
// stderr and the record is dropped (a profile must not kill the program).
// Lifetime: the destructor closes the files; what was written stays valid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace coact::causal {

struct ThroughputDelta {
  std::string name;
  uint64_t delta = 0;  ///< Visits during the experiment.
};

struct LatencyDelta {
  std::string name;
  uint64_t arrivals = 0;    ///< COACT_BEGIN visits during the experiment.
  uint64_t departures = 0;  ///< COACT_END visits during the experiment.
  uint64_t difference = 0;  ///< In flight at the experiment's end (total arrivals − departures).
};

/// The most bytes an experiment's JSON "handlers" object takes; handlers
/// beyond it are counted in "handlers_omitted" (an experiment line then fits
/// in a page with room for its other fields).
inline constexpr size_t kHandlersBudget = 2048;

/// One handler region's completed runs and exclusive time during an experiment.
struct RegionTime {
  std::string name;
  uint64_t visits = 0;
  uint64_t ns = 0;
};

/// One finished experiment (controller.hpp says how each field is measured).
struct ExperimentRecord {
  uint64_t index = 0;         ///< 0-based, in this run.
  std::string region;         ///< Selected region's name.
  uint32_t speedup_pct = 0;   ///< 0..100.
  uint64_t duration_ns = 0;   ///< Wall time of the window.
  uint64_t delay_ns = 0;      ///< Delay injected during it (G delta via tsc_hz).
  uint64_t effective_ns = 0;  ///< duration_ns − delay_ns (0 if negative).
  uint64_t visits = 0;        ///< Completed runs of the selected region during it.
  uint64_t region_ns = 0;     ///< Exclusive running time of the selected region during it.
  std::vector<ThroughputDelta> throughput;
  std::vector<LatencyDelta> latency;
  /// Handler regions that completed a run during the window, most time
  /// first (JSON only; beyond kHandlersBudget bytes they are counted).
  std::vector<RegionTime> handlers;
  /// JSON members, each with its leading comma (",\"shard\":0,..."), added at
  /// the end of the JSON line verbatim; "" adds nothing. The controller's
  /// sharded sweeps put their shard and host here (controller.hpp Options::shards).
  std::string origin_json;
};

/// One region's total for the samples records.
struct RegionCount {
  std::string name;
  uint64_t count = 0;
};

/// "0.25" for 25: the speedup with two decimals, as Coz prints it.
std::string format_speedup(uint32_t speedup_pct);
/// `s` with tab, CR and LF replaced by spaces (safe inside a profile.coz field).
std::string coz_field(std::string_view s);

/// "startup\ttime=NS\n".
std::string format_coz_startup(uint64_t time_ns);
/// The experiment line and its throughput-point / latency-point lines.
std::string format_coz_experiment(const ExperimentRecord& e);
/// "runtime\ttime=NS\n" then a samples line per region with count > 0.
std::string format_coz_runtime(uint64_t runtime_ns, const std::vector<RegionCount>& samples);
/// The experiment's JSON line (with its trailing '\n').
std::string format_json_experiment(const ExperimentRecord& e);

class ProfileWriter {
 public:
  /// Opens (creating, appending) `coz_path` and `json_path`; an empty path
  /// disables that file. Errors: std::system_error naming the path that
  /// could not be opened. Any thread.
  ProfileWriter(std::string coz_path, std::string json_path);
  ~ProfileWriter();
  ProfileWriter(const ProfileWriter&) = delete;
  ProfileWriter& operator=(const ProfileWriter&) = delete;

  /// Startup records: profile.coz `startup`; JSON `startup` with tsc_hz, pid,
  /// seed and `options_json` (a JSON object, parsed and written as the "options" member), then
  /// `origin_json` (JSON members, each with its leading comma, verbatim: the
  /// controller's program, args, host and shard).
  void startup(uint64_t time_ns, uint64_t tsc_hz, uint64_t seed, std::string_view options_json,
               std::string_view origin_json = {});
  /// One experiment, one write(2) per file.
  void experiment(const ExperimentRecord& e);
  /// profile.coz `runtime` + `samples`; JSON `runtime`.
  void runtime(uint64_t runtime_ns, const std::vector<RegionCount>& samples);
  /// A JSON line (an object, without the newline) to the JSON file only.
  void json_line(std::string_view object);

  const std::string& coz_path() const noexcept { return coz_path_; }
  const std::string& json_path() const noexcept { return json_path_; }

 private:
  void write_group(int fd, const std::string& path, uint64_t& offset, std::string_view group);

  std::string coz_path_;
  std::string json_path_;
  int coz_fd_ = -1;
  int json_fd_ = -1;
  uint64_t coz_offset_ = 0;  // bytes in the file (we are its only appender)
  uint64_t json_offset_ = 0;
  uint64_t page_bytes_ = 4096;
  static constexpr std::string_view kJsonPadRecord = "{\"type\":\"pad\"}";
  bool warned_ = false;
};

}  // namespace coact::causal
