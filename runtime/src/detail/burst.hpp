// runtime/src/detail/burst.hpp: the burst, one handler invocation's output as
// the unit of dispatch under COACT_BURST=on, and its packed lifecycle word.
//
// The burst lifecycle (COACT_BURST=on; burst_dispatch.cpp implements the steps):
//   1. Sends buffer into the ring. Inside a handler each send constructs its
//      envelope in place in the worker's outbound MailRing (mail_ring.hpp);
//      the first send of the invocation opens a region, later ones append.
//      No allocation per mail; a mail that does not fit takes an owned heap
//      envelope instead (the ring never blocks its producer).
//   2. Flush at the handler boundary (Scheduler::flush, the one flush
//      point). Seal the region (lock = its mail count: one reference per
//      mail), then route the whole window as one unit. It is a pay point
//      (causal): the producer pays its debt before anything it sent can run.
//   3. Group by recipient. The producing actor (its BurstProducer, holder
//      only) keeps one active Burst. A recipient with an open group in it
//      gets the mail appended to that group (Group::push); a new recipient
//      (or one whose group already closed) gets a fresh group, written into
//      the group array and published by one Lifecycle::publish. So a
//      recipient has at most one unclosed group across the producer's live
//      bursts (a burst is rolled only once it retired: all its groups
//      closed), and two workers never hold same-recipient mail at once.
//      New recipients beyond the array's capacity, and a one-mail flush to a
//      recipient without an open group, are deposited directly (inbox push +
//      wake in one exchange), which is exactly the pre-burst path; no open
//      group, so no FIFO is at stake; a deposit that takes the recipient's
//      run-token schedules it as a direct send does (the hand-off slot when
//      nothing else is local). Untraced and outside a causal sweep,
//      a handler's first send does not even wait for the flush when its
//      producer has no live burst (Scheduler::post_burst, inline in
//      post_on, the burst-on twin of burst off's post_direct; the state
//      kInHandlerSent): it is pushed at once, as with burst off (a reply or
//      a chain hop is a burst of one mail: nothing to batch), and a flush
//      of that one direct send is burst off's (dispatch's inline case: the
//      hand-off slot, Worker::next); its later sends are buffered and
//      batched here, and land behind it. Why "no live burst" and not "no
//      open group to this recipient": a live burst's groups are closed by
//      their claimers on other workers at any time, and only retirement
//      (Lifecycle::retired, an acquire) tells the producer, with one load,
//      that every group it published has delivered; a per-recipient test
//      would be an index lookup plus the group's lock per send. The one
//      case it costs (a send while the producer's last burst still drains)
//      is taken by the flush above: onto the open group, or, when the group
//      closed, the direct path. Test: burst_test "a one-mail send never
//      overtakes the producer's open group" (direct while a group is open
//      delivers n + 3 before n .. n + 2).
//   4. Keep warm, and recruit when it pays. A flush that published groups
//      pushes one drainer (a reference to the burst) on the producing
//      worker's own deque: a chain or a cheap fan-out stays on one warm
//      worker, and N recipients cost one push instead of N. If the fresh
//      groups carry enough measured work, recruit K-1 siblings: K =
//      round(total_work / max_group_work) clamped to [1, min(groups,
//      workers)], and only if total_work exceeds the wake break-even (the
//      calibrated hand-off cost); work comes from per-kind execution-cost
//      EWMAs (CostTable: mean + mean absolute deviation per mail). While a
//      contributing cost cell is untrusted (fewer than 4 samples), the
//      width gate decides instead: recruit iff fresh groups >=
//      COACT_BURST_RECRUIT_MIN, K-1 = min(groups, workers) - 1. Either way
//      at most COACT_BURST_RECRUIT_MAX siblings. Recruitment pushes K-1
//      drainers on the injector and wakes K-1 parked workers directly
//      (SpinPark::wake_workers, bypassing route-to-spinner). A burst that
//      was narrow (fewer mails than the width gate) and cheap (trusted,
//      K = 1) sets its producer's direct hint: its next invocations send
//      every mail direct, as burst off does (a burst's per-group claim,
//      locks and seize cost more than it saves there), except one in 16,
//      which bursts and judges again (Scheduler::start_direct).
//   5. The cursor race. Every worker holding a drainer loops
//      Lifecycle::claim (one CAS on the packed word): each claim hands one
//      whole recipient group to exactly one worker. The worker drains the
//      group's buffer in send order and closes it when it finds it empty
//      (under the group's lock): the close is a FIFO barrier, a later
//      producer push sees `closed` and opens a new group (or deposits),
//      strictly behind everything dispatched. Then Lifecycle::complete; the
//      completion that brings done == len seals (retires) the burst. (A
//      drainer that claims on completes and claims in one CAS:
//      Lifecycle::complete_and_claim_n. It claims a run of consecutive
//      groups per CAS: one at first, doubling up to 8 while no recipient it
//      ran published a burst, and at most the unclaimed groups / (2 x
//      workers), so that a recruited sibling still finds groups and runs
//      shrink to one toward the end (guided self-scheduling). A 64-wide
//      fan-out of one-mail groups paid a CAS of the word per mail before.)
//      Depth first: when the group's recipient, run in place (step 6),
//      published a burst of its own (a spawn tree's node), the drainer stops
//      claiming and goes back on the own deque under the few jobs that run
//      pushed (Scheduler::requeue_under), so that subtree runs before the
//      next sibling is claimed. Claiming on would run every sibling, each
//      expanding its subtree, before any grandchild: a breadth-first tree,
//      more of it live at once (skynet, 10^5 leaves, 1 worker: a peak of
//      45,905 live small-allocator blocks with burst on before, 3,264 after,
//      17,905 with burst off). The order changes nothing else: any worker
//      may claim a group of any live drainer.
//   6. Seize, or deposit. For each mail of a claimed group the worker tries
//      Mailbox::seize (run-token Idle -> Held). Won: the recipient runs here, in
//      place, with no scheduling push: if its inbox is canonically empty and
//      it is not suspended in a coroutine, this mail is dispatched first;
//      else it is pushed behind the inbox's older mail (an earlier deposit
//      from this very producer may sit there: FIFO) and the inbox is drained.
//      The run is a normal drain cycle (handler region entry/exit hooks,
//      budget, stop, the step-5 release of the run-token in scheduler.hpp).
//      Lost (Held: a sender's push woke it, another worker drains it, or it
//      stopped): the mail is deposited (an inbox push, which schedules the
//      actor only if it took the token) and the holder's drain picks it up.
//   7. Reclamation. Each mail holds one count of its region's lock and drops
//      it when its envelope is destroyed (handled, or dropped to a dead
//      actor). The producer reclaims at its next region open, in ring order.
//      A drainer holds its releases of one region back and drops them with
//      one fetch_sub (mailbox.hpp RegionReleaseBatch: when a release names
//      another region, at its own ring's next open, and when its claim loop
//      ends), so a fan-out's region costs one locked decrement per drainer
//      instead of one per mail.
//
// Lifetime: a Burst is reference counted: the producer's active pointer and
// every queued drainer hold one; the last release frees it. A group holds a
// reference on its recipient cell from creation until the claimer closed it.
// Threads: the producer side (Burst::stage, Group::push, Lifecycle::publish)
// runs only on the worker that holds the producing actor's run-token; claim /
// complete / take_or_close on any worker.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <utility>

