// bench/timers/timers_common.hpp: what the coact and CAF timer programs share.
//
// Provides: the scenario names and their parameters (the same defaults in both
// programs), the command line (CLI11), the shared run state of the lateness
// scenario (preallocated lateness array, per-chain progress, busy-load
// counters), the main thread's monitor, CPU accounting, percentiles, the one
// JSON line each run prints and the run's watchdog (bench/common/
// bench_support.hpp has the mechanisms). Threads: the state is written by
// actors (atomics, or a slot of the preallocated array that only one handler
// writes) and read by the main thread. Errors: bad usage prints to stderr and
// exits 2 (--help: exit 0); an inconsistent result prints to stderr and exits
// 1; a hang (--watchdog-s) exits 3. A late or unfired timer is never an
// error: it is the figure being measured.
//
// The scenarios (each program runs exactly one per process, once):
//   lateness     --timers N (10^4) one-shot timers of --period-us P (1000) in
//                --chains C (10) concurrent chains of N/C: each chain actor arms
//                its first timer from a handler; when it fires (the handler for
//                the timer's message runs) it records
//                  lateness = now - (arm time + P)     (steady_clock)
//                and arms the next one. All chains are armed before the load
//                starts. --load idle: nothing else runs. --load self: 4 busy
//                actors (--busy-actors), each handler spins --busy-us (100) µs
//                and re-sends to itself. --load pairs: the same 4 actors in 2
//                pairs, each handler re-sends to its partner. Every busy actor
//                is seeded with one message, so 4 messages are always runnable
//                on the 2 workers (saturation). "busy_util" = busy handlers run
//                x busy-us / (wall x workers): the pool's share spent in busy
//                handlers (~1 on a quiet machine; less when the OS gives the
//                process less than the workers' cores).
//                A timer that has not fired --grace-ms (2000) after its due
//                time stalls its chain: it and the chain's later timers count
//                as unfired (a fire that comes later still is discarded and
//                counted in "overdue"). The run ends when every chain is done
//                or stalled, so it always ends; "fired" of "expected" and the
//                percentiles (over fired timers) are reported.
//   idle_cpu     one actor re-arms a --period-ms M (5) timer from its handler;
//                nothing else runs. After two ticks (boot excluded) the main
//                thread sleeps --duration-ms D (3000) and reports the process's
//                CPU time (getrusage RUSAGE_SELF, user + system, all threads)
//                over that window as % of one core.
//   cancel_rate  one actor arms a --delay-ms (10) timer to itself and cancels
//                it at once, 256 pairs per handler, re-sending itself the next
//                batch until --duration-ms (1000) passed; pairs per second.
//                coact: send_after + cancel; a cancel that returns false (the
//                worker was descheduled for longer than the delay, so the timer
//                fired first) must be matched by exactly one delivery.
//                CAF 0.17 has no per-message cancel for delayed_send: the
//                program emulates it (delayed_send + a cancelled-set insert;
//                the message still arrives after the delay and is discarded
//                by the set, which is part of the emulation's cost).
//
// Diagnostics (not used by scripts/bench.sh): --timer-slack-ns N sets the
// main thread's timer slack (prctl PR_SET_TIMERSLACK) before the runtime
// starts, so its threads inherit it (Linux default: 50 µs).
#pragma once

#include <sys/prctl.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"

namespace coact::bench {

/// Busy-waits `ns` nanoseconds of wall time (the busy load's "100 µs handler").
inline void spin_for_ns(int64_t ns) noexcept {
  const int64_t end = now_ns() + ns;
  while (now_ns() < end) {
  }
}

/// Process CPU time (user + system, all threads) in seconds.
inline double process_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

struct timer_args {
  std::string scenario;
  std::string load = "idle";   // lateness: idle | self | pairs
  uint64_t timers = 10000;     // lateness
  uint32_t chains = 10;        // lateness
  uint64_t period_us = 1000;   // lateness: each timer's delay
  uint64_t grace_ms = 2000;    // lateness
  uint32_t busy_actors = 4;    // lateness (self, pairs)
  uint64_t busy_us = 100;      // lateness (self, pairs)
  uint64_t period_ms = 5;      // idle_cpu
  uint64_t duration_ms = 0;    // idle_cpu (3000), cancel_rate (1000); 0 = the scenario's default
  uint64_t delay_ms = 10;      // cancel_rate
  uint32_t workers = 2;
  uint32_t watchdog_s = 0;     // 0 = none; else a run still going after this long is a hang
  uint64_t timer_slack_ns = 0; // 0 = leave the inherited slack alone
};

/// Applies --timer-slack-ns to the calling thread (threads it creates inherit it).
inline void apply_timer_slack(const timer_args& a) {
  if (a.timer_slack_ns != 0 && prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(a.timer_slack_ns), 0, 0, 0) != 0) {
    std::perror("prctl(PR_SET_TIMERSLACK)");
    std::exit(2);
  }
}

