// runtime/src/detail/parker.hpp: a per-thread futex parker (one owner that
// parks, any thread that unparks). Model: Rust std's futex thread parker.
//
// States (the futex word):
//   kEmpty    (0)  no token, owner not parked
//   kNotified (1)  a token is available; the next park() consumes it at once
//   kParked  (-1)  the owner is (about to be) asleep in futex_wait
// Protocol:
//   park():   1. fetch_sub(1): Notified->Empty means a token was there: return.
//             2. Empty->Parked: futex_wait while the word is Parked.
//             3. on any return, swap to Empty; if it was Notified, consume it
//                and return; otherwise (spurious) go back to 2.
//   unpark(): swap(Notified); if the old value was Parked, futex_wake(1).
// An unpark before park is never lost: the token stays until consumed.
// The swap/fetch_sub are seq_cst; the wake happens-after the swap.
#pragma once

#include <chrono>

#include "sync.hpp"

namespace coact::detail {

class Parker {
 public:
  static constexpr int32_t kEmpty = 0;
  static constexpr int32_t kNotified = 1;
  static constexpr int32_t kParked = -1;

  /// Owner thread only. Blocks until unpark() (or returns at once if a token
  /// is pending). With a timeout: returns false if it expired without a token.
  bool park(const sync::RelativeTimeout* timeout = nullptr) noexcept {
    if (state_.fetch_sub(1, sync::memory_order_seq_cst) == kNotified) return true;  // Notified -> Empty
    const uint64_t deadline = timeout ? sync::now_ns() + uint64_t(timeout->d.count()) : 0;
    for (;;) {
      sync::RelativeTimeout left{};
      if (timeout) {
        uint64_t now = sync::now_ns();
        if (now >= deadline) break;
        left.d = std::chrono::nanoseconds(deadline - now);
      }
      sync::futex_wait(&state_, kParked, timeout ? &left : nullptr);
      if (state_.load(sync::memory_order_acquire) == kNotified) break;
    }
    // Consume a token if one arrived; Parked -> Empty otherwise.
    return state_.exchange(kEmpty, sync::memory_order_seq_cst) == kNotified;
  }

  /// Any thread. Makes the owner's current or next park() return.
  void unpark() noexcept {
    unpark_ns_.store(sync::now_ns(), sync::memory_order_relaxed);
    if (state_.exchange(kNotified, sync::memory_order_seq_cst) == kParked) {
      sync::futex_wake(&state_, 1);
    }
  }

  /// Owner, after park() returned true: when the last unpark was issued (ns),
  /// for the live hand-off cost estimate (wake latency = now - this).
  uint64_t last_unpark_ns() const noexcept { return unpark_ns_.load(sync::memory_order_relaxed); }

 private:
  // Written by the owner (fetch_sub/exchange in park) and by unparkers
  // (exchange); the futex syscall reads it. seq_cst throughout.
  sync::atomic<int32_t> state_{kEmpty};
  // Written by unparkers, read by the owner after waking; relaxed: a
  // measurement, ordered well enough by the state_ exchange that follows it.
  sync::atomic<uint64_t> unpark_ns_{0};
};

}  // namespace coact::detail
