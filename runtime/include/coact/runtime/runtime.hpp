// coact/runtime/runtime.hpp: Runtime, the actor system: a pool of workers,
// the registry of live actors, the name registry and the root door.
//
// Boot: Runtime(argc, argv) is a program's entry point: it resolves every
// COACT_* option (coact/options.hpp: --coact-* argument > environment > TOML
// file > default), removes the --coact-* arguments from argv so the program's
// own parser sees only its own, and on a bad option prints one line and exits
// with status 2 (--coact-help lists every key and exits 0).
// Runtime(SchedulerTuning) is the library entry point: the default argument
// resolve_tuning() reads the process's options, and a bad option (or a bad
// COACT_CAUSAL_* key when the sweep starts) throws options::option_error.
// Either way the workers start at once, so mail sent from outside before
// run() is handled. run() blocks the calling thread until no actor is live or
// request_stop() is called; the destructor stops and joins the workers, then
// destroys the actors still live and drops (and counts) their mail.
//
// Threads: spawn, send, resolve, register_name, request_stop and stats may be
// called from any thread, including handlers. run() must not be called from a
// handler. A Runtime must outlive every handler (it joins its workers).
// Fail-fast: an exception escaping a handler aborts the process with a
// message naming the actor (type and pid) and a backtrace of the throw site
// (recorded by the runtime's __cxa_throw while a handler runs; frames named
// from the executable's symbol table and DWARF lines, runtime/src/panic.cpp).
// Fork: in a child forked while a Runtime is live, only exec or _exit are
// supported; Runtime(), run() and spawn() there throw fork_error.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <coact/runtime/actor.hpp>
#include <coact/runtime/blocking.hpp>
#include <coact/runtime/name.hpp>
#include <coact/runtime/pid.hpp>
#include <coact/runtime/reply.hpp>
#include <coact/runtime/task.hpp>
#include <coact/runtime/timer.hpp>
#include <coact/runtime/tuning.hpp>

#include <chrono>

namespace coact {

/// Thrown by Runtime's constructor, run() and spawn() in a child process
/// forked while a Runtime was live (runtime.cpp, "Fork rule"): the child has
/// none of the pool's threads. Fork then exec (or _exit), or fork before the
/// first Runtime.
struct fork_error : std::logic_error {
  using std::logic_error::logic_error;
};

/// Counters since boot. Read with relaxed loads: each is exact once the
/// runtime is quiescent, approximate while it runs.
struct RuntimeStats {
  uint64_t spawned = 0;             ///< actors spawned
  uint64_t stopped = 0;             ///< actors stopped
  uint64_t live = 0;                ///< actors live now
  uint64_t delivered = 0;           ///< handler runs: user mail dispatched to a handler, plus each
                                    ///< resumption of a suspended coroutine handler (a handler that
                                    ///< suspends k times counts k + 1); system mail is not counted
  uint64_t dropped_dead = 0;        ///< mail to an actor that had stopped
  uint64_t dropped_unresolved = 0;  ///< send by Pid or Name that resolved to nobody
  uint64_t futex_wakes = 0;         ///< futex wake syscalls issued by parkers
  uint64_t parks = 0;               ///< times a worker parked on its futex
  uint64_t injector_pushes = 0;     ///< pushes onto the shared injector
  uint64_t timers_cancelled = 0;    ///< send timers cancelled before they fired
  uint64_t timers_dropped = 0;      ///< live timers (sends, sleeps, wait timeouts) discarded by shutdown()
  uint64_t deque_pushes = 0;        ///< pushes onto workers' own deques
  uint64_t wakes = 0;               ///< parked workers unparked for work (notify, recruitment)
  uint64_t bursts = 0;              ///< burst flushes that published recipient groups
  uint64_t recruited = 0;           ///< burst drainers pushed to the injector for siblings
  uint64_t seized = 0;              ///< claimed burst mail whose recipient ran in place (seize won)
  uint64_t seize_lost = 0;          ///< claimed burst mail deposited in the inbox (seize lost)
  uint64_t ring_fallbacks = 0;      ///< in-handler sends that took a heap envelope (ring full)
  uint64_t timed_parks = 0;         ///< timekeeper parks with a timer deadline (each one kernel timer wake)
  uint64_t poll_yields = 0;         ///< parks that left the reactor's poll to a busy worker: no CPU was free
  uint64_t early_wake_spin_ns = 0;  ///< ns the timekeeper spun between its early wake and the deadline
  uint64_t wake_late_ns = 0;        ///< ns its timed parks returned past the requested (early) wake, summed
  uint64_t mailbox_rejected = 0;    ///< sends from outside the pool refused by COACT_MAILBOX_BOUND (never silent)

