// runtime/src/detail/scheduler.hpp: the pool (wakeup and fairness:
// docs/DESIGN.md, "Pool"): N workers, each with a LIFO own deque, a shared injector,
// optional peer steal and SpinPark; the registry; the dispatch loop.
//
// Worker loop, numbered as worker_loop.cpp implements it:
//   1. acquire: own deque (LIFO; its top may be the hand-off slot,
//      Worker::next; every local_chain_backstop-th consecutive own
//      pop probes the injector first), then the injector (chain rule: if more
//      remains and a sibling is parked, wake one), then peer steal (if
//      enabled), then SpinPark (spin an adaptive window of at most
//      spin_window_us, then park; spin_window.hpp).
//   2. the popped actor's run-token is Held already (the push that woke it
//      took it; coact/runtime/detail/run_token.hpp): nothing to claim.
//   3. drain its inbox under BatchBudget: per mail, run the handler, then flush
//      the handler's outbound mail (the one flush point), then honour stop().
//   4. budget hit (batch_max_mails, or batch_max_us read about every
//      clock_read_ns_ of dispatching: adapt_clock_stride): re-publish to the injector (still
//      Held), so two busy actors share a worker fairly; when nothing waits
//      for this worker (hand-off slot, own deque and injector empty, no
//      shutdown: nothing_waits) a new batch starts instead (worker_loop.cpp
//      drain_cell: a publish would only wake a sibling for this actor).
//   5. drained to the canonical empty state: try_release (one CAS); a push
//      since the last pop fails it, and the worker drains on.
// Scheduling a woken actor from a worker keeps it local (own deque) unless the
// cascade has run longer than the keep-local time valve or the deque reached
// local_sticky_max, and a sibling is idle (spinning or parked) to take work:
// then the backlog (all but the freshest) spills to the injector and one
// sibling is notified. Where no CPU is free for that sibling
// (cpu_headroom.hpp) the valve is kCrowdedValveNs instead. With no idle
// sibling the backlog stays; the chain backstop moves the deque's oldest job
// alone to the injector once per valve period instead, so a job under a
// chain is not starved. Off-pool threads
// enter through the root door: injector push + notify (at most one wake).
// Burst dispatch (COACT_BURST=on; the life of one burst is numbered in
// burst.hpp): the flush of step 3 routes a handler's whole output as one
// unit, and the deques and the injector carry Jobs: a Ready actor, or a
// drainer of a burst (one reference each). Popping a drainer runs the cursor
// race (run_burst) instead of steps 2-5; a claimed mail whose recipient is
// seized runs steps 3-5 for that recipient on this worker (drain_cell).
// Shutdown: 1. set stopping_ (busy workers leave at their next loop); 2. wake
// every parker; 3. join workers; 5. drainers still queued release their
// bursts, dropping and counting unclaimed mail; 4. stop every still-live
// actor on the joining thread (destroy, drop and count its mail).
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <coact/calibrate/handoff.hpp>
#include <coact/runtime/detail/actor_cell.hpp>
#include <coact/runtime/runtime.hpp>
#include <coact/runtime/tuning.hpp>

#include "burst.hpp"
#include "cpu_headroom.hpp"
#include "injector.hpp"
#include "mail_ring.hpp"
#include "reactor.hpp"
#include "registry.hpp"
#include "spin_park.hpp"
#include "spin_window.hpp"
#include "timer_heap.hpp"
#include "work_deque.hpp"
#include "../trace/recorder.hpp"

