// coact/runtime/detail/mailbox.hpp: Envelope and the per-actor MPSC inbox.
//
// The inbox is Dmitry Vyukov's intrusive non-blocking MPSC queue
// (1024cores.net, "Intrusive MPSC node-based queue"): producers do one
// exchange on `head_` and one store to the old head's `next`; the single
// consumer (the worker holding the actor's run-token) pops from `tail_`.
// Producers never block and never fail. A producer preempted between its
// exchange and its `next` store leaves the queue momentarily "non-empty but
// unpoppable": pop() returns nullptr and empty() returns false; the consumer
// treats that as "not drained" and requeues the actor rather than spinning.
// FIFO: mail pushed by one thread is popped in push order.
// Bit 0 of the head word is the actor's run-token (run_token.hpp): a push
// that finds it clear has woken the actor and schedules it.
//
// Depth (docs/mailboxes.md), only while counting (set_counting() before the
// actor is published: COACT_MAILBOX_STATS=on, or a COACT_MAILBOX_BOUND): two
// monotonic counters, `pushed_` (producers: one relaxed fetch_add on the line
// they already own for the exchange, a second locked instruction per send,
// hence opt-in) and `popped_` (the consumer: a plain relaxed store on its own
// line); depth is their difference, read by any thread. The high-water mark
// is kept by the consumer, sampled at dequeue (the first pop of each run of
// mail, then every kHighWaterStride-th pop), so it is exact to within
// kHighWaterStride mails and costs producers nothing.
// Memory after a backlog: a worker that goes idle after delivering at least
// kTrimBacklog mails since it was last idle calls backlog_drained() (the
// scheduler's idle path, idle.cpp: nothing on the dequeue path).
#pragma once

#include <atomic>
#include <cstdint>

#include <coact/runtime/detail/run_token.hpp>

namespace coact {
class ActorBase;
}