#include <coact/runtime/detail/actor_cell.hpp>
#include <coact/runtime/detail/small_alloc.hpp>

#include "sync.hpp"

namespace coact::detail {

/// The packed lifecycle word of one burst:
///   bit 63 seal | bits 42..62 done | bits 21..41 len | bits 0..20 cursor
/// cursor: next group to claim (only increases); len: groups published
/// (single writer, the producer); done: groups drained and closed; seal: set
/// by the completion that brings done == len (the burst is retired, no more
/// publishing). Every operation is one CAS on the whole word.
/// Ordering: the producer writes a group before publish (acq_rel CAS);
/// a claimer that acquires len > i sees group i.
class Lifecycle {
 public:
  static constexpr uint32_t kFieldBits = 21;
  static constexpr uint64_t kMask = (uint64_t(1) << kFieldBits) - 1;
  static constexpr uint64_t kSeal = uint64_t(1) << 63;
  static constexpr uint32_t kMaxGroups = uint32_t(kMask);

  enum class Published { ok, retired, full };

  explicit Lifecycle(uint32_t initial_len = 0) noexcept : word_(pack(0, initial_len, 0, false)) {}

  /// Worker: the next group index, or nullopt when the cursor reached len.
  std::optional<uint32_t> claim() noexcept {
    uint64_t w = word_.load(std::memory_order_acquire);
    for (;;) {
      const uint64_t c = cursor_of(w), l = len_of(w);
      if (c >= l) return std::nullopt;
      if (word_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
        return uint32_t(c);
      }
    }
  }

