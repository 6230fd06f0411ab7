// coact/runtime/actor.hpp: actors, typed handlers and typed references.
//
// An actor is a class deriving from coact::Actor<Self> with one handler per
// message kind, spelled `void on(M& msg)` (or `on(const M&)`, or `on(M)`).
// Handlers run to completion, one at a time per actor (the run-token,
// detail/run_token.hpp), on some pool worker.
//
//   struct Counter : coact::Actor<Counter> {
//     int n = 0;
//     void on(const Add& a) { n += a.k; }
//     void on(const Report& r) { r.to.send(Total{n}); }
//   };
//   auto c = rt.spawn<Counter>();
//   c.send(Add{3});
//
// Sending (ActorRef<A>::send) is legal from any thread. Inside a handler the
// mail is buffered and flushed at the handler boundary (the flush point the
// burst dispatch groups, with COACT_BURST=on); outside the pool it enters through
// the root door (injector push + at most one wake). Per sender-recipient FIFO
// holds: mail from one handler (or one outside thread) to one recipient is
// handled in send order. Mail to an actor that has stopped is dropped and
// counted (RuntimeStats::dropped_dead), never a crash.
// Mailbox depth and bound (docs/mailboxes.md): ActorRef::mailbox() reads the
// actor's queue depth and high-water mark, counted with COACT_MAILBOX_STATS=on
// (one more atomic increment per send) or a bound. With COACT_MAILBOX_BOUND=N, a send
// from a thread outside the pool to an actor holding N or more queued mails is
// refused: send() returns false and the refusal is counted
// (RuntimeStats::mailbox_rejected, MailboxStats::rejected; the first one is
// reported on stderr). Sends from pool threads (handlers, timers) are never
// refused: they are delivered over the bound.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include <coact/runtime/detail/actor_cell.hpp>
#include <coact/runtime/detail/small_alloc.hpp>
#include <coact/runtime/message_kind.hpp>
#include <coact/runtime/pid.hpp>
#include <coact/runtime/task.hpp>

namespace coact {

class Runtime;
template <class A>
class ActorRef;

/// True iff actor type A has a handler for message kind M. A must be complete
/// where this is evaluated.
template <class A, class M>
concept handles = requires(A& a, M& m) {
  a.on(m);
};

namespace detail {
/// The handler check of every send: a static_assert in the body of a
/// function template, not a constraint on its signature, so that it is
/// evaluated when the body is instantiated. GCC and Clang instantiate such
/// bodies at the end of the translation unit, by which point an actor type
/// that was still incomplete at the call is complete: a handler written
/// inside a class may send to an actor type declared but defined later (any
/// cyclic pipeline, e.g. Ping and Pong each holding a ref to the other).
template <class A, class M>
constexpr void check_handles() {
  static_assert(handles<A, M>,
                "coact: the recipient actor type has no handler for this message type: "
                "add `void on(M&)` (or `on(const M&)`, `on(M)`, or a coact::Task coroutine) to the actor");
}
}  // namespace detail

/// Non-template base of every actor. Thread rules: its members may only be
/// called from the actor's own handlers (or its constructor).
class ActorBase {
 public:
  ActorBase() noexcept : cell_(detail::constructing_cell()) {}
  ActorBase(const ActorBase&) = delete;
  ActorBase& operator=(const ActorBase&) = delete;
  virtual ~ActorBase() = default;

  /// This actor's address.
  Pid pid() const noexcept { return cell_->pid; }
  /// The runtime this actor lives in.
  Runtime& runtime() const noexcept;
  /// Stops this actor when the current handler returns (after its sends are
  /// flushed). Mail still queued is dropped and counted; the actor object is
  /// destroyed on the worker; later sends to it are dropped and counted.
  void stop() noexcept { cell_->stop_requested = true; }

 protected:
  detail::ActorCell* cell() const noexcept { return cell_; }