namespace coact::detail {

/// What a system mail asks of the scheduler; user mail is `none`. One list,
/// used by runtime.cpp (stop), scheduler.cpp (resume) and reply.hpp (reply).
enum class SystemMail : uint16_t {
  none = 0,    ///< user mail: dispatched to a handler
  stop = 1,    ///< stop request (ActorRef::stop)
  resume = 2,  ///< wake of a waiting coroutine, carrying its wait epoch
  reply = 3,   ///< a reply for a waiting request (ReplyEnvelopeBase)
};

/// The header of one reclaim region of a MailRing (runtime/src/detail/
/// mail_ring.hpp): the envelopes a handler wrote in place into its worker's
/// outbound ring. `lock` is the live-reference count: set to the region's
/// mail count when the producer seals it (before any of its mail is handed to
/// a consumer), decremented once per mail when that mail is consumed or
/// dropped (release_region); the producer reuses the bytes only after it read
/// 0 with acquire, so every consumer's reads of the payload happened before.
struct alignas(16) RingRegion {
  std::atomic<uint32_t> lock{0};
  uint32_t total = 0;   ///< bytes of this region, header included (producer-only)
  uint32_t filler = 0;  ///< 1: a skip filler laid over the tail before a wrap
  uint32_t mails = 0;   ///< mails written (producer-only, diagnostics)
};

/// Region releases held back on one thread and dropped together: while a
/// batch is installed on a thread (t_region_batch; the scheduler's burst
/// drainer, Scheduler::run_burst, installs one for its claim loop), that
/// thread's release_region calls for one region are counted here and given
/// back with one fetch_sub when a release names another region, when the
/// thread's own ring reclaims (MailRing::open) and when the drainer ends.
/// Why: a fan-out's drainer consumes a region's mails one after another,
/// and a locked decrement per mail would be a locked instruction per
/// message on burst dispatch's hottest path. The region stays live until the
/// flush, never longer than the drainer's claim loop: the producer's
/// reclaim stops at it meanwhile, as at any live region.
/// Threads: a batch belongs to the thread it is installed on.
struct RegionReleaseBatch {
  RingRegion* region = nullptr;
  uint32_t n = 0;
  /// Gives back the held releases (release: this thread's reads of the
  /// payloads happen before the producer's reuse, as one release each).
  void flush() noexcept {
    if (n != 0) region->lock.fetch_sub(n, std::memory_order_release);
    region = nullptr;
    n = 0;
  }
};
/// The calling thread's installed batch, or null (release_region then
/// decrements at once).
inline constinit thread_local RegionReleaseBatch* t_region_batch = nullptr;

/// Drops one mail's reference to its region. Any thread. release: the
/// consumer's reads of the payload happen before the producer's reuse (held
/// back while the thread has a RegionReleaseBatch installed).
inline void release_region(RingRegion* r) noexcept {
  if (RegionReleaseBatch* b = t_region_batch) [[unlikely]] {
    if (b->region != r) {
      b->flush();
      b->region = r;
    }
    ++b->n;
    return;
  }
  r->lock.fetch_sub(1, std::memory_order_release);
}

/// One mail: type-erased header followed (in TypedEnvelope) by the message.
struct Envelope {
  // Written by the producer that pushed this node (release store in push),
  // read by the consumer (acquire load in pop).
  std::atomic<Envelope*> next{nullptr};
  /// Runs the handler on `actor` and destroys the envelope. Null for the stub.
  void (*invoke)(ActorBase* actor, Envelope* self) = nullptr;
  /// Destroys without running (mail to a dead actor).
  void (*drop)(Envelope* self) = nullptr;
  /// Message kind id (detail::kind_id<M>()); 0 for system mail.
  uint32_t kind = 0;
  /// System mail kind; SystemMail::none for user mail.
  SystemMail system = SystemMail::none;
  /// Per-mail trace tag (runtime/src/trace/recorder.hpp): 1..65535 when the
  /// mail is traced (COACT_TRACE), 0 otherwise. Set by the sending thread
  /// before the mail is published, read by the worker that dispatches it.
  /// The trace joins a send to its handler by (envelope address, tag); it
  /// shares the word of `kind` and `system`, so the envelope stays 40 bytes
  /// and an untraced mail's constructor writes no extra store.
  uint16_t trace_tag = 0;
  /// The ring region holding this envelope (written in place by a handler's
  /// send), or nullptr for a heap envelope. A ring envelope is destroyed in
  /// place and releases its region instead of being freed.
  RingRegion* region = nullptr;
};
static_assert(sizeof(void*) != 8 || sizeof(Envelope) == 40, "Envelope: 40 bytes on 64-bit targets");

/// Called by a worker going idle (Scheduler::idle) after delivering at least
/// Mailbox::kTrimBacklog mails since it was last idle: gives freed memory
/// back to the system (malloc_trim), at most once a second per process (a
/// tenth of one after 65536 mails or more). Defined in runtime/src/mailbox.cpp.
/// Any thread; may take milliseconds.
void backlog_drained(uint64_t mails) noexcept;

class Mailbox {
 public:
  Mailbox() noexcept : head_(word(&stub_, false)), tail_(&stub_) {}
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  /// Any thread. Never blocks. Returns true iff this push took the run-token
  /// (the actor was Idle): the caller must then schedule the actor, exactly
  /// once (run_token.hpp). One exchange: the push and the wake in one.
  [[gnu::always_inline]] bool push(Envelope* e) noexcept {
    e->next.store(nullptr, std::memory_order_relaxed);
    // Before the exchange, so the count never trails a pop of this mail (the
    // consumer's acquire of `next` below orders it); depth() clamps anyway.
    if (counting_) [[unlikely]]
      pushed_.fetch_add(1, std::memory_order_relaxed);
    // seq_cst: one RMW in head_'s modification order (run_token.hpp).
    const uintptr_t prev = head_.exchange(word(e, true), std::memory_order_seq_cst);
    ptr(prev)->next.store(e, std::memory_order_release);
    return (prev & kRunTokenHeld) == 0;
  }