  /// Producer: groups published so far (plain: len has a single writer).
  uint32_t peek_len() const noexcept { return uint32_t(len_of(word_.load(std::memory_order_acquire))); }

  /// Producer: publish `count` groups written at [peek_len(), +count).
  Published publish(uint32_t count) noexcept {
    if (count == 0) return Published::ok;
    uint64_t w = word_.load(std::memory_order_acquire);
    for (;;) {
      if (w & kSeal) return Published::retired;
      const uint64_t l = len_of(w);
      if (l + count > kMaxGroups) return Published::full;
      const uint64_t next = pack(cursor_of(w), l + count, done_of(w), false);
      if (word_.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
        return Published::ok;
      }
    }
  }

  /// Worker: one claimed group finished. True iff this call retired the burst.
  bool complete() noexcept {
    uint64_t w = word_.load(std::memory_order_acquire);
    for (;;) {
      const uint64_t d = done_of(w) + 1;
      const bool retire = d == len_of(w);
      const uint64_t next = pack(cursor_of(w), len_of(w), d, (w & kSeal) != 0 || retire);
      if (word_.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
        return retire;
      }
    }
  }

  /// Worker: complete() and claim() in one CAS (a drainer finishing one
  /// group and taking the next: run_burst). The next group index, or
  /// nullopt when the cursor reached len; `retired` is complete()'s result
  /// (a completion that retires finds nothing to claim: done <= cursor <=
  /// len). One locked instruction per group instead of two: on a wide
  /// fan-out of zero-work handlers each group's atomics (claim, two group
  /// locks, complete, seize, the target's reference, the ring region) are
  /// what burst on pays over off.
  std::optional<uint32_t> complete_and_claim(bool& retired) noexcept {
    uint64_t w = word_.load(std::memory_order_acquire);
    for (;;) {
      const uint64_t c = cursor_of(w), l = len_of(w), d = done_of(w) + 1;
      const bool retire = d == l;
      const bool take = c < l;
      const uint64_t next = pack(take ? c + 1 : c, l, d, (w & kSeal) != 0 || retire);
      if (word_.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
        retired = retire;
        if (take) return uint32_t(c);
        return std::nullopt;
      }
    }
  }

  /// A run of claimed groups: [first, first + n); n == 0: nothing claimed.
  struct Claimed {
    uint32_t first, n;
  };

  /// Worker: completes `completed` claimed groups (0 or more) and claims a
  /// run of up to `want` consecutive groups (0: complete only), at most
  /// max(1, unclaimed / `share`), in one CAS: guided self-scheduling
  /// (Polychronopoulos & Kuck, 1987), so that drainers that arrive later
  /// still find groups, and runs shrink to 1 toward the end. `retired` is
  /// true iff the completion retired the burst (then nothing was left to
  /// claim). The groups of a run are this drainer's alone, as a single
  /// claim's; the burst retires only when every claimed group completed.
  /// Why: a drainer of a cheap wide fan-out paid one CAS of the word per
  /// one-mail group (run_burst).
  Claimed complete_and_claim_n(uint32_t completed, uint32_t want, uint32_t share, bool& retired) noexcept {
    uint64_t w = word_.load(std::memory_order_acquire);
    for (;;) {
      const uint64_t c = cursor_of(w), l = len_of(w), d = done_of(w) + completed;
      const bool retire = completed != 0 && d == l;
      uint64_t n = 0;
      if (c < l && want != 0) {
        const uint64_t fair = std::max<uint64_t>(1, (l - c) / std::max<uint32_t>(share, 1));
        n = std::min<uint64_t>({uint64_t(want), fair, l - c});
      }
      const uint64_t next = pack(c + n, l, d, (w & kSeal) != 0 || retire);
      if (word_.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
        retired = retire;
        return Claimed{uint32_t(c), uint32_t(n)};
      }
    }
  }

  bool retired() const noexcept { return (word_.load(std::memory_order_acquire) & kSeal) != 0; }

  struct Snapshot {
    uint32_t cursor, len, done;
    bool sealed;
  };
  Snapshot snapshot() const noexcept {
    const uint64_t w = word_.load(std::memory_order_acquire);
    return {uint32_t(cursor_of(w)), uint32_t(len_of(w)), uint32_t(done_of(w)), (w & kSeal) != 0};
  }

