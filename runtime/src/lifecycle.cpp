// runtime/src/lifecycle.cpp: the Scheduler's lifecycle and its actors':
// construction (tuning, hand-off estimate, workers, trace session), start,
// shutdown (steps as in detail/scheduler.hpp), an actor's stop
// (finalize_stop, drop_wait_state), spawn registration, the run's end
// (all_stopped, notify_if_done, wait_until_done, request_stop) and stats.
// Called by Runtime (runtime.cpp) on its own thread, except register_spawn
// and finish_spawn (any thread that spawns) and finalize_stop (the worker
// holding the actor's run-token, or shutdown after the workers joined).
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

#include "detail/blocking_pool.hpp"
#include "detail/reactor.hpp"
#include "detail/live_schedulers.hpp"
#include "detail/scheduler_inl.hpp"
#include "trace/hooks.hpp"

namespace coact::detail {

namespace {
// The boot hand-off cost, found once per process (env pin, calibration file
// for this machine, or a short probe: calibrate/handoff.hpp).
std::chrono::nanoseconds boot_handoff_cost() {
  static const std::chrono::nanoseconds cost = calibrate::initial_handoff_cost().cost;
  return cost;
}
}  // namespace

Worker* Scheduler::current_worker() noexcept { return t_worker; }

Scheduler::Scheduler(Runtime* rt, SchedulerTuning tuning)
    : rt_(rt), tuning_(tuning), spin_park_(tuning.effective_workers()), registry_(tuning.effective_workers()) {
  const uint32_t n = tuning_.effective_workers();
  // Calibrate tsc_hz at boot (once per process; cached, or pinned by
  // COACT_TSC_HZ) so timer shifts never stall a scheduler loop.
  (void)calibrate::tsc_hz();
  // Hand-off cost: pinned by COACT_HANDOFF_COST_NS (resolved into the
  // tuning), else the boot value, live-refined by EWMA from real wakes.
  if (tuning_.handoff_cost_ns) {
    auto pin = std::chrono::nanoseconds(*tuning_.handoff_cost_ns);
    handoff_ = std::make_unique<calibrate::HandoffEstimate>(pin, pin);
  } else {
    handoff_ = std::make_unique<calibrate::HandoffEstimate>(boot_handoff_cost());
  }
  // The timekeeper's wake latency: seeded with the hand-off cost (the same
  // kernel wake-up path), refined by every timed-out park (spin_window.hpp).
  wake_latency_ = std::make_unique<WakeLatency>(uint64_t(handoff_->cost().count()));
  if (tuning_.local_time_budget_us) valve_pin_ns_ = uint64_t(*tuning_.local_time_budget_us) * 1000;
  batch_max_ns_ = uint64_t(tuning_.batch_max_us) * 1000;
  clock_read_ns_ = std::clamp<uint64_t>(batch_max_ns_ / 4, 1, kClockReadNs);
  workers_.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    workers_.push_back(std::make_unique<Worker>(this, i, tuning_.burst_ring_bytes, tuning_.burst));
  }
  if (tuning_.trace > 0) {  // the per-mail trace (trace/recorder.hpp)
    const trace::SessionInfo info{tuning_.trace,
                                  tuning_.burst,
                                  n,
                                  tuning_.trace_start_ms * 1'000'000,
                                  tuning_.trace_duration_ms * 1'000'000,
                                  tuning_.trace_export_deadline_ms * 1'000'000};
    trace_ = std::make_unique<trace::Session>(info, tuning_.trace_buffer, tuning_.trace_output);
    for (auto& w : workers_) {
      w->trace.ring = &trace_->ring(w->index);
      w->trace.session = trace_.get();
      w->trace.rng = (uint64_t(w->index) + 1) * 0x9E3779B97F4A7C15ull;
    }
    trace_->start([this](bool on) {  // the gates (at once, or on the window's thread)
      for (auto& w : workers_) w->trace.gate.store(on ? w->trace.ring : nullptr, std::memory_order_relaxed);
    });
  }
  futex_wakes_at_boot_ = sync::g_futex_wakes.load(std::memory_order_relaxed);
  direct_sends_ = !tuning_.burst && trace_ == nullptr;
  burst_direct_ = tuning_.burst && trace_ == nullptr;
  live_schedulers_add(this);
}

Scheduler::~Scheduler() { live_schedulers_remove(this); }

void Scheduler::start() {
  for (auto& w : workers_) {
    Worker* wp = w.get();
    w->thread = std::thread([this, wp] { worker_main(*wp); });
  }
}

