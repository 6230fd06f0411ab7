// coact/runtime/detail/run_token.hpp: the run-token, the bit that keeps an
// actor single-threaded (docs/DESIGN.md, "Runtime": run-token).
//
// The run-token is bit 0 of the actor's inbox head word (Mailbox::head_,
// mailbox.hpp), not a byte of its own: a sender's push and its wake are one
// exchange, and the holder's release is one compare-and-swap that fails
// whenever mail is queued, so no post-release recheck (and no reference to
// keep the cell alive through one) is needed. Two states:
//
//   Idle  (bit 0)  nobody may run the actor; its inbox is empty (head_ is the
//                  stub): every push sets the bit, so an Idle head never
//                  points at mail.
//   Held  (bit 1)  exactly one party holds the actor: the queue (deque or
//                  injector) it was published on, or the worker draining it.
//                  A Ready (queued) and a Running (being drained) actor
//                  are both Held; which one is a matter of where the actor
//                  is, not of the bit.
//
//             push (sender's exchange read Idle: it schedules the actor)
//   Idle ------------------------------------------------------------> Held
//    ^  \---- seize (burst step 6: CAS stub|Idle -> stub|Held, in place) ->|
//    |                                                                     |
//    +---- try_release (holder drained: CAS stub|Held -> stub|Idle) -------+
//   A budget hit keeps Held and re-publishes the actor; a stopped actor
//   (ActorCell::dead) stays Held forever, so nobody schedules it again.
//
// Who does what:
//  - Mailbox::push: any sender. exchange(head_, e|Held); the bit of the old
//    word says whether this push took the token (old Idle): then, and only
//    then, the sender schedules the actor (Scheduler::deposit, or the flush
//    for a send inside a handler).
//  - Mailbox::seize: a worker draining a burst (runtime/src/detail/burst.hpp,
//    step 6) holding a claimed mail for this actor: won, it runs the actor in
//    place (no scheduling push); lost, the mail is deposited like any send.
//  - Mailbox::try_release: the holder, once the inbox is canonically empty
//    (Mailbox::empty_for_consumer). Failure means some push landed since
//    the last pop: the holder still holds the token and keeps draining.
//  - Mailbox::hold (spawn): the spawner holds the token while the actor is
//    constructed, then try_release (or schedule, if mail arrived meanwhile).
//
// Exactly-once scheduling and no stranded mail. Every write of head_ after
// construction is a read-modify-write (push and the consumer's stub re-link
// exchange, seize and try_release CAS), so they form one modification order
// and each reads the word the previous one wrote.
//  - Only a push that read Idle schedules; a seize that read Idle runs in
//    place. The word goes Idle -> Held only through one of those RMWs, and
//    Held -> Idle only through a successful try_release, so between two
//    releases exactly one party takes the token: the actor is scheduled (or
//    seized) at most once per Idle period and never runs on two workers.
//  - A push whose exchange came before the holder's try_release in the
//    modification order changed head_ away from stub|Held, so the CAS fails
//    and the holder drains that mail. A push after it reads Idle and
//    schedules the actor itself. Either way no mail waits in the inbox of an
//    Idle actor: the stranded-mail race that a separate mark_idle and a
//    re-queue recheck would have to close cannot arise here, and the holder never
//    touches the cell after a successful release (another worker may own it,
//    stop it and free it from then on).
//  - Ordering of the actor's state: try_release is seq_cst (release half)
//    and the next taker's exchange or CAS is seq_cst (acquire half) and reads
//    it or a later RMW of the same release sequence, so the previous holder's
//    handler writes happen before the next holder's.
//  - seize vs push: both RMWs on the same word from Idle; one wins. A seize
//    that won reads the inbox it now owns (older mail, possibly an earlier
//    deposit from the very producer whose burst mail it holds, goes first: the
//    burst's per-recipient FIFO).
#pragma once

#include <cstdint>

namespace coact::detail {

/// Bit 0 of Mailbox::head_: set while somebody holds the actor (above).
inline constexpr uintptr_t kRunTokenHeld = 1;

}  // namespace coact::detail
