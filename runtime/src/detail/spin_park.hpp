// runtime/src/detail/spin_park.hpp: SpinPark, the idle-worker coordinator
// (wakeup and fairness: docs/DESIGN.md, "Pool"): an idle worker spins for a bounded
// window re-scanning for shared work, then parks on its own futex parker.
// Producers of shared work call notify(), which skips the futex entirely when
// some worker is spinning (route-to-spinner: the spinner's scan finds the
// work for free); only the genuine idle edge pays one unpark.
//
// Park protocol (worker w), numbered as the code is:
//   1. spinning_ += 1; scan for work until the spin window ends.
//   2. register w on the idle list (idle_count_ += 1)      -- register ...
//   3. spinning_ -= 1                                      -- ... before decrement
//   4. recheck for shared work (seq_cst loads)
//   5. found: unregister (if nobody popped us) and run it; else park.
// Notify protocol (producer, after publishing work with a seq_cst write):
//   a. if spinning_ > 0 (seq_cst load): return (a spinner will see it)
//   b. if idle_count_ == 0: return (every worker is busy and rescans)
//   c. pop one worker from the idle list and unpark it.
//
// Lost-wakeup argument. All accesses named here are seq_cst, so they sit in
// one total order S. Suppose the producer's publish P and the worker's park.
//  - If a. reads spinning_ > 0, some worker v was counted spinning after P in S
//    or before. Every spinner leaves the spin state only through step 3,
//    followed by step 4; if v's step 3 is after a. in S, v's step 4 is after P
//    and sees the work. (v may be w or another worker; either way someone runs it.)
//  - If a. reads 0 and b. reads idle_count_ > 0, c. unparks a registered worker,
//    whose parker keeps the token even if it has not slept yet.
//  - If b. reads idle_count_ == 0: then no worker had completed step 2 before b.
//    in S, so any worker that parks later does steps 2-4 after b. (hence after
//    P), and step 4 sees the work.
// A worker popped from the idle list (c.) while it was still rechecking finds a
// token in its parker; its next park returns at once: a spurious wake, never a
// lost one.
// The argument holds for any spin window, including an empty one: step 1's
// length is decided per episode by the worker's adaptive SpinWindow
// (spin_window.hpp; at most spin_window_us), and every exit from the spin
// state still goes through steps 2-4. A worker whose window is empty skips
// steps 1 and 3 (register_idle, then 4.): it is never counted in spinning_,
// so case a. cannot rely on it, and cases b. and c. are argued on step 2
// and step 4 alone, which it performs in the same order. The timekeeper's early wake spins
// outside the spin state (spinning_ is not raised): it stays registered on
// the idle list, so a notifier that pops it leaves a token (a spurious wake
// later), and it leaves its spin as soon as shared work is published.
// Fairness: the window sets how long an idle worker looks for work, never the
// order in which work is taken.
// Burst dispatch adds two kinds of shared work, both covered by the same
// argument: a recruited drainer (injector push, then wake_workers) and a
// spilled drainer (own deque -> injector, then notify). A drainer kept on the
// producer's own deque needs no wake: its owner pops it next.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "futex_mutex.hpp"
#include "parker.hpp"
#include "sync.hpp"

namespace coact::detail {

class SpinPark {
 public:
  explicit SpinPark(uint32_t workers) : parkers_(std::make_unique<Parker[]>(workers)), n_(workers) {
    idle_.reserve(workers);
  }

  /// Producer side, after publishing shared work. Any thread.
  void notify() noexcept {
    if (spinning_.load(sync::memory_order_seq_cst) > 0) return;     // a.
    if (idle_count_.load(sync::memory_order_seq_cst) == 0) return;  // b.
    wake_one();                                                     // c.
  }

