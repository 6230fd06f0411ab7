// The causal-profiling controller (coact/causal/controller.hpp): this file
// holds its API (start, stop, wait, running, the fork hook) and where a
// sweep ran (origin_members); the sweep itself is in sweep/ (the files are
// listed in sweep/sweep.hpp) and the options in controller_options.cpp. The
// step numbers in those files refer to this list.
//
// The sweep (numbered steps, on the controller's own std::thread; all sleeps
// are wall-clock condition-variable waits, never virtual time, and are cut
// short by stop()):
//  1. calibrate::tsc_hz() (add_delay's precondition), open the outputs, write
//     the startup records, attach handler-completion points
//     (Options::progress_handlers), set g_sweep_active, and sleep one cooldown
//     so regions that run get counted.
//  2. Progress points: the declared points matching Options::progress (all if
//     empty) plus the handler-completion points. While there are none, sleep
//     a window and retry (Coz also waits for its first progress point); no
//     experiment is recorded.
//  3. Region: the fixed region if given (Options::fixed_region: an exact name,
//     else the only region containing it; waits while none matches), else one
//     drawn among the regions matching Options::region_filter whose visits
//     grew since the previous pick (they ran in the last window and
//     cooldown), by Options::region_weight: evidence (the default:
//     pick_by_evidence(); controller.hpp says what it favours; it reads the
//     running estimates of step 8), time (probability proportional to the
//     exclusive time each ran since that pick, as Coz, whose next line is the
//     one the next sample lands in) or uniform. None ran: sleep a window and
//     retry.
//  4. Speedup: Options::fixed_speedup_pct if set (alternating with
//     Options::alternate_speedup_pct, A B B A ..., by completed windows, if
//     that is set too), else Coz's draw: r uniform in
//     0..27; r <= 7 gives 0, else (r − 7)·5 %. So P(0) = 8/28 ≈ 0.29 and each
//     of 5..100 % has 1/28 (SpeedupDivisions = 20, ZeroSpeedupWeight = 7 in
//     libcoz/profiler.h; its comment's "~25%" and some READMEs' "50%" are
//     not what the code draws). Since every region's curve needs its own
//     baseline, ~29 % of each region's experiments are speedup 0.
//  5. Start: snapshot the progress counters, the region's counters, G and the
//     wall clock; begin_experiment(region, speedup).
//  6. Sleep the window (wall clock). stop() during the window abandons the
//     experiment (nothing is written for it).
//  7. Stop: end_experiment(); read the clock, G and the counters again.
//  8. Record: duration_ns = wall time of the window; delay_ns = G's growth
//     converted with tsc_hz; effective_ns = duration_ns − delay_ns (this goes
//     into profile.coz's duration=, as Coz does, so its viewer's rates are
//     right); throughput deltas; latency arrivals, departures and the number
//     in flight at the end (difference); the region's visits and exclusive
//     time. An experiment in which no selected progress point moved at all is
//     not written (every rate would be 0/duration: no information) and is
//     counted in SweepSummary::empty_experiments. A written experiment updates
//     the running estimates (observe(): an "estimates" record) and with
//     Options::until_settled a settled ranking ends the sweep after step 9
//     (reason "settled").
//  9. Adapt (Coz): min_delta = the smallest delta over the selected points
//     (latency: min of arrivals and departures). min_delta < Options::min_delta
//     doubles the window (capped at max_experiment); min_delta > 2·min_delta
//     halves it while it is at least twice the initial window.
// 10. Cooldown (Options::cooldown, wall clock) so threads pay their debt
//     before the next experiment; then back to 2 unless stop() was called,
//     max_experiments experiments were written, or duration has passed — or,
//     without a duration, no experiment has been written after
//     max(5 s, 2 x the window cap) (16 s with the defaults): the sweep then
//     stops experimenting with a "no_progress" error (reason "no_progress", or
//     "no_region" when points moved but a filter or fixed region matched nothing;
//     the program runs on). Three initial windows (1.5 s) without an
//     experiment already write "warning" records (see below).
// 11. End: clear g_sweep_active, detach completion points, write the runtime
//     and samples records, a "names" record, one "error" record per problem
//     with its message also on stderr — a filter or fixed region that matched
//     nothing; and, when no experiment was written, either "no_progress" (no
//     selected progress point moved during the whole sweep, or none exists)
//     or "no_experiments" (points moved but no window completed with
//     progress, and no filter problem explains it) — then a "summary" record.
//
// JSON records besides startup / experiment / runtime (profile_writer.hpp),
// all one line each:
//   {"type":"names","regions":[{"name":..,"kind":"handler"|"scope","visits":N},..],
//    "progress":[{"name":..,"kind":"throughput"|"latency","handler":bool,"visits":N},..]}
//     at the end, and once early when no experiment was written in the first
//     three windows (with "warning" records: the filter entries that match
//     nothing, else "no_progress"), so the user of a long-running program,
//     and a killed run's profile, learn it early.
//   {"type":"warning"|"error","what":"no_progress"|"no_experiments"|
//    "unknown_region"|"unknown_progress"|"unknown_handler","message":..,
//    "names":[the filter entries, or the progress points concerned]}
//   {"type":"summary","experiments":N,"empty_experiments":N,
//    "progress_reached":bool,"reason":"stopped"|"duration"|"experiments"|"settled"|"no_region"|"no_progress",
//    "settled":bool,"leader":name|null}  (settled and leader: not in a profile-only run)
//   {"type":"estimates",...} after each written experiment: the running ranking
//     (causal/src/evidence.hpp; the Options::region_weight draw and until_settled use it),
//     with "time_share_floor" and "time_shares" {region name: fraction of the
//     running time} of every region with an experiment, by which
//     coact-plot applies the settle rule's floor (causal/src/sweep/draw.cpp)
#include <coact/causal/controller.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <set>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/causal/line_region.hpp>
#include <coact/causal/profile_writer.hpp>
#include <coact/causal/progress.hpp>
#include <coact/causal/region.hpp>
#include <coact/options.hpp>

