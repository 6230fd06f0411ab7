// runtime/src/detail/sync.hpp: the one import point for atomics, fences,
// CPU relax and the futex syscall used by the scheduler (CONTRIBUTING.md,
// "Code"; model: tokio src/loom/mod.rs). A model or stress build
// swaps what is behind these names; counting futex wakes here is how the
// "one post wakes at most 2 workers" test observes the scheduler.
#pragma once

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <ctime>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace coact::detail::sync {

using std::atomic;
using std::memory_order_acq_rel;
using std::memory_order_acquire;
using std::memory_order_relaxed;
using std::memory_order_release;
using std::memory_order_seq_cst;

/// One spin-loop hint (PAUSE on x86).
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

/// Process-wide count of futex wake syscalls (relaxed; RuntimeStats::futex_wakes
/// and the "one post wakes at most 2 workers" test).
inline atomic<uint64_t> g_futex_wakes{0};

/// Result of a futex wait, as a value (model: abseil futex.h).
enum class WaitResult { woken, value_changed, timed_out, interrupted };

/// Relative timeout for a futex wait (distinct type from an absolute deadline).
struct RelativeTimeout {
  std::chrono::nanoseconds d;
};

/// Blocks while *addr == expected, until woken, or the timeout passes
/// (no timeout: nullptr). Any thread.
inline WaitResult futex_wait(atomic<int32_t>* addr, int32_t expected,
                             const RelativeTimeout* timeout = nullptr) noexcept {
  timespec ts{};
  timespec* tsp = nullptr;
  if (timeout) {
    auto ns = timeout->d.count() < 0 ? 0 : timeout->d.count();
    ts.tv_sec = ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    tsp = &ts;
  }
  long r = syscall(SYS_futex, reinterpret_cast<int32_t*>(addr), FUTEX_WAIT_PRIVATE, expected, tsp, nullptr, 0);
  if (r == 0) return WaitResult::woken;
  switch (errno) {
    case EAGAIN:
      return WaitResult::value_changed;
    case ETIMEDOUT:
      return WaitResult::timed_out;
    default:
      return WaitResult::interrupted;
  }
}

/// Wakes up to `n` waiters on addr; returns how many were woken. Counted.
inline int futex_wake(atomic<int32_t>* addr, int n) noexcept {
  g_futex_wakes.fetch_add(1, memory_order_relaxed);
  return int(syscall(SYS_futex, reinterpret_cast<int32_t*>(addr), FUTEX_WAKE_PRIVATE, n, nullptr, nullptr, 0));
}

/// futex_wake without the count: a lock's hand-over (futex_mutex.hpp), not a
/// worker wake.
inline int futex_wake_uncounted(atomic<int32_t>* addr, int n) noexcept {
  return int(syscall(SYS_futex, reinterpret_cast<int32_t*>(addr), FUTEX_WAKE_PRIVATE, n, nullptr, nullptr, 0));
}

/// Blocks while *addr == expected, until woken or until CLOCK_MONOTONIC
/// reaches deadline_ns (absolute: FUTEX_WAIT_BITSET; no clock read here, and
/// a retry after a spurious return keeps the same deadline). Any thread.
inline WaitResult futex_wait_until(atomic<int32_t>* addr, int32_t expected, uint64_t deadline_ns) noexcept {
  timespec ts{};
  ts.tv_sec = time_t(deadline_ns / 1000000000);
  ts.tv_nsec = long(deadline_ns % 1000000000);
  long r = syscall(SYS_futex, reinterpret_cast<int32_t*>(addr), FUTEX_WAIT_BITSET_PRIVATE, expected, &ts, nullptr,
                   FUTEX_BITSET_MATCH_ANY);
  if (r == 0) return WaitResult::woken;
  switch (errno) {
    case EAGAIN:
      return WaitResult::value_changed;
    case ETIMEDOUT:
      return WaitResult::timed_out;
    default:
      return WaitResult::interrupted;
  }
}

/// Monotonic nanoseconds: CLOCK_MONOTONIC, the clock of steady_clock and of
/// the futex's relative timeouts. Read with clock_gettime directly (the vDSO):
/// steady_clock::now() is an out-of-line call into libstdc++, one more code
/// page and cache line for an idle worker's tick to fault in (each a miss
/// after a sleep; bench `timers` idle_cpu).
inline uint64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

}  // namespace coact::detail::sync