 private:
  template <class>
  friend class Actor;
  detail::ActorCell* cell_;
};

/// CRTP base: derive `struct X : coact::Actor<X>`.
template <class Self>
class Actor : public ActorBase {
 public:
  /// A typed reference to this actor.
  ActorRef<Self> self() const noexcept;
};

/// One actor's mailbox counters (docs/mailboxes.md). Read with relaxed loads:
/// exact once the actor is quiescent, approximate while mail flows.
struct MailboxStats {
  uint64_t depth = 0;       ///< mail queued now (pushed, not yet taken by a handler run)
  uint64_t high_water = 0;  ///< the deepest queue since spawn (sampled at dequeue: exact to within 64 mails)
  uint64_t pushed = 0;      ///< mail queued since spawn (user and system mail)
  uint64_t rejected = 0;    ///< sends refused by the bound (senders outside the pool)
  uint32_t bound = 0;       ///< COACT_MAILBOX_BOUND in force for this actor; 0 = unbounded
  bool counted = false;     ///< depth counted (COACT_MAILBOX_STATS=on or a bound); else depth, high_water, pushed are 0
};

namespace detail {

/// The counters of `c`'s mailbox. Any thread; `c` must be alive (a held reference).
inline MailboxStats mailbox_stats(const ActorCell* c) noexcept {
  MailboxStats s;
  s.depth = c->inbox.depth();
  s.high_water = c->inbox.high_water();
  s.pushed = c->inbox.pushed();
  s.rejected = c->inbox.rejected();
  s.bound = c->mailbox_bound;
  s.counted = c->inbox.counting();
  return s;
}

/// The send path of an actor with a mailbox bound (mailbox.cpp): from a
/// thread outside every pool, refuses `e` (destroys it, counts it, returns
/// false) when the inbox holds at least the bound; otherwise post(target, e)
/// and true. Takes ownership of `e`. Any thread.
bool post_bounded(ActorCell* target, Envelope* e);

/// Records the envelope of a suspended coroutine handler (on the actor running
/// on this thread); it is freed when the coroutine finishes or the actor stops.
void keep_until_resumed(Envelope* e);

/// Envelope carrying message M for actor type A.
template <class A, class M>
struct TypedEnvelope final : Envelope, SmallAllocated {
  M msg;
  template <class U>
  explicit TypedEnvelope(U&& m) : msg(std::forward<U>(m)) {
    invoke = &run;
    drop = &destroy;
    kind = kind_id<M>();
  }
  static void run(ActorBase* actor, Envelope* e) {
    auto* self = static_cast<TypedEnvelope*>(e);
    if constexpr (std::is_same_v<decltype(static_cast<A*>(actor)->on(self->msg)), Task>) {
      Task t = static_cast<A*>(actor)->on(self->msg);
      if (!t.done()) {
        t.release();               // the cell owns the suspended frame (arm_sleep recorded it)
        keep_until_resumed(self);  // the message outlives the coroutine
        return;
      }
    } else {
      static_cast<A*>(actor)->on(self->msg);
    }
    finish(self);
  }
  static void destroy(Envelope* e) { finish(static_cast<TypedEnvelope*>(e)); }
  /// Destroys the envelope: in place plus a region release for a ring
  /// envelope, else back to the small-object allocator.
  static void finish(TypedEnvelope* self) noexcept {
    if (RingRegion* r = self->region) {
      self->~TypedEnvelope();
      release_region(r);
    } else {
      delete self;
    }
  }
};

/// Memory for an envelope of `bytes`: written in place into the running
/// handler's outbound MailRing when called from inside a handler with burst
/// dispatch on and the ring has room (*region = its region), else from the
/// small-object allocator (*region = nullptr). Any thread.
void* alloc_envelope(size_t bytes, RingRegion** region);
/// Gives back memory from alloc_envelope whose envelope was never
/// constructed (the message's constructor threw).
void abandon_envelope(void* mem, size_t bytes, RingRegion* region) noexcept;

/// True on a worker thread of a scheduler with rings (COACT_BURST=on)
/// between the first buffered send of a handler invocation and its flush:
/// the next envelope goes to the ring. A handler's first send takes a
/// small-object envelope (a one-mail handler - a chain hop, a reply - gains
/// nothing from a ring region); this flag lets make_envelope decide that
/// inline, with no out-of-line call on the send path. While it is false
/// (always, on every thread, with COACT_BURST=off) no send asks the worker
/// for ring memory.
/// Written by the scheduler (set by its buffered send, cleared by its flush)
/// on this thread only.
inline thread_local bool t_ring_armed = false;

/// Builds a TypedEnvelope<A, M> from `msg` in alloc_envelope memory (the
/// path of a sender on a scheduler with rings, out of line).
template <class A, class M, class U>
[[gnu::noinline]] Envelope* make_ring_envelope(U&& msg) {
  using E = TypedEnvelope<A, M>;
  RingRegion* r = nullptr;
  void* mem = alloc_envelope(sizeof(E), &r);
  E* e;
  try {
    e = ::new (mem) E(std::forward<U>(msg));
  } catch (...) {
    abandon_envelope(mem, sizeof(E), r);
    throw;
  }
  e->region = r;
  return e;
}

/// Builds a TypedEnvelope<A, M> from `msg`: from the small-object allocator
/// inline unless this thread's running handler already sent once on a
/// scheduler with rings (t_ring_armed), else make_ring_envelope.
template <class A, class M, class U>
inline Envelope* make_envelope(U&& msg) {
  if (!t_ring_armed) [[likely]] {
    return new TypedEnvelope<A, M>(std::forward<U>(msg));  // SmallAllocated: region stays nullptr
  }
  return make_ring_envelope<A, M>(std::forward<U>(msg));
}

/// Delivers `e` to `target`: buffered for the handler-boundary flush when
/// called from inside a handler, else through the root door. Takes ownership
/// of `e`. Any thread.
void post(ActorCell* target, Envelope* e);
/// Asks `target` to stop after the mail already queued ahead of this request.
void post_stop(ActorCell* target);

}  // namespace detail

/// Typed, reference-counted handle to an actor of type A. Copyable, cheap
/// (one atomic increment per copy). A null ref (default-constructed) must not
/// be sent to. Holding a ref keeps the cell's memory, not the actor, alive:
/// once the actor stops, sends through the ref are dropped and counted.
template <class A>
class ActorRef {
 public:
  ActorRef() noexcept = default;
  ActorRef(const ActorRef& o) noexcept : cell_(o.cell_) {
    if (cell_) cell_->add_ref();
  }
  ActorRef(ActorRef&& o) noexcept : cell_(std::exchange(o.cell_, nullptr)) {}
  ActorRef& operator=(ActorRef o) noexcept {
    std::swap(cell_, o.cell_);
    return *this;
  }
  ~ActorRef() {
    if (cell_) cell_->release();
  }