  /// Scheduling synchronizations: wakes + injector pushes + deque pushes.
  uint64_t syncs() const noexcept { return wakes + injector_pushes + deque_pushes; }
};

namespace detail {
class Scheduler;
using MakeEnvelope = Envelope* (*)(void* msg);
}  // namespace detail

class Runtime {
 public:
  /// Boots a pool with tuning.effective_workers() workers; starts a causal
  /// sweep when COACT_CAUSAL is set. Errors: options::option_error for a bad
  /// option (from resolve_tuning() or the sweep's COACT_CAUSAL_* keys);
  /// std::system_error if a sweep's output cannot be opened.
  explicit Runtime(SchedulerTuning tuning = resolve_tuning());
  /// A program's entry point: options::init(argc, argv) (takes the --coact-*
  /// arguments out of argv, lowering argc; --coact-help prints every key and
  /// exits 0), then boots with tuning_from() those options. A bad option —
  /// including one of the sweep's — prints "PROG: error: ..." on stderr and
  /// exits with status 2. Call from main's thread.
  Runtime(int& argc, char** argv);
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  ~Runtime();

  /// Creates an actor of type A, constructed in place with `args`. Any thread.
  /// If A's constructor throws, the exception propagates and nothing is registered.
  template <class A, class... Args>
  ActorRef<A> spawn(Args&&... args);

  /// Blocks until no actor is live or request_stop() was called. Not from a handler.
  void run();
  /// Stops the workers, stops every actor still live and discards the timers
  /// still armed (counted in stats().timers_dropped). The destructor calls
  /// it; calling it first lets a caller read the final stats(). Idempotent;
  /// not from a handler; no spawn or send afterwards.
  void shutdown();
  /// Makes run() return. Any thread; idempotent.
  void request_stop() noexcept;
  /// True once request_stop() was called.
  bool stop_requested() const noexcept;

  /// Typed reference to the live actor `pid` if it is of type A; null otherwise.
  template <class A>
  ActorRef<A> resolve(Pid pid) const {
    return ActorRef<A>::from_cell_adopt(resolve_cell(pid, typeid(A)));
  }

  /// Sends to the actor `pid` (of type A). Returns false (and counts the mail
  /// as dropped_unresolved) when the pid is stale, dead or of another type,
  /// or (counted as mailbox_rejected) when COACT_MAILBOX_BOUND refused it.
  template <class A, class M>
  bool send(Pid pid, M&& msg) {
    detail::check_handles<A, std::remove_cvref_t<M>>();  // in the body: A may be complete only later (actor.hpp)
    detail::ActorCell* c = resolve_cell(pid, typeid(A));
    if (!c) {
      count_unresolved();
      return false;
    }
    detail::Envelope* e = new detail::TypedEnvelope<A, std::remove_cvref_t<M>>(std::forward<M>(msg));
    bool queued = true;
    if (c->mailbox_bound != 0) [[unlikely]] {
      queued = detail::post_bounded(c, e);  // false: refused by COACT_MAILBOX_BOUND, counted
    } else {
      detail::post(c, e);
    }
    c->release();
    return queued;
  }

  /// Binds `name` to `ref` until the actor stops or unregister_name(). Returns
  /// false if the name is bound to another live actor. Any thread.
  template <class A, class M>
  bool register_name(const Name<M>& name, const ActorRef<A>& ref) {
    detail::check_handles<A, M>();  // in the body: A may be complete only later (actor.hpp)
    detail::MakeEnvelope make = [](void* m) -> detail::Envelope* {
      return new detail::TypedEnvelope<A, M>(std::move(*static_cast<M*>(m)));
    };
    return bind_name(name.str(), kind_id<M>(), ref.cell(), make);
  }
  /// Removes a binding; false if it was not bound.
  template <class M>
  bool unregister_name(const Name<M>& name) {
    return unbind_name(name.str());
  }
  /// Sends to whoever `name` is bound to at this moment; false (counted as
  /// dropped_unresolved) if nobody is.
  template <class M>
  bool send(const Name<M>& name, M msg) {
    return send_named(name.str(), kind_id<M>(), &msg);
  }
  // ---- timers (docs/DESIGN.md) -------------------------------------------
  // Each arms one Send timer and returns its id. The message is moved into
  // the timer; the address is resolved when the timer fires: a stopped
  // target is counted in dropped_dead, an unbound name or stale pid in
  // dropped_unresolved. d <= 0 fires on the next timer check (without
  // waiting). Virtual timers shift with injected delay; *_wall ones do not.
  // Any thread. Orphaned timers are dropped when the runtime shuts down.

