// runtime/src/detail/futex_mutex.hpp: FutexMutex, a mutex on one futex word,
// inlined, for the short critical sections of the idle tick (the timer heap's
// insert / pop_due, SpinPark's idle list). Model and algorithm: Rust std's
// futex mutex (library/std/src/sys/sync/mutex/futex.rs), itself Drepper's
// "Futexes Are Tricky" (2011), mutex 3.
//
// Why not std::mutex: a periodic timer on an otherwise idle pool takes four
// uncontended lock/unlock pairs per tick (heap insert and pop_due, idle-list
// register and unregister); pthread_mutex_lock / _unlock are a call pair out
// of line in libc each, and their code lines are cold misses after every
// sleep. Here the uncontended pair is one CAS and one
// exchange, inline.
//
// States of the word: 0 unlocked; 1 locked, no waiter; 2 locked, maybe
// waiters.
//   lock():   CAS 0 -> 1 (acquire); done if it succeeds. Otherwise spin up
//             to kSpins times while the word is 1 (a holder about to leave),
//             retry the CAS; then loop { if swap(2) (acquire) returned 0: we
//             own it (with state 2: a later unlock may wake needlessly, never
//             miss a waiter); futex_wait(word, 2) }.
//   unlock(): swap(0) (release); if it returned 2, futex_wake(1).
// Mutual exclusion: the lock is taken only by a CAS from 0 or a swap that
// returned 0, and only unlock() writes 0; read-modify-writes on one word are
// totally ordered, so at most one thread read 0 since the last unlock.
// No lost wakeup: a waiter sleeps only while the word is 2 (futex_wait checks
// it atomically with the sleep); it set 2 itself by its swap, so the holder's
// unlock swap reads 2 (or a later 2) and wakes one waiter; the woken waiter
// swaps 2 again, so any other waiters are still woken by the next unlock.
// Happens-before: unlock's release swap to lock's acquire RMW (ThreadSanitizer
// models these, so guarded data needs no annotation).
// The wake is not counted in sync::g_futex_wakes (that counts worker wakes;
// "one post wakes at most 2 workers" observes it).
// Satisfies Lockable (std::lock_guard). Not recursive; unlock by the owner.
#pragma once

#include <cstdint>

#include "sync.hpp"

namespace coact::detail {

class FutexMutex {
 public:
  FutexMutex() = default;
  FutexMutex(const FutexMutex&) = delete;
  FutexMutex& operator=(const FutexMutex&) = delete;

  void lock() noexcept {
    int32_t expected = 0;
    if (word_.compare_exchange_strong(expected, 1, sync::memory_order_acquire, sync::memory_order_relaxed)) [[likely]]
      return;
    lock_contended();
  }
  bool try_lock() noexcept {
    int32_t expected = 0;
    return word_.compare_exchange_strong(expected, 1, sync::memory_order_acquire, sync::memory_order_relaxed);
  }
  void unlock() noexcept {
    if (word_.exchange(0, sync::memory_order_release) == 2) [[unlikely]]
      wake_one();
  }

 private:
  static constexpr int kSpins = 100;  // as Rust std's futex mutex

  [[gnu::noinline]] void lock_contended() noexcept {
    int32_t s = spin();
    if (s == 0) {  // unlocked while we spun: try the uncontended state first
      int32_t expected = 0;
      if (word_.compare_exchange_strong(expected, 1, sync::memory_order_acquire, sync::memory_order_relaxed)) return;
      s = expected;
    }
    for (;;) {
      // Take it as 2 (maybe waiters): we cannot know whether others sleep.
      if (s != 2 && word_.exchange(2, sync::memory_order_acquire) == 0) return;
      sync::futex_wait(&word_, 2);
      s = spin();
    }
  }
  // Spins while the word is 1 (locked, nobody waiting), at most kSpins times.
  int32_t spin() noexcept {
    int32_t s = word_.load(sync::memory_order_relaxed);
    for (int i = 0; i < kSpins && s == 1; ++i) {
      sync::cpu_relax();
      s = word_.load(sync::memory_order_relaxed);
    }
    return s;
  }
  [[gnu::noinline]] void wake_one() noexcept { sync::futex_wake_uncounted(&word_, 1); }

  sync::atomic<int32_t> word_{0};
};

}  // namespace coact::detail
