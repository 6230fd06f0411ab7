// runtime/src/idle.cpp: a worker with nothing to run: SpinPark's worker
// side (spin an adaptive window, then park; the lost-wakeup argument in
// detail/spin_park.hpp) and the timekeeper (keep_time: the parked worker that
// sleeps until the earliest timer, waking early by a margin and spinning the
// rest; detail/spin_window.hpp). A park is in the reactor's poll when this
// Scheduler has one and no other worker polls (park_idle; reactor.cpp, "The
// poll role"). Called by acquire_shared (worker_loop.cpp)
// on a pool worker whose own deque, the injector and peer steal came up
// empty; returns the next job, or null at shutdown.
#include <sys/prctl.h>

#include <algorithm>
#include <coroutine>
#include <cstdio>
#include <deque>
#include <exception>
#include <string>
#include <utility>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/causal/sampler.hpp>

#include "detail/live_schedulers.hpp"
#include "detail/scheduler_inl.hpp"
#include "trace/hooks.hpp"

namespace coact::detail {

// SpinPark, steps as in spin_park.hpp; the window and the timekeeper's early
// wake as in spin_window.hpp.
Job Scheduler::idle(Worker& w) {
  const uint64_t ceiling = uint64_t(tuning_.spin_window_us) * 1000;
  if (w.idle.check_done) {  // this worker stopped an actor since: was it the last?
    w.idle.check_done = false;
    notify_if_done();
  }
  // Memory back after a backlog: this worker delivered at least
  // Mailbox::kTrimBacklog mails since it was last idle, so the envelopes
  // they freed may hold pages (backlog_drained trims, rate-limited). Here,
  // not per dequeue: the drain loop pays nothing for it.
  if (const uint64_t d = w.stats.delivered.load(std::memory_order_relaxed); d - w.idle.delivered_at_idle != 0) {
    if (d - w.idle.delivered_at_idle >= Mailbox::kTrimBacklog) [[unlikely]]
      backlog_drained(d - w.idle.delivered_at_idle);
    w.idle.delivered_at_idle = d;
  }
  for (;;) {
    if (stopping_.load(std::memory_order_acquire)) return nullptr;
    bool more = false;
    // A spin holds a CPU; while a runnable thread already waits for one
    // (cpu_headroom.hpp) the spin is that thread's time, so park at once.
    // The window learns nothing from a spin not taken.
    uint64_t spin_ns = w.idle.spin_window.window_ns(ceiling);
    // The last dispatch clock is recent enough for a once-per-ms average
    // (fits() takes no sample on an older clock), and costs no clock read.
    const int64_t on_cpu = workers_on_cpu();
    const bool crowded = spin_ns != 0 && !headroom_.fits(w.dispatch.clock_ns, on_cpu, on_cpu);
    if (crowded) spin_ns = 0;
    // An empty window (the adaptive window of a worker whose spins found
    // nothing: an idle pool's timekeeper every tick) skips step 1 and its
    // scan: acquire() or the wake's own checks scanned a moment ago, and
    // step 4 rechecks after registering. Never counted as a spinner, it
    // registers without step 3 (spin_park.hpp: the argument holds for an
    // empty window). Saves two seq_cst RMWs on spinning_'s line, a shared
    // scan and two clock reads per idle tick.
    uint64_t spin_start = 0, now = 0;
    if (spin_ns == 0) {
      spin_park_.register_idle(w.index);  // 2.
    } else {
      spin_park_.begin_spin();  // 1.
      spin_start = sync::now_ns();
      const uint64_t deadline = spin_start + spin_ns;
      now = spin_start;
      for (;;) {
        if (Job c = take_shared(w, more)) {
          spin_park_.end_spin();
          // An idle (spinning) worker was blocked waiting, like a parked one:
          // the publisher paid before publishing, so credit (causal resume).
          causal::on_resume();
          if (more) spin_park_.notify();
          w.dispatch.clock_ns = sync::now_ns();
          w.idle.spin_window.found(w.dispatch.clock_ns - spin_start, ceiling);
          return c;
        }
        if (stopping_.load(std::memory_order_acquire)) {
          spin_park_.end_spin();
          return nullptr;
        }
        // A timer fired here is neither evidence for nor against spinning
        // (spin_window.hpp): deadlines are the timekeeper's business.
        if (timers_due(now)) {
          spin_park_.end_spin();
          w.dispatch.clock_ns = now;
          w.dispatch.cascade_start_ns = now;  // an idle worker's fire starts a new cascade
          fire_due(&w, now);
          if (Job c = pop_own(w)) {
            w.dispatch.clock_ns = now;
            return c;
          }
          spin_park_.begin_spin();
        }
        now = sync::now_ns();
        if (now >= deadline) break;
        for (int i = 0; i < 16; ++i) sync::cpu_relax();
      }
      // No pay point before parking: an idle worker is credited when it resumes
      // (woken by a thread that paid), so paying here would only make it late
      // to take new work while it is virtually idle.
      spin_park_.register_idle_then_unspin(w.index);  // 2. + 3.
    }
    const uint64_t spun = now - spin_start;
    if (Job c = take_shared(w, more)) {  // 4.
      spin_park_.unregister_idle(w.index);
      causal::on_resume();
      if (more) spin_park_.notify();
      w.dispatch.clock_ns = sync::now_ns();
      if (!crowded) w.idle.spin_window.found(spin_ns == 0 ? 0 : w.dispatch.clock_ns - spin_start, ceiling);
      return c;
    }
    if (stopping_.load(std::memory_order_seq_cst)) {
      spin_park_.unregister_idle(w.index);
      return nullptr;
    }
    bump(w.stats.parks);
    const uint64_t trace_park = w.tracing() ? sync::now_ns() : 0;
    // 5. At most one parked worker holds the earliest timer deadline (an
    // expiry wakes one worker, not a herd); the others park indefinitely.
    bool keeper = false;
    if (timers_.next_deadline(std::memory_order_seq_cst) != TimerHeap::kNone) {
      int32_t none = -1;
      keeper = timekeeper_.compare_exchange_strong(none, int32_t(w.index), std::memory_order_seq_cst);
    }
    bool timed_out = false;
    uint64_t slept = 0;
    uint64_t kept_now = 0;
    if (keeper) {
      const uint64_t next = timers_.next_deadline(std::memory_order_seq_cst);  // re-read: handshake
      timed_out = keep_time(w, next, ceiling, slept, kept_now);
      timekeeper_.store(-1, std::memory_order_seq_cst);
    } else {
      const uint64_t p0 = sync::now_ns();
      park_idle(w, false, 0);
      slept = sync::now_ns() - p0;
    }
    // A capped park that ran out was not woken by anyone: no hand-off to time.
    if (!timed_out && w.idle.polled == nullptr && !std::exchange(w.idle.yield_timed_out, false)) {
      // Live refinement of the hand-off cost from a real cross-thread wake.
      const uint64_t woke = sync::now_ns(), sent = spin_park_.parker(w.index).last_unpark_ns();
      if (sent != 0 && woke > sent) handoff_->observe(std::chrono::nanoseconds(woke - sent));
    }
    if (!crowded) {
      w.idle.spin_window.parked(spun, slept, !timed_out && !injector_.empty(),
                                uint64_t(handoff_->wake_break_even().count()), ceiling);
    }
    causal::on_resume();  // woken by a thread that paid: credit
    if (trace_park != 0) [[unlikely]]
      trace::on_park(w, trace_park, timed_out, keeper);
    spin_park_.unregister_idle(w.index);  // no-op unless the wake was spurious or timed
    // Off the idle list, so a report that makes an actor runnable here does
    // not notify this worker itself: post what the poll collected.
    if (IoPoll* io = std::exchange(w.idle.polled, nullptr)) io->deliver_and_end();
    // A timed-out timekeeper reuses keep_time's last clock read (it ended
    // its spin on it, a moment ago); any other wake reads the clock.
    w.dispatch.clock_ns = timed_out ? kept_now : sync::now_ns();
    // What runs next starts a new local cascade (the keep-local valve counts
    // from here): otherwise the valve, still counting from before the park,
    // trips on the second of several timers fired at once and spills them to
    // the injector with a sibling wake on the fire's path.
    w.dispatch.cascade_start_ns = w.dispatch.clock_ns;
    now = w.dispatch.clock_ns;
    if (const uint64_t next = timers_.next_deadline(); next != TimerHeap::kNone && now >= next) fire_due(&w, now);
    if (keeper && !timed_out && !injector_.empty() && timers_.next_deadline() != TimerHeap::kNone &&
        spin_park_.idle() > 0) {
      // Woken for work, not by a re-armed deadline: hand the deadline to
      // another idle worker so it is not left to the busy-path check alone.
      spin_park_.wake_workers(1);
    }
    if (Job c = pop_own(w)) return c;
  }
}

bool Scheduler::park_idle(Worker& w, bool timed, uint64_t deadline_ns) {
  IoPoll* io = io_.load(std::memory_order_acquire);
  // This worker is on the idle list here (but still on its CPU), so a
  // worker not on it is running (or spinning, then running), and one that
  // polled a moment ago polls again at its next loop.
  if (const int64_t others = workers_on_cpu(); io != nullptr && others > 0) {
    const uint64_t now = sync::now_ns();
    if (last_busy_poll_ns_.load(std::memory_order_relaxed) + kYieldedParkNs > now &&
        !headroom_.fits(now, others + 1, others + 1)) {
      bump(w.stats.poll_yields);
      // After a run-out the cap doubles (kYieldedParkMaxNs at most); any
      // other outcome, here or below, starts it again at kYieldedParkNs.
      const uint64_t len = w.idle.yield_cap_ns == 0 ? kYieldedParkNs : w.idle.yield_cap_ns;
      w.idle.yield_cap_ns = 0;
      const uint64_t cap = now + len;
      if (timed && deadline_ns <= cap) return spin_park_.park_until(w.index, deadline_ns);
      if (spin_park_.park_until(w.index, cap)) return true;
      w.idle.yield_timed_out = true;
      w.idle.yield_cap_ns = std::min(2 * len, kYieldedParkMaxNs);
      return true;
    }
  }
  w.idle.yield_cap_ns = 0;
  if (io != nullptr && io->try_begin()) {
    w.idle.polled = io;
    return spin_park_.parker(w.index).park_polling(*io, timed, deadline_ns);
  }
  return timed ? spin_park_.park_until(w.index, deadline_ns) : spin_park_.park(w.index);
}

bool Scheduler::keep_time(Worker& w, uint64_t next, uint64_t ceiling_ns, uint64_t& slept_ns, uint64_t& now_ns) {
  slept_ns = 0;
  if (next == TimerHeap::kNone) {
    const uint64_t p0 = sync::now_ns();
    park_idle(w, false, 0);
    slept_ns = sync::now_ns() - p0;
    return false;
  }
  const uint64_t now = sync::now_ns();
  now_ns = now;
  if (next <= now) return true;
  // Wake early by a margin chosen from the measured wake latency
  // distribution under a CPU budget, then spin the rest (spin_window.hpp).
  const uint64_t wake_at = next - wake_latency_->margin_cached_ns(next - now, ceiling_ns);
  // The spin starts at the wake's clock read (one read serves both).
  uint64_t spin_start = now;
  if (wake_at > now) {
    bump(w.stats.timed_parks);
    const bool woken = park_idle(w, true, wake_at);  // absolute: no clock read inside the futex park
    const uint64_t woke = sync::now_ns();
    slept_ns = woke - now;
    if (woken) return false;  // by an unpark or I/O readiness
    const uint64_t late = woke > wake_at ? woke - wake_at : 0;
    wake_latency_->observe(late);
    w.stats.wake_late_ns.store(w.stats.wake_late_ns.load(std::memory_order_relaxed) + late, std::memory_order_relaxed);
    spin_start = woke;
  }
  // Still on the idle list and still timekeeper while spinning: a notify
  // that pops us leaves a token (a spurious wake later), an earlier deadline
  // armed meanwhile is seen by timers_due, shared work by the injector check.
  uint64_t t = spin_start;
  for (;;) {
    uint64_t d = 0;
    if (timers_due(d)) {
      t = d;
      break;
    }
    t = d == 0 ? sync::now_ns() : d;
    if (t >= next || !injector_.empty() || stopping_.load(std::memory_order_relaxed)) break;
    for (int i = 0; i < 16; ++i) sync::cpu_relax();
  }
  if (t > spin_start)
    w.stats.early_spin_ns.store(w.stats.early_spin_ns.load(std::memory_order_relaxed) + (t - spin_start),
                                std::memory_order_relaxed);
  now_ns = t;
  return true;
}

}  // namespace coact::detail