namespace coact::detail {

class Scheduler;

/// What the deques and the injector carry: a runnable actor (ActorCell*,
/// its run-token Held) or a drainer of a burst (Burst*, tagged in bit 0, holding one
/// reference to the burst).
struct JobTag;
using Job = JobTag*;
inline Job job_of(ActorCell* c) noexcept { return reinterpret_cast<Job>(c); }
inline Job job_of(Burst* b) noexcept { return reinterpret_cast<Job>(reinterpret_cast<uintptr_t>(b) | 1); }
inline bool is_burst(Job j) noexcept { return (reinterpret_cast<uintptr_t>(j) & 1) != 0; }
inline ActorCell* cell_of(Job j) noexcept { return reinterpret_cast<ActorCell*>(j); }
inline Burst* burst_of(Job j) noexcept {
  return reinterpret_cast<Burst*>(reinterpret_cast<uintptr_t>(j) & ~uintptr_t(1));
}

/// Worker::dispatch.in_handler: whether a handler runs on the worker, and whether the
/// per-mail trace is on for it (post() takes the untraced send path on one
/// compare; a traced handler's sends take the second).
inline constexpr uint8_t kNotInHandler = 0;
inline constexpr uint8_t kInHandler = 1;
inline constexpr uint8_t kInTracedHandler = 2;
/// Burst on, untraced: the handler's first send went straight into its
/// recipient's inbox (Scheduler::post); its later sends are buffered for the
/// flush (a burst of one mail has nothing to batch; two or more do).
inline constexpr uint8_t kInHandlerSent = 3;

/// Worker::outbound: the running handler's sends, a vector of (recipient,
/// envelope) whose growth is a call out of line. Owner thread only. With
/// std::vector, the send path's inline reallocation made every send save and
/// restore six registers (the growth path needs them; GCC sets up the frame
/// at entry). Only the operations
/// the scheduler and the trace use.
class OutboundList {
 public:
  using Entry = std::pair<ActorCell*, Envelope*>;
  OutboundList() : data_(new Entry[kInitial]), cap_(kInitial) {}
  OutboundList(const OutboundList&) = delete;
  OutboundList& operator=(const OutboundList&) = delete;
  bool empty() const noexcept { return size_ == 0; }
  size_t size() const noexcept { return size_; }
  Entry& operator[](size_t i) noexcept { return data_[i]; }
  Entry& back() noexcept { return data_[size_ - 1]; }
  Entry* begin() noexcept { return data_.get(); }
  Entry* end() noexcept { return data_.get() + size_; }
  void clear() noexcept { size_ = 0; }
  [[gnu::always_inline]] void emplace_back(ActorCell* t, Envelope* e) {
    if (size_ == cap_) [[unlikely]] {
      append_grown(t, e);  // a tail call: nothing of this frame is live after it
      return;
    }
    data_[size_++] = Entry{t, e};
  }

 private:
  static constexpr size_t kInitial = 16;
  [[gnu::noinline]] void append_grown(ActorCell* t, Envelope* e) {
    std::unique_ptr<Entry[]> d(new Entry[cap_ * 2]);
    for (size_t i = 0; i < size_; ++i) d[i] = data_[i];
    data_ = std::move(d);
    cap_ *= 2;
    data_[size_++] = Entry{t, e};
  }
  std::unique_ptr<Entry[]> data_;
  size_t size_ = 0;
  size_t cap_;
};

// One pool thread's state, grouped by concern. The flat fields are the
// worker's identity and its queues (every scheduler path names them; a group
// would only add a prefix); each group states who writes it and who reads it.
struct Worker {
  Worker(Scheduler* s, uint32_t i, size_t ring_bytes, bool ring_on)
      : sched(s),
        index(i),
        own(own_deque(deque)),
        stealer(own.stealer()),
        ring(ring_on ? ring_bytes : 0),
        ring_on(ring_on && ring_bytes != 0) {}
  Scheduler* sched;
  uint32_t index;
  WorkDeque<Job> deque;       // storage only: reached through own and stealer
  DequeOwner<Job> own;        // this worker's thread only
  DequeStealer<Job> stealer;  // the other workers (take_shared)
  // The hand-off slot: the own deque's top, kept out of the deque. Set only
  // with peer steal off (then no other thread touches the own deque, so a
  // job here is exactly a job on top of it: nobody could have taken it) and
  // only while the deque is empty (a push there would not have been a
  // backlog). Owner-only. Every owner operation on the deque sees it as the
  // top: pop_own takes it first, schedule_job and the few readers of
  // own.size() move it into the deque first (Scheduler::spill_next). A chain
  // hop (ping-pong, ring) is then a store and a load instead of a deque push
  // and pop (Scheduler::schedule_hop).
  Job next = nullptr;
  // The worker's outbound MailRing (mail_ring.hpp): producer = this thread.
  MailRing ring;
  bool ring_on;
  // Buffered sends of the running handler, each holding a cell reference;
  // with direct sends (Scheduler::post) an entry {t, nullptr} instead names
  // a recipient whose mail is already in its inbox and whose run-token the
  // send took: the flush schedules it (no reference: we hold its token).
  // Owned by this worker's thread.
  OutboundList outbound;

  // The running handler's dispatch state and the worker's dispatch clock.
  // Written and read by this worker's thread only (the panic, timer and
  // blocking hooks that read `current` run on it, inside the handler).
  struct DispatchState {
    ActorCell* current = nullptr;  // actor whose handler runs now (for panics and sends)
    uint8_t in_handler = 0;        // kNotInHandler, kInHandler, kInTracedHandler or kInHandlerSent (above)
    bool batched = false;          // the running invocation buffered a send (buffer_send); cleared by the flush
    uint32_t claimed_left = 0;     // burst on: groups of run_burst's claimed run not yet delivered (nothing_waits)
    uint32_t direct_left =
        0;  // burst on, the direct hint: 1 + later sends of this invocation that may go direct (0: none; Scheduler::start_direct)
    uint32_t own_streak = 0;        // consecutive own-deque pops (chain backstop)
    uint32_t stride_count = 0;      // dispatches since the last clock read
    uint32_t clock_stride = 1;      // dispatches between clock reads now (adapt_clock_stride)
    uint64_t clock_ns = 0;          // last clock read (BatchBudget, valve)
    uint64_t cascade_start_ns = 0;  // when the current local cascade began
    bool ring_refused = false;      // the ring refused an alloc in this invocation (full)
    int64_t burst_mark = 0;         // own deque length before the last published burst's drainer was pushed
  };
  DispatchState dispatch;