#include "sweep/sweep.hpp"

namespace coact::causal {

using detail::State;
using detail::steady;
using detail::Sweep;

namespace {
// The one sweep's State (leaked: stop() may run from atexit after statics
// die), replaced in a forked child (leave_sweep_in_forked_child).
State*& state_ptr() {
  static State* s = new State;
  return s;
}
State& state() { return *state_ptr(); }
// Set in a forked child (leave_sweep_in_forked_child): no sweep starts there.
std::atomic<bool> g_forked_child{false};
}  // namespace

namespace {
// The JSON members (each with its leading comma) that say where a sweep ran:
// the startup record's "program" (the executable's file name), "args" (its
// arguments) and "host" (gethostname), so that merging profiles can tell
// different programs and machines apart; with Options::shards also "shard"
// and "shards" — what a sharded sweep adds to its experiment and summary
// records too (`every_record`) — and, in the startup record, "base_seed":
// the seed before shard_seed() mixed the shard in (what --seed reproduces).
// Called by start(), before the sweep's thread exists.
std::string origin_members(const Options& o, bool every_record, uint64_t base_seed = 0) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string out;
  if (o.shards != 0) out += fmt::format(",\"shard\":{},\"shards\":{}", o.shard, o.shards);
  out += ",\"host\":" + detail::dump_record(host);
  if (every_record) return out;
  if (o.shards != 0) out += fmt::format(",\"base_seed\":{}", base_seed);
  std::string exe(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  exe.resize(n > 0 ? static_cast<size_t>(n) : 0);
  out +=
      ",\"program\":" + detail::dump_record(exe.substr(exe.rfind('/') == std::string::npos ? 0 : exe.rfind('/') + 1));
  std::vector<std::string> args;
  if (FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    std::string all;
    char buf[4096];
    for (size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) all.append(buf, got);
    std::fclose(f);
    size_t at = 0;
    for (bool first = true; at < all.size(); first = false) {
      const size_t end = all.find('\0', at);
      if (!first) args.push_back(all.substr(at, end == std::string::npos ? std::string::npos : end - at));
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  return out + ",\"args\":" + detail::dump_record(args);
}
}  // namespace

void Controller::start(const Options& options) {
#if !COACT_CAUSAL_ENABLED
  (void)options;
  throw std::logic_error("coact causal: causal profiling is compiled out (configure with -DCOACT_CAUSAL=ON)");
#else
  State& s = state();
  std::lock_guard api(s.api_mu);
  if (s.running.load(std::memory_order_relaxed)) throw std::logic_error("coact causal: a sweep is already running");
  if (options.experiment.count() <= 0) throw std::invalid_argument("coact causal: Options::experiment must be > 0");
  if (options.max_experiment.count() != 0 && options.max_experiment < options.experiment) {
    throw std::invalid_argument("coact causal: Options::max_experiment must be 0 or >= Options::experiment");
  }
  if (options.cooldown.count() < 0 || options.duration.count() < 0) {
    throw std::invalid_argument("coact causal: Options::cooldown and Options::duration must be >= 0");
  }
  if (options.fixed_speedup_pct && *options.fixed_speedup_pct > 100) {
    throw std::invalid_argument("coact causal: Options::fixed_speedup_pct must be 0..100");
  }
  if (options.alternate_speedup_pct && (!options.fixed_speedup_pct || *options.alternate_speedup_pct > 100)) {
    throw std::invalid_argument("coact causal: Options::alternate_speedup_pct must be 0..100, with fixed_speedup_pct");
  }
  if (options.min_delta == 0) throw std::invalid_argument("coact causal: Options::min_delta must be >= 1");
  if (s.thread.joinable()) s.thread.join();  // a sweep that ended by itself
  const uint64_t hz = calibrate::tsc_hz();   // add_delay's precondition; may throw
  auto writer = std::make_unique<ProfileWriter>(options.output, options.json_output);
  uint64_t seed = options.seed;
  if (seed == 0) {
    seed = static_cast<uint64_t>(steady::now().time_since_epoch().count()) ^ (uint64_t(::getpid()) << 32);
  }
  const uint64_t base_seed = seed;
  if (options.shards != 0) {
    if (options.shard >= options.shards) {
      throw std::invalid_argument("coact causal: Options::shard must be below Options::shards");
    }
    seed = shard_seed(seed, options.shard);
  }
  const auto wall_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  writer->startup(static_cast<uint64_t>(wall_ns), hz, seed, options_json(options),
                  origin_members(options, /*every_record=*/false, base_seed));
  {
    std::lock_guard lk(s.mu);
    s.stop_requested = false;
    s.done = false;
    s.summary = SweepSummary{};
  }
  auto sweep = std::make_shared<Sweep>(s, options, std::move(writer), hz, seed,
                                       options.shards != 0 ? origin_members(options, /*every_record=*/true) : "");
  s.running.store(true, std::memory_order_relaxed);
  try {
    s.thread = std::thread([sweep] { sweep->run(); });
  } catch (...) {
    s.running.store(false, std::memory_order_relaxed);
    throw;
  }
#endif
}

SweepSummary Controller::stop() {
  State& s = state();
  std::lock_guard api(s.api_mu);
  {
    std::lock_guard lk(s.mu);
    s.stop_requested = true;
    s.cv.notify_all();
  }
  if (s.thread.joinable()) s.thread.join();
  s.running.store(false, std::memory_order_relaxed);
  std::lock_guard lk(s.mu);
  return s.summary;
}

bool Controller::wait(std::chrono::milliseconds timeout) {
  State& s = state();
  std::unique_lock lk(s.mu);
  return s.cv.wait_for(lk, timeout, [&] { return s.done; });
}

bool Controller::running() noexcept { return state().running.load(std::memory_order_relaxed); }

namespace detail {
bool left_in_forked_child() noexcept { return g_forked_child.load(std::memory_order_relaxed); }

void leave_sweep_in_forked_child() noexcept {
  // The parent's controller thread does not exist here: a fresh State (no
  // thread to join, nothing to write), built in static storage (no malloc in
  // a fork child handler). The parent's State and its writer are abandoned.
  alignas(State) static unsigned char storage[sizeof(State)];
  state_ptr() = new (storage) State;
  g_forked_child.store(true, std::memory_order_relaxed);
}
}  // namespace detail

}  // namespace coact::causal
