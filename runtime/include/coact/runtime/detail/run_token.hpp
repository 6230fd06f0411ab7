// coact/runtime/detail/run_token.hpp: the run-token, one byte per actor that
// keeps the actor single-threaded (docs/DESIGN.md, "Runtime": run-token).
//
//            try_wake                enter_running
//   Idle ----------------> Ready ----------------> Running
//    ^ |                     ^                       |  |
//    | |                     +--- mark_ready --------+  |   (budget hit)
//    | +--- seize (Idle -> Running, in place) -----------> Running
//    +----- mark_idle, then try_self_requeue (Idle -> Ready) if mail arrived
//   Running --- mark_dead ---> Dead   (terminal: the actor stopped)
//
// Who calls what:
//  - try_wake: a sender after depositing mail; only the winner schedules the actor.
//  - enter_running: the worker that popped the actor from a deque/injector.
//  - seize: a worker draining a burst (runtime/src/detail/burst.hpp, step 6)
//    holding a claimed mail for this actor: won, it runs the actor in place
//    (no scheduling push), first checking the inbox it now owns (older mail
//    goes first); lost, the mail is deposited like any send.
//  - mark_idle / mark_ready / mark_dead: the worker that holds Running.
//  - try_self_requeue: the same worker right after mark_idle.
//
// Ordering argument (the stranded-mail race). A sender does
//   (S1) push mail into the inbox (seq_cst exchange on the inbox head)
//   (S2) try_wake: CAS Idle -> Ready (seq_cst)
// The draining worker does
//   (W1) observe the inbox in its canonical empty state (Mailbox::
//        empty_for_consumer: tail and head both at the stub; a pop() that
//        returned nullptr is not enough, see mailbox.hpp)
//   (W2) mark_idle: store Idle (seq_cst)
//   (W3) recheck the inbox head (seq_cst load); if non-empty, try_self_requeue.
// All of S1, S2, W2, W3 are seq_cst, so they are in one total order S. If S2
// precedes W2 in S, S2 read Running and failed; then S1 < S2 < W2 < W3, so W3
// sees the mail and requeues. If W2 precedes S2, S2 reads Idle (or Ready if W3
// won first) and at most one of S2 / W3's CAS wins: the actor is scheduled
// exactly once. Hence no mail is stranded in the inbox of an Idle actor, and
// no actor is scheduled twice. seize and try_wake are CASes from Idle on the
// same byte, so they agree on one owner.
//
// seize and the stranded-mail race. A seize that wins from Idle takes the
// holder's duties, including step W1-W3 when it releases: the seizer drains
// through the same drain cycle (scheduler.cpp drain_cell), which ends with
// the same canonical-empty check, mark_idle and recheck. A sender whose S2
// failed because a seizer held Running is covered exactly as above (S2 < W2).
// Ordering inside the seizer: it reads the inbox after its seize CAS (both
// seq_cst), so mail pushed before a prior holder's mark_idle - possibly an
// earlier deposit from the very producer whose burst mail it holds - is seen
// and handled before the seized mail (the burst's per-recipient FIFO).
#pragma once

#include <atomic>
#include <cstdint>

namespace coact::detail {

enum class RunState : uint8_t { idle = 0, ready = 1, running = 2, dead = 3 };

class RunToken {
 public:
  /// Sender side: Idle -> Ready. True iff this caller must schedule the actor.
  bool try_wake() noexcept { return cas(RunState::idle, RunState::ready); }
  /// Worker side, after popping: Ready -> Running. False means a protocol bug.
  /// A load and a store, not a CAS: in Ready the popping worker is the only
  /// thread that may change the state (try_wake and seize CAS from Idle and
  /// fail on Ready), and the queue that handed over the actor already
  /// ordered the Ready write before this load. Saves a locked instruction
  /// per scheduled actor.
  bool enter_running() noexcept {
    if (state_.load(std::memory_order_relaxed) != uint8_t(RunState::ready)) return false;
    state_.store(uint8_t(RunState::running), std::memory_order_relaxed);
    return true;
  }
  /// In-place claim of an Idle actor: Idle -> Running.
  bool seize() noexcept { return cas(RunState::idle, RunState::running); }
  /// Holder drained the inbox: Running -> Idle (then call try_self_requeue).
  void mark_idle() noexcept { state_.store(uint8_t(RunState::idle), std::memory_order_seq_cst); }
  /// Post-empty recheck found mail: Idle -> Ready; true iff this caller must schedule.
  bool try_self_requeue() noexcept { return cas(RunState::idle, RunState::ready); }
  /// Budget hit: Running -> Ready; the holder re-publishes the actor.
  void mark_ready() noexcept { state_.store(uint8_t(RunState::ready), std::memory_order_release); }
  /// The actor stopped: Running -> Dead; no transition leaves Dead.
  void mark_dead() noexcept { state_.store(uint8_t(RunState::dead), std::memory_order_seq_cst); }

  /// Before publication only: the spawner holds the token while the actor is constructed.
  void init_running() noexcept { state_.store(uint8_t(RunState::running), std::memory_order_relaxed); }

  RunState load() const noexcept { return RunState(state_.load(std::memory_order_acquire)); }

 private:
  bool cas(RunState from, RunState to) noexcept {
    uint8_t expected = uint8_t(from);
    return state_.compare_exchange_strong(expected, uint8_t(to), std::memory_order_seq_cst,
                                          std::memory_order_relaxed);
  }
  // Written by senders (try_wake), the popping worker (enter_running) and the
  // holder (mark_*); every racing transition is seq_cst (argument above).
  // mark_ready is release: the holder is the only writer while Running; the
  // queue it then publishes the actor on (injector) orders it before the next
  // enter_running, which is a plain load and store for the same reason.
  std::atomic<uint8_t> state_{uint8_t(RunState::idle)};
};

}  // namespace coact::detail