  template <class A, class M>
  TimerId send_after(const ActorRef<A>& to, std::chrono::nanoseconds d, M&& msg) {
    detail::check_handles<A, std::remove_cvref_t<M>>();  // in the body: A may be complete only later (actor.hpp)
    return arm_ref_send(to, d, std::forward<M>(msg), Anchor::virtual_time);
  }
  template <class A, class M>
  TimerId send_after_wall(const ActorRef<A>& to, std::chrono::nanoseconds d, M&& msg) {
    detail::check_handles<A, std::remove_cvref_t<M>>();  // in the body: A may be complete only later (actor.hpp)
    return arm_ref_send(to, d, std::forward<M>(msg), Anchor::wall);
  }
  /// By pid (of type A), resolved at fire time.
  template <class A, class M>
  TimerId send_after(Pid pid, std::chrono::nanoseconds d, M&& msg) {
    detail::check_handles<A, std::remove_cvref_t<M>>();  // in the body: A may be complete only later (actor.hpp)
    auto act = [this, pid, m = std::remove_cvref_t<M>(std::forward<M>(msg))]() mutable { send<A>(pid, std::move(m)); };
    return arm_send(d, Anchor::virtual_time, new detail::TimerActionImpl<decltype(act)>(std::move(act)));
  }
  /// By name, resolved at fire time.
  template <class M>
  TimerId send_after_named(const Name<M>& name, std::chrono::nanoseconds d, M msg) {
    return arm_named_send(name, d, std::move(msg), Anchor::virtual_time);
  }
  template <class M>
  TimerId send_after_named_wall(const Name<M>& name, std::chrono::nanoseconds d, M msg) {
    return arm_named_send(name, d, std::move(msg), Anchor::wall);
  }
  /// True iff the cancel beat the fire (the mail will never be delivered);
  /// false if it already fired (delivered once) or the id is unknown. Any thread.
  bool cancel(TimerId id);
  /// Live timers now: armed sends, sleeps and wait timeouts (cancelled sends
  /// are not counted; their memory is reclaimed once they outnumber the live ones).
  size_t pending_timers() const;

  /// The pid bound to `name` now, or an invalid Pid.
  Pid whereis(const std::string& name) const;

  RuntimeStats stats() const noexcept;
  /// One live actor's mailbox, as mailboxes() lists it.
  struct ActorMailbox {
    Pid pid;
    std::string type;  ///< the actor's demangled type
    MailboxStats mailbox;
  };
  /// Every live actor's mailbox counters (depth, high-water mark, refusals),
  /// deepest first. Any thread; takes a reference to each live actor while it
  /// reads (allocates; not for a hot path). docs/mailboxes.md.
  std::vector<ActorMailbox> mailboxes() const;
  const SchedulerTuning& tuning() const noexcept;
  uint32_t workers() const noexcept;

  /// The runtime whose handler is running on this thread, or nullptr.
  static Runtime* current() noexcept;

  detail::Scheduler& scheduler() noexcept { return *sched_; }

 private:
  friend class ActorBase;
  detail::ActorCell* resolve_cell(Pid pid, const std::type_info& type) const;
  void count_unresolved() noexcept;
  bool bind_name(const std::string& name, uint32_t kind, detail::ActorCell* cell, detail::MakeEnvelope make);
  bool unbind_name(const std::string& name);
  bool send_named(const std::string& name, uint32_t kind, void* msg);
  void register_spawn(detail::ActorCell* cell);
  void abort_spawn(detail::ActorCell* cell) noexcept;
  void finish_spawn(detail::ActorCell* cell) noexcept;
  TimerId arm_send(std::chrono::nanoseconds d, Anchor anchor, detail::TimerAction* action);
  template <class A, class M>
  TimerId arm_ref_send(const ActorRef<A>& to, std::chrono::nanoseconds d, M&& msg, Anchor anchor) {
    auto act = [to, m = std::remove_cvref_t<M>(std::forward<M>(msg))]() mutable { to.send(std::move(m)); };
    return arm_send(d, anchor, new detail::TimerActionImpl<decltype(act)>(std::move(act)));
  }
  template <class M>
  TimerId arm_named_send(const Name<M>& name, std::chrono::nanoseconds d, M msg, Anchor anchor) {
    auto act = [this, name, m = std::move(msg)]() mutable { send(name, std::move(m)); };
    return arm_send(d, anchor, new detail::TimerActionImpl<decltype(act)>(std::move(act)));
  }

  friend bool detail::post_bounded(detail::ActorCell*, detail::Envelope*);
  std::unique_ptr<detail::Scheduler> sched_;
  // Sends refused by the mailbox bound: senders outside the pool
  // (post_bounded, relaxed fetch_add); read relaxed by stats().
  std::atomic<uint64_t> mailbox_rejected_{0};
};

template <class A, class... Args>
ActorRef<A> Runtime::spawn(Args&&... args) {
  static_assert(std::is_base_of_v<Actor<A>, A>, "actors derive from coact::Actor<Self>");
  auto* impl = new detail::CellImpl<A>;  // default-init: A's storage is constructed below, not zeroed
  detail::ActorCell* c = &impl->cell;
  c->type = &typeid(A);
  c->destroy_actor = [](detail::ActorCell* cell) {
    static_cast<A*>(cell->actor)->~A();
    cell->actor = nullptr;
  };
  c->free_cell = [](detail::ActorCell* cell) { delete reinterpret_cast<detail::CellImpl<A>*>(cell); };
  // The run-token starts Running ("held by the spawner"), so mail that reaches
  // the actor by pid while A's constructor runs waits in the inbox.
  register_spawn(c);  // assigns the pid, holds the life reference
  detail::ActorCell*& slot = detail::constructing_cell();
  detail::ActorCell* outer = std::exchange(slot, c);
  try {
    c->actor = new (impl->storage) A(std::forward<Args>(args)...);
  } catch (...) {
    slot = outer;
    abort_spawn(c);
    throw;
  }
  slot = outer;
  ActorRef<A> ref = ActorRef<A>::from_cell(c);
  finish_spawn(c);  // releases the run-token held during construction
  return ref;
}

}  // namespace coact