  /// Consumer only (the holder). nullptr when empty or when a producer is mid-push.
  /// Counts the dequeue while counting (depth, high-water mark; file
  /// comment). Inlined into the drain loop: uncounted, it is the bare queue
  /// and one test of a flag on the consumer's own line.
  [[gnu::always_inline]] Envelope* pop() noexcept {
    if (count_pops_) [[unlikely]]
      return pop_counted();
    return take();
  }

  /// Before publication only (the spawner): count depth from now on (file comment).
  void set_counting(bool on) noexcept { counting_ = count_pops_ = on; }
  /// Whether depth is counted. Any thread.
  bool counting() const noexcept { return counting_; }

  /// Mail queued now (pushed and not yet popped); 0 unless counting. Any
  /// thread; relaxed, so approximate while producers and the consumer run.
  uint64_t depth() const noexcept {
    const uint64_t out = popped_.load(std::memory_order_relaxed);
    const uint64_t in = pushed_.load(std::memory_order_relaxed);
    return in > out ? in - out : 0;
  }
  /// The largest depth seen since the actor was spawned (sampled at dequeue,
  /// and the current depth); 0 unless counting. Any thread; relaxed.
  uint64_t high_water() const noexcept {
    const uint64_t h = high_water_.load(std::memory_order_relaxed);
    const uint64_t d = depth();
    return d > h ? d : h;
  }
  /// Mail pushed since spawn; 0 unless counting. Any thread; relaxed.
  uint64_t pushed() const noexcept { return pushed_.load(std::memory_order_relaxed); }
  /// Sends refused by the mailbox bound (mailbox_bound.cpp counts them). Any thread; relaxed.
  uint64_t rejected() const noexcept { return rejected_.load(std::memory_order_relaxed); }
  void count_rejected() noexcept { rejected_.fetch_add(1, std::memory_order_relaxed); }

  static constexpr uint64_t kHighWaterStride = 64;  // a power of two
  static constexpr uint64_t kTrimBacklog = 4096;    // mails a worker delivers between idles before it asks for a trim

 private:
  // Vyukov's pop (consumer only): nullptr when empty or a producer is mid-push.
  Envelope* take() noexcept {
    Envelope* tail = tail_;
    Envelope* next = tail->next.load(std::memory_order_acquire);
    if (tail == &stub_) {
      if (next == nullptr) return nullptr;
      tail_ = next;
      tail = next;
      next = next->next.load(std::memory_order_acquire);
    }
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    if (tail != ptr(head_.load(std::memory_order_acquire))) return nullptr;  // a producer is mid-push
    relink_stub();
    next = tail->next.load(std::memory_order_acquire);
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    return nullptr;
  }

  // Consumer only, while counting: pop() with the depth counted.
  [[gnu::noinline]] Envelope* pop_counted() noexcept {
    const bool fresh = tail_ == &stub_;  // the first pop of a run of mail (the stub is at the tail)
    Envelope* e = take();
    if (e != nullptr) count_pop(fresh);
    return e;
  }

  // Consumer only, while counting: counts a dequeue and samples the depth
  // just before it on the first pop of a run (`fresh`) and every
  // kHighWaterStride-th pop.
  void count_pop(bool fresh) noexcept {
    const uint64_t n = popped_.load(std::memory_order_relaxed) + 1;  // consumer-only writer
    popped_.store(n, std::memory_order_relaxed);
    if (!fresh && (n & (kHighWaterStride - 1)) != 0) return;
    const uint64_t in = pushed_.load(std::memory_order_relaxed);
    const uint64_t d = in >= n ? in - n + 1 : 1;
    if (d > high_water_.load(std::memory_order_relaxed)) high_water_.store(d, std::memory_order_relaxed);
  }

 public:
  /// Consumer only: true iff the queue is in its canonical empty state
  /// (tail_ and head_ both at the stub). pop() can return nullptr while mail
  /// is queued: a producer preempted between its exchange and its link, or
  /// one that slipped in while pop() re-linked the stub (Vyukov's "retry
  /// later" case), which leaves head_ at the stub with an unpopped node at
  /// tail_. The holder may try_release only when this is true; otherwise it
  /// keeps the actor scheduled (and retries after other work).
  bool empty_for_consumer() const noexcept {
    return tail_ == &stub_ && ptr(head_.load(std::memory_order_acquire)) == &stub_;
  }