 private:
  static constexpr uint64_t cursor_of(uint64_t w) noexcept { return w & kMask; }
  static constexpr uint64_t len_of(uint64_t w) noexcept { return (w >> kFieldBits) & kMask; }
  static constexpr uint64_t done_of(uint64_t w) noexcept { return (w >> (2 * kFieldBits)) & kMask; }
  static constexpr uint64_t pack(uint64_t c, uint64_t l, uint64_t d, bool seal) noexcept {
    return c | (l << kFieldBits) | (d << (2 * kFieldBits)) | (seal ? kSeal : 0);
  }
  // CASed by the producer (publish) and claimers/completers; acq_rel.
  // (Not over-aligned: a Burst lives in small_alloc memory, 16-aligned.)
  std::atomic<uint64_t> word_;
};

/// One recipient's mail within a burst: an intrusive FIFO list (through
/// Envelope::next) behind a one-byte spinlock. SPSC by construction: the
/// producer pushes, the one claimer takes and closes.
struct Group {
  ActorCell* target = nullptr;  // holds a reference until closed
  std::atomic<bool> lock{false};
  bool closed = false;       // guarded by lock
  Envelope* head = nullptr;  // guarded by lock
  Envelope* tail = nullptr;  // guarded by lock

  void acquire() noexcept {
    while (lock.exchange(true, std::memory_order_acquire)) {
      while (lock.load(std::memory_order_relaxed)) sync::cpu_relax();
    }
  }
  void release() noexcept { lock.store(false, std::memory_order_release); }

  /// Producer, before publication (no lock needed: nobody can claim it yet).
  void push_unpublished(Envelope* e) noexcept {
    e->next.store(nullptr, std::memory_order_relaxed);
    if (tail)
      tail->next.store(e, std::memory_order_relaxed);
    else
      head = e;
    tail = e;
  }
  /// Producer: append, or false if the claimer already closed the group.
  bool push(Envelope* e) noexcept {
    acquire();
    if (closed) {
      release();
      return false;
    }
    push_unpublished(e);
    release();
    return true;
  }
  /// Claimer: the pending list (send order), or nullptr after closing the
  /// group because it was empty (the FIFO barrier).
  Envelope* take_or_close() noexcept {
    acquire();
    Envelope* h = head;
    if (h == nullptr) {
      closed = true;
    } else {
      head = tail = nullptr;
    }
    release();
    return h;
  }
};

/// A producer's burst: the lifecycle word, a reference count and a fixed
/// group array (capacity chosen at creation).
struct Burst {
  std::atomic<uint32_t> refs{1};
  uint32_t cap = 0;
  Lifecycle life;
  Group* groups() noexcept { return std::launder(reinterpret_cast<Group*>(this + 1)); }

  static size_t bytes_for(uint32_t cap) noexcept { return sizeof(Burst) + size_t(cap) * sizeof(Group); }

  static Burst* create(uint32_t cap) {
    void* mem = small_alloc(bytes_for(cap));
    auto* b = ::new (mem) Burst();
    b->cap = cap;
    return b;
  }
  void add_ref() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
  /// Frees the burst on the last reference. Every published group was
  /// closed by then (each drainer completes what it claims, and the
  /// producer's reference outlives its own publishing).
  void release() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    const uint32_t n = life.snapshot().len;
    Group* g = groups();
    for (uint32_t i = 0; i < n; ++i) g[i].~Group();
    const uint32_t c = cap;
    this->~Burst();
    small_free(this, bytes_for(c));
  }
};
static_assert(alignof(Group) <= alignof(std::max_align_t));
static_assert(sizeof(Burst) % alignof(Group) == 0);

/// recipient -> group index of one burst (open addressing; holder-only).
struct RecipientIndex {
  struct Slot {
    ActorCell* key;
    uint32_t group;
  };
  Slot* slots = nullptr;
  uint32_t mask = 0;  // capacity - 1 (power of two); 0 = no table yet
  uint32_t count = 0;