  // Per-mail trace (trace/recorder.hpp; COACT_TRACE). `gate` is the one
  // branch of every trace hook: this worker's ring while recording, else
  // null. A relaxed atomic (a plain load on x86): the session's window
  // opens and closes it (at once in the Scheduler's constructor, or on the
  // window's thread), this worker loads it. `session`, `ring` and `rng` are
  // set by the Scheduler's constructor before the worker threads start; the
  // rest is the running invocation's trace state, this worker's thread only.
  struct TraceState {
    std::atomic<trace::Ring*> gate{nullptr};
    trace::Session* session = nullptr;
    trace::Ring* ring = nullptr;  // this worker's ring (set while a session exists; the hooks record here)
    uint64_t first_send = 0;      // t_construct_start of the running invocation (0: no send yet)
    uint64_t pickup = 0;          // start of the job being run (t_enqueue)
    uint64_t rng = 0;             // sampling state (xorshift)
    uint32_t kind = 0;            // message kind of the running handler
  };
  TraceState trace;
  bool tracing() const noexcept { return trace.gate.load(std::memory_order_relaxed) != nullptr; }

  // Burst on: the sampling of claimed-mail handler costs for the CostTable
  // (dispatch_claimed). This worker's thread only.
  struct CostSampling {
    uint32_t stride = 0;         // claimed-mail dispatches since the last cost sample
    uint32_t next = 16;          // the stride to the next cost sample: 8..23, drawn per sample (dispatch_claimed)
    uint32_t rng = 0x9E3779B9u;  // xorshift32 state for next
  };
  CostSampling cost;

  // Idle-path state: the idle spin and idle()'s checks. This worker's
  // thread only (finalize_stop sets check_done there, after the stop).
  struct IdleState {
    SpinWindow spin_window;          // adaptive idle spin (spin_window.hpp)
    uint64_t delivered_at_idle = 0;  // stats.delivered when idle() last ran (the trim check)
    bool check_done = false;         // stopped an actor since the last end-of-run check (idle())
    IoPoll* polled = nullptr;        // the reactor this worker parked polling (idle(), keep_time); posts after
    uint64_t busy_poll_ns = 0;       // dispatch.clock_ns at this worker's last busy_poll
    bool yield_timed_out = false;    // park_idle's capped park (the poll role left to a busy worker) ran out
    uint64_t yield_cap_ns = 0;       // the next capped park's length (park_idle); 0: kYieldedParkNs
  };
  IdleState idle;

  // Reused buffers: each is cleared and filled inside the call named beside
  // it and means nothing outside (kept for its capacity). This worker's
  // thread only.
  struct Scratch {
    std::vector<uint64_t> group_work;  // flush_burst: cost of each staged group
    std::vector<Job> spill;            // schedule_job: the backlog spilled to the injector
    std::vector<TimerEntry> due;       // fire_due
  };
  Scratch scratch;

  // Counters: written by this worker only (bump, or a load and a store:
  // no RMW), read by any thread through Scheduler::stats() (relaxed; spawned
  // and stopped acquire, as all_stopped does).
  struct Stats {
    std::atomic<uint64_t> delivered{0};
    std::atomic<uint64_t> parks{0};
    std::atomic<uint64_t> deque_pushes{0};
    std::atomic<uint64_t> spawned{0};         // spawns from this worker's handlers
    std::atomic<uint64_t> stopped{0};         // actors stopped on this worker (release: all_stopped)
    std::atomic<uint64_t> bursts{0};          // flushes that published groups
    std::atomic<uint64_t> recruited{0};       // drainers pushed for siblings
    std::atomic<uint64_t> seized{0};          // recipients run in place (seize won)
    std::atomic<uint64_t> seize_lost{0};      // claimed mail deposited (seize lost)
    std::atomic<uint64_t> ring_fallbacks{0};  // in-handler mail that took a heap envelope
    std::atomic<uint64_t> timed_parks{0};     // timekeeper parks with a deadline
    std::atomic<uint64_t> poll_yields{0};     // parks that left the poll role to a busy worker (park_idle)
    std::atomic<uint64_t> early_spin_ns{0};   // timekeeper spin after an early wake (ns)
    std::atomic<uint64_t> wake_late_ns{0};    // timed parks' lateness past the requested wake (ns)
  };
  Stats stats;

