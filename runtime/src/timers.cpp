// runtime/src/timers.cpp: coroutine waits and timers: resume_waiting (a
// waiting actor's wake), arm, arm_send and arm_wait (into
// detail/timer_heap.hpp), fire_due and fire (the due checks of acquire,
// drain_cell, idle and the timekeeper), run_fired_in_deadline_order,
// cancel_wait_timer, and the awaitables' entry points (begin_reply_wait,
// arm_sleep). Arming runs on any thread; firing on a pool worker, or the
// thread that found a timer due.
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

void Scheduler::cancel_wait_timer(ActorCell* c) {
  // A cancel that beats the fire leaves the entry's cell reference to us (the
  // entry will never touch the cell); one that loses leaves it to fire(),
  // whose Resume then arrives stale. The holder's own reference keeps c alive.
  if (c->wait_timer != 0 && timers_.cancel(c->wait_timer)) c->release();
  c->wait_timer = 0;
}

void Scheduler::resume_waiting(Worker& w, ActorCell* c) {
  auto h = std::coroutine_handle<>::from_address(c->waiting);
  c->waiting = nullptr;
  c->reply_slot = nullptr;
  ++c->wait_epoch;  // any other wake for this wait is now stale
  const uint32_t kind = c->waiting_env != nullptr ? c->waiting_env->kind : 0;
  void* const causal_token = causal::on_handler_enter(c->type, kind);
  w.dispatch.current = c;
  const uint64_t trace_received = w.tracing() ? sync::now_ns() : 0;
  w.dispatch.in_handler = trace_received != 0 ? kInTracedHandler : kInHandler;
  if (trace_received != 0) w.trace.kind = kind;
  try {
    h.resume();
  } catch (const std::exception& ex) {
    std::string what = "exception escaped a coroutine handler for message " + kind_name(kind) + ": " + ex.what();
    panic(what.c_str());
  } catch (...) {
    panic("non-standard exception escaped a coroutine handler");
  }
  w.dispatch.in_handler = kNotInHandler;
  w.dispatch.current = nullptr;
  if (trace_received != 0) [[unlikely]]
    trace::on_handler(w, c, 0, kind, trace_received, true);
  causal::on_handler_exit(
      causal_token, [c] { return c->type; }, kind);
  if (h.done()) {
    h.destroy();
    if (c->waiting_env != nullptr) {
      c->waiting_env->drop(c->waiting_env);
      c->waiting_env = nullptr;
    }
  } else {
    COACT_INVARIANT(c->waiting == h.address(), "a coroutine handler suspended on something other than a coact wait");
  }
  bump(w.stats.delivered);
  if (!w.outbound.empty() || w.ring.building()) flush(w, c);
}

void Scheduler::arm(TimerEntry e, uint64_t delay_ns, uint64_t* seq_out) {
  // Virtual timers start from the arming thread's ledger position (its debt
  // shifts them; timer_heap.hpp); the stamp before the clock read, so a
  // settle of this thread's live slot is not part of the timer's wait.
  if (e.anchor == Anchor::virtual_time) e.stamp_cycles = causal::timer_stamp_cycles();
  e.deadline_ns = sync::now_ns() + delay_ns;
  auto [seq, earliest] = timers_.insert(e);
  if (seq_out != nullptr) *seq_out = seq;
  if (!earliest) return;
  // A new earliest deadline: the timekeeper must re-arm its park timeout; with
  // no timekeeper, an idle worker (or a spinner on its way to park) takes it.
  const int32_t k = timekeeper_.load(std::memory_order_seq_cst);
  if (k >= 0) {
    spin_park_.parker(uint32_t(k)).unpark();
  } else if (Worker* w = t_worker; w == nullptr || w->sched != this) {
    spin_park_.notify();
  }
  // Armed from one of our workers with no timekeeper: that worker sees the
  // deadline through the busy-path check, or takes it when it goes idle
  // (it registers as timekeeper before parking), so no one else is woken.
}

TimerId Scheduler::arm_send(uint64_t delay_ns, Anchor anchor, TimerAction* action) {
  TimerEntry e{};
  e.anchor = anchor;
  e.reason = TimerReason::send;
  e.action = action;
  uint64_t seq = 0;
  arm(e, delay_ns, &seq);
  return TimerId{seq};
}

