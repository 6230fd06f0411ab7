// runtime/src/detail/timer_heap.hpp: the one min-heap of timer entries
// (docs/DESIGN.md, "Timers"). Reasons: Sleep (resume a sleeping actor), WaitTimeout (resume
// a waiting actor with a timeout), Send (deliver mail, resolved at fire time).
//
// Virtual time: every virtual entry carries delay_stamp: at arming, the
// arming thread's position in the delay ledger (causal::timer_stamp_cycles:
// G minus what that thread still owes, so its debt shifts the timer as if it
// had paid before arming); at a re-queue, G. pop_due converts the delay accrued since
// the stamp to wall time (tsc_hz) and shifts the entry's effective deadline;
// an entry not yet due at its shifted deadline is re-queued there with a fresh
// stamp and the same seq (cancellation identity survives). Zero debt takes
// the unshifted path. Wall entries never shift.
// Cancellation: Send and WaitTimeout entries are "armed" in a set keyed by
// seq; pop_due fires one only if it is still armed and disarms it under the
// lock, so cancel(seq) returns true iff it landed before the fire. A
// WaitTimeout is cancelled when its reply arrives first (or its actor stops):
// the canceller then drops the entry's cell reference itself, so a cancelled
// entry never touches its cell again. Found: 10^5 asks answered at once with
// a one-hour timeout kept 10^5 entries (and their actors' cells) for an
// hour. A cancelled entry
// stays in the heap (a binary heap cannot remove from the middle cheaply)
// until it is popped or until cancelled entries outnumber live ones; then
// the heap is compacted (cancelled entries freed, heap rebuilt, spare
// capacity returned): memory stays within a small factor of the live timers
// (amortised O(1) per cancel: each compaction removes at least half the
// entries it scans). Found: 10^6 one-hour send_after + cancel kept 86 MB and
// pending_timers() at 10^6 until the deadlines.
// next_deadline(): a lock-free snapshot of the earliest raw deadline,
// maintained under the lock; it may under-report the true next firing
// (shifts are applied at pop), which costs at most a spurious wake per
// injected chunk, never a late fire.
// Threads: all members thread-safe (one mutex, a FutexMutex). Firing happens outside the lock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include <coact/causal/delay_ledger.hpp>
#include <coact/calibrate/tsc.hpp>
#include <coact/runtime/detail/actor_cell.hpp>
#include <coact/runtime/timer.hpp>

#include "futex_mutex.hpp"
#include "sync.hpp"

namespace coact::detail {

enum class TimerReason : uint8_t { sleep, wait_timeout, send };

/// The armed set of TimerHeap: seqs (never 0) in one open-addressed array,
/// linear probing, deletion by backward shift (no tombstones; Knuth, TAOCP
/// vol. 3, 6.4, Algorithm R). Not a std::unordered_set: its node allocation
/// on insert and free on erase would put malloc's code and arena lines on
/// every periodic tick; on an idle pool every cache line a tick touches is a
/// miss after the sleep, so a tick's CPU
/// grows with its footprint. Capacity is a power of two, at least 64; the
/// load stays at most 1/2 (grows by doubling). Seqs are consecutive, so the
/// slot is a Fibonacci hash (the multiplicative hash, TAOCP 6.4) of the seq.
/// Not thread-safe (TimerHeap holds its lock).
class SeqSet {
 public:
  void insert(uint64_t k) {
    if (2 * (size_ + 1) > cap_) rehash_to(cap_ == 0 ? kMinCap : 2 * cap_);
    size_t i = slot(k);
    while (slots_[i] != 0) {
      if (slots_[i] == k) return;
      i = (i + 1) & (cap_ - 1);
    }
    slots_[i] = k;
    ++size_;
  }
  /// Removes k; returns 1 if it was present, else 0 (as unordered_set::erase).
  size_t erase(uint64_t k) noexcept {
    if (cap_ == 0) return 0;
    size_t i = slot(k);
    while (slots_[i] != k) {
      if (slots_[i] == 0) return 0;
      i = (i + 1) & (cap_ - 1);
    }
    // Backward shift: move later entries of the probe run into the hole
    // when their home slot does not lie cyclically in (hole, j].
    size_t hole = i;
    for (size_t j = (i + 1) & (cap_ - 1); slots_[j] != 0; j = (j + 1) & (cap_ - 1)) {
      const size_t home = slot(slots_[j]);
      const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (stays) continue;
      slots_[hole] = slots_[j];
      hole = j;
    }
    slots_[hole] = 0;
    --size_;
    return 1;
  }
  bool contains(uint64_t k) const noexcept {
    if (cap_ == 0) return false;
    for (size_t i = slot(k); slots_[i] != 0; i = (i + 1) & (cap_ - 1))
      if (slots_[i] == k) return true;
    return false;
  }
  size_t size() const noexcept { return size_; }
  size_t capacity() const noexcept { return cap_; }
  void clear() noexcept {
    slots_.reset();
    cap_ = size_ = 0;
    shift_ = 64;
  }
  /// Returns spare memory: rebuilds at the smallest capacity that keeps the
  /// load at most 1/2.
  void shrink() {
    size_t c = kMinCap;
    while (2 * size_ > c) c *= 2;
    if (size_ == 0) {
      clear();
    } else if (c < cap_) {
      rehash_to(c);
    }
  }

