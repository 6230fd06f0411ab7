// coact/runtime/detail/actor_cell.hpp: ActorCell, the runtime's per-actor record.
//
// An ActorCell holds the run-token, the inbox and the actor object's storage.
// Lifetime: intrusively reference-counted. The registry holds one "life"
// reference from spawn until the actor stops; every ActorRef and every mail
// buffered for flush holds one more. The actor object is destroyed when the
// actor stops (by the worker that held its run-token); the cell's memory is
// freed when the last reference goes, and mail still in the inbox then is
// dropped and counted as mail to a dead actor. While the actor is live the life
// reference keeps the cell alive, so a queued cell (in a deque or the injector)
// needs no reference of its own: a dead cell is never queued (its run-token
// stays Held, so no push takes it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <typeinfo>

#include <coact/runtime/detail/mailbox.hpp>
#include <coact/runtime/detail/run_token.hpp>
#include <coact/runtime/detail/small_alloc.hpp>
#include <coact/runtime/pid.hpp>

namespace coact {
class Runtime;
}

namespace coact::detail {

class Scheduler;
struct BurstProducer;

struct ActorCell {
  // Any thread that copies/drops a reference; relaxed increment (a reference
  // is only copied from one already held), acq_rel decrement (the last
  // dropper must see every write before freeing).
  std::atomic<uint32_t> refs{1};
  // Set (release) by the worker that stops the actor, before it drains the
  // inbox a last time; read (acquire) by senders and registry lookups to
  // drop mail early. Racy by design: mail pushed after the last drain waits
  // in the inbox and is dropped (and counted) when the cell is freed. The
  // run-token of a stopped actor stays Held, so it is never scheduled again.
  std::atomic<bool> dead{false};
  // Holder-only (the worker in Running): set by ActorBase::stop() or a stop
  // request; read by the same worker after the handler returns.
  bool stop_requested = false;
  // Written once by the registry when it binds the name, read by the
  // stopping worker to know whether names must be unbound.
  std::atomic<bool> has_names{false};
  // COACT_MAILBOX_BOUND for this actor (0: unbounded): written once at
  // spawn, before the cell is published; read by senders (mailbox_bound.cpp)
  // on the line they read for `dead`.
  uint32_t mailbox_bound = 0;
  Pid pid;
  Scheduler* sched = nullptr;
  // Holder-only after construction; null once the actor stopped.
  ActorBase* actor = nullptr;
  const std::type_info* type = nullptr;
  void (*destroy_actor)(ActorCell*) = nullptr;  // runs ~A() in place
  void (*free_cell)(ActorCell*) = nullptr;      // frees the allocation
  // Coroutine wait state, holder-only (the worker in Running): the suspended
  // handler frame, its envelope, the current wait epoch (with pid: the wait
  // identity) and mail kept aside while waiting (allocated on first use).
  void* waiting = nullptr;  // std::coroutine_handle<>::address()
  Envelope* waiting_env = nullptr;
  uint64_t wait_epoch = 0;
  void* reply_slot = nullptr;  // std::optional<R>* of the current ask, if any
  uint64_t wait_timer = 0;     // seq of the current ask's WaitTimeout entry (0: none armed)
  struct Stash* stash = nullptr;
  // Holder-only: this actor's burst state as a producer (detail/burst.hpp),
  // created at its first burst flush, freed when it stops.
  BurstProducer* producer = nullptr;
  Mailbox inbox;

  bool is_dead() const noexcept { return dead.load(std::memory_order_acquire); }
  void add_ref() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
  /// Drops one reference; frees the cell (dropping leftover mail) on the last.
  void release() noexcept;
};

/// Storage for a cell and its actor A in one allocation.
template <class A>
struct CellImpl : SmallAllocated {
  static_assert(alignof(A) <= alignof(std::max_align_t), "over-aligned actor types are not supported");
  ActorCell cell;
  alignas(A) unsigned char storage[sizeof(A)];
};

/// Set while an actor's constructor runs, so ActorBase() can find its cell.
ActorCell*& constructing_cell() noexcept;

}  // namespace coact::detail
