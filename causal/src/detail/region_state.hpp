// Shared state of the region mechanisms: the region table's entries, the
// selection word, the live slots, the per-thread region stack and
// handler-sampling constants, and the declarations of the functions one
// region file defines for another. Included only by region_table.cpp,
// region_stack.cpp, live_accrual.cpp, selection.cpp, fast_gate.cpp and
// handler_sampling.cpp, which compile as ONE unit (causal/CMakeLists.txt,
// unity group "region"): its anonymous-namespace definitions exist once, in
// that unit, and GCC inlines the hooks' paths as it did in one file. The
// protocol they share follows.
//
// The region table, the per-thread region stack, the experiment selection.
//
// Region stack protocol (one stack per thread, touched only by its thread):
//  1. push(id): the frame below (if any) adds the time since its segment
//     started to its accumulated exclusive time (if it is timed); the new
//     frame starts a segment now. The TSC is read only if one of the two
//     frames is timed or live: a scope, a live region (selected, s > 0) or a
//     sampled handler run (see "Handler-run sampling" below).
//  2. pop(id, index): if the frame at `index` no longer holds `id` (it was
//     dropped as stale) nothing happens. Otherwise frames above it (leaked by a
//     missing exit) are dropped unaccounted, the frame adds its last segment,
//     the frame below starts a new segment now, and the frame is accounted:
//     visits += 1, cycles += exclusive time (a handler-completion point
//     reads those visits: set_completion_handlers). Virtual speedup is applied per running segment (steps
//     4-6 below), not here: over a frame's life G grows by s·(its exclusive
//     time since the current experiment began), part of it while it runs.
//  3. Handler frames: the runtime's enter/exit hooks are gated by
//     g_sweep_active, so a sweep can start or stop between a handler's enter
//     and its exit. An exit without a frame is ignored; a handler frame left
//     on the stack by a skipped exit is dropped at the thread's next general
//     handler enter (handlers never nest on a worker; a fast frame left open
//     is overwritten by a fast enter: handler_fast_path.hpp, "The gate").
//  3b. Fast frames (handler_fast_path.hpp): a handler run whose region is
//     not live, begun on a thread whose stack is empty, is kept off the
//     stack: its live slot's state is the frame (the gate, t_fast.gate, is
//     the thread's cache while the stack is empty and no sampled frame is
//     open; the fast enter does not read the slot): region|kUntimed for an untimed
//     run, region|kUntimed|kHeld for a sampled one (entry, start and weight
//     in ThreadRegions, sampled_open). The slot is opened and closed as
//     open_segment / close_segment do for a non-live segment, so payers,
//     begin_experiment and end_experiment cannot tell the difference
//     (they read kHeld as kUntimed; but an untimed fast frame's slot,
//     exactly region|kUntimed, is timed by begin_experiment's claim and
//     left alone by payers: "Straddlers" at LiveSlot). Its exit closes it
//     without the stack only if the slot still holds region|kUntimed
//     exactly (no begin_experiment claimed it, no stack frame: unfast marks
//     the slot kHeld); else (and whenever any other general-
//     path function runs: a scope inside the handler, a timer stamp, a
//     general enter after a skipped exit) unfast first turns it into frames[0]
//     (untimed, or timed from its start with its weight), the general
//     protocol runs on that ordinary frame, and settle_gate reopens the
//     fast path once the stack is empty again.
//
// Live accrual (why: see "Delay is injected while a region runs" below).
//  4. Every thread that runs a region during a sweep owns one LiveSlot (up to
//     kMaxLiveSlots threads; later ones fall back to delay at segment end).
//     The slot names the region of the thread's innermost running frame and
//     `from`, the TSC from which that segment's virtual speedup is not yet in
//     G. Opening a segment (push, or the frame below resuming at a pop) sets
//     the region, and from = now if the region is live (else the slot is
//     "untimed": from is the experiment's start for whoever publishes it,
//     since a segment opened while its region was not live began before any
//     experiment that makes it live); closing it (a push above it, or its
//     pop) clears the region.
//  5. materialize_live(), called by every pay point (hooks.cpp) before it
//     reads its debt and by end_experiment: for each other thread's slot
//     running the selected region with s > 0, G += s·(now − max(from,
//     experiment start)), `published` += that, from = now. So a thread that
//     pays while the selected region is still running pays for the part that
//     has run so far (and keeps paying until it catches up), and a timer
//     popped after a pay point shifts by it: G is the continuous Coz ledger,
//     not a step at the region's end.
//  6. Closing a segment (the owner): G and the owner's L += s·(now −
//     max(from, experiment start)) (add_delay: the unpublished tail), and the
//     owner's L also grows by `published` (credit_local) — delay others put
//     into G on its behalf (add_global_delay), which it must not owe.
//     Whatever else it owes it pays at its next pay point, never inside a
//     region (a wait there would count as the region's running time).
//  Cost of a handler run whose region is not live (the common case, and
//  every run at speedup 0): no TSC read (but for one run in ~128, sampled),
//  no region-stack frame, one store opening the slot untimed and one read of
//  the live word, one load and one store closing it, one visit count (the
//  exit reads no live word: "Straddlers"), all inlined into the runtime's
//  hooks (step 3b; handler_fast_path.hpp). A sampled run takes a short
//  out-of-line path with one TSC read at each end. A sweep at fixed speedup
//  0 keeps the runtime's direct sends (its pay points pay nothing: hooks.hpp
//  pay_point_is_noop); any other sweep buffers sends from its start.
//  `scripts/bench.sh instructions` (sweep_instr_per_msg) measures what this
//  costs per message; docs/results/sweep-cost-history.md keeps its history.
//  A slot is handed between its owner and payers by one atomic state word
//  (the protocol is at LiveSlot), so a slice of running time is published
//  exactly once and the owner never waits except for a payer mid-update.
//
// Delay is injected while a region runs: with delay added only when the
// selected region's frame ends (the earlier semantics), a thread that reaches
// a pay point while the region is still running owes nothing for it yet. In
// fork-join (A = 2 units ∥ B = 1 unit, then join) with A sped up by s > 1/2,
// B finished, paid nothing and joined before A's delay existed, so the join
// waited only for A's real end: predicted speedup s instead of min(s, 1/2),
// and the baseline itself was perturbed. Coz adds delay continuously (every sample of the
// selected line); publishing the running part at each pay point does the
// same at the only instants it can matter: when a thread is about to make
// another runnable, and when a timer is popped (fire_due pays first).
//
// Selection word (g_selection): epoch (32 bits) | region (24) | speedup % (8).
// Written by begin_experiment / end_experiment (release), read by push/pop
// (acquire). g_experiment_start_cycles is stored (relaxed) before the word
// (release), so a reader that sees an epoch sees at least that experiment's
// start (it may see a later one if another experiment began meanwhile; the
// clamp is then tighter, never looser).
#pragma once

