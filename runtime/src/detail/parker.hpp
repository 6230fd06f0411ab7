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
//
// Polling park (park_polling): the owner sleeps in an I/O wait (the
// scheduler's poll role, reactor.cpp) instead of the futex. It publishes the
// PollWait before step 1 (seq_cst), so an unparker that swaps out Parked
// reads it and wakes the I/O wait (PollWait::wake) instead of the futex. An
// unparker that reads it only after the owner cleared it finds the owner
// already past its final swap, which then holds the token. A wake of a wait
// that already returned only makes a later wait return early.
#pragma once

#include <chrono>

#include "sync.hpp"

namespace coact::detail {

class Parker {
 public:
  /// An I/O wait the owner may sleep in (park_polling). Both members are
  /// noexcept; wake() may run on any thread, concurrently with wait(), and
  /// for as long as any Parker may still hold the PollWait.
  class PollWait {
   public:
    enum class Result { ready, woken, timed_out };
    /// Owner of the parker. Sleeps until I/O is ready (readiness collected:
    /// work for the owner), wake() is called (or spuriously), or
    /// CLOCK_MONOTONIC reaches deadline_ns (when timed).
    virtual Result wait(bool timed, uint64_t deadline_ns) noexcept = 0;
    /// Any thread: makes the current or next wait() return.
    virtual void wake() noexcept = 0;

   protected:
    ~PollWait() = default;
  };

  static constexpr int32_t kEmpty = 0;
  static constexpr int32_t kNotified = 1;
  static constexpr int32_t kParked = -1;

  /// Owner thread only. Blocks until unpark() (or returns at once if a token
  /// is pending).
  bool park() noexcept { return park_impl(false, 0); }
  /// Owner thread only. As park(), but returns false once CLOCK_MONOTONIC
  /// reaches deadline_ns (absolute ns, sync::now_ns's clock) without a token.
  /// The deadline is absolute (FUTEX_WAIT_BITSET), so no clock is read here:
  /// the timekeeper's idle tick read it twice per park for a relative timeout.
  bool park_until(uint64_t deadline_ns) noexcept { return park_impl(true, deadline_ns); }

  /// Owner thread only. As park() (timed: park_until()), sleeping in
  /// `io.wait` instead of the futex; returns true for a token or for I/O
  /// readiness collected by the wait, false on a timeout.
  bool park_polling(PollWait& io, bool timed, uint64_t deadline_ns) noexcept {
    poll_.store(&io, sync::memory_order_seq_cst);
    bool ready = false;
    if (state_.fetch_sub(1, sync::memory_order_seq_cst) == kNotified) {  // Notified -> Empty
      poll_.store(nullptr, sync::memory_order_relaxed);
      return true;
    }
    for (;;) {  // Empty -> Parked: as park_impl, the wait in place of the futex
      const PollWait::Result r = io.wait(timed, deadline_ns);
      if (r == PollWait::Result::ready) ready = true;
      if (ready || r == PollWait::Result::timed_out) break;
      if (state_.load(sync::memory_order_acquire) == kNotified) break;
    }
    const bool token = state_.exchange(kEmpty, sync::memory_order_seq_cst) == kNotified;
    poll_.store(nullptr, sync::memory_order_relaxed);
    return token || ready;
  }

  /// Any thread. Makes the owner's current or next park() return.
  void unpark() noexcept {
    unpark_ns_.store(sync::now_ns(), sync::memory_order_relaxed);
    if (state_.exchange(kNotified, sync::memory_order_seq_cst) == kParked) {
      if (PollWait* io = poll_.load(sync::memory_order_seq_cst)) {
        io->wake();
      } else {
        sync::futex_wake(&state_, 1);
      }
    }
  }

  /// Owner, after park() returned true: when the last unpark was issued (ns),
  /// for the live hand-off cost estimate (wake latency = now - this).
  uint64_t last_unpark_ns() const noexcept { return unpark_ns_.load(sync::memory_order_relaxed); }

 private:
  bool park_impl(bool timed, uint64_t deadline_ns) noexcept {
    if (state_.fetch_sub(1, sync::memory_order_seq_cst) == kNotified) return true;  // Notified -> Empty
    for (;;) {
      const sync::WaitResult r =
          timed ? sync::futex_wait_until(&state_, kParked, deadline_ns) : sync::futex_wait(&state_, kParked);
      if (state_.load(sync::memory_order_acquire) == kNotified) break;
      if (r == sync::WaitResult::timed_out) break;
    }
    // Consume a token if one arrived; Parked -> Empty otherwise.
    return state_.exchange(kEmpty, sync::memory_order_seq_cst) == kNotified;
  }

  // Written by the owner (fetch_sub/exchange in park) and by unparkers
  // (exchange); the futex syscall reads it. seq_cst throughout.
  sync::atomic<int32_t> state_{kEmpty};
  // The owner's I/O wait while in park_polling, else null. Written by the
  // owner, read by unparkers that found it Parked (the header's argument).
  sync::atomic<PollWait*> poll_{nullptr};
  // Written by unparkers, read by the owner after waking; relaxed: a
  // measurement, ordered well enough by the state_ exchange that follows it.
  sync::atomic<uint64_t> unpark_ns_{0};
};

}  // namespace coact::detail