  explicit operator bool() const noexcept { return cell_ != nullptr; }
  Pid pid() const noexcept { return cell_ ? cell_->pid : Pid{}; }
  friend bool operator==(const ActorRef& a, const ActorRef& b) noexcept { return a.cell_ == b.cell_; }

  /// Sends `msg` (moved or copied into the envelope). Any thread. Requires a
  /// non-null ref; A must have a handler for M (checked at compile time, in
  /// the body: A may still be incomplete where the call is written, as long
  /// as it is defined later in the translation unit — detail::check_handles).
  /// Returns true when the mail was queued (or counted as dropped_dead);
  /// false only when COACT_MAILBOX_BOUND refused it: the sender is outside
  /// the pool and the actor already holds the bound (the refusal is counted).
  template <class M>
  bool send(M&& msg) const {
    using Msg = std::remove_cvref_t<M>;
    detail::check_handles<A, Msg>();
    detail::Envelope* e = detail::make_envelope<A, Msg>(std::forward<M>(msg));
    if (cell_->mailbox_bound == 0) [[likely]] {
      detail::post(cell_, e);
      return true;
    }
    return detail::post_bounded(cell_, e);
  }

  /// The actor's mailbox counters. Any thread; requires a non-null ref (the
  /// counters stay readable after the actor stopped).
  MailboxStats mailbox() const noexcept { return detail::mailbox_stats(cell_); }

  /// Asks the actor to stop once the mail queued ahead of this request is
  /// handled. Any thread; a no-op on an actor that already stopped.
  void stop() const { detail::post_stop(cell_); }

  /// Internal: adopt a cell, taking a new reference.
  static ActorRef from_cell(detail::ActorCell* c) noexcept {
    ActorRef r;
    r.cell_ = c;
    if (c) c->add_ref();
    return r;
  }
  /// Internal: adopt a reference the caller already holds (null allowed).
  static ActorRef from_cell_adopt(detail::ActorCell* c) noexcept {
    ActorRef r;
    r.cell_ = c;
    return r;
  }
  detail::ActorCell* cell() const noexcept { return cell_; }

 private:
  detail::ActorCell* cell_ = nullptr;
};

template <class Self>
ActorRef<Self> Actor<Self>::self() const noexcept {
  return ActorRef<Self>::from_cell(cell_);
}

}  // namespace coact
