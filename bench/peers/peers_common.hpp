// bench/peers/peers_common.hpp: what the coact and CAF peer programs share.
//
// Provides: the four workload names and their constants (the same numbers in
// both programs), the command line (CLI11: --workload NAME --n N [--workers W]
// [--watchdog-s S]), the definition of "msgs" per workload, the result each
// workload's actors record and its check, the one JSON line each run prints
// and the run's watchdog (bench/common/bench_support.hpp has the mechanisms).
// Threads: main thread only (parsing and printing happen before and after the
// runtime runs), except the result structs' atomics, which actors write.
// Nothing here blocks. Errors: bad usage prints to stderr and exits 2
// (--help: exit 0); a wrong benchmark result prints to stderr and exits 1; a
// hang (--watchdog-s) exits 3.
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

#include <atomic>
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
  add_run_options(app, a.workers, a.watchdog_s);
  app.add_option("--workload", a.workload, "the workload")
      ->required()
      ->check(CLI::IsMember({"ping_pong", "fan_out", "thread_ring", "skynet"}));
  add_uint_option(app, "--n", a.n, 1, UINT64_MAX, "round trips, requests, hops, or skynet leaves (a power of 10)")
      ->required()
      ->default_str("");
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

// ---- each workload's result -------------------------------------------------------
// Written by the workload's actors (end_ns and the totals by the actor that
// observes completion, release stores; per-actor counts summed at stop), read
// by the main thread once the runtime has finished. check_and_print(): exits
// 1 (fail_check) on a wrong total, else prints the run's line.

struct ping_pong_result {
  std::atomic<uint64_t> pings{0};
  std::atomic<uint64_t> pongs{0};
  std::atomic<int64_t> end_ns{0};

  /// Want n pings and n pongs; msgs = 2n.
  void check_and_print(const char* runtime, const peer_args& a, int64_t start_ns) const {
    if (pongs.load() != a.n || pings.load() != a.n)
      fail_check(runtime, a, fmt::format("pings={} pongs={}", pings.load(), pongs.load()));
    print_result(runtime, a, start_ns, end_ns.load(), 2 * a.n, "msgs");
  }
};

struct fan_out_result {
  std::atomic<uint64_t> replies{0};
  std::atomic<uint64_t> reply_sum{0};
  std::atomic<uint64_t> handled{0};  // summed over workers at stop
  std::atomic<int64_t> end_ns{0};

  /// Want n replies summing to n(n-1)/2, n requests handled; msgs = 2n.
  void check_and_print(const char* runtime, const peer_args& a, int64_t start_ns) const {
    if (replies.load() != a.n || reply_sum.load() != triangle(a.n) || handled.load() != a.n)
      fail_check(runtime, a,
                 fmt::format("replies={} sum={} (want {}) handled={}", replies.load(), reply_sum.load(),
                             triangle(a.n), handled.load()));
    print_result(runtime, a, start_ns, end_ns.load(), 2 * a.n, "msgs");
  }
};

struct ring_result {
  std::atomic<uint64_t> hops{0};
  std::atomic<int64_t> final_node{-1};
  std::atomic<int64_t> end_ns{0};

  /// Want n hops, ending at node n % 503; msgs = n.
  void check_and_print(const char* runtime, const peer_args& a, int64_t start_ns) const {
    if (hops.load() != a.n || final_node.load() != int64_t(a.n % kRingSize))
      fail_check(runtime, a,
                 fmt::format("hops={} final_node={} (want {})", hops.load(), final_node.load(), a.n % kRingSize));
    print_result(runtime, a, start_ns, end_ns.load(), a.n, "msgs");
  }
};

struct skynet_result {
  std::atomic<uint64_t> sum{0};
  std::atomic<uint64_t> actors{0};
  std::atomic<int64_t> end_ns{0};

  /// Want the leaves' numbers to sum to n(n-1)/2 and 1 + 10 + ... + n
  /// actors; msgs = that actor count (unit "actors").
  void check_and_print(const char* runtime, const peer_args& a, int64_t start_ns) const {
    const uint64_t want_actors = skynet_actor_count(a.n);
    if (sum.load() != triangle(a.n) || actors.load() != want_actors)
      fail_check(runtime, a,
                 fmt::format("sum={} (want {}) actors={} (want {})", sum.load(), triangle(a.n), actors.load(),
                             want_actors));
    print_result(runtime, a, start_ns, end_ns.load(), want_actors, "actors");
  }
};

}  // namespace coact::bench