#include <coact/causal/region.hpp>
#include <coact/causal/testing.hpp>

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/progress.hpp>

namespace coact::causal {

namespace {

struct Region {
  uint32_t id;
  RegionKind kind;
  std::string name;
  // Cumulative completed runs / exclusive cycles of threads without a
  // counter block (ThreadCounters: more than kMaxLiveSlots threads ran
  // regions). Written by such threads (relaxed fetch_add), read by
  // region_total (relaxed): counters, nothing is published through them.
  std::atomic<uint64_t> visits{0};
  std::atomic<uint64_t> cycles{0};
  // Handler-completion point of this region, or null. Written under the
  // registry's mu by set_completion_handlers / registration (release). No
  // hook reads it (the point counts this region's visits through
  // Registry::completion_links); its address marks filled cache entries
  // (FastEntry::completion).
  std::atomic<ProgressPoint*> completion{nullptr};
};

// Region by id. Slot i is written once (release, under g_mu) when region i is
// registered and never again; read without a lock (acquire) by region_name
// and by every pop. constinit: zero before any dynamic initialiser runs.
constinit std::atomic<Region*> g_table[kMaxRegions] = {};

struct HandlerKey {
  const void* type;
  uint32_t kind;
  bool operator==(const HandlerKey&) const = default;
};
struct HandlerKeyHash {
  size_t operator()(const HandlerKey& k) const noexcept {
    return std::hash<const void*>{}(k.type) ^ (size_t{k.kind} * 0x9E3779B97F4A7C15ull);
  }
};

// The registry proper, guarded by mu. Leaked on purpose: hooks may run during
// static destruction (a worker still dispatching while main returns).
struct Registry {
  std::mutex mu;
  uint32_t next_id = 1;                                               // guarded by mu
  std::unordered_map<HandlerKey, uint32_t, HandlerKeyHash> handlers;  // guarded by mu
  std::unordered_map<std::string, uint32_t> scopes;                   // guarded by mu
  std::unordered_map<std::string, uint32_t> lines;                    // guarded by mu
  std::vector<std::string> completion_filter;                         // guarded by mu
  // Handler-completion points (set_completion_handlers): a point's visits
  // are its regions' completed runs since they were attached to it, plus
  // what earlier attachments counted (`counted`). No hook visits the point:
  // the region's own visit count is the one exact count of completed runs,
  // so the fast exit pays nothing for a progress point (it was a call and a
  // locked add on a shared line per run). Guarded by mu.
  struct CompletionLink {
    const ProgressPoint* point;
    uint32_t region;
    uint64_t base;  // the region's visits when it was attached
  };
  std::vector<CompletionLink> completion_links;                           // guarded by mu
  std::unordered_map<const ProgressPoint*, uint64_t> completion_counted;  // guarded by mu
  bool warned_full = false;                                               // guarded by mu
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// See the file comment. Writers: begin_experiment / end_experiment.
// Readers: push (epoch), pop (all fields), current_selection.
constinit std::atomic<uint64_t> g_selection{0};
// TSC at the start of the current experiment; see the file comment.
constinit std::atomic<uint64_t> g_experiment_start_cycles{0};

constexpr uint64_t pack(uint32_t epoch, uint32_t region, uint32_t pct) {
  return (uint64_t{epoch} << 32) | (uint64_t{region & 0xFFFFFFu} << 8) | (pct & 0xFFu);
}
constexpr uint32_t sel_epoch(uint64_t w) { return static_cast<uint32_t>(w >> 32); }
constexpr uint32_t sel_region(uint64_t w) { return static_cast<uint32_t>((w >> 8) & 0xFFFFFFu); }
constexpr uint32_t sel_pct(uint64_t w) { return static_cast<uint32_t>(w & 0xFFu); }
static_assert(kMaxRegions <= 0xFFFFFFu, "region ids must fit the selection word");

// ---- live accrual (file comment, steps 4-6) ----------------------------------

constexpr uint32_t kMaxLiveSlots = 256;
constexpr uint32_t kNoSlot = UINT32_MAX;

// Slot protocol (lock-free for the owner: one release store to open, one
// CAS or store to close). `state` is kNoRegion (no open segment) or the open
// segment's region, with kUntimed set while `from` and `published` are not
// the segment's (it was opened without a TSC read: its region was not live),
// and kBusy set while a payer publishes for it.
//   owner, open live (the selected region, s > 0):
//                 from = now, published = 0 (relaxed); state = region (release).
//   owner, open otherwise: state = region|kUntimed (release): one store, no
//                 TSC read (with kHeld unless it is a fast untimed frame's:
//                 handler_fast_path.hpp; payers ignore kHeld). If an experiment selects the region while the
//                 segment runs, the segment began before that experiment, so
//                 its unpublished part starts at the experiment's start:
//                 payers and the owner read an untimed slot's `from` as 0,
//                 which accrued() clamps to the start.
//   payer:        CAS state (region or region|kUntimed) -> region|kBusy
//                 (acquire); re-read the selection and give the slot back
//                 untouched if it changed since the payer chose to publish
//                 (a stale payer must not publish for an untimed segment of
//                 a later experiment); else add s·(now − from) to G and to
//                 published (from, published = 0 if it was untimed), from =
//                 now (relaxed); CAS state region|kBusy -> region (release):
//                 the slot is timed from now on. A failed first CAS (the
//                 owner closed or moved on) skips the slot: the owner adds
//                 that part itself.
//   owner, close: if its region is not live (no payer claims it any more), a
//                 plain store (close_segment says why that is safe); else
//                 wait while kBusy, then CAS state -> kNoRegion (acq_rel);
//                 from and published are then the last payer's (synchronised
//                 by its release), or the segment's own if still untimed.
// A payer that read `state` of an earlier segment and wins the CAS on a new
// one of the same region reads that segment's `from`: still consistent.
// Straddlers (why the slot is opened for every segment, not only for live
// ones): a segment opened before an experiment selects its region is live
// at that experiment's start (found by its state), and one that outlives
// its experiment is published up to the end by end_experiment's
// materialize_live before the selection is cleared, and credited by its owner
// at close. (Opening slots only for live segments lost such a segment's delay.)
// A stack frame's untimed segment (region|kUntimed|kHeld) is found by payers
// and end_experiment, and its general close re-reads the selection. A fast
// untimed frame's (exactly region|kUntimed) is found by begin_experiment
// itself: after publishing the selection and a membarrier, claim_fast_frames
// times every such slot of the region from the experiment's start
// (handler_fast_path.hpp, "The handshake": a fast enter either sees its
// region live or has its slot seen by the claim). Hence the fast exit's test
// (the slot still holds exactly region|kUntimed) is exact with no live-word
// read: a fast frame that any experiment on its region overlapped was
// claimed at that experiment's begin, so its state is no longer
// region|kUntimed and the general close adds the tail from the experiment's
// start (still live) or credits what was published up to its end. Only a
// frame no experiment on its region overlapped closes on the fast path, and
// it owes nothing. Payers leave exactly region|kUntimed alone: after the
// claim only a fast enter that is about to see its region live holds it
// (for a few instructions), and that run began inside the experiment.
constexpr uint32_t kBusy = 0x80000000u;
constexpr uint32_t kUntimed = detail::kSlotUntimed;  // handler_fast_path.hpp opens slots with it too
// Set with kUntimed on every untimed segment but a fast untimed frame's (a
// stack frame's, a sampled fast frame's): the fast exit closes only a slot
// holding region|kUntimed exactly. Payers read region|kUntimed|kHeld as
// region|kUntimed.
constexpr uint32_t kHeld = detail::kSlotHeld;
constexpr uint32_t kSlotFlags = kBusy | kUntimed | kHeld;
static_assert(kMaxRegions <= kHeld, "region ids must not reach the slot flags");
struct alignas(64) LiveSlot {
  std::atomic<uint32_t> state{kNoRegion};
  std::atomic<uint64_t> from{0};       // the open segment's unpublished part starts here (TSC)
  std::atomic<uint64_t> published{0};  // delay put into G for the owner since its segment opened
};
constinit LiveSlot g_slots[kMaxLiveSlots] = {};
// Slots handed out so far (a thread takes one on its first segment; never returned).
constinit std::atomic<uint32_t> g_slots_used{0};

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Whether `region` is live under selection word `sel`: selected with s > 0
// (its running time is virtually sped up, so it is timed exactly).
inline bool live_for(uint64_t sel, uint32_t region) noexcept {
  return region != kNoRegion && sel_region(sel) == region && sel_pct(sel) != 0;
}

// s·(now − max(from, experiment start)) for the current selection, if it is
// `region` with s > 0; else 0. Δ < 2^57 cycles (years): Δ·100 does not overflow.
uint64_t accrued(uint64_t sel, uint32_t region, uint64_t from, uint64_t now) noexcept {
  if (!live_for(sel, region)) return 0;
  const uint64_t start = std::max(from, g_experiment_start_cycles.load(std::memory_order_relaxed));
  return now > start ? (now - start) * sel_pct(sel) / 100 : 0;
}

// The TSC, read at most once per hook: `now` is 0 until read.
inline uint64_t tsc(uint64_t& now) noexcept {
  if (now == 0) now = calibrate::now_cycles();
  return now;
}

// ---- per-thread state ------------------------------------------------------

// A frame's running time is measured (timed) when its region is live at
// push, for every scope, and for a sample of the other handler runs (the
// per-thread handler cache below decides). `weight` is how many runs the
// frame's measured exclusive time stands for in the region's cycle total
// (1 for an exact frame; the runs skipped since the last sample + 1 for a
// sampled one); 0: not timed (visits only).
struct Frame {
  uint32_t region;
  uint32_t weight;
  uint64_t seg_start;  // timed frames: TSC at which the current running segment began
  uint64_t acc;        // timed frames: exclusive cycles accumulated in earlier segments
  const void* type;    // handler frames: actor type; scope frames: null
  uint32_t kind;       // handler frames: message kind
  bool handler;
  // A sampled handler run (timed for the cycle estimate, region not live):
  // its end sets when the next run is sampled (exit_handler_slow).
  bool sampled;
};

// Handler-run sampling (the cheap sweep): a handler region that is not live
// is timed once every kSampleStrideMin..kSampleStrideMin+kSampleStrideJitter-1
// runs on a thread
// (a jittered stride, so a periodic pattern of handler costs cannot alias
// with it), and its sample's time is weighted by the runs it stands for:
// an unbiased estimate of the region's exclusive cycles, for the controller's
// time-weighted draw and for region_ns. A run at least kExactCycles long
// (~3 µs; two TSC reads are then < 1% of it) makes the next run timed too,
// so long handlers (the archiver's compressor) stay exact. Visits, progress
// points and virtual speedup (live regions) are always exact.
// The stride (64..191, mean ~128): a sampled run takes the out-of-line enter
// and exit, two TSC reads and the next countdown, so its cost per zero-work
// message falls with the mean stride; at ~128 it is about one instruction.
// The estimate stays unbiased; its spread grows with the square root of the
// stride (~1.4x from 64), which matters only for the time-weighted region draw and the
// profile's region_ns of regions with few runs — and a region that runs for
// long enough to matter either has many runs or runs >= kExactCycles and is
// timed exactly. Predictions use the selected region, timed exactly.
constexpr uint32_t kSampleStrideMin = 64;
constexpr uint32_t kSampleStrideJitter = 128;  // a power of two
static_assert((kSampleStrideJitter & (kSampleStrideJitter - 1)) == 0);
static_assert(kSampleStrideMin - 1 + kSampleStrideJitter - 1 <= 0xFFFF, "countdowns are 16-bit");
constexpr uint64_t kExactCycles = 8192;

// The per-thread handler-region cache (keys, region, sampling countdown) is
// handler_fast_path.hpp's FastEntry, shared with the inline fast path.
using detail::FastEntry;
using detail::FastThread;
using detail::g_gate_closed_cache;
using detail::t_fast;
// The completion "point" of cache entries whose region is kNoRegion.
constinit const std::atomic<ProgressPoint*> g_no_completion{nullptr};

// Per-thread counter block (below); declared here for the cached pointer.
struct ThreadCounters;

struct ThreadRegions {
  uint32_t depth;            // frames on the stack (an open fast frame is not among them: its slot state)
  uint32_t slot_plus1;       // 0: no live slot taken yet; kNoSlot: none was free; else slot index + 1
  LiveSlot* slot;            // &g_slots[slot_plus1 - 1] once taken
  ThreadCounters* counters;  // this thread's counter block once allocated
  uint32_t rng;              // sampling stride jitter (xorshift32)
  // The sampled fast frame (open while sampled_open; its slot holds
  // region|kUntimed|kHeld): its cache entry, the TSC at its enter and the
  // runs it stands for.
  bool sampled_open;
  FastEntry* sample_entry;
  uint64_t sample_start;
  uint32_t sample_weight;
  Frame frames[kMaxRegionDepth];
};
// Touched only by its own thread. constinit: no TLS init guard on access.
constinit thread_local ThreadRegions t_regions{};

// The fast frames' handshake (handler_fast_path.hpp, "The handshake"):
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which needs the process
// registered once (Linux 4.14). g_fast_frames: 0 not tried yet, 1
// registered (settle_gate may open the gate), 2 unavailable (it never
// does: every run takes the general path, which needs no handshake).
constinit std::atomic<int> g_fast_frames{0};

// Per-thread (sharded) visit and cycle counters, one block per live slot
// (the slot index a thread takes on its first segment). Why: a shared
// counter per region is a contended cache line when the same handler runs
// on several workers (its lock-prefixed adds dominated pop_region's
// profile). Each block has one writer
// (its thread: relaxed load + store through std::atomic_ref, no RMW);
// readers sum the blocks (relaxed loads). A block is allocated on its
// thread's first account and never freed (totals are cumulative), 64 KiB
// per thread that ran a region. Plain integers, so that the block comes
// zeroed from calloc: value-initialising 8192 std::atomics one by one took
// milliseconds under ThreadSanitizer, inside the first region a thread timed
// (region_test's s·Δ check against the thread's own clock failed in CI).
struct ThreadCounters {
  uint64_t visits[kMaxRegions];
  uint64_t cycles[kMaxRegions];
};
static_assert(std::is_trivial_v<ThreadCounters>, "allocated zeroed by calloc, never constructed");
// Block of slot i, or null. Written once by slot i's owner (release), read by
// region_total (acquire: the block's zeroed counters are visible).
constinit std::atomic<ThreadCounters*> g_counters[kMaxLiveSlots] = {};

inline void bump(uint64_t& counter, uint64_t x) noexcept {
  std::atomic_ref<uint64_t> c(counter);
  c.store(c.load(std::memory_order_relaxed) + x, std::memory_order_relaxed);  // single writer
}
inline uint64_t read(const uint64_t& counter) noexcept {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(counter)).load(std::memory_order_relaxed);
}

// Defined in one region file, used by another (the definition says what it does).
bool heavy_fence() noexcept;
inline LiveSlot* live_slot(ThreadRegions& t) noexcept;
void open_segment(ThreadRegions& t, uint32_t region, uint64_t sel, uint64_t& now) noexcept;
void close_segment(ThreadRegions& t, uint32_t region, uint64_t seg_from, uint64_t sel, uint64_t& now) noexcept;
ThreadCounters* counters_of(ThreadRegions& t) noexcept;
void account(ThreadRegions& t, const Frame& f) noexcept;
inline uint32_t fast_frame_region() noexcept;
void unfast(ThreadRegions& t) noexcept;
inline void settle_gate(const ThreadRegions& t) noexcept;

}  // namespace

namespace detail {
namespace {
int push_frame(ThreadRegions& t, uint32_t id, const void* type, uint32_t kind, bool handler, uint32_t weight,
               uint64_t sel) noexcept;
bool pop_frame(ThreadRegions& t, uint32_t id, int index, Frame& out) noexcept;
}  // namespace
}  // namespace detail

}  // namespace coact::causal