 private:
  static constexpr size_t kMinCap = 64;
  size_t slot(uint64_t k) const noexcept { return size_t((k * 0x9E3779B97F4A7C15ull) >> shift_); }
  void rehash_to(size_t cap) {
    std::unique_ptr<uint64_t[]> old = std::move(slots_);
    const size_t old_cap = cap_;
    slots_ = std::make_unique<uint64_t[]>(cap);  // zeroed: all empty
    cap_ = cap;
    shift_ = 64 - uint32_t(__builtin_ctzll(cap));
    size_ = 0;
    for (size_t i = 0; i < old_cap; ++i)
      if (old[i] != 0) insert(old[i]);
  }
  std::unique_ptr<uint64_t[]> slots_;
  size_t cap_ = 0;
  size_t size_ = 0;
  uint32_t shift_ = 64;
};

/// Entries that cancel(seq) can disarm (a sleep always runs to its deadline).
constexpr bool cancellable(TimerReason r) noexcept { return r != TimerReason::sleep; }

struct TimerEntry {
  uint64_t deadline_ns;   // CLOCK_MONOTONIC ns (raw, or shifted after a re-queue)
  uint64_t seq;           // unique, monotonic: ties fire in arming order
  uint64_t stamp_cycles;  // delay ledger G at (re-)queue (virtual entries)
  Anchor anchor;
  TimerReason reason;
  TimerAction* action;  // Send: owned; null otherwise
  ActorCell* cell;      // Sleep/WaitTimeout: the waiter (holds a reference)
  uint64_t wait_epoch;  // Sleep/WaitTimeout: the wait identity (with cell->pid)
};

class TimerHeap {
 public:
  static constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();

