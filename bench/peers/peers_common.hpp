// bench/peers/peers_common.hpp: what the coact and CAF peer programs share.
//
// Provides: the four workload names and their constants (the same numbers in
// both programs), argument parsing (--workload NAME --n N --workers W), the
// definition of "msgs" per workload, and the one JSON line each run prints.
// Threads: main thread only (parsing and printing happen before and after the
// runtime runs). Nothing here blocks. Errors: bad usage prints to stderr and
// exits 2; a wrong benchmark result prints to stderr and exits 1.
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
#include <cinttypes>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace coact::bench {

inline constexpr uint32_t kFanOutWorkers = 64;
inline constexpr uint32_t kRingSize = 503;
inline constexpr uint32_t kSkynetBranching = 10;

using bench_clock = std::chrono::steady_clock;

/// Nanoseconds on bench_clock since its epoch (stored in atomics by actors).
inline int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(bench_clock::now().time_since_epoch())
      .count();
}

struct peer_args {
  std::string workload;
  uint64_t n = 0;
  uint32_t workers = 2;
  uint32_t watchdog_s = 0;  ///< 0 = none; else a run still going after this many seconds is a hang
};

[[noreturn]] inline void usage(const char* prog, const char* why) {
  std::fprintf(stderr,
               "%s: %s\nusage: %s --workload ping_pong|fan_out|thread_ring|skynet --n N "
               "[--workers W] [--watchdog-s S]\n",
               prog, why, prog);
  std::exit(2);
}

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

inline bool parse_u64(const char* s, uint64_t& out) {
  if (!s || !*s) return false;
  uint64_t v = 0;
  for (const char* p = s; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    uint64_t d = uint64_t(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  out = v;
  return true;
}

/// Parses --workload NAME --n N --workers W (also --key=value). Exits 2 on bad usage.
inline peer_args parse_args(int argc, char** argv) {
  peer_args a;
  const char* prog = argc > 0 ? argv[0] : "peers";
  for (int i = 1; i < argc; ++i) {
    std::string key = argv[i];
    std::string val;
    if (auto eq = key.find('='); eq != std::string::npos) {
      val = key.substr(eq + 1);
      key.resize(eq);
    } else if (i + 1 < argc) {
      val = argv[++i];
    } else {
      usage(prog, ("missing value for " + key).c_str());
    }
    uint64_t v = 0;
    if (key == "--workload") {
      a.workload = val;
    } else if (key == "--n") {
      if (!parse_u64(val.c_str(), v) || v == 0) usage(prog, "--n must be a positive integer");
      a.n = v;
    } else if (key == "--watchdog-s") {
      if (!parse_u64(val.c_str(), v) || v > 86400) usage(prog, "--watchdog-s must be in 0..86400");
      a.watchdog_s = uint32_t(v);
    } else if (key == "--workers") {
      if (!parse_u64(val.c_str(), v) || v == 0 || v > 1024) usage(prog, "--workers must be in 1..1024");
      a.workers = uint32_t(v);
    } else {
      usage(prog, ("unknown argument " + key).c_str());
    }
  }
  if (a.workload.empty()) usage(prog, "--workload is required");
  if (a.n == 0) usage(prog, "--n is required");
  if (a.workload != "ping_pong" && a.workload != "fan_out" && a.workload != "thread_ring" &&
      a.workload != "skynet")
    usage(prog, ("unknown workload " + a.workload).c_str());
  if (a.workload == "skynet" && skynet_actor_count(a.n) == 0)
    usage(prog, "skynet needs --n a power of 10 (the number of leaves)");
  if (a.workload == "skynet" && a.n > 100'000'000) usage(prog, "skynet --n at most 10^8");
  return a;
}

/// A wrong result: message on stderr, exit 1.
[[noreturn]] inline void fail_check(const char* runtime, const peer_args& a, const std::string& what) {
  std::fprintf(stderr, "%s/%s n=%" PRIu64 ": WRONG RESULT: %s\n", runtime, a.workload.c_str(), a.n,
               what.c_str());
  std::exit(1);
}

/// Prints the run's one JSON line on stdout. `unit` names what `msgs` counts
/// ("msgs", or "actors" for skynet).
inline void print_result(const char* runtime, const peer_args& a, int64_t start_ns, int64_t end_ns,
                         uint64_t msgs, const char* unit) {
  double seconds = double(end_ns - start_ns) * 1e-9;
  if (!(seconds > 0)) seconds = 1e-9;
  std::printf(
      "{\"runtime\":\"%s\",\"workload\":\"%s\",\"n\":%" PRIu64 ",\"workers\":%u,\"seconds\":%.9f,"
      "\"msgs\":%" PRIu64 ",\"msgs_per_s\":%.1f,\"unit\":\"%s\"}\n",
      runtime, a.workload.c_str(), a.n, a.workers, seconds, msgs, double(msgs) / seconds, unit);
  std::fflush(stdout);
}

/// Declares a hang: if the run has not finished (disarm() not called) after
/// args.watchdog_s seconds, prints "HUNG" with `report()` (runtime counters)
/// on stderr and exits with status 3 (std::_Exit: the runtime's threads are
/// stuck, so no destructors run). Armed by the main thread before the run,
/// disarmed by it after; report() runs on the watchdog thread.
class watchdog {
 public:
  watchdog(const char* runtime, const peer_args& a, std::function<std::string()> report)
      : runtime_(runtime), args_(a), report_(std::move(report)) {
    if (a.watchdog_s == 0) return;
    thread_ = std::thread([this] {
      std::unique_lock<std::mutex> lk(mu_);
      if (cv_.wait_for(lk, std::chrono::seconds(args_.watchdog_s), [this] { return done_; })) return;
      std::fprintf(stderr, "%s/%s n=%" PRIu64 " workers=%u: HUNG after %us: %s\n", runtime_,
                   args_.workload.c_str(), args_.n, args_.workers, args_.watchdog_s,
                   report_ ? report_().c_str() : "");
      std::fflush(stderr);
      std::_Exit(3);
    });
  }
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;
  ~watchdog() { disarm(); }
  void disarm() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  const char* runtime_;
  const peer_args& args_;
  std::function<std::string()> report_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

/// n(n-1)/2: the sum of 0..n-1 (fan_out replies, skynet leaves).
inline uint64_t triangle(uint64_t n) { return n % 2 == 0 ? (n / 2) * (n - 1) : n * ((n - 1) / 2); }

}  // namespace coact::bench
