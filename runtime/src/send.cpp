// runtime/src/send.cpp: the send path. detail::post (ActorRef::send and
// friends) enters post_off (burst off) or post_on (burst on), whose direct
// cases run inline (post_direct, post_burst); the rest is Scheduler::post:
// a handler's send is pushed direct or buffered in Worker::outbound for the
// flush (burst_dispatch.cpp); a send from outside a handler deposits at
// once (the root door). Also the envelope allocation of a send (ring region
// of detail/mail_ring.hpp, or the small-object heap). Called on the sending
// thread; per-sender FIFO as argued at post().
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
// whether the invocation's later sends go direct too (Worker::dispatch.direct_left),
// as burst off does, instead of buffering for a burst. Yes when the
// producer's last burst was narrow and cheap (BurstProducer::direct_hint,
// set by flush_burst_groups), except one invocation in 16, which bursts to
// refresh the hint and to feed the cost cells (only claimed mail does). A
// burst pays per group a claim, two group locks, a seize, and per mail a
// reference taken and dropped and a ring region, where a direct send pays
// an inbox push, so a narrow, cheap burst is slower than direct sends.
// Inline: it is on post_on's first-send path, which every reply and chain
// hop takes with burst on. bp is the running
// producer's (w->dispatch.current->producer, loaded once by the caller: after the
// in_handler store the compiler must load it again): this worker's to
// touch. Worker::dispatch.direct_left = the width gate - 1: the invocation's sends
// up to the gate's less one go direct, and the one at the gate clears the
// hint (direct_later).
[[gnu::always_inline]] inline void Scheduler::start_direct(Worker* w, BurstProducer* bp) noexcept {
  w->dispatch.direct_left =
      bp != nullptr && bp->direct_hint && (++bp->hint_age & 15u) != 0 ? tuning_.burst_recruit_min - 1 : 0;
}

void Scheduler::post(ActorCell* target, Envelope* e) {
  Worker* w = t_worker;
  if (w != nullptr && w->dispatch.in_handler == kInHandler) {
    // Direct send (burst off, untraced): push now; if the push took the
    // recipient's run-token, the recipient is held by this handler's
    // outbound list and is scheduled (made runnable) only at the flush,
    // after its pay point, as a buffered send would be. Mail to a recipient
    // held by someone else is visible to it at once, before the flush's pay
    // point, so during a sweep that injected delay the sender pays its debt
    // first, here (causal::on_pay_point_in_handler: its running region is
    // suspended while it pays): its mail is then not early in virtual time,
    // and it arrives mid-handler as it does without a sweep (held to the
    // flush, a stage that sends as it goes would feed its consumer later
    // under a sweep than without one). Outside a sweep, or in one
    // at speedup 0 (G == 0: causal::pay_point_is_noop), the pay is one
    // load. Timer delay_stamps are untouched (taken at arming, timers.cpp
    // arm). No reference is taken: the caller's keeps the cell alive
    // through the push, and a token we hold keeps the actor from stopping
    // (its life reference) until the flush schedules it. Per-sender FIFO:
    // pushes happen in send order, and once this invocation has buffered a
    // send (to another runtime's actor) every later one buffers too (the
    // last entry is then a buffered one), so no direct push overtakes mail
    // that waits for the flush.
    if (w->sched == this && direct_sends_) [[likely]] {
      if (w->outbound.empty() || w->outbound.back().second == nullptr) [[likely]] {
        causal::on_pay_point_in_handler();
        push_direct(w, target, e);
        return;
      }
    } else if (w->sched == this && burst_direct_ && pay_point_is_noop() && w->outbound.empty() &&
               no_live_burst(w->dispatch.current)) [[likely]] {
      // Burst on: the invocation's first send, when the producer has no
      // live burst (so no open group anywhere to order behind) and a pay
      // point would pay nothing (so the sender owes nothing at the push and
      // its mail is not early), takes the same direct path: a burst of one
      // mail has nothing to batch (a reply, a chain hop). The later sends
      // of this invocation are buffered (kInHandlerSent) and batched by the
      // flush; they land behind this one (a claimed group's mail seizes or
      // deposits behind what the inbox holds). During a sweep that injected
      // delay it is buffered with them: burst on routes a handler's sends
      // at its end in any case.
      start_direct(w, w->dispatch.current->producer);
      w->dispatch.in_handler = kInHandlerSent;
      push_direct(w, target, e);
      return;
    }
    buffer_send(w, target, e);
    return;
  }
  if (w != nullptr && w->dispatch.in_handler == kInHandlerSent) {  // burst on: a later send of the invocation
    if (w->dispatch.direct_left != 0 && direct_later(w)) {
      push_direct(w, target, e);  // (drops mail to a dead recipient)
      return;
    }
    buffer_send(w, target, e);
    return;
  }
  if (w != nullptr && w->dispatch.in_handler == kInTracedHandler) [[unlikely]] {  // the same, traced
    target->add_ref();
    trace::on_send(*w);  // t_construct_start; the flush samples and tags
    w->outbound.emplace_back(target, e);
    w->dispatch.batched = true;
    if (w->ring_on) t_ring_armed = true;
    return;
  }
  if (trace_ != nullptr && trace_->recording()) [[unlikely]] {  // a traced root send
    const bool ours = w != nullptr && w->sched == this;
    const trace::RootSend rs = trace::on_root_send_begin(*trace_, ours ? w : nullptr, target, e);
    deposit(target, e, w);
    trace::on_root_send_end(ours ? *w->trace.ring : trace_->external(), rs);
    return;
  }
  deposit(target, e, w);  // root door (or a worker outside a handler)
}

