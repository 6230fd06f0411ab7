// runtime/src/worker_loop.cpp: the worker loop, steps 1-5 of
// detail/scheduler.hpp: acquire (own deque, injector, peer steal; idle() in
// idle.cpp when all are empty), worker_main, run_cell and drain_cell under
// the batch budget, dispatch (untraced, traced, claimed, sampled), and the
// scheduling of a woken actor's backlog (schedule_backlog, the keep-local
// valve, publish_job). Runs on a pool worker thread only; the run-token
// ordering argument is in coact/runtime/detail/run_token.hpp.
#include <sys/prctl.h>

#include <algorithm>
#include <coroutine>
#include <cstdio>
#include <deque>
#include <exception>
#include <string>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/causal/sampler.hpp>

#include "detail/live_schedulers.hpp"
#include "detail/scheduler_inl.hpp"
#include "trace/hooks.hpp"

namespace coact::detail {

// Step 1.
inline Job Scheduler::acquire(Worker& w) {
  // Busy-path due check (timer_heap.hpp): under saturation nobody parks and no
  // timekeeper exists, yet due timers must fire. One relaxed load per loop.
  uint64_t now = 0;
  if (timers_due(now)) [[unlikely]]
    fire_due(&w, now);
  busy_poll_if_due(w);
  if (Job c = pop_own(w)) [[likely]] {
    if (++w.dispatch.own_streak >= tuning_.local_chain_backstop) [[unlikely]]
      return acquire_backstop(w, c);
    return c;
  }
  return acquire_shared(w);
}

void Scheduler::busy_poll(Worker& w, IoPoll& io) {
  const uint64_t now = w.dispatch.clock_ns;
  w.idle.busy_poll_ns = now;
  // Where the busy workers do not all have a CPU (cpu_headroom.hpp), one of
  // them takes the reports: a worker leaves the poll to a lower-indexed
  // sibling that polled within two periods. Its deque then drains and it
  // parks (park_idle leaves the role to the poller too), instead of two
  // workers each fed by their own polls taking turns with a running thread
  // on too few CPUs. A poller that stops (a long handler) stops writing, and
  // the next busy worker polls again two periods later.
  if (const int64_t on_cpu = workers_on_cpu(); on_cpu > 1) {
    const uint64_t last = last_busy_poll_ns_.load(std::memory_order_relaxed);
    if (last_busy_poller_.load(std::memory_order_relaxed) < w.index && last + 2 * kBusyPollNs > now &&
        !headroom_.fits(now, on_cpu, on_cpu))
      return;
  }
  last_busy_poll_ns_.store(now, std::memory_order_relaxed);
  last_busy_poller_.store(w.index, std::memory_order_relaxed);
  if (!io.try_begin()) return;  // a parked worker polls, or another busy one
  if (!io.poll_now()) {
    io.deliver_and_end();  // nothing ready: releases the role
    return;
  }
  spill_next(w);  // the hand-off slot's hop is backlog too: it was runnable before the reports
  const int64_t n = w.own.size();
  const uint64_t pushes_before = w.stats.deque_pushes.load(std::memory_order_relaxed);
  io.deliver_and_end();
  if (n > 0) run_reports_after_backlog(w, n, pushes_before);
}

// A busy worker's reports pushed on top of its backlog would run first (the
// own deque pops LIFO), and under steady load the connections whose replies
// went out last would be read again before those waiting longest: a few
// connections served over and over while the others wait (a pipelined
// client's tail latency). Here the reports are turned to run after the
// backlog, in epoll's order. Only when no thief can race (peer steal off:
// the owner alone touches its deque) and the pushes are all still there (no
// backlog spill moved some to the injector), as run_fired_in_deadline_order.
void Scheduler::run_reports_after_backlog(Worker& w, int64_t n, uint64_t pushes_before) {
  if (tuning_.peer_steal) return;
  const int64_t k = int64_t(w.stats.deque_pushes.load(std::memory_order_relaxed) - pushes_before);
  if (k < 1 || w.own.size() != n + k) return;
  std::vector<Job>& jobs = w.scratch.spill;  // scratch: empty outside schedule_backlog's spill
  jobs.clear();
  for (int64_t i = 0; i < k; ++i) jobs.push_back(w.own.pop_unshared());  // the reports, last first
  if (n > kReorderMax) {
    std::reverse(jobs.begin(), jobs.end());  // epoll's order
    injector_.push_many(jobs.data(), jobs.size());
    injector_pushes_.fetch_add(jobs.size(), std::memory_order_relaxed);
    jobs.clear();
    if (sibling_idle()) spin_park_.notify();
    return;
  }
  for (int64_t i = 0; i < n; ++i) jobs.push_back(w.own.pop_unshared());  // the backlog, top first
  for (int64_t i = 0; i < k; ++i) w.own.push(jobs[size_t(i)]);           // the last report at the bottom
  for (int64_t i = k + n - 1; i >= k; --i) w.own.push(jobs[size_t(i)]);  // the backlog's top back on top
  jobs.clear();
}

// Chain backstop: a self-sustaining relay never visits the injector on its
// own; probe it once so shared work waits at most K own pops. With the
// injector empty, the own deque's backlog is looked at: spilled if a sibling
// could take it now (schedule_backlog's rule; a sibling may have gone idle
// since the last spill check); else (every sibling busy, or an idle one
// with no CPU free, cpu_headroom.hpp), once the cascade has run past the
// valve, its oldest job alone moves to the injector (the next backstop or
// an idle sibling takes it) and the cascade clock restarts. So a job under a
// chain waits at most a valve period and two backstop periods, and no worker
// reorders its backlog when nobody could take it. The oldest job does not
// run in place of c: that would put it before the work c began (a fork's
// second branch behind its first).
Job Scheduler::acquire_backstop(Worker& w, Job c) {
  w.dispatch.own_streak = 0;
  if (Job x = injector_.try_pop()) {
    w.own.push(c);
    return x;
  }
  const int64_t n = w.own.size();  // c was the top: the slot is empty whenever the deque is not
  if (n == 0) return c;
  if (sibling_idle()) {
    if (n > 1) schedule_backlog(w, n);
    if (w.own.size() < n || sibling_has_cpu(w)) return c;  // spilled, or the next schedule may spill
  }
  const uint64_t valve = valve_ns();
  if (valve == 0 || w.dispatch.clock_ns - w.dispatch.cascade_start_ns <= valve) return c;
  w.dispatch.cascade_start_ns = w.dispatch.clock_ns;
  if (Job x = tuning_.peer_steal ? w.own.take_oldest() : w.own.take_oldest_unshared()) {
    injector_.push(x);
    injector_pushes_.fetch_add(1, std::memory_order_relaxed);
  }
  return c;
}

// Step 1 with the own deque empty: shared work, else idle.
Job Scheduler::acquire_shared(Worker& w) {
  w.dispatch.own_streak = 0;
  w.dispatch.cascade_start_ns = w.dispatch.clock_ns;  // shared work starts a new cascade
  bool more = false;
  if (Job c = take_shared(w, more)) {
    if (more) spin_park_.notify();  // chain rule: surplus runs in parallel
    return c;
  }
  return idle(w);
}

Job Scheduler::take_shared(Worker& w, bool& more) {
  if (Job c = injector_.try_pop()) {
    more = !injector_.empty();
    return c;
  }
  if (tuning_.peer_steal) {
    const uint32_t n = uint32_t(workers_.size());
    for (uint32_t k = 1; k < n; ++k) {
      Worker& v = *workers_[(w.index + k) % n];
      const DequeStealer<Job>& stealer = v.stealer;
      if (Job c = stealer.steal()) {
        more = stealer.size() > 0;
        return c;
      }
    }
  }
  return nullptr;
}

inline void Scheduler::run_job(Worker& w, Job j) {
  w.trace.pickup = 0;  // t_enqueue: the job's first traced handler stamps it (trace::on_handler)
  if (is_burst(j)) {
    run_burst(w, burst_of(j));
  } else {
    run_cell(w, cell_of(j));
  }
}

void Scheduler::worker_main(Worker& w) {
  t_worker = &w;
  // Timed parks (the timekeeper) must wake at the deadline, not up to the
  // default 50 µs timer slack later.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  causal::register_thread();          // owes every delay injected from now on (L = G)
  causal::register_sampled_thread();  // CPU-time samples for line regions (armed only while sampling)
  w.dispatch.clock_ns = sync::now_ns();
  w.dispatch.cascade_start_ns = w.dispatch.clock_ns;
  // Shutdown must stop busy workers too, not only idle ones: a
  // self-sustaining cascade never reaches idle(). One relaxed load per loop.
  while (!stopping_.load(std::memory_order_relaxed)) {
    Job j = acquire(w);
    if (j == nullptr) break;
    run_job(w, j);
  }
  t_worker = nullptr;
}

// Steps 2-5.
void Scheduler::run_cell(Worker& w, ActorCell* c) {
  COACT_INVARIANT(c->inbox.held(), "run-token: a popped actor was not Held");
  drain_cell(w, c, nullptr);
}

void Scheduler::drain_cell(Worker& w, ActorCell* c, Envelope* first) {
  uint64_t batch_start = w.dispatch.clock_ns;
  uint32_t mails = 0;
  if (first != nullptr) {  // a claimed mail run in place (burst step 6)
    dispatch_claimed(w, c, first);
    if (c->stop_requested) {
      finalize_stop(&w, c);
      return;
    }
    ++mails;
    causal::on_pay_point();  // between dispatches
  }
drain:
  for (;;) {
    Envelope* e = nullptr;
    if (c->waiting != nullptr) {
      // The actor is parked in a coroutine: only its wake (or a stop) acts;
      // user mail is kept aside, in order, for after the coroutine finishes.
      e = c->inbox.pop();
      if (e == nullptr) break;
      if (e->system == SystemMail::resume) {
        const bool current = static_cast<ResumeEnvelope*>(e)->epoch == c->wait_epoch;
        e->drop(e);
        if (!current) continue;  // stale wake: impossible to act on by protocol
        c->wait_timer = 0;       // a sleep, or the ask's timeout that fired
        resume_waiting(w, c);
      } else if (e->system == SystemMail::reply) {
        auto* r = static_cast<ReplyEnvelopeBase*>(e);
        const bool current = r->epoch == c->wait_epoch && c->reply_slot != nullptr;
        if (current) r->deliver(r, c->reply_slot);
        e->drop(e);
        if (!current) continue;  // a reply after its timeout (or a second reply): stale
        cancel_wait_timer(c);
        resume_waiting(w, c);
      } else if (e->system == SystemMail::stop) {
        e->drop(e);
        c->stop_requested = true;
      } else {
        if (c->stash == nullptr) c->stash = new Stash();
        c->stash->q.push_back(e);
        continue;
      }
    } else {
      if (c->stash != nullptr && !c->stash->q.empty()) {
        e = c->stash->q.front();
        c->stash->q.pop_front();
      } else {
        e = c->inbox.pop();
        if (e == nullptr) break;
      }
      dispatch(w, c, e);
    }
    if (c->stop_requested) {
      finalize_stop(&w, c);
      return;
    }
    ++mails;
    // Busy-path due check inside a long batch: one relaxed load per dispatch,
    // a clock read only while a timer is armed. A timer that fired ends the
    // batch, so the actor it woke runs next instead of after the budget.
    if (uint64_t now = 0; timers_due(now) && fire_due(&w, now)) [[unlikely]] {  // 4. (the token stays Held)
      // A fire ends the batch so the actor it woke runs next. With the
      // budget left and nothing left to run here, release the run-token as
      // step 5 does instead of publishing an actor that has no mail: a
      // publish is an injector push and a sibling wake (a futex wake) on the
      // fired timer's path, and the woken sibling finds nothing to do.
      // Its own branch, apart from the budget test below, so that the
      // common dispatch pays nothing for it.
      if (mails < tuning_.batch_max_mails && now - batch_start < batch_max_ns_ &&
          (c->waiting != nullptr || c->stash == nullptr || c->stash->q.empty()) && c->inbox.empty_for_consumer() &&
          c->inbox.try_release())
        return;  // released: c is not ours to touch (run_token.hpp)
      publish_shared(c);
      return;
    }
    bool over_time = false;
    if (++w.dispatch.stride_count >= w.dispatch.clock_stride) {
      w.dispatch.stride_count = 0;
      const uint64_t last = w.dispatch.clock_ns;
      w.dispatch.clock_ns = sync::now_ns();
      over_time = w.dispatch.clock_ns - batch_start >= batch_max_ns_;
      adapt_clock_stride(w, w.dispatch.clock_ns - last);
    }
    if (mails >= tuning_.batch_max_mails || over_time) [[unlikely]] {  // 4. (the token stays Held)
      // A burst drainer's held-back region releases (mailbox.hpp
      // RegionReleaseBatch) go back at every budget end: an actor run in
      // place that keeps itself busy would otherwise hold its producer's
      // region live, and every region behind it in that ring, for as long
      // as it runs.
      if (RegionReleaseBatch* rb = t_region_batch) [[unlikely]]
        rb->flush();
      busy_poll_if_due(w);  // a report lands on the own deque: then something waits
      if (nothing_waits(w)) {
        // The budget is for the others: with nothing on this worker's hand-
        // off slot or deque and nothing in the injector, nobody waits for
        // this worker, and publishing c would only hand it (and the cache
        // lines of everything it touches) to a sibling woken for it, or
        // wake a sibling that finds nothing while this worker takes c back
        // (a wide fan-out's actor drains a round of replies: a publish every
        // budget would wake the sibling about once a round, and the round
        // would run cold there). A new batch starts here instead (fairness is unchanged: anything
        // that arrives in the injector or is pushed locally ends it).
        mails = 0;
        w.dispatch.clock_ns = sync::now_ns();
        batch_start = w.dispatch.clock_ns;
        causal::on_pay_point();  // between dispatches
        continue;
      }
      publish_shared(c);
      return;
    }
    causal::on_pay_point();  // between dispatches
  }
  // 5. pop() returned nullptr, but a producer may be mid-push (or linked
  // behind a re-linked stub): the queue is not canonically empty, so the
  // token must not be released (and try_release would fail anyway). Keep the
  // actor scheduled (Held); it is retried after other work. Found by a
  // fan-out hang (2 in 150 runs) before this check.
  if (!c->inbox.empty_for_consumer()) {
    publish_shared(c);
    return;
  }
  // Canonically empty: release the run-token. A push since the last pop
  // makes the CAS fail and we still hold the token: drain on. After a
  // successful release c is not ours to touch (run_token.hpp).
  if (!c->inbox.try_release()) goto drain;
}

void Scheduler::dispatch(Worker& w, ActorCell* c, Envelope* e) {
  if (w.tracing()) [[unlikely]] {
    dispatch_traced(w, c, e);  // out of line: the untraced path keeps one branch
    return;
  }
  dispatch_as<false>(w, c, e);
}

void Scheduler::dispatch_traced(Worker& w, ActorCell* c, Envelope* e) { dispatch_as<true>(w, c, e); }

// Burst recruitment's cost estimates (CostTable) come from the handlers that
// recruitment asks about: mail claimed from a burst group and run in place
// (burst step 6), every 16th one timed (two clock reads). Other dispatches -
// a chain hop, a reply, a drained inbox - pay nothing for it.
// The stride is drawn per sample from 8..23 (xorshift32, Marsaglia 2003),
// not a fixed 16: a producer whose invocations claim a fixed number of
// mails (4 here: three to sinks and a bounce) made a fixed stride time the
// same position every time, and a kind that never sat there was never
// sampled, so never trusted (the direct hint's test under
// ThreadSanitizer at 1 worker: the bounce kind stuck at 3 of 4 samples).
void Scheduler::dispatch_claimed(Worker& w, ActorCell* c, Envelope* e) {
  if (++w.cost.stride >= w.cost.next && !w.tracing()) {
    w.cost.stride = 0;
    uint32_t x = w.cost.rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    w.cost.rng = x;
    w.cost.next = 8 + (x & 15u);
    dispatch_sampled(w, c, e);
    return;
  }
  dispatch(w, c, e);
}

void Scheduler::dispatch_sampled(Worker& w, ActorCell* c, Envelope* e) { dispatch_as<false, true>(w, c, e); }

// kTraced: the per-mail trace's handler event (t_received, t_finished).
// kSampled: the handler's run time feeds its kind's CostTable cell.
template <bool kTraced, bool kSampled>
inline void Scheduler::dispatch_as(Worker& w, ActorCell* c, Envelope* e) {
  if (e->system != SystemMail::none) {
    if (e->system == SystemMail::stop) c->stop_requested = true;
    e->drop(e);  // a resume with no wait pending is stale
    return;
  }
  const uint32_t kind = e->kind;
  void* const causal_token = causal::on_handler_enter(c->type, kind);
  w.dispatch.current = c;
  w.dispatch.in_handler = kTraced ? kInTracedHandler : kInHandler;
  uint64_t trace_mail = 0, trace_received = 0;
  if constexpr (kTraced) {
    trace_mail = trace::mail_key(e);  // before invoke destroys e
    w.trace.kind = kind;
    trace_received = sync::now_ns();
  }
  uint64_t t0 = 0;
  if constexpr (kSampled) t0 = sync::now_ns();
  try {
    e->invoke(c->actor, e);
  } catch (const std::exception& ex) {
    std::string what = "exception escaped a handler for message " + kind_name(kind) + ": " + ex.what();
    panic(what.c_str());
  } catch (...) {
    std::string what = "non-standard exception escaped a handler for message " + kind_name(kind);
    panic(what.c_str());
  }
  if constexpr (kSampled) costs_.observe(kind, sync::now_ns() - t0);
  w.dispatch.in_handler = kNotInHandler;
  w.dispatch.current = nullptr;
  if constexpr (kTraced) trace::on_handler(w, c, trace_mail, kind, trace_received, false);
  causal::on_handler_exit(
      causal_token, [c] { return c->type; }, kind);
  bump(w.stats.delivered);
  if (!w.outbound.empty() || w.ring.building()) {
    if constexpr (kTraced) {
      flush_traced(w, c);
    } else if (w.outbound.size() == 1 && !w.dispatch.batched && w.outbound[0].second == nullptr) [[likely]] {
      // flush_untraced's commonest case inline (a reply, a chain hop): one
      // direct send that took its recipient's run-token, nothing buffered
      // (so no seal, no burst: flush_seal and flush_route do just this).
      causal::on_pay_point();  // pay before making other actors runnable
      ActorCell* const t = w.outbound[0].first;
      w.outbound.clear();
      schedule_hop(w, t);
    } else {
      flush_untraced(w, c);
    }
  }
}

// ---- scheduling a woken actor ---------------------------------------

void Scheduler::schedule_backlog(Worker& w, int64_t n) {
  // A spill (or a notify) only helps when a sibling can take the work now:
  // with every sibling busy (or none: one worker) a spill only reorders the
  // backlog oldest-first through the injector's lock, breadth first (a spawn
  // tree's live set grows). The cascade clock is not reset then, so the
  // first check after a sibling goes idle spills; the chain backstop checks
  // too, and keeps a job under a chain from waiting on the valve when no
  // sibling could run it.
  if (!sibling_idle()) return;
  // The valve is at least 6 µs unless pinned: a younger cascade cannot trip
  // it, so the estimate is read only when it could (every spawn-and-send in a
  // fan-out handler lands here, and valve_ns() is not free).
  // Where no CPU is free for the woken sibling (cpu_headroom.hpp), it
  // starts only when the kernel gives it a turn, about kCrowdedValveNs
  // later, and then takes turns with a thread that was running: a cascade
  // younger than that spills nothing (the clock is not reset, so the next
  // check looks again).
  const uint64_t elapsed = w.dispatch.clock_ns - w.dispatch.cascade_start_ns;
  const uint64_t valve = valve_pin_ns_ || elapsed > kMinValveNs ? valve_ns() : 0;
  const bool valve_tripped = valve != 0 && elapsed > valve && (elapsed > kCrowdedValveNs || sibling_has_cpu(w));
  if (valve_tripped || n >= int64_t(tuning_.local_sticky_max)) {
    // Spill the backlog (all but the freshest) so a heavy cascade
    // parallelizes: oldest first, pushed under one injector lock.
    std::vector<Job>& spill = w.scratch.spill;
    spill.clear();
    for (int64_t i = 0; i < n - 1; ++i) {
      Job x = tuning_.peer_steal ? w.own.take_oldest() : w.own.take_oldest_unshared();
      if (x == nullptr) break;
      spill.push_back(x);
    }
    if (!spill.empty()) {
      injector_.push_many(spill.data(), spill.size());
      injector_pushes_.fetch_add(spill.size(), std::memory_order_relaxed);
    }
    w.dispatch.cascade_start_ns = w.dispatch.clock_ns;
    spin_park_.notify();
  } else if (tuning_.peer_steal) {
    spin_park_.notify();  // a sibling may steal the surplus
  }
}

uint64_t Scheduler::valve_ns() const noexcept {
  if (valve_pin_ns_) return *valve_pin_ns_;
  const uint64_t h = uint64_t(handoff_->cost().count());
  return std::clamp<uint64_t>(6 * h, kMinValveNs, 60000);
}

void Scheduler::publish_job(Job c) {
  causal::on_pay_point();
  injector_.push(c);
  injector_pushes_.fetch_add(1, std::memory_order_relaxed);
  spin_park_.notify();
}

}  // namespace coact::detail
