// tests/support/spin.hpp: time helpers shared by tests — spin_for (busy-wait
// on the cycle clock, so a region really runs for d), wait_until (poll a
// predicate with short sleeps, bounded), cpu_seconds (this process's CPU
// time). Thread: any; spin_for and wait_until block the caller.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

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

}  // namespace coact::test