uint64_t Scheduler::arm_wait(ActorCell* c, uint64_t delay_ns, Anchor anchor, TimerReason reason) {
  TimerEntry e{};
  e.anchor = anchor;
  e.reason = reason;
  e.cell = c;
  e.wait_epoch = c->wait_epoch;
  c->add_ref();  // released when the entry fires or is dropped, or by cancel_wait_timer
  uint64_t seq = 0;
  arm(e, delay_ns, &seq);
  return seq;
}

bool Scheduler::fire_due(Worker* w, uint64_t now_ns) {
  causal::on_pay_point();  // pay before making others runnable
  std::vector<TimerEntry>& due = w->scratch.due;
  due.clear();
  timers_.pop_due(now_ns, due);
  spill_next(*w);  // the hand-off slot is not one of the fired: below the fired jobs
  const int64_t own_before = w->own.size();
  const uint64_t pushes_before = w->stats.deque_pushes.load(std::memory_order_relaxed);
  for (TimerEntry& e : due) fire(w, e);
  if (due.size() > 1) run_fired_in_deadline_order(*w, own_before, pushes_before);
  const bool any = !due.empty();
  due.clear();
  return any;
}

// Timers fired together (a wake that found several due) are fired in
// deadline order, so each recipient's inbox keeps that order; their actors
// land on the own deque in that order too, and its LIFO pop would run the
// latest deadline first and the earliest, already the latest, last. Here the
// k actors pushed by this fire are turned around so they run in deadline
// order. Only when no thief can race (peer steal off: the owner alone
// touches its deque) and the pushes are all still there (no spill moved
// some to the injector). Inbox order is untouched; only which ready actor
// runs first changes, which no contract fixes.
void Scheduler::run_fired_in_deadline_order(Worker& w, int64_t own_before, uint64_t pushes_before) {
  if (tuning_.peer_steal) return;
  const uint64_t k = w.stats.deque_pushes.load(std::memory_order_relaxed) - pushes_before;
  if (k < 2 || w.own.size() != own_before + int64_t(k)) return;
  std::vector<Job>& fired = w.scratch.spill;  // scratch: empty outside schedule_job's spill
  fired.clear();
  for (uint64_t i = 0; i < k; ++i) fired.push_back(w.own.pop_unshared());  // latest deadline first
  for (Job j : fired) w.own.push(j);                                       // earliest ends on top
  fired.clear();
}

void Scheduler::fire(Worker* w, TimerEntry& e) {
  if (w != nullptr && w->tracing()) [[unlikely]]
    trace::on_timer(*w, e);
  switch (e.reason) {
    case TimerReason::send:
      e.action->fire();  // resolves the address now; deposits from this worker
      delete e.action;
      break;
    case TimerReason::sleep:
    case TimerReason::wait_timeout:
      e.cell->sched->deposit(e.cell, new ResumeEnvelope(e.wait_epoch), w);
      e.cell->release();
      break;
  }
}

namespace {
// Opens a wait for the actor whose handler coroutine runs on this thread:
// a new wait epoch (the wait identity, with the pid) and the suspended frame.
ActorCell* begin_wait(std::coroutine_handle<> h, const char* what) {
  Worker* w = t_worker;
  COACT_INVARIANT(w != nullptr && w->dispatch.current != nullptr && w->dispatch.in_handler, what);
  ActorCell* c = w->dispatch.current;
  ++c->wait_epoch;
  c->waiting = h.address();
  return c;
}
uint64_t clamp_ns(std::chrono::nanoseconds d) { return d.count() > 0 ? uint64_t(d.count()) : 0; }
}  // namespace

std::pair<ActorCell*, uint64_t> begin_reply_wait(std::coroutine_handle<> h, void* slot,
                                                 std::chrono::nanoseconds timeout, Anchor anchor) {
  ActorCell* c = begin_wait(h, "coact::ask awaited outside a coact handler coroutine");
  c->reply_slot = slot;
  c->wait_timer = c->sched->arm_wait(c, clamp_ns(timeout), anchor, TimerReason::wait_timeout);
  c->add_ref();  // the ReplyTo's reference
  return {c, c->wait_epoch};
}

void arm_sleep(std::coroutine_handle<> h, std::chrono::nanoseconds d, Anchor anchor) {
  ActorCell* c = begin_wait(h, "coact::sleep awaited outside a coact handler coroutine");
  c->sched->arm_wait(c, clamp_ns(d), anchor, TimerReason::sleep);
}

}  // namespace coact::detail