inline bool Scheduler::post_direct(Worker* w, ActorCell* target, Envelope* e) {
  // post()'s first case, its conditions in the order cheapest first (all
  // plain reads; post() reads them afresh when this declines).
  if (w == nullptr || w->dispatch.in_handler != kInHandler || w->sched != this || !direct_sends_) return false;
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
  const uint8_t h = w->dispatch.in_handler;
  if (h == kInHandler) {  // the invocation's first send: direct under post()'s burst_direct_ conditions
    if (w->sched != this || !burst_direct_ || !w->outbound.empty()) return false;
    BurstProducer* const bp = w->dispatch.current->producer;  // no_live_burst's, loaded once
    if (!pay_point_is_noop() || (bp != nullptr && !bursts_retired(bp)) || target->is_dead()) return false;
    start_direct(w, bp);
    w->dispatch.in_handler = kInHandlerSent;
    if (target->inbox.push(e)) w->outbound.emplace_back(target, nullptr);
    return true;
  }
  if (h == kInHandlerSent) {  // a later send of the invocation: buffered for the flush, or direct (the hint)
    if (w->dispatch.direct_left != 0) [[unlikely]] {
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
  if (post_direct(t_worker, target, e)) [[likely]]
    return;
  post(target, e);
}

void Scheduler::post_on(ActorCell* target, Envelope* e) {
  if (post_burst(t_worker, target, e)) [[likely]]
    return;
  post(target, e);
}

// A send inside a handler, buffered for the flush.
inline void Scheduler::buffer_send(Worker* w, ActorCell* target, Envelope* e) {
  target->add_ref();  // keeps the cell alive until the flush deposits the mail
  w->outbound.emplace_back(target, e);
  w->dispatch.batched = true;
  if (w->ring_on) t_ring_armed = true;  // the invocation's later sends go to the ring
}

// Whether producer p has no burst whose groups may still be open (then a
// direct push overtakes nothing of p's). Only p's own flush creates bursts,
// so this holds from the send to the flush; retired() is an acquire, so
// everything a closed group delivered is in its recipient's inbox before.
// p is the running actor (Worker::dispatch.current), never null while a handler (or
// a destructor) runs: every writer of kInHandler sets current first.
inline bool Scheduler::no_live_burst(const ActorCell* p) noexcept {
  const BurstProducer* bp = p->producer;
  return bp == nullptr || bursts_retired(bp);
}
// no_live_burst for a producer that has a BurstProducer.
inline bool Scheduler::bursts_retired(const BurstProducer* bp) noexcept {
  return (bp->active == nullptr || bp->active->life.retired()) && (bp->prev == nullptr || bp->prev->life.retired());
}

// A later send of an invocation under the direct hint (Worker::dispatch.direct_left):
// direct iff post()'s direct conditions still hold (this runtime's actor, a
// pay point would pay nothing) and the invocation stays narrow (fewer sends
// than the width gate); otherwise this send and every later one of the
// invocation buffer (once a send buffered, none may go direct: it could
// overtake it), and a send past the width gate clears the hint (the flush's
// burst sets it afresh). Per-recipient FIFO: the direct sends precede any
// buffered one, and a claimed group's mail lands behind the inbox's.
bool Scheduler::direct_later(Worker* w) noexcept {
  const bool narrow = w->dispatch.direct_left > 1;
  if (narrow && w->sched == this && pay_point_is_noop()) {
    --w->dispatch.direct_left;
    return true;
  }
  if (!narrow) w->dispatch.current->producer->direct_hint = false;  // set by a burst of it: not null
  w->dispatch.direct_left = 0;
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

void* alloc_envelope(size_t bytes, RingRegion** region) {
  *region = nullptr;
  Worker* w = t_worker;
  if (w != nullptr && w->dispatch.in_handler && w->ring_on) {
    // Only from the second send of an invocation on (make_envelope's
    // t_ring_armed): the first takes a small-object envelope (a thread-local
    // free-list pop): a one-mail handler - a chain hop, a reply - gains
    // nothing from a ring region (header, seal, reclaim, atomic release).
    // A ring that refused once stays full for the rest of this invocation
    // (regions are reclaimed in ring order, and the oldest one is still
    // live): the later sends skip the attempt, each a seal, a reclaim walk
    // and a failed open (a breadth-first spawn tree keeps old regions live,
    // so its ring is full for nearly every send).
    if (!w->dispatch.ring_refused) {
      if (void* p = w->ring.alloc(bytes, region)) return p;
      w->dispatch.ring_refused = true;
    }
    bump(w->stats.ring_fallbacks);  // the ring is full: an owned heap envelope
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
  COACT_INVARIANT(w != nullptr && w->dispatch.current != nullptr,
                  "a coroutine handler suspended outside a coact handler");
  w->dispatch.current->waiting_env = e;
}

}  // namespace coact::detail
