// tests/support/spin.hpp: time helpers shared by tests — spin_for (busy-wait
// on the cycle clock, so a region really runs for d), wait_until (poll a
// predicate with short sleeps, bounded), cpu_seconds (this process's CPU
// time), thread_ids and threads_cpu_seconds (the CPU time of chosen threads,
// e.g. those a Runtime started). Thread: any; spin_for and wait_until block
// the caller.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <coact/calibrate/tsc.hpp>

namespace coact::test {

/// Busy-waits for `d` on calibrate::now_cycles() (no syscall, no sleep).
inline void spin_for(std::chrono::nanoseconds d) {
  const uint64_t end = calibrate::now_cycles() + calibrate::duration_to_cycles(d);
  while (calibrate::now_cycles() < end) {
  }
}

/// Polls `pred` every `poll` until it holds or `limit` passes; returns pred().
inline bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit,
                       std::chrono::microseconds poll = std::chrono::microseconds(200)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(poll);
  return pred();
}

/// User + system CPU seconds of this process so far (getrusage).
inline double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/// The ids of this process's threads now (/proc/self/task), sorted.
inline std::vector<pid_t> thread_ids() {
  std::vector<pid_t> ids;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec))
    ids.push_back(pid_t(std::atoi(e.path().filename().c_str())));
  std::sort(ids.begin(), ids.end());
  return ids;
}

/// The ids in `after` that are not in `before` (both sorted): the threads
/// started in between.
inline std::vector<pid_t> new_threads(const std::vector<pid_t>& before, const std::vector<pid_t>& after) {
  std::vector<pid_t> out;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(), std::back_inserter(out));
  return out;
}

/// CPU seconds the threads `tids` of this process have run so far, to the
/// nanosecond (each thread's CPU clock: Linux's clock id for a thread id,
/// as glibc's pthread_getcpuclockid builds it); a thread that has exited
/// counts 0 from then on.
inline double threads_cpu_seconds(const std::vector<pid_t>& tids) {
  double sum = 0;
  for (const pid_t tid : tids) {
    const clockid_t clock = clockid_t((~unsigned(tid) << 3) | 6);  // CPUCLOCK_SCHED | per-thread
    timespec ts{};
    if (::clock_gettime(clock, &ts) == 0) sum += double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
  }
  return sum;
}

}  // namespace coact::test