  std::thread thread;  // started by Scheduler::start, joined by shutdown
};

class Scheduler {
 public:
  Scheduler(Runtime* rt, SchedulerTuning tuning);
  ~Scheduler();

  void start();
  void shutdown();

  // Mail.
  void post(ActorCell* target, Envelope* e);
  /// post()'s common case, inline in detail::post (a handler's send): the
  /// direct send with burst off (the same conditions and push as post's);
  /// false, having done nothing, when post() must decide.
  [[gnu::always_inline]] inline bool post_direct(Worker* w, ActorCell* target, Envelope* e);
  /// post() with direct sends on (burst off, untraced): post_direct inline.
  [[gnu::noinline]] void post_off(ActorCell* target, Envelope* e);
  /// post()'s burst-on common cases, inline in post_on: a handler's first
  /// send straight into the inbox when the producer has no live burst (the
  /// same conditions and push as post's), a later send of the invocation
  /// buffered; false, having done nothing, when post() must decide.
  [[gnu::always_inline]] inline bool post_burst(Worker* w, ActorCell* target, Envelope* e);
  /// post() with burst on (untraced): post_burst inline.
  [[gnu::noinline]] void post_on(ActorCell* target, Envelope* e);
  /// Whether a handler's sends may go direct with burst off (post()).
  bool direct_sends() const noexcept { return direct_sends_; }
  void deposit(ActorCell* target, Envelope* e, Worker* w);
  void buffer_send(Worker* w, ActorCell* target, Envelope* e);
  void push_direct(Worker* w, ActorCell* target, Envelope* e);
  static bool no_live_burst(const ActorCell* p) noexcept;
  static bool bursts_retired(const BurstProducer* bp) noexcept;
  [[gnu::always_inline]] inline void start_direct(Worker* w, BurstProducer* bp) noexcept;
  bool direct_later(Worker* w) noexcept;

  // Lifecycle.
  void register_spawn(ActorCell* c);
  void finish_spawn(ActorCell* c);
  void abort_spawn(ActorCell* c) noexcept;
  /// Blocks until no actor is live or a stop was requested. Returns whether
  /// the caller actually blocked (false: the condition held on entry).
  bool wait_until_done();
  void request_stop() noexcept;
  bool stop_requested() const noexcept { return stop_requested_.load(std::memory_order_acquire); }

  Registry& registry() noexcept { return registry_; }
  NameRegistry& names() noexcept { return names_; }
  Runtime* runtime() noexcept { return rt_; }
  const SchedulerTuning& tuning() const noexcept { return tuning_; }
  uint32_t worker_count() const noexcept { return uint32_t(workers_.size()); }
  RuntimeStats stats() const noexcept;
  std::chrono::nanoseconds handoff_cost() const noexcept { return handoff_->cost(); }
  void count_dropped_dead(uint64_t n) noexcept { dropped_dead_.fetch_add(n, std::memory_order_relaxed); }
  void count_unresolved() noexcept { dropped_unresolved_.fetch_add(1, std::memory_order_relaxed); }

  // Timers.
  TimerId arm_send(uint64_t delay_ns, Anchor anchor, TimerAction* action);
  /// Arms the Sleep / WaitTimeout entry of c's current wait (c->wait_epoch).
  /// Returns the entry's seq (for cancel_wait_timer).
  uint64_t arm_wait(ActorCell* c, uint64_t delay_ns, Anchor anchor, TimerReason reason);
  bool cancel(uint64_t seq) {
    const bool won = timers_.cancel(seq);
    if (won) timers_cancelled_.fetch_add(1, std::memory_order_relaxed);
    return won;
  }
  size_t pending_timers() const { return timers_.size(); }

  /// The worker running on this thread (any scheduler), or nullptr.
  static Worker* current_worker() noexcept;

  /// Per-kind handler cost estimates (burst recruitment). Tests read it.
  const CostTable& costs() const noexcept { return costs_; }