inline constexpr uint32_t kCancelBatch = 256;  // send_after + cancel pairs per handler

/// Parses the command line (also --key=value; a repeated option: the last one
/// wins). Exits 2 on bad usage, 0 after --help. --duration-ms left out is the
/// scenario's default (idle_cpu 3000, cancel_rate 1000).
inline timer_args parse_args(int argc, char** argv) {
  timer_args a;
  CLI::App app{"Runs one timer scenario once and prints one JSON line (bench/timers/timers_common.hpp)."};
  add_run_options(app, a.workers, a.watchdog_s);
  app.add_option("--scenario", a.scenario, "the scenario")
      ->required()
      ->check(CLI::IsMember({"lateness", "idle_cpu", "cancel_rate"}));
  app.add_option("--load", a.load, "lateness: what else runs")
      ->capture_default_str()
      ->check(CLI::IsMember({"idle", "self", "pairs"}));
  add_uint_option(app, "--timers", a.timers, 1, 100'000'000, "lateness: timers in all");
  add_uint_option(app, "--chains", a.chains, 1, 10000, "lateness: concurrent chains");
  add_uint_option(app, "--period-us", a.period_us, 1, 10'000'000, "lateness: each timer's delay");
  add_uint_option(app, "--grace-ms", a.grace_ms, 1, 3'600'000, "lateness: a timer this late stalls its chain");
  add_uint_option(app, "--busy-actors", a.busy_actors, 1, 1024, "lateness (self, pairs): busy actors");
  add_uint_option(app, "--busy-us", a.busy_us, 1, 1'000'000, "lateness (self, pairs): spin per busy handler");
  add_uint_option(app, "--period-ms", a.period_ms, 1, 100'000, "idle_cpu: the periodic timer's period");
  add_uint_option(app, "--duration-ms", a.duration_ms, 1, 3'600'000,
                  "idle_cpu: measured window (default 3000); cancel_rate: run time (default 1000)")
      ->default_str("");
  add_uint_option(app, "--delay-ms", a.delay_ms, 1, 3'600'000, "cancel_rate: each timer's delay");
  add_uint_option(app, "--timer-slack-ns", a.timer_slack_ns, 0, 1'000'000'000,
                  "diagnostic: the threads' timer slack; 0 = inherited");
  app.callback([&a] {
    if (a.scenario == "lateness" && a.timers % a.chains != 0)
      throw CLI::ValidationError("--timers", "must be a multiple of --chains");
    if (a.load == "pairs" && a.busy_actors % 2 != 0)
      throw CLI::ValidationError("--busy-actors", "--load pairs needs an even --busy-actors");
  });
  parse_or_exit(app, argc, argv);
  if (a.duration_ms == 0) a.duration_ms = a.scenario == "idle_cpu" ? 3000 : 1000;
  return a;
}

/// An inconsistent result: message on stderr, exit 1.
[[noreturn]] inline void fail_check(const char* runtime, const timer_args& a, const std::string& what) {
  wrong_result(fmt::format("{}/{}", runtime, a.scenario), what);
}

/// The run's watchdog (see watchdog): armed for --watchdog-s seconds (none
/// when 0); a hang is reported as "<runtime>/<scenario> load=L: HUNG after
/// Ss: <report()>".
inline watchdog arm_watchdog(const char* runtime, const timer_args& a, std::function<std::string()> report) {
  return watchdog(std::chrono::seconds(a.watchdog_s), fmt::format("{}/{} load={}", runtime, a.scenario, a.load),
                  std::move(report));
}

// ---- lateness -----------------------------------------------------------------

/// Per-chain progress, written by the chain's actor, read by the monitor.
struct chain_progress {
  std::atomic<int64_t> due_ns{0};  ///< due time of the armed timer; 0 = not armed yet
  std::atomic<bool> done{false};   ///< all its timers fired (or it gave up: overdue fire)
};

/// The lateness run's shared state. Allocated (and the lateness array sized)
/// before the runtime starts; no allocation on the measured path.
struct lateness_state {
  explicit lateness_state(const timer_args& a)
      : period_ns(int64_t(a.period_us) * 1000),
        grace_ns(int64_t(a.grace_ms) * 1'000'000),
        busy_ns(int64_t(a.busy_us) * 1000),
        depth(a.timers / a.chains),
        late_ns(a.timers, 0),
        chains(new chain_progress[a.chains]),
        nchains(a.chains) {}

  const int64_t period_ns;
  const int64_t grace_ns;
  const int64_t busy_ns;
  const uint64_t depth;           ///< timers per chain
  std::vector<int64_t> late_ns;   ///< one slot per fired timer (slot from `fired`)
  std::atomic<uint64_t> fired{0};
  std::atomic<uint64_t> overdue{0};  ///< fires that came more than grace late (not counted)
  std::unique_ptr<chain_progress[]> chains;
  const uint32_t nchains;
  std::atomic<bool> stop_busy{false};
  std::atomic<uint64_t> busy_handlers{0};  ///< summed by busy actors when they stop

  /// A chain actor's handler for its timer: records the lateness of the timer
  /// armed at `arm_ns`. Returns true if the chain should arm its next timer.
  bool on_fire(uint32_t chain, int64_t arm_ns, uint64_t& fired_in_chain) {
    const int64_t late = now_ns() - (arm_ns + period_ns);
    chain_progress& c = chains[chain];
    if (late > grace_ns) {  // the monitor has (or will have) declared it stalled
      overdue.fetch_add(1, std::memory_order_relaxed);
      c.done.store(true, std::memory_order_release);
      return false;
    }
    late_ns[fired.fetch_add(1, std::memory_order_relaxed)] = late;
    if (++fired_in_chain == depth) {
      c.done.store(true, std::memory_order_release);
      return false;
    }
    return true;
  }
  /// Call just before arming a chain's timer; returns the arm time.
  int64_t before_arm(uint32_t chain) {
    const int64_t t = now_ns();
    chains[chain].due_ns.store(t + period_ns, std::memory_order_release);
    return t;
  }
  bool all_armed() const {
    for (uint32_t i = 0; i < nchains; ++i)
      if (chains[i].due_ns.load(std::memory_order_acquire) == 0) return false;
    return true;
  }
  /// Main thread: waits until every chain is done or stalled (its armed timer
  /// is more than grace overdue). Returns the number of stalled chains.
  uint32_t wait_done_or_stalled() const {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      const int64_t now = now_ns();
      uint32_t open = 0, stalled = 0;
      for (uint32_t i = 0; i < nchains; ++i) {
        if (chains[i].done.load(std::memory_order_acquire)) continue;
        const int64_t due = chains[i].due_ns.load(std::memory_order_acquire);
        if (due != 0 && now > due + grace_ns) {
          ++stalled;
        } else {
          ++open;
        }
      }
      if (open == 0) return stalled;
    }
  }
};

