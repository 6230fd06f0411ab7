// runtime/src/detail/cpu_headroom.hpp: whether the machine has a CPU to spare
// (CpuHeadroom), read by the scheduler before it spends a CPU that another
// runnable thread might need: an idle worker's spin, a sibling woken for a
// cascade's backlog, a parked worker holding the reactor's poll role while
// another worker is busy, a second busy worker polling beside one that
// already does (idle.cpp, worker_loop.cpp).
//
// Why: those four buy latency with a CPU, which is free only while a CPU is
// idle. When the machine's runnable threads already fill its CPUs (a service
// on a small machine beside the client that loads it; more busy threads than
// cores), the spinning or extra worker takes its CPU from a thread that was
// running: the kernel time-slices them, and the program (or the client it
// serves) waits for a CPU instead of a few microseconds for a wake.
//
// What: fits(now, on_cpu_now, threads): whether `threads` threads of this
// Scheduler would find CPUs beside the machine's other load, E:
//   E + threads <= online CPUs + 1/2.
// E is the runnable threads that are not this Scheduler's workers (other
// processes, this process's other threads, a client on the same machine),
// an average: each sample takes the kernel's instantaneous runnable count
// (the fourth field of /proc/loadavg, "runnable/total") less `on_cpu_now`,
// the Scheduler's workers on a CPU at that moment (the caller included);
// samples are at least kRefreshNs apart (the first caller after the period
// reads the file; the others use the average) and E moves an eighth of the
// way to each. Separating the Scheduler's own workers keeps its decisions
// out of what it measures (a sibling left parked would otherwise make the
// machine look free and wake it again), and the average keeps a client
// that blocks now and then between requests from reading as gone.
// The half CPU: one more thread is admitted while the others leave it more
// than half a CPU on average.
// The count is the whole machine's, compared with the CPUs online, not the
// process's affinity mask: a process confined to fewer CPUs reads more
// headroom than it has (the behaviour without this check). A container that
// reads its host's /proc/loadavg is judged by its host's load: on a busy
// host its workers spin less and spill later. Either way a check changes
// only when work moves, never whether it runs: a backlog left in place is
// still taken by the chain backstop (worker_loop.cpp), a worker that leaves
// the poll role looks again within Scheduler::kYieldedParkMaxNs
// (park_idle), and a busy worker that leaves the poll to another polls again
// once that one stops (busy_poll).
//
// Unavailable (no /proc, an unparsable line): fits() is always true, and
// every caller behaves as on an idle machine.
//
// Threads: any thread may call fits(); the state is two relaxed atomics (two
// racing samplers both read the file and one update may be lost, which only
// slows the average by one sample). Lifetime: owned by the Scheduler; the
// descriptor is closed in the destructor.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace coact::detail {

class CpuHeadroom {
 public:
  static constexpr uint64_t kRefreshNs = 1'000'000;  // E's sample period: one small procfs read per period

  /// Reads `path` (a /proc/loadavg line; another file for the tests) and
  /// compares with `cpus` CPUs (0: the CPUs online). Any thread.
  explicit CpuHeadroom(const char* path = "/proc/loadavg", int64_t cpus = 0) noexcept;
  ~CpuHeadroom();
  CpuHeadroom(const CpuHeadroom&) = delete;
  CpuHeadroom& operator=(const CpuHeadroom&) = delete;

  /// Whether `threads` of the Scheduler's threads fit beside the machine's
  /// other load (the header comment). `now_ns`: sync::now_ns(); `on_cpu_now`:
  /// the Scheduler's workers on a CPU at this moment, the caller included.
  /// Any thread; may read a /proc file, never blocks otherwise.
  bool fits(uint64_t now_ns, int64_t on_cpu_now, int64_t threads) noexcept {
    if (fd_ < 0) return true;
    // A caller's clock may be a little older than the last sample's: no
    // sample then (an addition, so no wrap-around).
    if (now_ns >= sampled_at_ns_.load(std::memory_order_relaxed) + kRefreshNs) sample(now_ns, on_cpu_now);
    return others_x256_.load(std::memory_order_relaxed) + threads * 256 <= cpus_ * 256 + 128;
  }

  /// The runnable count in a /proc/loadavg line ("0.52 0.14 0.05 3/110 4242"),
  /// or -1 if the line does not hold one. Pure; for the tests.
  static int64_t parse_runnable(std::string_view loadavg) noexcept;
  /// E's next value (x256) after a sample of `others` runnable threads.
  static int64_t next_average_x256(int64_t average_x256, int64_t others) noexcept {
    return average_x256 + (others * 256 - average_x256) / 8;
  }

 private:
  void sample(uint64_t now_ns, int64_t on_cpu_now) noexcept;

  int fd_ = -1;
  int64_t cpus_ = 1;
  std::atomic<uint64_t> sampled_at_ns_{0};
  std::atomic<int64_t> others_x256_{0};  // E, fixed point (x256)
};

}  // namespace coact::detail
