// bench/peers/peers_common.hpp: what the coact and CAF peer programs share.
//
// Provides: the four workload names and their constants (the same numbers in
// both programs), the command line (CLI11: --workload NAME --n N [--workers W]
// [--watchdog-s S]), the definition of "msgs" per workload, the one JSON line
// each run prints and the run's watchdog (bench/common/bench_support.hpp has
// the mechanisms). Threads: main thread only (parsing and printing happen
// before and after the runtime runs). Nothing here blocks. Errors: bad usage
// prints to stderr and exits 2 (--help: exit 0); a wrong benchmark result
// prints to stderr and exits 1; a hang (--watchdog-s) exits 3.
//
// The workloads (each program runs exactly one per process, once):
//   ping_pong    2 actors, n round trips. msgs = 2n (ping + pong per round trip).
//   fan_out      1 master, 64 workers, n requests, scatter-gather in rounds of
//                64: the master sends one request to each worker, waits for all
//                64 replies, then sends the next round (the last round may be
//                short). msgs = 2n (request + reply per request).
//   thread_ring  503 actors in a ring, a token passed n hops (each hop is one
//                send to the next actor). msgs = n (one message per hop).
//   skynet       10-ary spawn tree with n leaves (n a power of 10): each node is
//                spawned, sent one start message, spawns 10 children (or is a
//                leaf), sums its children's replies and replies to its parent.
//                The figure is actors per second: msgs = the number of actors
//                spawned, 1 + 10 + ... + n (1,111,111 for n = 10^6).
//
// Timing ("seconds"): from just before the main thread sends the start
// message (all fixed actors already spawned) to the moment the actor that
// observes completion reads the clock (std::chrono::steady_clock); teardown
// after completion is not timed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "bench_support.hpp"

namespace coact::bench {

inline constexpr uint32_t kFanOutWorkers = 64;
inline constexpr uint32_t kRingSize = 503;
inline constexpr uint32_t kSkynetBranching = 10;

struct peer_args {
  std::string workload;
  uint64_t n = 0;
  uint32_t workers = 2;
  uint32_t watchdog_s = 0;  ///< 0 = none; else a run still going after this many seconds is a hang
};

/// 1 + b + b^2 + ... + leaves, or 0 if leaves is not a power of b.
inline uint64_t skynet_actor_count(uint64_t leaves) {
  uint64_t total = 0;
  uint64_t level = 1;
  while (level < leaves) {
    total += level;
    level *= kSkynetBranching;
  }
  return level == leaves ? total + leaves : 0;
}

/// Parses --workload NAME --n N [--workers W] [--watchdog-s S] (also
/// --key=value; a repeated option: the last one wins). Exits 2 on bad usage,
/// 0 after --help.
inline peer_args parse_args(int argc, char** argv) {
  peer_args a;
  CLI::App app{"Runs one peer workload once and prints one JSON line (bench/peers/peers_common.hpp)."};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--workload", a.workload, "the workload")
      ->required()
      ->check(CLI::IsMember({"ping_pong", "fan_out", "thread_ring", "skynet"}));
  app.add_option("--n", a.n, "round trips, requests, hops, or skynet leaves (a power of 10)")
      ->required()
      ->transform(decimal_in(1, UINT64_MAX));
  app.add_option("--workers", a.workers, "worker threads")->capture_default_str()->transform(decimal_in(1, 1024));
  app.add_option("--watchdog-s", a.watchdog_s, "declare a hang (exit 3) after this many seconds; 0 = never")
      ->capture_default_str()
      ->transform(decimal_in(0, 86400));
  app.callback([&a] {
    if (a.workload == "skynet" && skynet_actor_count(a.n) == 0)
      throw CLI::ValidationError("--n", "skynet needs --n a power of 10 (the number of leaves)");
    if (a.workload == "skynet" && a.n > 100'000'000) throw CLI::ValidationError("--n", "skynet --n at most 10^8");
  });
  parse_or_exit(app, argc, argv);
  return a;
}

/// A wrong result: message on stderr, exit 1.
[[noreturn]] inline void fail_check(const char* runtime, const peer_args& a, const std::string& what) {
  wrong_result(fmt::format("{}/{} n={}", runtime, a.workload, a.n), what);
}

/// Prints the run's one JSON line on stdout. `unit` names what `msgs` counts
/// ("msgs", or "actors" for skynet). Members, in this order (scripts/bench.sh
/// and scripts/perf-compare.sh read them): runtime, workload, n, workers,
/// seconds (9 decimals), msgs, msgs_per_s (1 decimal), unit.
inline void print_result(const char* runtime, const peer_args& a, int64_t start_ns, int64_t end_ns,
                         uint64_t msgs, const char* unit) {
  double seconds = double(end_ns - start_ns) * 1e-9;
  if (!(seconds > 0)) seconds = 1e-9;
  print_json_line({{"runtime", runtime},
                   {"workload", a.workload},
                   {"n", a.n},
                   {"workers", a.workers},
                   {"seconds", rounded(seconds, 9)},
                   {"msgs", msgs},
                   {"msgs_per_s", rounded(double(msgs) / seconds, 1)},
                   {"unit", unit}});
}

/// The run's watchdog (see watchdog): armed for --watchdog-s seconds (none
/// when 0); a hang is reported as "<runtime>/<workload> n=N workers=W: HUNG
/// after Ss: <report()>".
inline watchdog arm_watchdog(const char* runtime, const peer_args& a, std::function<std::string()> report) {
  return watchdog(std::chrono::seconds(a.watchdog_s),
                  fmt::format("{}/{} n={} workers={}", runtime, a.workload, a.n, a.workers), std::move(report));
}

/// n(n-1)/2: the sum of 0..n-1 (fan_out replies, skynet leaves).
inline uint64_t triangle(uint64_t n) { return n % 2 == 0 ? (n / 2) * (n - 1) : n * ((n - 1) / 2); }

}  // namespace coact::bench