  /// The holder, after empty_for_consumer() was true: Held -> Idle. False
  /// when a push landed since (head_ no longer the stub): the caller still
  /// holds the run-token and must keep draining. After a true return the
  /// caller must not touch this mailbox or its cell (run_token.hpp).
  bool try_release() noexcept {
    uintptr_t expected = word(&stub_, true);
    return head_.compare_exchange_strong(expected, word(&stub_, false), std::memory_order_seq_cst,
                                         std::memory_order_relaxed);
  }

  /// Burst step 6: Idle -> Held in place. An Idle inbox is empty (every push
  /// sets the bit), so the expected word is the stub's.
  bool seize() noexcept {
    uintptr_t expected = word(&stub_, false);
    return head_.compare_exchange_strong(expected, word(&stub_, true), std::memory_order_seq_cst,
                                         std::memory_order_relaxed);
  }

  /// Before publication only: the spawner holds the run-token while the
  /// actor is constructed (then try_release, or schedule if mail arrived).
  void hold() noexcept { head_.store(word(&stub_, true), std::memory_order_relaxed); }

  /// Whether somebody holds the run-token (invariant checks; relaxed).
  bool held() const noexcept { return (head_.load(std::memory_order_relaxed) & kRunTokenHeld) != 0; }

 private:
  static uintptr_t word(Envelope* e, bool held) noexcept {
    return reinterpret_cast<uintptr_t>(e) | (held ? kRunTokenHeld : 0);
  }
  static Envelope* ptr(uintptr_t w) noexcept { return reinterpret_cast<Envelope*>(w & ~kRunTokenHeld); }
  static_assert(alignof(Envelope) > kRunTokenHeld, "the run-token bit must be free in an Envelope pointer");

  // Consumer only, holding the run-token: put the stub back at the head so
  // the last node can be taken (Vyukov). The bit stays Held.
  void relink_stub() noexcept {
    stub_.next.store(nullptr, std::memory_order_relaxed);
    const uintptr_t prev = head_.exchange(word(&stub_, true), std::memory_order_seq_cst);
    ptr(prev)->next.store(&stub_, std::memory_order_release);
  }

  // The newest node, with the run-token in bit 0 (run_token.hpp). Written by
  // producers (exchange) and the holder (stub re-link, release, seize CAS).
  std::atomic<uintptr_t> head_;
  // Mail pushed since spawn: every producer (relaxed fetch_add before its
  // exchange, on the line the exchange owns next); read relaxed by the
  // consumer's depth samples and by depth() on any thread. Counts only.
  std::atomic<uint64_t> pushed_{0};
  // Sends refused by the bound: senders outside the pool (relaxed
  // fetch_add, rare); read relaxed by stats. A count only.
  std::atomic<uint64_t> rejected_{0};
  // Written once before publication (set_counting), read by producers on
  // the line they use anyway (the consumer reads count_pops_).
  bool counting_ = false;
  // Padding instead of alignas(64): keeps the producers' line away from the
  // consumer's without making every cell over-aligned (an over-aligned new
  // takes glibc's slow memalign path on every spawn).
  char pad_[64 - sizeof(std::atomic<uintptr_t>) - 2 * sizeof(std::atomic<uint64_t>) - sizeof(bool)];
  // Consumer-private.
  Envelope* tail_;
  // counting_'s copy on the consumer's line (pop reads it every dequeue;
  // reading counting_ would pull in the line every push writes). Written
  // once before publication.
  bool count_pops_ = false;
  Envelope stub_;
  // Written by the consumer only (relaxed stores), read relaxed by depth()
  // and high_water() on any thread: counts, ordered with nothing.
  std::atomic<uint64_t> popped_{0};
  std::atomic<uint64_t> high_water_{0};
};

}  // namespace coact::detail