  /// This Scheduler's reactor (reactor.cpp reactor_of), made by `make` at
  /// the first call: from then on the workers drive its poll (idle,
  /// busy_poll). Held until this Scheduler is destroyed, since a parker may
  /// name it (Parker::park_polling) until then. Any thread.
  std::shared_ptr<IoPoll> io_poll_or_make(std::shared_ptr<IoPoll> (*make)()) {
    std::shared_ptr<IoPoll> io;
    bool made = false;
    {
      std::lock_guard lk(io_mu_);
      if (io_keep_ == nullptr) {
        io_keep_ = make();
        io_.store(io_keep_.get(), std::memory_order_seq_cst);
        made = true;
      }
      io = io_keep_;
    }
    // A worker that parked before the reactor existed sleeps on its futex,
    // where no readiness reaches it: wake one to park again polling. (Every
    // later release of the role is by a worker that keeps running, polling
    // while busy, and takes the role when it next parks if no one holds it,
    // so this is the only moment when no worker would poll.)
    if (made) spin_park_.wake_workers(1);
    return io;
  }
  /// The reactor if one was made, else null. Any thread.
  std::shared_ptr<IoPoll> io_poll() {
    std::lock_guard lk(io_mu_);
    return io_keep_;
  }

 private:
  void worker_main(Worker& w);
  /// Step 1, inline in worker_main: the due check and the own pop; the
  /// backstop and shared work out of line (a chain hop pays no call).
  [[gnu::always_inline]] inline Job acquire(Worker& w);
  [[gnu::noinline]] Job acquire_backstop(Worker& w, Job c);
  [[gnu::noinline]] Job acquire_shared(Worker& w);
  Job take_shared(Worker& w, bool& more);
  Job idle(Worker& w);
  /// Timekeeper: parks until `next` minus the wake-latency margin, then spins
  /// until a timer is due, shared work appears or shutdown. Returns whether
  /// the park timed out (false: woken by an unpark). `now_ns`: when it
  /// returns true, its last clock read (the caller's clock for the fire).
  bool keep_time(Worker& w, uint64_t next, uint64_t ceiling_ns, uint64_t& slept_ns, uint64_t& now_ns);
  /// idle()'s and keep_time's park: in the reactor's poll if this Scheduler
  /// has one and no other worker holds the poll role (Worker::idle.polled
  /// says so after), else on the futex. Returns as Parker::park_until
  /// (untimed: as park). Leaves the poll role to a busy sibling that has
  /// polled within kYieldedParkNs while the machine has no CPU for this
  /// worker (cpu_headroom.hpp): a readiness wake would only make it take
  /// turns with a running thread, and the busy worker polls every
  /// kBusyPollNs anyway. That park is capped, then the worker looks again
  /// (a busy worker in one long handler stops polling, and the next park
  /// takes the role); when it runs out, park_idle returns true, as for a
  /// spurious wake, and sets Worker::idle.yield_timed_out. The cap starts at
  /// kYieldedParkNs and doubles, up to kYieldedParkMaxNs, with each capped
  /// park that ran out and left the role again; any other park resets it.
  /// Each run-out is a wake of a thread with no CPU free for it, which takes
  /// a turn from a running thread (under a steady load, from the busy
  /// sibling's client): backing off keeps those rare while the sibling
  /// keeps polling, and bounds how late a long handler's readiness is seen.
  bool park_idle(Worker& w, bool timed, uint64_t deadline_ns);
  static constexpr uint64_t kYieldedParkNs = 1'000'000;
  static constexpr uint64_t kYieldedParkMaxNs = 16'000'000;
  /// Busy path: takes a free poll role, polls without waiting and posts, so
  /// readiness is seen while no worker parks. The actors its reports make
  /// runnable run after the jobs already on w's own deque
  /// (run_reports_after_backlog).
  void busy_poll(Worker& w, IoPoll& io);
  /// busy_poll's order: the k actors its reports pushed (pushes since
  /// pushes_before) go under the n jobs that were on the own deque, so the
  /// backlog runs first and the reports in the order epoll gave them. With
  /// a backlog over kReorderMax jobs they go to the injector instead (FIFO;
  /// the chain backstop or an idle worker takes them). Owner thread.
  void run_reports_after_backlog(Worker& w, int64_t n, uint64_t pushes_before);
  static constexpr int64_t kReorderMax = 256;
  /// The dispatch clock's read spacing (drain_cell): the clock is read every
  /// clock_stride dispatches, and after each read the stride is set so that
  /// reads come about clock_read_ns_ apart: handlers of tens of nanoseconds
  /// would otherwise spend a large share of their time in clock_gettime (a
  /// vDSO call, slower under a hypervisor's clock), while long handlers need
  /// a read after every one for the time budget to hold.
  /// Grows at most 2x per read (one fast stretch is not a trend), up to
  /// tuning's clock_check_stride; shrinks at once in proportion to the
  /// overshoot, to 1 after a handler longer than the aim. `elapsed` is the
  /// time since the previous clock read of any kind (an idle wake, a batch
  /// start), an underestimate of the stride's span at worst. Owner thread.
  void adapt_clock_stride(Worker& w, uint64_t elapsed) noexcept {
    uint32_t s = w.dispatch.clock_stride;
    if (elapsed < clock_read_ns_ / 2) {
      s = std::min(2 * s, tuning_.clock_check_stride);
    } else if (elapsed > clock_read_ns_) {
      s = uint32_t(std::max<uint64_t>(1, uint64_t(s) * clock_read_ns_ / elapsed));
    }
    w.dispatch.clock_stride = s;
  }
  static constexpr uint64_t kClockReadNs = 2000;
  static constexpr uint64_t kBusyPollNs = 50'000;
  /// busy_poll if this Scheduler has a reactor and kBusyPollNs have passed on
  /// w's clock: at every acquire and at every batch-budget end (a batch
  /// renewed because nothing waits never returns to acquire).
  void busy_poll_if_due(Worker& w) {
    if (IoPoll* io = io_.load(std::memory_order_acquire)) [[unlikely]] {
      if (w.dispatch.clock_ns - w.idle.busy_poll_ns >= kBusyPollNs) busy_poll(w, *io);
    }
  }
  [[gnu::always_inline]] inline void run_job(Worker& w, Job j);
  void run_cell(Worker& w, ActorCell* c);
  /// Drains c's inbox; the caller holds c's run-token. `first`
  /// (may be null) is dispatched before the inbox.
  void drain_cell(Worker& w, ActorCell* c, Envelope* first);
  void dispatch(Worker& w, ActorCell* c, Envelope* e);
  /// dispatch's body; kTraced records the trace's handler event, kSampled
  /// times the handler for the CostTable. Inlined (dispatch_traced and
  /// dispatch_sampled hold those copies, out of line).
  template <bool kTraced, bool kSampled = false>
  [[gnu::always_inline]] inline void dispatch_as(Worker& w, ActorCell* c, Envelope* e);
  [[gnu::noinline]] void dispatch_traced(Worker& w, ActorCell* c, Envelope* e);
  /// dispatch() of a mail claimed from a burst group, every 16th one timed
  /// (burst recruitment's per-kind cost estimates).
  void dispatch_claimed(Worker& w, ActorCell* c, Envelope* e);
  [[gnu::noinline]] void dispatch_sampled(Worker& w, ActorCell* c, Envelope* e);
  /// The flush point: `producer` is the actor whose handler (or destructor) ran.
  void flush(Worker& w, ActorCell* producer);
  /// flush() after the pay point and the seal: routes the outbound mail.
  /// Inlined into flush(): it is on every handler's exit path.
  [[gnu::always_inline]] inline void flush_route(Worker& w, ActorCell* producer);
  [[gnu::noinline]] void flush_traced(Worker& w, ActorCell* producer);
  /// flush() with the trace off (dispatch's untraced copy calls it directly).
  void flush_untraced(Worker& w, ActorCell* producer);
  /// flush()'s first step: the pay point and the ring's seal.
  [[gnu::always_inline]] inline void flush_seal(Worker& w);
  void flush_burst(Worker& w, ActorCell* producer);
  /// flush_burst without the direct first send's recipient, returned in `direct` (or null).
  void flush_burst_groups(Worker& w, ActorCell* producer, ActorCell*& direct);
  void run_burst(Worker& w, Burst* b);
  bool requeue_under(Worker& w, Burst* b);
  void deliver_claimed(Worker& w, ActorCell* t, Envelope* e);
  void discard_burst(Burst* b);
  void schedule_local(Worker& w, ActorCell* c) { schedule_job(w, job_of(c)); }
  /// The worker's own deque, popped by its owner: without peer steal no
  /// other thread touches it (take_shared steals only when peer_steal is on),
  /// so the pop needs no fence and no CAS.
  /// The hand-off slot (Worker::next), then the deque.
  Job pop_own(Worker& w) {
    if (Job j = w.next) {
      w.next = nullptr;
      return j;
    }
    return tuning_.peer_steal ? w.own.pop() : w.own.pop_unshared();
  }
  /// Moves the hand-off slot's job (if any) onto the own deque, where it
  /// would have been: before any other push, and before own.size() is read.
  /// The deque is empty while the slot is set, so this is never a backlog.
  void spill_next(Worker& w) {
    if (w.next != nullptr) [[unlikely]] {
      const Job j = w.next;
      w.next = nullptr;
      w.stats.deque_pushes.store(w.stats.deque_pushes.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      w.own.push(j);
    }
  }
  /// schedule_local for a flush's direct-send recipient: into the hand-off
  /// slot when that is the same as a push (peer steal off, slot and deque
  /// empty: a push would make a deque of one job, no backlog, nothing to
  /// notify), else a push.
  [[gnu::always_inline]] void schedule_hop(Worker& w, ActorCell* c) {
    if (!tuning_.peer_steal && w.next == nullptr && w.own.size() == 0) [[likely]] {
      w.next = job_of(c);
      return;
    }
    schedule_local(w, c);
  }
  /// Pushes j on w's own deque; a backlog (more than one job) goes to
  /// schedule_backlog. Inline: a chain hop (deque length 1) is a push and a
  /// length read.
  void schedule_job(Worker& w, Job j) {
    spill_next(w);
    w.stats.deque_pushes.store(w.stats.deque_pushes.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    w.own.push(j);
    const int64_t n = w.own.size();
    if (n > 1) schedule_backlog(w, n);  // a chain: the one hop stays warm, nothing to spill
  }
  /// The valve and sticky-max check for a deque of n > 1 jobs: spill (when a
  /// sibling is idle; for the valve, also a CPU free for it or a cascade of
  /// kCrowdedValveNs), notify.
  void schedule_backlog(Worker& w, int64_t n);
  /// This Scheduler's workers not on the idle list: running, or spinning
  /// (on a CPU either way). Any thread; a relaxed snapshot.
  int64_t workers_on_cpu() const noexcept { return int64_t(workers_.size()) - spin_park_.idle(); }
  /// Whether a sibling woken by busy worker w would find a CPU that no
  /// running thread needs (cpu_headroom.hpp). w's thread.
  bool sibling_has_cpu(Worker& w) noexcept {
    const int64_t on_cpu = workers_on_cpu();
    return headroom_.fits(w.dispatch.clock_ns, on_cpu, on_cpu + 1);
  }
  /// Whether another worker of this pool is spinning or on the idle list
  /// (parked, or polling for I/O), so that work put on the injector now is
  /// taken at once. Two relaxed loads; a stale answer costs a spill that waits
  /// for the sibling's next look at the injector, or one that waits for the
  /// next check (a later backlog, the chain backstop). Owner thread.
  bool sibling_idle() const noexcept {
    return workers_.size() > 1 && (spin_park_.idle() > 0 || spin_park_.spinning() > 0);
  }
  void publish_shared(ActorCell* c) { publish_job(job_of(c)); }
  /// drain_cell's budget end: whether no job waits for worker w (its hand-
  /// off slot and own deque empty, the injector empty, no group of a
  /// drainer's claimed run left behind the actor it runs in place) and no
  /// shutdown is under way. Owner thread.
  bool nothing_waits(Worker& w) const noexcept {
    return w.next == nullptr && w.own.size() == 0 && w.dispatch.claimed_left == 0 && injector_.empty() &&
           !stopping_.load(std::memory_order_relaxed);
  }
  void publish_job(Job j);
  void finalize_stop(Worker* w, ActorCell* c);
  /// Whether every actor spawned has stopped (reads every worker's counters).
  bool all_stopped() const noexcept;
  /// After a stop: notifies run()'s waiter if that was the last actor.
  void notify_if_done() noexcept;
  void arm(TimerEntry e, uint64_t delay_ns, uint64_t* seq_out);
  bool fire_due(Worker* w, uint64_t now_ns);
  /// fire_due: the actors its k > 1 fires pushed on the own deque run in
  /// deadline order (timers.cpp). Owner thread.
  void run_fired_in_deadline_order(Worker& w, int64_t own_before, uint64_t pushes_before);
  void fire(Worker* w, TimerEntry& e);
  /// Whether a timer is due (now_ns: the clock read, 0 if none was needed).
  /// Inline: called twice per message; out of line it cost 20 instructions
  /// per ping-pong message for what is one relaxed load while no timer is armed.
  bool timers_due(uint64_t& now_ns) const noexcept {
    const uint64_t next = timers_.next_deadline();
    if (next == TimerHeap::kNone) [[likely]]
      return false;  // nothing armed: no clock read
    now_ns = sync::now_ns();
    return now_ns >= next;
  }
  void resume_waiting(Worker& w, ActorCell* c);
  void drop_wait_state(ActorCell* c);
  /// Disarms the current ask's WaitTimeout entry, if any (its reply arrived
  /// first, or the actor stops); the holder's thread.
  void cancel_wait_timer(ActorCell* c);
  /// Keep-local time valve (ns, 0 = off): pinned, or 6x the live hand-off
  /// cost estimate clamped to 6..60 µs (the keep-local valve's default).
  uint64_t valve_ns() const noexcept;
  static constexpr uint64_t kMinValveNs = 6000;  ///< valve_ns()'s floor when not pinned
  /// The valve where no CPU is free for a woken sibling (schedule_backlog):
  /// about the kernel's wake-up preemption granularity, after which a
  /// woken thread gets a turn on a busy CPU.
  static constexpr uint64_t kCrowdedValveNs = 1'000'000;

  Runtime* rt_;
  SchedulerTuning tuning_;
  std::optional<uint64_t> valve_pin_ns_;                 // COACT_LOCAL_TIME_BUDGET_US (0 = valve off)
  std::unique_ptr<calibrate::HandoffEstimate> handoff_;  // live-refined by real wakes
  std::unique_ptr<WakeLatency> wake_latency_;            // timekeeper's early wake (spin_window.hpp)
  CpuHeadroom headroom_;  // spare CPUs, before a spin, a sibling wake or a poll-role park (cpu_headroom.hpp)
  uint64_t batch_max_ns_ = 0;
  uint64_t clock_read_ns_ = 0;  // adapt_clock_stride's aim: min(kClockReadNs, batch_max_ns_ / 4), at least 1
  std::vector<std::unique_ptr<Worker>> workers_;
  Injector<Job> injector_;
  CostTable costs_;
  SpinPark spin_park_;
  Registry registry_;
  TimerHeap timers_;
  // timekeeper_: index of the one parked worker holding the earliest timer
  // deadline (-1: none). CASed by a worker about to park; read (seq_cst) by
  // arm() to unpark it when an earlier deadline arrives. The handshake: the
  // timekeeper re-reads next_deadline after winning the CAS; the arming side
  // updates next_deadline before reading timekeeper_ (both seq_cst), so one
  // of them sees the other.
  std::atomic<int32_t> timekeeper_{-1};
  // io_: the reactor the workers poll (null until the first IoWatch;
  // io_poll_or_make); io_keep_ owns it until the destructor.
  std::atomic<IoPoll*> io_{nullptr};
  // When a busy worker last polled, or found the poll role taken (its
  // dispatch clock, sync::now_ns). Written relaxed by busy_poll, read by
  // park_idle: a worker leaves the role to busy siblings only while they poll.
  std::atomic<uint64_t> last_busy_poll_ns_{0};
  // The worker that wrote last_busy_poll_ns_ (busy_poll: where CPUs are
  // short, a worker leaves the poll to a lower-indexed one that polls).
  std::atomic<uint32_t> last_busy_poller_{0};
  std::mutex io_mu_;
  std::shared_ptr<IoPoll> io_keep_;  // guarded by io_mu_
  NameRegistry names_;

  // stopping_: set once by shutdown(), read by workers in their idle loop.
  std::atomic<bool> stopping_{false};
  // stop_requested_: set by request_stop(); read by run().
  std::atomic<bool> stop_requested_{false};
  // The live count is spawned - stopped - aborted over these and the
  // workers' counters (all_stopped); a thread that may have stopped the last
  // actor notifies run() under done_mu_ (notify_if_done).
  std::mutex done_mu_;
  std::condition_variable done_cv_;

  std::atomic<uint64_t> spawned_{0};  // spawns off the pool
  std::atomic<uint64_t> stopped_{0};  // stops off the pool (shutdown)
  std::atomic<uint64_t> aborted_{0};  // spawns whose constructor threw
  std::atomic<uint64_t> dropped_dead_{0};
  std::atomic<uint64_t> dropped_unresolved_{0};
  std::atomic<uint64_t> timers_cancelled_{0};
  std::atomic<uint64_t> timers_dropped_{0};  // written by shutdown()
  bool shut_down_ = false;                   // shutdown() ran (the owner's thread only)
  // COACT_BURST=off and no per-mail trace: a send inside a handler pushes
  // into the recipient's inbox at once (post), and the flush only schedules
  // the recipients whose run-token that push took. Set at construction.
  bool direct_sends_ = false;
  // COACT_BURST=on and no per-mail trace: a handler's first send pushes at
  // once when its producer has no live burst (no open group to order behind),
  // as with burst off; the later sends of the invocation are buffered and
  // batched by the flush. Set at construction.
  bool burst_direct_ = false;
  std::atomic<uint64_t> injector_pushes_{0};
  uint64_t futex_wakes_at_boot_ = 0;
  // The per-mail trace (COACT_TRACE; null = off); written at shutdown.
  std::unique_ptr<trace::Session> trace_;
};

/// Aborts with `msg`, naming the actor running on this thread (if any) and a
/// libunwind backtrace (panic.cpp). Never returns.
[[noreturn]] void panic(const char* what, const char* detail = nullptr) noexcept;

}  // namespace coact::detail

/// Invariant check that stays on in release builds: aborts via detail::panic.
#define COACT_INVARIANT(cond, msg)                                 \
  do {                                                             \
    if (!(cond)) [[unlikely]]                                      \
      ::coact::detail::panic("invariant violated: " #cond, (msg)); \
  } while (0)