/// Consistency: all fired unless a chain stalled or saw an overdue fire.
inline void check_lateness(const char* runtime, const timer_args& a, const lateness_state& s, uint32_t stalled) {
  const uint64_t fired = s.fired.load();
  if (fired > a.timers || (stalled == 0 && s.overdue.load() == 0 && fired != a.timers))
    fail_check(runtime, a,
               "fired=" + std::to_string(fired) + " of " + std::to_string(a.timers) +
                   " with no stalled chain and no overdue fire");
}

/// Nearest-rank percentile of sorted `v` (p in 0..100), in µs.
inline double percentile_us(const std::vector<int64_t>& v, double p) {
  if (v.empty()) return 0;
  size_t rank = size_t(p / 100.0 * double(v.size()) + 0.999999999);
  rank = std::clamp<size_t>(rank, 1, v.size());
  return double(v[rank - 1]) / 1000.0;
}

/// `extra`: fields appended to the line (coact: the kernel's floor).
inline void print_lateness(const char* runtime, const timer_args& a, lateness_state& s, uint32_t stalled,
                           int64_t start_ns, int64_t end_ns, int64_t load_start_ns,
                           const json_line& extra = json_line::object()) {
  const uint64_t fired = s.fired.load();
  std::vector<int64_t> v(s.late_ns.begin(), s.late_ns.begin() + int64_t(fired));
  std::sort(v.begin(), v.end());
  const double seconds = double(end_ns - start_ns) * 1e-9;
  const double load_s = double(end_ns - load_start_ns) * 1e-9;
  const uint64_t busy = s.busy_handlers.load();
  // Share of the pool's time spent inside busy handlers (1.0 = every worker busy).
  const double busy_util =
      load_s > 0 ? double(busy) * double(s.busy_ns) * 1e-9 / (load_s * double(a.workers)) : 0.0;
  double sum = 0;
  int64_t early = 0;
  for (int64_t x : v) {
    sum += double(x);
    if (x < 0) ++early;
  }
  json_line line{{"runtime", runtime},
                 {"scenario", "lateness"},
                 {"load", a.load},
                 {"timers", a.timers},
                 {"chains", a.chains},
                 {"period_us", a.period_us},
                 {"grace_ms", a.grace_ms},
                 {"workers", a.workers},
                 {"busy_actors", a.load == "idle" ? 0u : a.busy_actors},
                 {"busy_us", a.busy_us},
                 {"fired", fired},
                 {"expected", a.timers},
                 {"stalled_chains", stalled},
                 {"overdue", s.overdue.load()},
                 {"early", early}};
  // Over the timers that fired, in µs with 1 decimal; null when none fired.
  const auto us = [&](double x) { return fired > 0 ? json_line(rounded(x, 1)) : json_line(nullptr); };
  line["p50_us"] = us(percentile_us(v, 50));
  line["p90_us"] = us(percentile_us(v, 90));
  line["p99_us"] = us(percentile_us(v, 99));
  line["max_us"] = us(fired > 0 ? double(v.back()) / 1000.0 : 0.0);
  line["min_us"] = us(fired > 0 ? double(v.front()) / 1000.0 : 0.0);
  line["mean_us"] = us(fired > 0 ? sum / double(fired) / 1000.0 : 0.0);
  line["seconds"] = rounded(seconds, 3);
  line.update(extra);
  line["busy_handlers"] = busy;
  line["busy_util"] = rounded(busy_util, 3);
  print_json_line(line);
}

