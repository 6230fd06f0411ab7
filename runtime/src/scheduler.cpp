// runtime/src/scheduler.cpp: the pool's worker loop, dispatch, flush and
// scheduling decisions. The numbered steps are in detail/scheduler.hpp; the
// run-token ordering argument in coact/runtime/detail/run_token.hpp; the
// lost-wakeup argument in detail/spin_park.hpp.
#include "detail/scheduler.hpp"

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
#include "trace/hooks.hpp"

namespace coact::detail {

struct Stash {
  std::deque<Envelope*> q;  // holder-only: user mail kept aside while the actor waits
};

namespace {
thread_local Worker* t_worker = nullptr;

// The wake of a waiting actor: system mail carrying the wait epoch.
struct ResumeEnvelope final : Envelope {
  uint64_t epoch;
  explicit ResumeEnvelope(uint64_t ep) : epoch(ep) {
    system = SystemMail::resume;
    drop = [](Envelope* self) { delete static_cast<ResumeEnvelope*>(self); };
  }
};

// The boot hand-off cost, found once per process (env pin, calibration file
// for this machine, or a short probe: calibrate/handoff.hpp).
std::chrono::nanoseconds boot_handoff_cost() {
  static const std::chrono::nanoseconds cost = calibrate::initial_handoff_cost().cost;
  return cost;
}

// Whether a pay point would pay nothing now (no causal sweep, or a sweep that
// has injected no delay yet, e.g. one at speedup 0): direct sends stay on
// while it holds (Scheduler::post).
inline bool pay_point_is_noop() noexcept { return causal::pay_point_is_noop(); }

// Relaxed single-writer increment: the owning worker is the only writer, so a
// load+store pair avoids a locked instruction per dispatch.
inline void bump(std::atomic<uint64_t>& c) noexcept {
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
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
  workers_.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    workers_.push_back(std::make_unique<Worker>(this, i, tuning_.burst_ring_bytes, tuning_.burst));
  }
  if (tuning_.trace > 0) {  // the per-mail trace (trace/recorder.hpp)
    const trace::SessionInfo info{tuning_.trace, tuning_.burst, n, tuning_.trace_start_ms * 1'000'000,
                                  tuning_.trace_duration_ms * 1'000'000, tuning_.trace_export_deadline_ms * 1'000'000};
    trace_ = std::make_unique<trace::Session>(info, tuning_.trace_buffer, tuning_.trace_output);
    for (auto& w : workers_) {
      w->trace_ring = &trace_->ring(w->index);
      w->trace_session = trace_.get();
      w->trace_rng = (uint64_t(w->index) + 1) * 0x9E3779B97F4A7C15ull;
    }
    trace_->start([this](bool on) {  // the gates (at once, or on the window's thread)
      for (auto& w : workers_) w->trace.store(on ? w->trace_ring : nullptr, std::memory_order_relaxed);
    });
  }
  futex_wakes_at_boot_ = sync::g_futex_wakes.load(std::memory_order_relaxed);
  direct_sends_ = !tuning_.burst && trace_ == nullptr;
  burst_direct_ = tuning_.burst && trace_ == nullptr;
  live_schedulers_add(this);
}

Scheduler::~Scheduler() {
  live_schedulers_remove(this);
}

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

void Scheduler::discard_burst(Burst* b) {
  while (auto idx = b->life.claim()) {
    Group& g = b->groups()[*idx];
    uint64_t n = 0;
    while (Envelope* e = g.take_or_close()) {
      while (e != nullptr) {
        Envelope* next = e->next.load(std::memory_order_relaxed);
        if (e->system == SystemMail::none) ++n;
        e->drop(e);
        e = next;
      }
    }
    if (n != 0) count_dropped_dead(n);
    g.target->release();
    b->life.complete();
  }
  b->release();
}

// ---- mail ----------------------------------------------------------------

// A direct send's push (post: burst off, or burst on's first send): mail to a
// dead recipient is dropped and counted; a push that takes the recipient's
// run-token holds it in `w`'s outbound list until the flush schedules it.
[[gnu::always_inline]] inline void Scheduler::push_direct(Worker* w, ActorCell* target, Envelope* e) {
  if (target->is_dead()) {
    const bool user = e->system == SystemMail::none;
    e->drop(e);
    if (user) count_dropped_dead(1);
    return;
  }
  if (target->inbox.push(e)) w->outbound.emplace_back(target, nullptr);
}

// The direct hint (burst on), at an invocation's first send, gone direct:
// whether the invocation's later sends go direct too (Worker::direct_left),
// as burst off does, instead of buffering for a burst. Yes when the
// producer's last burst was narrow and cheap (BurstProducer::direct_hint,
// set by flush_burst_groups), except one invocation in 16, which bursts to
// refresh the hint and to feed the cost cells (only claimed mail does). A
// burst pays per group a claim, two group locks, a seize, and per mail a
// reference taken and dropped and a ring region, where a direct send pays
// an inbox push, so a narrow, cheap burst is slower than direct sends.
// Inline: it is on post_on's first-send path, which every reply and chain
// hop takes with burst on. bp is the running
// producer's (w->current->producer, loaded once by the caller: after the
// in_handler store the compiler must load it again): this worker's to
// touch. Worker::direct_left = the width gate - 1: the invocation's sends
// up to the gate's less one go direct, and the one at the gate clears the
// hint (direct_later).
[[gnu::always_inline]] inline void Scheduler::start_direct(Worker* w, BurstProducer* bp) noexcept {
  w->direct_left = bp != nullptr && bp->direct_hint && (++bp->hint_age & 15u) != 0 ? tuning_.burst_recruit_min - 1 : 0;
}

void Scheduler::post(ActorCell* target, Envelope* e) {
  Worker* w = t_worker;
  if (w != nullptr && w->in_handler == kInHandler) {
    // Direct send (burst off, untraced, and a pay point would pay nothing
    // now): push now; if the push took the recipient's run-token, the
    // recipient is held by this handler's outbound list and is scheduled
    // (made runnable) only at the flush, after its pay point, as a buffered
    // send would be. Mail to a recipient held by someone else is visible to
    // it at once, before the flush's pay point: exact, because a pay point
    // here would have paid nothing — no sweep runs, or G == 0 (a sweep at
    // speedup 0, or before its first delay: causal::pay_point_is_noop, the
    // same test on_pay_point makes), so the sender owes nothing at the push
    // and its mail is not early in virtual time. If delay is injected later
    // in this handler (an experiment with s > 0 starts mid-handler), mail
    // pushed before it was sent while nothing was owed; sends from then on
    // buffer and the flush pays first. Timer delay_stamps are untouched
    // (taken at arming, scheduler.cpp arm). No reference is taken: the
    // caller's keeps the cell alive through the push, and a token we hold
    // keeps the actor from stopping (its life reference) until the flush
    // schedules it. Per-sender FIFO: pushes happen in send order, and once
    // this invocation has buffered a send (a pay point was live) every later
    // one buffers too (the last entry is then a buffered one), so no direct
    // push overtakes mail that waits for the flush.
    if (w->sched == this && pay_point_is_noop()) [[likely]] {
      if (direct_sends_) {
        if (w->outbound.empty() || w->outbound.back().second == nullptr) [[likely]] {
          push_direct(w, target, e);
          return;
        }
      } else if (burst_direct_ && w->outbound.empty() && no_live_burst(w->current)) [[likely]] {
        // Burst on: the invocation's first send, when the producer has no
        // live burst (so no open group anywhere to order behind) and a pay
        // point would pay nothing (the same argument as above), takes the
        // same direct path: a burst of one mail has nothing to batch (a
        // reply, a chain hop). The later sends of this invocation are
        // buffered (kInHandlerSent) and batched by the flush; they land
        // behind this one (a claimed group's mail seizes or deposits behind
        // what the inbox holds).
        start_direct(w, w->current->producer);
        w->in_handler = kInHandlerSent;
        push_direct(w, target, e);
        return;
      }
    }
    buffer_send(w, target, e);
    return;
  }
  if (w != nullptr && w->in_handler == kInHandlerSent) {  // burst on: a later send of the invocation
    if (w->direct_left != 0 && direct_later(w)) {
      push_direct(w, target, e);  // (drops mail to a dead recipient)
      return;
    }
    buffer_send(w, target, e);
    return;
  }
  if (w != nullptr && w->in_handler == kInTracedHandler) [[unlikely]] {  // the same, traced
    target->add_ref();
    trace::on_send(*w);  // t_construct_start; the flush samples and tags
    w->outbound.emplace_back(target, e);
    w->batched = true;
    if (w->ring_on) t_ring_armed = true;
    return;
  }
  if (trace_ != nullptr && trace_->recording()) [[unlikely]] {  // a traced root send
    const bool ours = w != nullptr && w->sched == this;
    const trace::RootSend rs = trace::on_root_send_begin(*trace_, ours ? w : nullptr, target, e);
    deposit(target, e, w);
    trace::on_root_send_end(ours ? *w->trace_ring : trace_->external(), rs);
    return;
  }
  deposit(target, e, w);  // root door (or a worker outside a handler)
}

inline bool Scheduler::post_direct(Worker* w, ActorCell* target, Envelope* e) {
  // post()'s first case, its conditions in the order cheapest first (all
  // plain reads; post() reads them afresh when this declines).
  if (w == nullptr || w->in_handler != kInHandler || w->sched != this || !direct_sends_) return false;
  if (!w->outbound.empty() && w->outbound.back().second != nullptr) return false;
  if (!pay_point_is_noop() || target->is_dead()) return false;
  if (target->inbox.push(e)) w->outbound.emplace_back(target, nullptr);
  return true;
}

inline bool Scheduler::post_burst(Worker* w, ActorCell* target, Envelope* e) {
  // post()'s burst-on cases, cheapest test first (plain reads; post() reads
  // them afresh when this declines, and drops mail to a dead recipient, so
  // that no call is made here: the frame stays small).
  if (w == nullptr) return false;
  const uint8_t h = w->in_handler;
  if (h == kInHandler) {  // the invocation's first send: direct under post()'s burst_direct_ conditions
    if (w->sched != this || !burst_direct_ || !w->outbound.empty()) return false;
    BurstProducer* const bp = w->current->producer;  // no_live_burst's, loaded once
    if (!pay_point_is_noop() || (bp != nullptr && !bursts_retired(bp)) || target->is_dead()) return false;
    start_direct(w, bp);
    w->in_handler = kInHandlerSent;
    if (target->inbox.push(e)) w->outbound.emplace_back(target, nullptr);
    return true;
  }
  if (h == kInHandlerSent) {  // a later send of the invocation: buffered for the flush, or direct (the hint)
    if (w->direct_left != 0) [[unlikely]] {
      if (target->is_dead() || !direct_later(w)) return false;  // post() drops it, or buffers
      if (target->inbox.push(e)) w->outbound.emplace_back(target, nullptr);
      return true;
    }
    buffer_send(w, target, e);
    return true;
  }
  return false;
}

// The send of actor.hpp (ActorRef::send) and friends: a handler's direct
// send inline (no call into post), the rest in Scheduler::post. Burst off:
// post_off (post_direct inline); burst on: post_on (post_burst inline), so
// that a burst of one mail (a reply, a chain hop) costs what it costs with
// burst off. Each mode gets its own out-of-line door: post_direct inlined
// into a shared one would give every burst-on send its frame (six registers
// saved).
void post(ActorCell* target, Envelope* e) {
  Scheduler* const s = target->sched;
  if (s->direct_sends()) [[likely]] {
    s->post_off(target, e);
  } else {
    s->post_on(target, e);
  }
}

void Scheduler::post_off(ActorCell* target, Envelope* e) {
  if (post_direct(t_worker, target, e)) [[likely]] return;
  post(target, e);
}

void Scheduler::post_on(ActorCell* target, Envelope* e) {
  if (post_burst(t_worker, target, e)) [[likely]] return;
  post(target, e);
}

// A send inside a handler, buffered for the flush.
inline void Scheduler::buffer_send(Worker* w, ActorCell* target, Envelope* e) {
  target->add_ref();  // keeps the cell alive until the flush deposits the mail
  w->outbound.emplace_back(target, e);
  w->batched = true;
  if (w->ring_on) t_ring_armed = true;  // the invocation's later sends go to the ring
}

// Whether producer p has no burst whose groups may still be open (then a
// direct push overtakes nothing of p's). Only p's own flush creates bursts,
// so this holds from the send to the flush; retired() is an acquire, so
// everything a closed group delivered is in its recipient's inbox before.
// p is the running actor (Worker::current), never null while a handler (or
// a destructor) runs: every writer of kInHandler sets current first.
inline bool Scheduler::no_live_burst(const ActorCell* p) noexcept {
  const BurstProducer* bp = p->producer;
  return bp == nullptr || bursts_retired(bp);
}
// no_live_burst for a producer that has a BurstProducer.
inline bool Scheduler::bursts_retired(const BurstProducer* bp) noexcept {
  return (bp->active == nullptr || bp->active->life.retired()) && (bp->prev == nullptr || bp->prev->life.retired());
}

// A later send of an invocation under the direct hint (Worker::direct_left):
// direct iff post()'s direct conditions still hold (this runtime's actor, a
// pay point would pay nothing) and the invocation stays narrow (fewer sends
// than the width gate); otherwise this send and every later one of the
// invocation buffer (once a send buffered, none may go direct: it could
// overtake it), and a send past the width gate clears the hint (the flush's
// burst sets it afresh). Per-recipient FIFO: the direct sends precede any
// buffered one, and a claimed group's mail lands behind the inbox's.
bool Scheduler::direct_later(Worker* w) noexcept {
  const bool narrow = w->direct_left > 1;
  if (narrow && w->sched == this && pay_point_is_noop()) {
    --w->direct_left;
    return true;
  }
  if (!narrow) w->current->producer->direct_hint = false;  // set by a burst of it: not null
  w->direct_left = 0;
  return false;
}

void Scheduler::deposit(ActorCell* t, Envelope* e, Worker* w) {
  if (t->is_dead()) {
    const bool user = e->system == SystemMail::none;
    e->drop(e);
    if (user) count_dropped_dead(1);
    return;
  }
  if (t->inbox.push(e)) {  // took the run-token: schedule t (run_token.hpp)
    if (w != nullptr && w->sched == this) {
      schedule_local(*w, t);
    } else {
      publish_shared(t);
    }
  }
}

// flush()'s first step.
[[gnu::always_inline]] inline void Scheduler::flush_seal(Worker& w) {
  causal::on_pay_point();  // pay before making other actors runnable
  // t_ring_armed: this invocation buffered a send with the ring on (only
  // then can a region be open or the ring have refused; only a worker with
  // a ring, i.e. burst on, sets it); a handler whose sends all went direct
  // (w.batched clear) skips the seal.
  if (w.batched && t_ring_armed) {
    w.ring.seal();  // lock = mail count, before any mail leaves this thread
    t_ring_armed = false;
    w.ring_refused = false;
  }
}

// The burst lifecycle step 2 (detail/burst.hpp): the one flush point.
void Scheduler::flush(Worker& w, ActorCell* producer) {
  if (w.tracing()) [[unlikely]] {
    flush_traced(w, producer);
    return;
  }
  flush_untraced(w, producer);
}

// flush() with the per-mail trace off (dispatch's untraced copy calls it
// directly: no trace check per flush).
void Scheduler::flush_untraced(Worker& w, ActorCell* producer) {
  flush_seal(w);
  flush_route(w, producer);
}

// flush() with the per-mail trace on: send events, routing, the flush event.
// Out of line so the untraced flush keeps its small frame.
void Scheduler::flush_traced(Worker& w, ActorCell* producer) {
  flush_seal(w);
  if (w.outbound.empty()) return;
  const uint32_t mails = uint32_t(w.outbound.size());
  uint32_t traced = 0;
  const uint64_t t_sent = trace::on_flush_begin(w, producer, traced);
  flush_route(w, producer);
  trace::on_flush_end(w, producer, t_sent, mails, traced);
}

// Inlined into flush (out of line it would add the call, and registers saved
// twice, to every flush).
[[gnu::always_inline]] inline void Scheduler::flush_route(Worker& w, ActorCell* producer) {
  // w.batched: some send of this invocation was buffered (buffer_send). If
  // none was, every entry is a direct send that took its recipient's
  // run-token ({t, nullptr}): burst on or off, all that is left is to
  // schedule them (the loop below), at the cost of this one check.
  if (w.batched) [[unlikely]] {
    w.batched = false;
    if (tuning_.burst && producer != nullptr && !w.outbound.empty()) {
      if (w.outbound.size() > 1) {
        flush_burst(w, producer);
        return;
      }
      // One entry. A direct send (post) that took its recipient's run-token
      // ({t, nullptr}) only needs t scheduled: the loop below.
      if (w.outbound[0].second != nullptr) {
        BurstProducer* bp = producer->producer;
        if (bp != nullptr && (bp->active != nullptr || bp->prev != nullptr)) {
          flush_burst(w, producer);
          return;
        }
      }
    }
    // One mail from a producer without live bursts: no open group anywhere,
    // so the direct path below is the burst path's own one-mail case.
  }
  // COACT_BURST=off: every mail deposits and wakes its recipient on its own.
  // deposit() never appends to outbound (we are outside the handler now).
  for (auto& [t, e] : w.outbound) {
    if (e == nullptr) {  // a direct send took t's run-token (post): schedule t
      schedule_hop(w, t);
      continue;
    }
    t->sched->deposit(t, e, &w);
    t->release();
  }
  w.outbound.clear();
}

// The burst lifecycle steps 3 and 4 (detail/burst.hpp).
void Scheduler::flush_burst(Worker& w, ActorCell* p) {
  ActorCell* direct = nullptr;
  flush_burst_groups(w, p, direct);
  // The invocation's first send went direct (post) and took its recipient's
  // run-token: scheduled after the drainer, so that (LIFO own deque) it runs
  // before the batched groups, in send order as if it had been batched too.
  // Scheduled first, it sat under a relay that the drainer kept running in
  // place (the starvation test's third actor: 856 hops instead of a few).
  // schedule_hop: the hand-off slot when nothing else is local (no drainer
  // was pushed: a one-mail flush), else schedule_local's push.
  if (direct != nullptr) schedule_hop(w, direct);
}

void Scheduler::flush_burst_groups(Worker& w, ActorCell* p, ActorCell*& direct) {
  auto& out = w.outbound;
  uint32_t directs = 0;  // direct sends among out ({t, nullptr})
  BurstProducer* bp = p->producer;
  if (bp == nullptr) bp = p->producer = new BurstProducer();
  bp->prune();
  Burst* b = bp->active;
  if (b != nullptr && b->life.retired()) {  // every group closed: roll a fresh burst
    b->release();
    b = bp->active = nullptr;
    bp->index.clear();
  }
  // The recipient's open group in the live bursts, if any: push onto it.
  auto push_open = [&](ActorCell* t, Envelope* e, uint32_t gi) {
    if (gi != UINT32_MAX && b->groups()[gi].push(e)) return true;
    if (bp->prev != nullptr) {
      const uint32_t pi = bp->prev_index.find(t);
      if (pi != UINT32_MAX && bp->prev->groups()[pi].push(e)) return true;
    }
    return false;
  };
  if (out.size() == 1) {
    // One mail: onto the recipient's open group if it has one, else the
    // direct path (no open group, so nothing to order behind).
    auto [t, e] = out[0];
    out.clear();
    if (e == nullptr) {  // a direct send (post) took t's run-token: schedule t
      direct = t;
      return;
    }
    if (!push_open(t, e, b != nullptr ? bp->index.find(t) : UINT32_MAX)) {
      // No open group: the direct path. A push that takes t's run-token
      // schedules t as a direct send does (flush_burst: the hand-off slot
      // when the own deque is empty, else the deque's top).
      if (t->sched == this && !t->is_dead()) {
        if (t->inbox.push(e)) {
          direct = t;  // the token's holder now: keeps t alive (its life reference) until scheduled
        }
      } else {
        t->sched->deposit(t, e, &w);
      }
    }
    t->release();
    return;
  }
  const size_t want = std::min<size_t>(std::max<size_t>(8, out.size() + out.size() / 2), Lifecycle::kMaxGroups);
  if (b != nullptr && bp->prev == nullptr && b->life.peek_len() + out.size() > b->cap) {
    // The active burst may fill before it retires: it becomes `prev` (its
    // open groups still take their recipients' mail) and a fresh one opens.
    bp->prev = b;
    bp->prev_index.swap(bp->index);
    bp->index.clear();
    b = bp->active = nullptr;
  }
  if (b == nullptr) b = bp->active = Burst::create(uint32_t(want));
  bp->index.reserve(out.size());  // one table for this flush's recipients, no regrow mid-flush
  const uint32_t base = b->life.peek_len();
  Group* groups = b->groups();
  uint32_t staged = 0;
  // Cost of the fresh groups (read before publish: afterwards a claimer
  // owns their lists). One untrusted cell sends the decision to the width gate.
  bool confident = true;
  auto cost = [&](const Envelope* e) -> uint64_t {
    if (auto ns = costs_.trusted(e->kind)) return *ns;
    confident = false;
    return 0;
  };
  std::vector<uint64_t>& work = w.group_work;  // per staged group, ns
  work.clear();
  for (auto& [t, e] : out) {
    if (e == nullptr) {  // a direct send (post) took t's run-token
      // The first send's recipient is scheduled after the drainer (below);
      // any other direct send's (the direct hint ended mid-invocation: sends
      // before it went direct) now, its mail already in its inbox.
      if (direct != nullptr) schedule_local(w, direct);
      direct = t;
      ++directs;
      continue;
    }
    if (t->sched != this) {  // another runtime's actor: its own door
      t->sched->deposit(t, e, &w);
      t->release();
      continue;
    }
    const uint32_t gi = bp->index.find(t);
    if (gi != UINT32_MAX && gi >= base) {  // opened by this flush, not yet published
      groups[gi].push_unpublished(e);
      work[gi - base] += cost(e);
      t->release();
      continue;
    }
    if (push_open(t, e, gi)) {
      t->release();
      continue;
    }
    // No open group (or its claimer closed it: a fresh group lands behind
    // everything that one dispatched).
    if (base + staged >= b->cap) {  // array full: the direct path (no open group)
      deposit(t, e, &w);
      t->release();
      continue;
    }
    Group* g = ::new (&groups[base + staged]) Group();
    g->target = t;  // the outbound reference moves to the group
    g->push_unpublished(e);
    work.push_back(cost(e));
    bp->index.put(t, base + staged);
    ++staged;
  }
  out.clear();
  if (staged == 0) return;
  uint64_t total_ns = 0, max_group_ns = 0;
  for (uint64_t x : work) {
    total_ns += x;
    max_group_ns = std::max(max_group_ns, x);
  }
  if (b->life.publish(staged) != Lifecycle::Published::ok) {
    // Retired meanwhile (every earlier group closed, so none of these
    // recipients has an open group): the staged groups were never claimable;
    // deposit their mail in order and roll a fresh burst next time.
    for (uint32_t i = 0; i < staged; ++i) {
      Group& g = groups[base + i];
      for (Envelope* e = g.head; e != nullptr;) {
        Envelope* next = e->next.load(std::memory_order_relaxed);
        deposit(g.target, e, &w);
        e = next;
      }
      g.target->release();
      g.~Group();
    }
    b->release();
    bp->active = nullptr;
    bp->index.clear();
    return;
  }
  bump(w.bursts);
  // Keep warm: one drainer on this worker's own deque.
  b->add_ref();
  spill_next(w);  // the hand-off slot counts as the deque's top
  w.burst_mark = w.own.size();  // run_burst's depth-first yield (requeue_under)
  schedule_job(w, job_of(b));
  // Recruit: K from the cost estimates of the fresh groups, or the width gate.
  uint32_t extra = 0;
  if (confident) {
    const uint64_t wake_ns = uint64_t(handoff_->wake_break_even().count());
    extra = recruit_k(total_ns, max_group_ns, staged, worker_count(), wake_ns) - 1;
  } else if (staged >= tuning_.burst_recruit_min) {
    extra = std::min(staged, worker_count()) - 1;
  }
  // The direct hint for p's next invocations (start_direct): this burst was
  // narrow and cheap (trusted costs, nobody worth recruiting).
  bp->direct_hint = confident && extra == 0 && staged + directs < tuning_.burst_recruit_min;
  // Judged too cheap to share (trusted costs, K = 1): the keep-local valve
  // must not share it wholesale either. The drainer sits under the first
  // send's recipient (and soon the reply it makes runnable), so the next
  // push's backlog check would spill the drainer, every group of this burst
  // with it, to a sibling woken for it, cold, while this worker idles. The
  // burst restarts the cascade clock: the valve spills only a cascade that
  // runs on past its own period after this (without it, a wide zero-work
  // fan-out's rounds woke a parked sibling and ran cold there).
  if (confident && extra == 0) w.cascade_start_ns = w.clock_ns;
  extra = std::min(extra, tuning_.burst_recruit_max);
  if (w.tracing()) [[unlikely]] trace::on_recruit(w, p, staged, extra, !confident);
  if (extra != 0) {
    for (uint32_t i = 0; i < extra; ++i) {
      b->add_ref();
      injector_.push(job_of(b));
    }
    injector_pushes_.fetch_add(extra, std::memory_order_relaxed);
    w.recruited.fetch_add(extra, std::memory_order_relaxed);
    // Recruitment wakes siblings directly: one spinner cannot drain K drainers.
    spin_park_.wake_workers(extra);
  }
}

// The burst lifecycle step 5: race the cursor, one whole group per claim.
void Scheduler::run_burst(Worker& w, Burst* b) {
  // The claimed mail's region releases are held back and given back
  // together (mailbox.hpp RegionReleaseBatch): at every return below.
  RegionReleaseBatch batch;
  t_region_batch = &batch;
  struct Uninstall {
    RegionReleaseBatch& b;
    ~Uninstall() {
      b.flush();
      t_region_batch = nullptr;
    }
  } uninstall{batch};
  // Groups are claimed in runs (Lifecycle::complete_and_claim_n): one CAS
  // of the word per run instead of one per group. A run starts at one
  // group and doubles after each run in which no recipient published a
  // burst of its own, up to kMaxRun, and at most a 2 x workers share of
  // what is unclaimed (guided self-scheduling: a recruited sibling still
  // finds groups, and runs shrink to one toward the end). Why: a fan-out's
  // groups hold one mail each, so one CAS per group is one per mail.
  constexpr uint32_t kMaxRun = 8;
  const uint32_t share = 2 * worker_count();
  uint32_t want = 1;
  bool retired = false;
  Lifecycle::Claimed run = b->life.complete_and_claim_n(0, want, share, retired);
  while (run.n != 0) {
    bool yield = false;
    for (uint32_t i = 0; i < run.n; ++i) {
      // The run's later groups wait for this worker: an actor run in place
      // (deliver_claimed) that reaches its budget is published, not given
      // another batch here (nothing_waits), so an actor that keeps itself
      // busy cannot hold them back longer than one budget.
      w.claimed_left = run.n - i - 1;
      Group& g = b->groups()[run.first + i];
      ActorCell* t = g.target;  // the group's reference keeps t alive through its drain
      const uint64_t bursts_before = w.bursts.load(std::memory_order_relaxed);
      // Drain in send order until the group is found empty, which closes it
      // (the FIFO barrier for the producer's later pushes).
      while (Envelope* e = g.take_or_close()) {
        while (e != nullptr) {
          Envelope* next = e->next.load(std::memory_order_relaxed);
          deliver_claimed(w, t, e);
          e = next;
        }
      }
      t->release();
      if (w.bursts.load(std::memory_order_relaxed) != bursts_before) [[unlikely]] yield = true;
    }
    w.claimed_left = 0;
    // Depth first: a recipient run here that published a burst of its own
    // (a spawn tree's node) left that burst's drainer (and its direct
    // first send's recipient) on top of the own deque. Claiming the next
    // group now would run every sibling, each expanding its own subtree,
    // before any grandchild (breadth first: skynet with burst on peaked at
    // 45,905 live small blocks, 18,864 with burst off, and paid for them in
    // glibc malloc/free). So this drainer yields: it goes back under the
    // jobs that run pushed, and the new subtree runs first. (A run longer
    // than one group finishes its groups first, those siblings breadth
    // first; the publish resets the run length to one, so a spawn tree's
    // inner levels, whose every recipient publishes, claim one at a time.)
    if (yield) [[unlikely]] {
      want = 1;
      (void)b->life.complete_and_claim_n(run.n, 0, share, retired);  // want 0: complete only
      if (requeue_under(w, b)) return;
      run = b->life.complete_and_claim_n(0, want, share, retired);
      continue;
    }
    const uint32_t done = run.n;
    want = std::min(want * 2, kMaxRun);
    run = b->life.complete_and_claim_n(done, want, share, retired);
  }
  b->release();  // this drainer's reference
}

// run_burst's yield: if b still has unclaimed groups and 1..kMaxUnder jobs
// sit above the own deque's length before the last burst's drainer was
// pushed (Worker::burst_mark: that drainer, its direct first send's
// recipient, anything pushed after), puts b's drainer (the caller's
// reference) under them, their order kept, and returns true. A spill
// (schedule_backlog) that moved them to the injector leaves nothing above
// the mark: then the caller claims on.
bool Scheduler::requeue_under(Worker& w, Burst* b) {
  constexpr int64_t kMaxUnder = 4;
  spill_next(w);  // the hand-off slot counts as the deque's top
  const int64_t k = w.own.size() - w.burst_mark;
  if (k <= 0 || k > kMaxUnder) return false;
  const Lifecycle::Snapshot s = b->life.snapshot();
  if (s.cursor >= s.len) return false;  // nothing left to claim: finish here
  Job top[kMaxUnder];
  int64_t n = 0;
  while (n < k) {
    Job j = pop_own(w);
    if (j == nullptr) break;  // taken by a thief (peer steal)
    top[n++] = j;
  }
  schedule_job(w, job_of(b));
  while (n > 0) w.own.push(top[--n]);
  return true;
}

// The burst lifecycle step 6: seize the recipient and run it here, or deposit.
void Scheduler::deliver_claimed(Worker& w, ActorCell* t, Envelope* e) {
  if (t->inbox.seize()) {
    bump(w.seized);
    // We hold t's run-token, so its consumer state is ours to read. Older
    // mail in the inbox (an earlier deposit, possibly from this very
    // producer) or a suspended coroutine goes first: then this mail queues
    // behind it and the inbox is drained in order.
    if (t->waiting == nullptr && (t->stash == nullptr || t->stash->q.empty()) && t->inbox.empty_for_consumer()) {
      drain_cell(w, t, e);
    } else {
      t->inbox.push(e);
      drain_cell(w, t, nullptr);
    }
    return;
  }
  bump(w.seize_lost);
  causal::on_pay_point();  // the deposit may make t runnable
  deposit(t, e, &w);
}

void Scheduler::schedule_backlog(Worker& w, int64_t n) {
  // The valve is at least 6 µs unless pinned: a younger cascade cannot trip
  // it, so the estimate is read only when it could (every spawn-and-send in a
  // fan-out handler lands here, and valve_ns() is not free).
  const uint64_t elapsed = w.clock_ns - w.cascade_start_ns;
  const uint64_t valve = valve_pin_ns_ || elapsed > kMinValveNs ? valve_ns() : 0;
  const bool valve_tripped = valve != 0 && elapsed > valve;
  if (valve_tripped || n >= int64_t(tuning_.local_sticky_max)) {
    // Spill the backlog (all but the freshest) so a heavy cascade
    // parallelizes: oldest first, pushed under one injector lock.
    std::vector<Job>& spill = w.spill;
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
    w.cascade_start_ns = w.clock_ns;
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

// ---- worker loop --------------------------------------------------------

// Step 1.
inline Job Scheduler::acquire(Worker& w) {
  // Busy-path due check (timer_heap.hpp): under saturation nobody parks and no
  // timekeeper exists, yet due timers must fire. One relaxed load per loop.
  uint64_t now = 0;
  if (timers_due(now)) [[unlikely]] fire_due(&w, now);
  if (Job c = pop_own(w)) [[likely]] {
    if (++w.own_streak >= tuning_.local_chain_backstop) [[unlikely]] return acquire_backstop(w, c);
    return c;
  }
  return acquire_shared(w);
}

// Chain backstop: a self-sustaining relay never visits the injector on its
// own; probe it once so shared work waits at most K own pops.
Job Scheduler::acquire_backstop(Worker& w, Job c) {
  w.own_streak = 0;
  if (Job x = injector_.try_pop()) {
    w.own.push(c);
    return x;
  }
  return c;
}

// Step 1 with the own deque empty: shared work, else idle.
Job Scheduler::acquire_shared(Worker& w) {
  w.own_streak = 0;
  w.cascade_start_ns = w.clock_ns;  // shared work starts a new cascade
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
      DequeStealer<Job> stealer(&v.deque);
      if (Job c = stealer.steal()) {
        more = stealer.size() > 0;
        return c;
      }
    }
  }
  return nullptr;
}

// SpinPark, steps as in spin_park.hpp; the window and the timekeeper's early
// wake as in spin_window.hpp.
Job Scheduler::idle(Worker& w) {
  const uint64_t ceiling = uint64_t(tuning_.spin_window_us) * 1000;
  if (w.check_done) {  // this worker stopped an actor since: was it the last?
    w.check_done = false;
    notify_if_done();
  }
  for (;;) {
    if (stopping_.load(std::memory_order_acquire)) return nullptr;
    bool more = false;
    const uint64_t spin_ns = w.spin_window.window_ns(ceiling);
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
        w.clock_ns = sync::now_ns();
        w.spin_window.found(w.clock_ns - spin_start, ceiling);
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
        w.clock_ns = now;
        w.cascade_start_ns = now;  // an idle worker's fire starts a new cascade
        fire_due(&w, now);
        if (Job c = pop_own(w)) {
          w.clock_ns = now;
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
    if (Job c = take_shared(w, more)) {        // 4.
      spin_park_.unregister_idle(w.index);
      causal::on_resume();
      if (more) spin_park_.notify();
      w.clock_ns = sync::now_ns();
      w.spin_window.found(spin_ns == 0 ? 0 : w.clock_ns - spin_start, ceiling);
      return c;
    }
    if (stopping_.load(std::memory_order_seq_cst)) {
      spin_park_.unregister_idle(w.index);
      return nullptr;
    }
    bump(w.parks);
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
      spin_park_.park(w.index);
      slept = sync::now_ns() - p0;
    }
    if (!timed_out) {
      // Live refinement of the hand-off cost from a real cross-thread wake.
      const uint64_t woke = sync::now_ns(), sent = spin_park_.parker(w.index).last_unpark_ns();
      if (sent != 0 && woke > sent) handoff_->observe(std::chrono::nanoseconds(woke - sent));
    }
    w.spin_window.parked(spun, slept, !timed_out && !injector_.empty(), uint64_t(handoff_->wake_break_even().count()),
                         ceiling);
    causal::on_resume();       // woken by a thread that paid: credit
    if (trace_park != 0) [[unlikely]] trace::on_park(w, trace_park, timed_out, keeper);
    spin_park_.unregister_idle(w.index);  // no-op unless the wake was spurious or timed
    // A timed-out timekeeper reuses keep_time's last clock read (it ended
    // its spin on it, a moment ago); any other wake reads the clock.
    w.clock_ns = timed_out ? kept_now : sync::now_ns();
    // What runs next starts a new local cascade (the keep-local valve counts
    // from here): otherwise the valve, still counting from before the park,
    // trips on the second of several timers fired at once and spills them to
    // the injector with a sibling wake on the fire's path.
    w.cascade_start_ns = w.clock_ns;
    now = w.clock_ns;
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

inline void Scheduler::run_job(Worker& w, Job j) {
  w.trace_pickup = 0;  // t_enqueue: the job's first traced handler stamps it (trace::on_handler)
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
  causal::register_thread();  // owes every delay injected from now on (L = G)
  causal::register_sampled_thread();  // CPU-time samples for line regions (armed only while sampling)
  w.clock_ns = sync::now_ns();
  w.cascade_start_ns = w.clock_ns;
  // Shutdown must stop busy workers too, not only idle ones: a
  // self-sustaining cascade never reaches idle(). One relaxed load per loop.
  while (!stopping_.load(std::memory_order_relaxed)) {
    Job j = acquire(w);
    if (j == nullptr) break;
    run_job(w, j);
  }
  t_worker = nullptr;
}

bool Scheduler::keep_time(Worker& w, uint64_t next, uint64_t ceiling_ns, uint64_t& slept_ns, uint64_t& now_ns) {
  slept_ns = 0;
  if (next == TimerHeap::kNone) {
    const uint64_t p0 = sync::now_ns();
    spin_park_.park(w.index);
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
    bump(w.timed_parks);
    const bool woken = spin_park_.park_until(w.index, wake_at);  // absolute: no clock read inside
    const uint64_t woke = sync::now_ns();
    slept_ns = woke - now;
    if (woken) return false;
    const uint64_t late = woke > wake_at ? woke - wake_at : 0;
    wake_latency_->observe(late);
    w.wake_late_ns.store(w.wake_late_ns.load(std::memory_order_relaxed) + late, std::memory_order_relaxed);
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
    w.early_spin_ns.store(w.early_spin_ns.load(std::memory_order_relaxed) + (t - spin_start),
                          std::memory_order_relaxed);
  now_ns = t;
  return true;
}

// Steps 2-5.
void Scheduler::run_cell(Worker& w, ActorCell* c) {
  COACT_INVARIANT(c->inbox.held(), "run-token: a popped actor was not Held");
  drain_cell(w, c, nullptr);
}

void Scheduler::drain_cell(Worker& w, ActorCell* c, Envelope* first) {
  uint64_t batch_start = w.clock_ns;
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
          (c->waiting != nullptr || c->stash == nullptr || c->stash->q.empty()) &&
          c->inbox.empty_for_consumer() && c->inbox.try_release())
        return;  // released: c is not ours to touch (run_token.hpp)
      publish_shared(c);
      return;
    }
    bool over_time = false;
    if (++w.stride_count >= tuning_.clock_check_stride) {
      w.stride_count = 0;
      w.clock_ns = sync::now_ns();
      over_time = w.clock_ns - batch_start >= batch_max_ns_;
    }
    if (mails >= tuning_.batch_max_mails || over_time) [[unlikely]] {  // 4. (the token stays Held)
      // A burst drainer's held-back region releases (mailbox.hpp
      // RegionReleaseBatch) go back at every budget end: an actor run in
      // place that keeps itself busy would otherwise hold its producer's
      // region live, and every region behind it in that ring, for as long
      // as it runs.
      if (RegionReleaseBatch* rb = t_region_batch) [[unlikely]] rb->flush();
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
        w.clock_ns = sync::now_ns();
        batch_start = w.clock_ns;
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
  if (++w.cost_stride >= w.cost_next && !w.tracing()) {
    w.cost_stride = 0;
    uint32_t x = w.cost_rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    w.cost_rng = x;
    w.cost_next = 8 + (x & 15u);
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
  w.current = c;
  w.in_handler = kTraced ? kInTracedHandler : kInHandler;
  uint64_t trace_mail = 0, trace_received = 0;
  if constexpr (kTraced) {
    trace_mail = trace::mail_key(e);  // before invoke destroys e
    w.trace_kind = kind;
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
  w.in_handler = kNotInHandler;
  w.current = nullptr;
  if constexpr (kTraced) trace::on_handler(w, c, trace_mail, kind, trace_received, false);
  causal::on_handler_exit(causal_token, [c] { return c->type; }, kind);
  bump(w.delivered);
  if (!w.outbound.empty() || w.ring.building()) {
    if constexpr (kTraced) {
      flush_traced(w, c);
    } else if (w.outbound.size() == 1 && !w.batched && w.outbound[0].second == nullptr) [[likely]] {
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

void Scheduler::cancel_wait_timer(ActorCell* c) {
  // A cancel that beats the fire leaves the entry's cell reference to us (the
  // entry will never touch the cell); one that loses leaves it to fire(),
  // whose Resume then arrives stale. The holder's own reference keeps c alive.
  if (c->wait_timer != 0 && timers_.cancel(c->wait_timer)) c->release();
  c->wait_timer = 0;
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
  if (c->waiting != nullptr) {  // a stopped waiter's frame goes before the actor it points into
    std::coroutine_handle<>::from_address(c->waiting).destroy();
    c->waiting = nullptr;
  }
  if (c->actor != nullptr) {
    if (w != nullptr) {
      w->current = c;
      w->in_handler = w->tracing() ? kInTracedHandler : kInHandler;  // sends from the destructor are flushed like a handler's
      c->destroy_actor(c);
      w->in_handler = kNotInHandler;
      w->current = nullptr;
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
    w->stopped.store(w->stopped.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    w->check_done = true;
  } else {
    stopped_.fetch_add(1, std::memory_order_seq_cst);
    notify_if_done();
  }
  c->release();  // the life reference
}

// ---- coroutine waits and timers -----------------------------------------

void Scheduler::resume_waiting(Worker& w, ActorCell* c) {
  auto h = std::coroutine_handle<>::from_address(c->waiting);
  c->waiting = nullptr;
  c->reply_slot = nullptr;
  ++c->wait_epoch;  // any other wake for this wait is now stale
  const uint32_t kind = c->waiting_env != nullptr ? c->waiting_env->kind : 0;
  void* const causal_token = causal::on_handler_enter(c->type, kind);
  w.current = c;
  const uint64_t trace_received = w.tracing() ? sync::now_ns() : 0;
  w.in_handler = trace_received != 0 ? kInTracedHandler : kInHandler;
  if (trace_received != 0) w.trace_kind = kind;
  try {
    h.resume();
  } catch (const std::exception& ex) {
    std::string what = "exception escaped a coroutine handler for message " + kind_name(kind) + ": " + ex.what();
    panic(what.c_str());
  } catch (...) {
    panic("non-standard exception escaped a coroutine handler");
  }
  w.in_handler = kNotInHandler;
  w.current = nullptr;
  if (trace_received != 0) [[unlikely]] trace::on_handler(w, c, 0, kind, trace_received, true);
  causal::on_handler_exit(causal_token, [c] { return c->type; }, kind);
  if (h.done()) {
    h.destroy();
    if (c->waiting_env != nullptr) {
      c->waiting_env->drop(c->waiting_env);
      c->waiting_env = nullptr;
    }
  } else {
    COACT_INVARIANT(c->waiting == h.address(), "a coroutine handler suspended on something other than a coact wait");
  }
  bump(w.delivered);
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
  std::vector<TimerEntry>& due = w->due;
  due.clear();
  timers_.pop_due(now_ns, due);
  spill_next(*w);  // the hand-off slot is not one of the fired: below the fired jobs
  const int64_t own_before = w->own.size();
  const uint64_t pushes_before = w->deque_pushes.load(std::memory_order_relaxed);
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
  const uint64_t k = w.deque_pushes.load(std::memory_order_relaxed) - pushes_before;
  if (k < 2 || w.own.size() != own_before + int64_t(k)) return;
  std::vector<Job>& fired = w.spill;  // scratch: empty outside schedule_job's spill
  fired.clear();
  for (uint64_t i = 0; i < k; ++i) fired.push_back(w.own.pop_unshared());  // latest deadline first
  for (Job j : fired) w.own.push(j);                                        // earliest ends on top
  fired.clear();
}

void Scheduler::fire(Worker* w, TimerEntry& e) {
  if (w != nullptr && w->tracing()) [[unlikely]] trace::on_timer(*w, e);
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

void* alloc_envelope(size_t bytes, RingRegion** region) {
  *region = nullptr;
  Worker* w = t_worker;
  if (w != nullptr && w->in_handler && w->ring_on) {
    // Only from the second send of an invocation on (make_envelope's
    // t_ring_armed): the first takes a small-object envelope (a thread-local
    // free-list pop): a one-mail handler - a chain hop, a reply - gains
    // nothing from a ring region (header, seal, reclaim, atomic release).
    // A ring that refused once stays full for the rest of this invocation
    // (regions are reclaimed in ring order, and the oldest one is still
    // live): the later sends skip the attempt, each a seal, a reclaim walk
    // and a failed open (a breadth-first spawn tree keeps old regions live,
    // so its ring is full for nearly every send).
    if (!w->ring_refused) {
      if (void* p = w->ring.alloc(bytes, region)) return p;
      w->ring_refused = true;
    }
    bump(w->ring_fallbacks);  // the ring is full: an owned heap envelope
  }
  return small_alloc(bytes);
}

void abandon_envelope(void* mem, size_t bytes, RingRegion* region) noexcept {
  if (region != nullptr) {
    t_worker->ring.abandon(region);
  } else {
    small_free(mem, bytes);
  }
}

void keep_until_resumed(Envelope* e) {
  Worker* w = t_worker;
  COACT_INVARIANT(w != nullptr && w->current != nullptr, "a coroutine handler suspended outside a coact handler");
  w->current->waiting_env = e;
}

namespace {
// Opens a wait for the actor whose handler coroutine runs on this thread:
// a new wait epoch (the wait identity, with the pid) and the suspended frame.
ActorCell* begin_wait(std::coroutine_handle<> h, const char* what) {
  Worker* w = t_worker;
  COACT_INVARIANT(w != nullptr && w->current != nullptr && w->in_handler, what);
  ActorCell* c = w->current;
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

// ---- lifecycle ----------------------------------------------------------

void Scheduler::register_spawn(ActorCell* c) {
  c->sched = this;
  c->inbox.hold();
  Worker* w = t_worker;
  const bool ours = w != nullptr && w->sched == this;
  registry_.insert(c, ours ? int32_t(w->index) : -1);
  // Counted before the actor can run (it is scheduled only after this), so
  // its stop's count never precedes its spawn's (all_stopped).
  if (ours) {
    bump(w->spawned);  // a spawn from a handler: the worker's own line
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
  for (const auto& w : workers_) stopped += w->stopped.load(std::memory_order_acquire);
  uint64_t spawned = spawned_.load(std::memory_order_acquire);
  for (const auto& w : workers_) spawned += w->spawned.load(std::memory_order_acquire);
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
  auto done = [&] {
    return all_stopped() || stop_requested_.load(std::memory_order_acquire);
  };
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
  for (const auto& w : workers_) s.stopped += w->stopped.load(std::memory_order_acquire);
  s.spawned = spawned_.load(std::memory_order_acquire);
  for (const auto& w : workers_) s.spawned += w->spawned.load(std::memory_order_acquire);
  s.live = s.spawned >= aborted + s.stopped ? s.spawned - aborted - s.stopped : 0;
  s.spawned -= aborted;  // an aborted spawn is neither spawned nor stopped
  for (const auto& w : workers_) {
    s.delivered += w->delivered.load(std::memory_order_relaxed);
    s.parks += w->parks.load(std::memory_order_relaxed);
    s.deque_pushes += w->deque_pushes.load(std::memory_order_relaxed);
    s.bursts += w->bursts.load(std::memory_order_relaxed);
    s.recruited += w->recruited.load(std::memory_order_relaxed);
    s.seized += w->seized.load(std::memory_order_relaxed);
    s.seize_lost += w->seize_lost.load(std::memory_order_relaxed);
    s.ring_fallbacks += w->ring_fallbacks.load(std::memory_order_relaxed);
    s.timed_parks += w->timed_parks.load(std::memory_order_relaxed);
    s.early_wake_spin_ns += w->early_spin_ns.load(std::memory_order_relaxed);
    s.wake_late_ns += w->wake_late_ns.load(std::memory_order_relaxed);
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