  RecipientIndex() = default;
  RecipientIndex(const RecipientIndex&) = delete;
  RecipientIndex& operator=(const RecipientIndex&) = delete;
  ~RecipientIndex() { free_slots(slots, mask); }
  void swap(RecipientIndex& o) noexcept {
    std::swap(slots, o.slots);
    std::swap(mask, o.mask);
    std::swap(count, o.count);
  }
  void clear() noexcept {
    if (count == 0) return;
    for (uint32_t i = 0; i <= mask; ++i) slots[i].key = nullptr;
    count = 0;
  }
  static uint32_t hash(const ActorCell* c) noexcept {
    uint64_t x = reinterpret_cast<uintptr_t>(c) >> 4;
    x *= 0x9E3779B97F4A7C15ull;
    return uint32_t(x >> 32);
  }
  /// Group index of `c`, or UINT32_MAX.
  uint32_t find(const ActorCell* c) const noexcept {
    if (count == 0) return UINT32_MAX;
    for (uint32_t i = hash(c) & mask;; i = (i + 1) & mask) {
      if (slots[i].key == c) return slots[i].group;
      if (slots[i].key == nullptr) return UINT32_MAX;
    }
  }
  /// Room for `n` more mappings without a regrow (load factor 1/2).
  void reserve(size_t n) {
    const size_t have = mask == 0 ? 0 : size_t(mask) + 1;
    if ((count + n) * 2 <= have) return;
    size_t cap = have == 0 ? 16 : have * 2;
    while ((count + n) * 2 > cap) cap *= 2;
    grow_to(uint32_t(cap));
  }
  /// Maps c to group g (replacing an existing mapping).
  void put(ActorCell* c, uint32_t g) {
    if ((count + 1) * 2 > mask + 1) grow();
    for (uint32_t i = hash(c) & mask;; i = (i + 1) & mask) {
      if (slots[i].key == c) {
        slots[i].group = g;
        return;
      }
      if (slots[i].key == nullptr) {
        slots[i] = Slot{c, g};
        ++count;
        return;
      }
    }
  }

 private:
  void grow() {
    const uint32_t old = mask == 0 ? 0 : mask + 1;
    grow_to(old == 0 ? 16 : old * 2);
  }
  void grow_to(uint32_t cap) {
    const uint32_t old = mask == 0 ? 0 : mask + 1;
    Slot* prev = slots;
    const uint32_t prev_mask = mask;
    slots = static_cast<Slot*>(small_alloc(sizeof(Slot) * cap));
    for (uint32_t i = 0; i < cap; ++i) slots[i].key = nullptr;
    mask = cap - 1;
    count = 0;
    for (uint32_t i = 0; i < old; ++i) {
      if (prev[i].key != nullptr) put(prev[i].key, prev[i].group);
    }
    free_slots(prev, prev_mask);
  }
  static void free_slots(Slot* p, uint32_t m) noexcept {
    if (p != nullptr) small_free(p, sizeof(Slot) * (size_t(m) + 1));
  }
};

/// The producing actor's burst state (ActorCell::producer; holder-only): the
/// active burst and, when the active one filled its group array before it
/// retired, the previous one, each with its recipient index. A recipient
/// gets a group in `active` only if it has no open group in `prev`; a burst
/// older than `prev` is always retired (the producer rolls only then). So a
/// recipient has at most one open group across the live bursts.
struct BurstProducer : SmallAllocated {
  Burst* active = nullptr;
  RecipientIndex index;  // of active
  Burst* prev = nullptr;
  RecipientIndex prev_index;  // of prev
  // The direct hint (Scheduler::start_direct): this producer's last burst
  // was narrow (fewer mails than the width gate) and cheap (trusted costs,
  // no sibling worth recruiting), so its invocations send every mail direct,
  // as burst off does, except one in 16 (hint_age), which bursts to refresh
  // the hint and feed the cost cells. Owner: the worker running the producer.
  bool direct_hint = false;
  uint8_t hint_age = 0;

  ~BurstProducer() {
    if (active) active->release();
    if (prev) prev->release();
  }
  /// Drops `prev` once it retired (all its groups closed).
  void prune() noexcept {
    if (prev != nullptr && prev->life.retired()) {
      prev->release();
      prev = nullptr;
      prev_index.clear();
    }
  }
};

/// Per-kind handler execution-cost estimates (ns): EWMA (1/8) of the mean
/// and of the absolute deviation, fed on every worker by sampled dispatches
/// of claimed mail (every 16th mail run in place from a burst group: the
/// kinds recruitment asks about; Scheduler::dispatch_claimed). Other
/// dispatches (a chain hop, a reply, an inbox drained) are not timed.
/// Cells are racy by design (relaxed loads/stores; a lost update only
/// delays convergence). A cell is trusted after kMinSamples samples, and
/// its estimate is then the mean plus the mean absolute deviation: an upper
/// estimate, so a cell whose timings spread (a zero-work handler's do: the
/// clock reads and cache misses are most of it, and one preempted run moves
/// mean and deviation alike) recruits only if even that pays. Such a cell
/// is trusted all the same: left to the width gate, a wide fan-out of
/// zero-work handlers would recruit a cold sibling now and then, and each
/// recruitment moves the round's groups away from their warm caches. Kind
/// ids beyond kCells are never trusted
/// (the width gate decides for them).
class CostTable {
 public:
  static constexpr uint32_t kCells = 1024;
  static constexpr uint32_t kMinSamples = 4;