// Shutdown, steps as in scheduler.hpp.
void Scheduler::shutdown() {
  if (shut_down_) return;  // Runtime::shutdown() then the destructor
  shut_down_ = true;
  stopping_.store(true, std::memory_order_seq_cst);  // 1.
  spin_park_.wake_all();                             // 2.
  for (auto& w : workers_) {                         // 3.
    if (w->thread.joinable()) w->thread.join();
  }
  if (trace_) {  // every recording thread of the pool has stopped
    trace_->stop_window();
    if (!trace_->window_written()) trace_->write_output();
  }
  // The blocking pool: queued calls discarded, running ones waited for (their
  // results dropped), before any actor is finalized (blocking_pool.hpp).
  blocking_pool_shutdown(this);
  // The reactor: no readiness report is posted after this (reactor.hpp).
  reactor_shutdown(this);
  // 5 (before 4, while the recipients are still registered): drainers still
  // queued hold burst references; their unclaimed mail is dropped and counted.
  for (auto& w : workers_) {
    while (Job j = w->own.pop()) {
      if (is_burst(j)) discard_burst(burst_of(j));
    }
  }
  while (Job j = injector_.try_pop()) {
    if (is_burst(j)) discard_burst(burst_of(j));
  }
  std::vector<ActorCell*> cells = registry_.snapshot();  // 4.
  for (ActorCell* c : cells) {
    if (!c->is_dead()) finalize_stop(nullptr, c);
    c->release();
  }
  names_.clear();
  uint64_t orphans = 0;
  for (TimerEntry& e : timers_.clear()) {  // orphans (live entries; cancelled ones are not returned)
    delete e.action;
    if (e.cell != nullptr) e.cell->release();
    ++orphans;
  }
  timers_dropped_.fetch_add(orphans, std::memory_order_relaxed);
}

void Scheduler::drop_wait_state(ActorCell* c) {
  cancel_wait_timer(c);  // an actor stopped inside an ask
  if (c->waiting != nullptr) {
    std::coroutine_handle<>::from_address(c->waiting).destroy();
    c->waiting = nullptr;
  }
  if (c->waiting_env != nullptr) {
    c->waiting_env->drop(c->waiting_env);
    c->waiting_env = nullptr;
  }
  if (c->stash != nullptr) {
    uint64_t n = 0;
    for (Envelope* e : c->stash->q) {
      if (e->system == SystemMail::none) ++n;
      e->drop(e);
    }
    if (n != 0) count_dropped_dead(n);
    delete c->stash;
    c->stash = nullptr;
  }
}