  /// Unparks up to n idle workers regardless of spinners: the timekeeper
  /// handing a re-armed deadline to an idle sibling, and burst recruitment
  /// (burst_dispatch.cpp flush_burst), which bypasses route-to-spinner on purpose:
  /// it has pushed n drainers of one burst on the injector, and one spinner
  /// cannot race the cursor n ways. Lost wakeups: the drainers were published
  /// (the injector's seq_cst length) before this call, so the argument above
  /// holds for each unparked (or not-yet-parked) worker as for notify's c.
  /// Returns how many were unparked. Any thread.
  uint32_t wake_workers(uint32_t n) noexcept {
    uint32_t k = 0;
    while (k < n && wake_one()) ++k;
    return k;
  }

  /// Unparks every worker (shutdown). Any thread.
  void wake_all() noexcept {
    for (uint32_t i = 0; i < n_; ++i) parkers_[i].unpark();
  }

  // ---- worker side ----
  void begin_spin() noexcept { spinning_.fetch_add(1, sync::memory_order_seq_cst); }
  void end_spin() noexcept { spinning_.fetch_sub(1, sync::memory_order_seq_cst); }
  /// Steps 2 and 3: register on the idle list, then stop counting as a spinner.
  void register_idle_then_unspin(uint32_t w) {
    register_idle(w);
    spinning_.fetch_sub(1, sync::memory_order_seq_cst);
  }
  /// Step 2 alone: for a worker with an empty spin window, which skipped
  /// step 1 (never counted as a spinner, so it has no step 3).
  void register_idle(uint32_t w) {
    std::lock_guard lk(mu_);
    idle_.push_back(w);
    idle_count_.store(int32_t(idle_.size()), sync::memory_order_seq_cst);
  }
  /// Step 5, found work: leave the idle list if still on it. Returns false if a
  /// notifier already popped us (our parker then holds a token).
  bool unregister_idle(uint32_t w) {
    std::lock_guard lk(mu_);
    for (size_t i = 0; i < idle_.size(); ++i) {
      if (idle_[i] == w) {
        idle_[i] = idle_.back();
        idle_.pop_back();
        idle_count_.store(int32_t(idle_.size()), sync::memory_order_seq_cst);
        return true;
      }
    }
    return false;
  }
  /// Sleeps on w's parker until unparked.
  bool park(uint32_t w) noexcept { return parkers_[w].park(); }
  /// As park(w), or until CLOCK_MONOTONIC reaches deadline_ns (false = timed out).
  bool park_until(uint32_t w, uint64_t deadline_ns) noexcept { return parkers_[w].park_until(deadline_ns); }
  Parker& parker(uint32_t w) noexcept { return parkers_[w]; }

  int32_t spinning() const noexcept { return spinning_.load(sync::memory_order_relaxed); }
  /// Workers unparked by notify / wake_workers since construction (stats).
  uint64_t unparks() const noexcept { return unparks_.load(sync::memory_order_relaxed); }
  int32_t idle() const noexcept { return idle_count_.load(sync::memory_order_relaxed); }

 private:
  bool wake_one() noexcept {
    uint32_t w;
    {
      std::lock_guard lk(mu_);
      if (idle_.empty()) return false;
      w = idle_.back();
      idle_.pop_back();
      idle_count_.store(int32_t(idle_.size()), sync::memory_order_seq_cst);
    }
    unparks_.fetch_add(1, sync::memory_order_relaxed);
    parkers_[w].unpark();
    return true;
  }

  // spinning_: workers in step 1; written by workers, read by notifiers.
  alignas(64) sync::atomic<int32_t> spinning_{0};
  // idle_count_: mirrors idle_.size(), written under mu_, read lock-free by notify().
  alignas(64) sync::atomic<int32_t> idle_count_{0};
  // A FutexMutex, not std::mutex: register and unregister run on every idle
  // tick, uncontended (futex_mutex.hpp). Any mutex keeps the argument above.
  FutexMutex mu_;
  std::vector<uint32_t> idle_;  // guarded by mu_: workers registered in step 2
  std::unique_ptr<Parker[]> parkers_;
  uint32_t n_;
  sync::atomic<uint64_t> unparks_{0};  // stats only
};

}  // namespace coact::detail