// ---- idle_cpu -----------------------------------------------------------------

struct idle_state {
  std::atomic<uint64_t> ticks{0};
};

/// Main thread: waits for two ticks (boot and calibration are not measured),
/// then sleeps duration_ms and prints the CPU share over that window.
/// `probe` (optional) is called at the window's start (false) and end (true);
/// the members of the object it returns at the end are appended to the line.
inline void measure_idle_cpu(const char* runtime, const timer_args& a, idle_state& s,
                             const std::function<json_line(bool)>& probe = {}) {
  const int64_t boot_limit = now_ns() + 10'000'000'000;
  while (s.ticks.load(std::memory_order_acquire) < 2) {
    if (now_ns() > boot_limit) fail_check(runtime, a, "the periodic timer did not tick twice within 10 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const uint64_t t0 = s.ticks.load(std::memory_order_acquire);
  if (probe) probe(false);
  const double cpu0 = process_cpu_s();
  const int64_t w0 = now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(a.duration_ms));
  const double cpu1 = process_cpu_s();
  const int64_t w1 = now_ns();
  const uint64_t ticks = s.ticks.load(std::memory_order_acquire) - t0;
  const json_line extra = probe ? probe(true) : json_line::object();
  const double wall = double(w1 - w0) * 1e-9;
  const double expected = wall * 1000.0 / double(a.period_ms);
  if (double(ticks) < 0.5 * expected)
    fail_check(runtime, a,
               "the periodic timer ticked " + std::to_string(ticks) + " times in " + std::to_string(wall) +
                   " s (period " + std::to_string(a.period_ms) + " ms)");
  json_line line{{"runtime", runtime},
                 {"scenario", "idle_cpu"},
                 {"period_ms", a.period_ms},
                 {"workers", a.workers},
                 {"seconds", rounded(wall, 3)},
                 {"cpu_s", rounded(cpu1 - cpu0, 4)},
                 {"cpu_pct", rounded(100.0 * (cpu1 - cpu0) / wall, 3)},
                 {"ticks", ticks},
                 {"expected_ticks", static_cast<int64_t>(rounded(expected, 0))}};
  line.update(extra);
  print_json_line(line);
}

// ---- cancel_rate --------------------------------------------------------------

struct cancel_state {
  std::atomic<uint64_t> pairs{0};
  std::atomic<uint64_t> cancelled{0};   ///< coact: cancel() returned true; CAF: flags set (all)
  std::atomic<uint64_t> delivered{0};   ///< coact: timer mail that arrived (must be pairs - cancelled);
                                        ///< CAF: arrivals not found in the cancelled set (must be 0)
  std::atomic<uint64_t> discarded{0};   ///< CAF: arrivals discarded by the emulated cancel
  std::atomic<uint64_t> early{0};       ///< coact: cancels lost within less than the delay (a bug)
  std::atomic<int64_t> start_ns{0};
  std::atomic<int64_t> end_ns{0};
  std::atomic<bool> finished{false};
};

inline void wait_flag(const std::atomic<bool>& f) {
  while (!f.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

inline void print_cancel_rate(const char* runtime, const timer_args& a, cancel_state& s, const char* mode) {
  const double seconds = double(s.end_ns.load() - s.start_ns.load()) * 1e-9;
  const uint64_t pairs = s.pairs.load();
  print_json_line({{"runtime", runtime},
                   {"scenario", "cancel_rate"},
                   {"delay_ms", a.delay_ms},
                   {"workers", a.workers},
                   {"seconds", rounded(seconds, 3)},
                   {"pairs", pairs},
                   {"pairs_per_s", rounded(seconds > 0 ? double(pairs) / seconds : 0.0, 1)},
                   {"cancelled", s.cancelled.load()},
                   {"delivered", s.delivered.load()},
                   {"discarded", s.discarded.load()},
                   {"cancel", mode}});
}

}  // namespace coact::bench