  /// Inserts; returns (seq, true iff it became the earliest deadline).
  /// e.stamp_cycles: the caller's causal::timer_stamp_cycles() for a virtual
  /// entry (taken outside this lock: it may settle the caller's live slot).
  std::pair<uint64_t, bool> insert(TimerEntry e) {
    std::lock_guard lk(mu_);
    e.seq = ++seq_;
    if (e.anchor != Anchor::virtual_time) e.stamp_cycles = 0;
    if (cancellable(e.reason)) armed_.insert(e.seq);
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), later);
    const bool earliest = heap_.front().seq == e.seq;
    next_.store(heap_.front().deadline_ns, sync::memory_order_seq_cst);
    return {e.seq, earliest};
  }

  /// True iff the Send or WaitTimeout timer `seq` was still armed (the cancel
  /// beat the fire); the entry will never fire. A cancelled WaitTimeout's cell
  /// reference is the caller's to release.
  bool cancel(uint64_t seq) {
    std::lock_guard lk(mu_);
    if (armed_.erase(seq) == 0) return false;
    ++cancelled_;
    if (cancelled_ > heap_.size() - cancelled_) compact_locked();
    return true;
  }

  /// Moves every entry due at `now_ns` (after virtual shifting) into `out`,
  /// in deadline order. Cancelled Sends are dropped here.
  void pop_due(uint64_t now_ns, std::vector<TimerEntry>& out) {
    std::lock_guard lk(mu_);
    const uint64_t g = causal::global_delay_cycles();
    while (!heap_.empty() && heap_.front().deadline_ns <= now_ns) {
      std::pop_heap(heap_.begin(), heap_.end(), later);
      TimerEntry e = heap_.back();
      heap_.pop_back();
      if (cancellable(e.reason) && armed_.erase(e.seq) == 0) {  // cancelled
        delete e.action;                                        // null for a WaitTimeout
        --cancelled_;
        continue;
      }
      if (e.anchor == Anchor::virtual_time && g > e.stamp_cycles) {
        const uint64_t shift = uint64_t(calibrate::cycles_to_duration(g - e.stamp_cycles).count());
        if (e.deadline_ns + shift > now_ns) {  // not yet due in virtual time: chase the delay
          e.deadline_ns += shift;
          e.stamp_cycles = g;
          if (cancellable(e.reason)) armed_.insert(e.seq);
          heap_.push_back(e);
          std::push_heap(heap_.begin(), heap_.end(), later);
          continue;
        }
      }
      out.push_back(e);
    }
    next_.store(heap_.empty() ? kNone : heap_.front().deadline_ns, sync::memory_order_seq_cst);
  }

  /// Earliest raw deadline or kNone; lock-free (one load).
  uint64_t next_deadline(std::memory_order mo = std::memory_order_relaxed) const noexcept { return next_.load(mo); }

  /// Removes everything (shutdown: orphans). Returns the entries for disposal.
  std::vector<TimerEntry> clear() {
    std::lock_guard lk(mu_);
    std::vector<TimerEntry> all;
    all.swap(heap_);
    // Cancelled entries are not returned (they were never going to fire).
    std::erase_if(all, [&](TimerEntry& e) {
      if (!cancellable(e.reason) || armed_.contains(e.seq)) return false;
      delete e.action;  // null for a WaitTimeout
      return true;
    });
    armed_.clear();
    cancelled_ = 0;
    next_.store(kNone, sync::memory_order_seq_cst);
    return all;
  }

  /// Live entries: armed Sends and wait timeouts, and sleeps (cancelled
  /// entries still in the heap are not counted).
  size_t size() const {
    std::lock_guard lk(mu_);
    return heap_.size() - cancelled_;
  }

  /// Entries physically in the heap, cancelled ones included (tests: the
  /// memory bound).
  size_t stored() const {
    std::lock_guard lk(mu_);
    return heap_.size();
  }

 private:
  // Drops every cancelled entry, rebuilds the heap and returns spare memory
  // (the vector's and the armed set's) once it is mostly unused. Under mu_.
  void compact_locked() {
    std::erase_if(heap_, [&](TimerEntry& e) {
      if (!cancellable(e.reason) || armed_.contains(e.seq)) return false;
      delete e.action;  // null for a WaitTimeout
      return true;
    });
    cancelled_ = 0;
    std::make_heap(heap_.begin(), heap_.end(), later);
    if (heap_.capacity() > 4 * std::max<size_t>(heap_.size(), 256)) heap_.shrink_to_fit();
    if (armed_.capacity() > 4 * std::max<size_t>(2 * armed_.size(), 256)) armed_.shrink();
    next_.store(heap_.empty() ? kNone : heap_.front().deadline_ns, sync::memory_order_seq_cst);
  }

  static bool later(const TimerEntry& a, const TimerEntry& b) {
    return a.deadline_ns != b.deadline_ns ? a.deadline_ns > b.deadline_ns : a.seq > b.seq;
  }
  // A FutexMutex, not std::mutex: insert and pop_due run on every periodic
  // tick, uncontended on an idle pool (futex_mutex.hpp).
  mutable FutexMutex mu_;
  std::vector<TimerEntry> heap_;  // guarded by mu_
  SeqSet armed_;                  // guarded by mu_: armed Send / WaitTimeout seqs
  uint64_t seq_ = 0;              // guarded by mu_
  size_t cancelled_ = 0;          // guarded by mu_: cancelled entries still in heap_
  // next_: written under mu_ (seq_cst: the inserter side of the timekeeper
  // handshake in idle.cpp), read lock-free by the busy-path due check.
  sync::atomic<uint64_t> next_{kNone};
};

}  // namespace coact::detail