  void observe(uint32_t kind, uint64_t ns) noexcept {
    if (kind >= kCells) return;
    Cell& c = cells_[kind];
    const uint32_t n = c.samples.load(std::memory_order_relaxed);
    int64_t mean = int64_t(c.mean_ns.load(std::memory_order_relaxed));
    int64_t mad = int64_t(c.mad_ns.load(std::memory_order_relaxed));
    const int64_t x = int64_t(ns);
    if (n == 0) {
      mean = x;
      mad = 0;
    } else {
      const int64_t dev = x > mean ? x - mean : mean - x;
      mean += (x - mean) / 8;
      mad += (dev - mad) / 8;
    }
    c.mean_ns.store(uint64_t(mean), std::memory_order_relaxed);
    c.mad_ns.store(uint64_t(mad), std::memory_order_relaxed);
    if (n < kMinSamples) c.samples.store(n + 1, std::memory_order_relaxed);
  }
  /// How many samples the cell has taken, counted up to kMinSamples (then it
  /// stops counting). Any thread; racy like the cell (tests, diagnostics).
  uint32_t samples(uint32_t kind) const noexcept {
    return kind < kCells ? cells_[kind].samples.load(std::memory_order_relaxed) : 0;
  }
  /// The cost estimate (ns: mean + mean absolute deviation) if the cell is
  /// trusted (kMinSamples samples taken); nullopt if not.
  std::optional<uint64_t> trusted(uint32_t kind) const noexcept {
    if (kind >= kCells) return std::nullopt;
    const Cell& c = cells_[kind];
    if (c.samples.load(std::memory_order_relaxed) < kMinSamples) return std::nullopt;
    return c.mean_ns.load(std::memory_order_relaxed) + c.mad_ns.load(std::memory_order_relaxed);
  }

 private:
  struct Cell {
    std::atomic<uint64_t> mean_ns{0};
    std::atomic<uint64_t> mad_ns{0};
    std::atomic<uint32_t> samples{0};
  };
  Cell cells_[kCells];
};

/// The cost of moving one group to a recruited sibling, beyond its work:
/// the recipient's cell, inbox and state, and the mail, are cold there, and
/// its reply crosses back. The value is the burst bench's fan-out (width
/// 512, zero-work handlers, 2 workers): the extra time of a round with a
/// recruited sibling over one without, divided by the groups it moved (the
/// run: docs/perf/history/).
inline constexpr uint64_t kGroupMoveNs = 250;

/// Recruitment target K (workers, the producer's included) for a flush
/// whose fresh groups carry `total` ns of work, the largest `max_group` ns:
/// round(total / max_group) clamped to [1, min(groups, workers)] (a group is
/// drained by one worker, so the fattest group bounds the makespan: more
/// workers than total / max_group would find nothing to claim); then 1
/// unless the gain pays for the wakes and the moves: with K workers the
/// makespan shrinks by (K-1)/K of the work, and the (K-1)/K of the groups
/// the siblings take each cost `move_ns` more (kGroupMoveNs), so recruit
/// iff (K-1)/K * (total - groups * move_ns) > wake_ns, the wake break-even
/// (calibrate/handoff.hpp: two hand-offs). The left side grows with K, so
/// when the largest K fails no smaller one passes. Pure.
inline uint32_t recruit_k(uint64_t total, uint64_t max_group, uint32_t groups, uint32_t workers, uint64_t wake_ns,
                          uint64_t move_ns = kGroupMoveNs) noexcept {
  if (total <= wake_ns || max_group == 0) return 1;
  const uint64_t raw = (total + max_group / 2) / max_group;
  uint64_t ceiling = groups < workers ? groups : workers;
  if (ceiling == 0) ceiling = 1;
  const uint64_t k = raw < 1 ? 1 : (raw > ceiling ? ceiling : raw);
  if (k == 1) return 1;
  const uint64_t moves = uint64_t(groups) * move_ns;
  if (total <= moves || (k - 1) * (total - moves) <= k * wake_ns) return 1;
  return uint32_t(k);
}

}  // namespace coact::detail