void Scheduler::finalize_stop(Worker* w, ActorCell* c) {
  c->dead.store(true, std::memory_order_release);  // the run-token stays Held
  if (c->waiting != nullptr) {                     // a stopped waiter's frame goes before the actor it points into
    std::coroutine_handle<>::from_address(c->waiting).destroy();
    c->waiting = nullptr;
  }
  if (c->actor != nullptr) {
    if (w != nullptr) {
      w->dispatch.current = c;
      w->dispatch.in_handler =
          w->tracing() ? kInTracedHandler : kInHandler;  // sends from the destructor are flushed like a handler's
      c->destroy_actor(c);
      w->dispatch.in_handler = kNotInHandler;
      w->dispatch.current = nullptr;
      if (!w->outbound.empty() || w->ring.building()) flush(*w, c);
    } else {
      c->destroy_actor(c);
    }
  }
  // Most actors never waited: skip the out-of-line call.
  if (c->wait_timer != 0 || c->waiting_env != nullptr || c->stash != nullptr) drop_wait_state(c);
  delete c->producer;  // releases the active burst; queued drainers keep theirs
  c->producer = nullptr;
  uint64_t dropped = 0;
  while (Envelope* e = c->inbox.pop()) {
    if (e->system == SystemMail::none) ++dropped;
    e->drop(e);
  }
  if (dropped != 0) count_dropped_dead(dropped);
  registry_.remove(c, w != nullptr && w->sched == this ? int32_t(w->index) : -1);
  if (c->has_names.load(std::memory_order_acquire)) names_.unbind_all(c);
  if (w != nullptr) {
    // The worker's own line: no shared RMW per actor (the live count is the
    // counters' difference; see all_stopped). This worker checks for the end
    // of the run when it next runs out of work (idle()).
    w->stats.stopped.store(w->stats.stopped.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    w->idle.check_done = true;
  } else {
    stopped_.fetch_add(1, std::memory_order_seq_cst);
    notify_if_done();
  }
  c->release();  // the life reference
}

void Scheduler::register_spawn(ActorCell* c) {
  c->sched = this;
  c->inbox.hold();
  Worker* w = t_worker;
  const bool ours = w != nullptr && w->sched == this;
  registry_.insert(c, ours ? int32_t(w->index) : -1);
  // Counted before the actor can run (it is scheduled only after this), so
  // its stop's count never precedes its spawn's (all_stopped).
  if (ours) {
    bump(w->stats.spawned);  // a spawn from a handler: the worker's own line
  } else {
    spawned_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Scheduler::finish_spawn(ActorCell* c) {
  if (!c->inbox.try_release()) {  // mail arrived during construction: we hold t, schedule it
    Worker* w = t_worker;
    if (w != nullptr && w->sched == this) {
      schedule_local(*w, c);
    } else {
      publish_shared(c);
    }
  }
}

void Scheduler::abort_spawn(ActorCell* c) noexcept {
  c->actor = nullptr;
  c->dead.store(true, std::memory_order_release);
  Worker* w = t_worker;
  registry_.remove(c, w != nullptr && w->sched == this ? int32_t(w->index) : -1);
  aborted_.fetch_add(1, std::memory_order_seq_cst);  // counts as spawned and stopped
  notify_if_done();
  c->release();
}

// The live count, without a shared counter per actor: every spawn bumps its
// worker's `spawned` (or spawned_ off the pool) before the actor can run, and
// every stop bumps its worker's `stopped` (release; or stopped_ / aborted_),
// all monotonic. Reading every stop count first, then every spawn count:
// each stop read is preceded by its actor's spawn (the mail that ran the
// actor carried it), so the spawn is seen too; equal sums mean every actor
// spawned by the time of the spawn reads had stopped by the time of the stop
// reads, and a stopped pool spawns nothing. (A non-worker thread spawning
// while run() waits races the end of the run, as it did with one counter.)
bool Scheduler::all_stopped() const noexcept {
  uint64_t stopped = stopped_.load(std::memory_order_acquire) + aborted_.load(std::memory_order_acquire);
  for (const auto& w : workers_) stopped += w->stats.stopped.load(std::memory_order_acquire);
  uint64_t spawned = spawned_.load(std::memory_order_acquire);
  for (const auto& w : workers_) spawned += w->stats.spawned.load(std::memory_order_acquire);
  return stopped == spawned;
}

// The end-of-run check of a thread that stopped an actor: two stoppers each
// check after their own stop and an acq_rel RMW on one shared word; the later
// RMW reads from the earlier, so at least one of them sees both stops. (Not
// a fence: ThreadSanitizer does not model atomic_thread_fence.) Runs once per
// idle entry after stops, not per actor.
void Scheduler::notify_if_done() noexcept {
  static std::atomic<uint64_t> handshake{0};
  handshake.fetch_add(1, std::memory_order_acq_rel);
  if (!all_stopped()) return;
  // This wakes run()'s caller, which is credited on waking, so pay first.
  if (Worker* w = t_worker; w != nullptr && w->sched == this) causal::on_pay_point();
  std::lock_guard lk(done_mu_);
  done_cv_.notify_all();
}

bool Scheduler::wait_until_done() {
  std::unique_lock lk(done_mu_);
  auto done = [&] { return all_stopped() || stop_requested_.load(std::memory_order_acquire); };
  if (done()) return false;
  done_cv_.wait(lk, done);
  return true;
}

void Scheduler::request_stop() noexcept {
  // From a handler: this wakes run()'s caller, which is credited on waking
  // (causal resume), so the waker pays first, as before any other wake.
  if (Worker* w = t_worker; w != nullptr && w->sched == this) causal::on_pay_point();
  stop_requested_.store(true, std::memory_order_release);
  if (trace_ != nullptr) trace::request_writes();  // the trace file, written off this thread
  std::lock_guard lk(done_mu_);
  done_cv_.notify_all();
}

RuntimeStats Scheduler::stats() const noexcept {
  RuntimeStats s;
  // Stops first, then spawns (all_stopped's order), so live is never negative.
  const uint64_t aborted = aborted_.load(std::memory_order_acquire);
  s.stopped = stopped_.load(std::memory_order_acquire);
  for (const auto& w : workers_) s.stopped += w->stats.stopped.load(std::memory_order_acquire);
  s.spawned = spawned_.load(std::memory_order_acquire);
  for (const auto& w : workers_) s.spawned += w->stats.spawned.load(std::memory_order_acquire);
  s.live = s.spawned >= aborted + s.stopped ? s.spawned - aborted - s.stopped : 0;
  s.spawned -= aborted;  // an aborted spawn is neither spawned nor stopped
  for (const auto& w : workers_) {
    s.delivered += w->stats.delivered.load(std::memory_order_relaxed);
    s.parks += w->stats.parks.load(std::memory_order_relaxed);
    s.deque_pushes += w->stats.deque_pushes.load(std::memory_order_relaxed);
    s.bursts += w->stats.bursts.load(std::memory_order_relaxed);
    s.recruited += w->stats.recruited.load(std::memory_order_relaxed);
    s.seized += w->stats.seized.load(std::memory_order_relaxed);
    s.seize_lost += w->stats.seize_lost.load(std::memory_order_relaxed);
    s.ring_fallbacks += w->stats.ring_fallbacks.load(std::memory_order_relaxed);
    s.timed_parks += w->stats.timed_parks.load(std::memory_order_relaxed);
    s.poll_yields += w->stats.poll_yields.load(std::memory_order_relaxed);
    s.early_wake_spin_ns += w->stats.early_spin_ns.load(std::memory_order_relaxed);
    s.wake_late_ns += w->stats.wake_late_ns.load(std::memory_order_relaxed);
  }
  s.wakes = spin_park_.unparks();
  s.dropped_dead = dropped_dead_.load(std::memory_order_relaxed);
  s.dropped_unresolved = dropped_unresolved_.load(std::memory_order_relaxed);
  s.futex_wakes = sync::g_futex_wakes.load(std::memory_order_relaxed) - futex_wakes_at_boot_;
  s.injector_pushes = injector_pushes_.load(std::memory_order_relaxed);
  s.timers_cancelled = timers_cancelled_.load(std::memory_order_relaxed);
  s.timers_dropped = timers_dropped_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace coact::detail
