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
  uint32_t next_id = 1;  // guarded by mu
  std::unordered_map<HandlerKey, uint32_t, HandlerKeyHash> handlers;  // guarded by mu
  std::unordered_map<std::string, uint32_t> scopes;                  // guarded by mu
  std::unordered_map<std::string, uint32_t> lines;                   // guarded by mu
  std::vector<std::string> completion_filter;                        // guarded by mu
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
  std::vector<CompletionLink> completion_links;                            // guarded by mu
  std::unordered_map<const ProgressPoint*, uint64_t> completion_counted;  // guarded by mu
  bool warned_full = false;                                          // guarded by mu
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

// Registers a region under r.mu. Returns kNoRegion if the table is full.
uint32_t add_region_locked(Registry& r, RegionKind kind, std::string name) {
  if (r.next_id >= kMaxRegions) {
    if (!r.warned_full) {
      r.warned_full = true;
      std::fprintf(stderr, "coact causal: region table full (%u regions); '%s' and later regions are not tracked\n",
                   kMaxRegions - 1, name.c_str());
    }
    return kNoRegion;
  }
  auto* reg = new Region{r.next_id, kind, std::move(name)};
  if (kind == RegionKind::handler && matches_any(reg->name, r.completion_filter)) {
    ProgressPoint* p = handler_completion_point(reg->name);
    reg->completion.store(p, std::memory_order_release);
    r.completion_links.push_back({p, r.next_id, 0});  // a new region has no visits yet
  }
  g_table[r.next_id].store(reg, std::memory_order_release);
  return r.next_id++;
}

std::string demangle(const void* type_info_ptr) {
  if (type_info_ptr == nullptr) return "?";
  const char* mangled = static_cast<const std::type_info*>(type_info_ptr)->name();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> p(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && p ? std::string(p.get()) : std::string(mangled);
}

std::string handler_region_name(const void* actor_type, uint32_t kind) {
  std::string msg;
  if (auto* namer = detail::kind_namer()) {
    msg = namer(kind);
  } else {
    msg = "kind#" + std::to_string(kind);
  }
  return demangle(actor_type) + "::on(" + msg + ")";
}

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
  uint64_t seg_start;   // timed frames: TSC at which the current running segment began
  uint64_t acc;         // timed frames: exclusive cycles accumulated in earlier segments
  const void* type;     // handler frames: actor type; scope frames: null
  uint32_t kind;        // handler frames: message kind
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
using detail::t_fast;
using detail::g_gate_closed_cache;
// The completion "point" of cache entries whose region is kNoRegion.
constinit const std::atomic<ProgressPoint*> g_no_completion{nullptr};

// Per-thread counter block (below); declared here for the cached pointer.
struct ThreadCounters;

struct ThreadRegions {
  uint32_t depth;       // frames on the stack (an open fast frame is not among them: its slot state)
  uint32_t slot_plus1;  // 0: no live slot taken yet; kNoSlot: none was free; else slot index + 1
  LiveSlot* slot;             // &g_slots[slot_plus1 - 1] once taken
  ThreadCounters* counters;   // this thread's counter block once allocated
  uint32_t rng;               // sampling stride jitter (xorshift32)
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

long membarrier_call(int cmd) noexcept { return syscall(SYS_membarrier, cmd, 0, 0); }

// Registers the process for the expedited membarrier (once; any thread).
void register_fast_frames() noexcept {
  if (g_fast_frames.load(std::memory_order_acquire) != 0) return;
  const bool ok = membarrier_call(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  int expected = 0;
  if (g_fast_frames.compare_exchange_strong(expected, ok ? 1 : 2, std::memory_order_acq_rel) && !ok) {
    std::fprintf(stderr,
                 "coact causal: membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) failed; every handler run "
                 "takes the general path (a sweep costs more per message, its results are unchanged)\n");
  }
}

// After publishing the live word: every thread's fast-enter slot store
// before its own barrier point is visible on return (see the header). False
// if the call failed (retried once after registering again): no gate opens
// from then on (an open one closes at its thread's next general path, a
// sampled run at the latest, within ~191 runs), and the caller claims what
// it can see; a fast frame whose store it cannot see may then close
// without its straddling part, until the gates are closed.
bool heavy_fence() noexcept {
  if (g_fast_frames.load(std::memory_order_acquire) != 1) return false;
  if (membarrier_call(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return true;
  if (membarrier_call(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
      membarrier_call(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
    return true;
  }
  g_fast_frames.store(2, std::memory_order_release);
  return false;
}

LiveSlot* take_live_slot(ThreadRegions& t) noexcept {
  if (t.slot_plus1 == 0) {
    register_fast_frames();  // before the first gate can open (settle_gate)
    const uint32_t i = g_slots_used.fetch_add(1, std::memory_order_relaxed);
    if (i < kMaxLiveSlots) {
      t.slot_plus1 = i + 1;
      t.slot = &g_slots[i];
    } else {
      g_slots_used.fetch_sub(1, std::memory_order_relaxed);
      t.slot_plus1 = kNoSlot;
    }
  }
  return t.slot;
}
inline LiveSlot* live_slot(ThreadRegions& t) noexcept {
  if (t.slot != nullptr) [[likely]]
    return t.slot;
  return take_live_slot(t);
}

// Opens the running segment of `region` on this thread (step 4): timed at
// `now` if the region is live, else untimed (no TSC read).
void open_segment(ThreadRegions& t, uint32_t region, uint64_t sel, uint64_t& now) noexcept {
  if (region == kNoRegion) return;
  LiveSlot* s = live_slot(t);
  if (s == nullptr) return;
  if (live_for(sel, region)) {
    s->from.store(tsc(now), std::memory_order_relaxed);
    s->published.store(0, std::memory_order_relaxed);
    s->state.store(region, std::memory_order_release);
  } else {
    s->state.store(region | kUntimed | kHeld, std::memory_order_release);  // a stack frame's: not the fast exit's
  }
}

// Closes this thread's running segment of `region` (step 6); `seg_from`: the
// segment's start if its frame is timed, else 0 (accrued() clamps it to the
// experiment's start). Adds the unpublished tail with add_delay if the region
// is live (reading the TSC only then) and credits (credit_local) what others
// published for it.
void close_segment(ThreadRegions& t, uint32_t region, uint64_t seg_from, uint64_t sel, uint64_t& now) noexcept {
  if (region == kNoRegion) return;
  uint64_t from = seg_from;
  uint64_t published = 0;
  const bool live = live_for(sel, region);
  if (LiveSlot* sp = t.slot) {
    LiveSlot& s = *sp;
    // acquire: if a payer's release put `region` back, its from/published are visible.
    uint32_t st = s.state.load(std::memory_order_acquire);
    if (!live && (st & kBusy) == 0) {
      // Not live (the common case): payers no longer claim this slot, so a
      // plain store closes it (no RMW on the hot path). What end_experiment
      // published for it is visible through the selection word (release
      // after its publications, acquired by our caller). A payer that read
      // an older selection and claims the slot between our load and store
      // loses its release CAS, so it cannot reopen the slot; its publication
      // is then not absorbed and this thread pays it once (overpays by one
      // payer's increment: a race of nanoseconds at an experiment's edge).
      if (st == region) {
        from = std::max(from, s.from.load(std::memory_order_relaxed));
        published = s.published.load(std::memory_order_relaxed);
      }
      s.state.store(kNoRegion, std::memory_order_relaxed);
      st = kNoRegion;
    }
    for (;;) {
      if ((st & kBusy) != 0) {
        cpu_relax();
        st = s.state.load(std::memory_order_acquire);
        continue;
      }
      if (st == kNoRegion) break;
      if (s.state.compare_exchange_weak(st, kNoRegion, std::memory_order_acq_rel, std::memory_order_relaxed)) {
        if (st == region) {
          from = std::max(from, s.from.load(std::memory_order_relaxed));
          published = s.published.load(std::memory_order_relaxed);
        }
        break;
      }
    }
  }
  if (live) {
    const uint64_t tail = accrued(sel, region, from, tsc(now));
    if (tail != 0) add_delay(tail);
  }
  if (published != 0) credit_local(published);
}

// The next sampling stride's countdown (kSampleStrideMin - 1 .. + kSampleStrideJitter - 1).
uint16_t next_countdown(ThreadRegions& t) noexcept {
  uint32_t x = t.rng != 0 ? t.rng : 0x9E3779B9u ^ static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&t));
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  t.rng = x;
  return static_cast<uint16_t>(kSampleStrideMin - 1 + (x & (kSampleStrideJitter - 1)));
}

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

// The calling thread's counter block, allocated (with its live slot) on
// first use; null if no slot was free or calloc failed.
ThreadCounters* counters_of(ThreadRegions& t) noexcept {
  ThreadCounters* c = t.counters;
  if (c == nullptr) [[unlikely]] {
    if (LiveSlot* s = live_slot(t)) {
      const size_t i = static_cast<size_t>(s - g_slots);
      c = static_cast<ThreadCounters*>(std::calloc(1, sizeof(ThreadCounters)));
      if (c != nullptr) g_counters[i].store(c, std::memory_order_release);
      t.counters = c;
    }
  }
  return c;
}

void account(ThreadRegions& t, const Frame& f) noexcept {
  if (f.region == kNoRegion) return;
  Region* r = g_table[f.region].load(std::memory_order_acquire);
  if (r == nullptr) return;
  ThreadCounters* c = counters_of(t);
  const uint64_t cycles = f.acc * f.weight;  // 0 for an untimed frame
  if (c != nullptr) {
    bump(c->visits[f.region], 1);
    if (cycles != 0) bump(c->cycles[f.region], cycles);
  } else {
    r->visits.fetch_add(1, std::memory_order_relaxed);
    r->cycles.fetch_add(cycles, std::memory_order_relaxed);
  }
}

// Completed visits and exclusive cycles of `reg` over every thread.
std::pair<uint64_t, uint64_t> region_total(const Region& reg) noexcept {
  uint64_t v = reg.visits.load(std::memory_order_relaxed);
  uint64_t cy = reg.cycles.load(std::memory_order_relaxed);
  const uint32_t n = std::min(g_slots_used.load(std::memory_order_relaxed), kMaxLiveSlots);
  for (uint32_t i = 0; i < n; ++i) {
    if (const ThreadCounters* c = g_counters[i].load(std::memory_order_acquire)) {
      v += read(c->visits[reg.id]);
      cy += read(c->cycles[reg.id]);
    }
  }
  return {v, cy};
}

// begin_experiment's half of the fast frames' handshake (handler_fast_path.hpp,
// "The handshake"), after its membarrier: every slot holding exactly
// region|kUntimed — a fast frame of `region` begun before the experiment,
// or one whose enter is about to see the region live and close it again —
// is timed from the experiment's start (from = start, published = 0, state =
// region), as a payer times an untimed slot but publishing nothing yet (the
// part since the start is tiny; payers and the owner's close add it). Its
// exit then finds a state other than its word and takes the general close.
// The calling thread's own slot too (a test's thread may begin an
// experiment inside a run): it is credited with what is published for it at
// its close, as any owner. O(slots in use); never blocks but on a slot held
// busy by a payer, which it skips (that slot is already being timed).
void claim_fast_frames(uint32_t region) noexcept {
  const uint64_t sel = g_selection.load(std::memory_order_acquire);
  const uint64_t start = g_experiment_start_cycles.load(std::memory_order_relaxed);
  const uint32_t n = std::min(g_slots_used.load(std::memory_order_acquire), kMaxLiveSlots);
  for (uint32_t i = 0; i < n; ++i) {
    LiveSlot& s = g_slots[i];
    uint32_t st = region | kUntimed;
    if (!s.state.compare_exchange_strong(st, region | kBusy, std::memory_order_acquire, std::memory_order_relaxed)) {
      continue;  // no fast frame of the region (or the owner closed it meanwhile)
    }
    if (g_selection.load(std::memory_order_acquire) != sel) {
      // Another experiment began since (only a caller racing begin_experiment
      // with itself): give the slot back untouched, that one claims it.
      uint32_t busy = region | kBusy;
      (void)s.state.compare_exchange_strong(busy, region | kUntimed, std::memory_order_release,
                                            std::memory_order_relaxed);
      continue;
    }
    s.from.store(start, std::memory_order_relaxed);
    s.published.store(0, std::memory_order_relaxed);
    uint32_t busy = region | kBusy;  // a CAS: the owner's fast exit may have closed it meanwhile
    (void)s.state.compare_exchange_strong(busy, region, std::memory_order_release, std::memory_order_relaxed);
  }
}

// ---- the fast path's gate (handler_fast_path.hpp, "The gate") -------------------

// The region of the open fast frame (untimed or sampled), else kNoRegion:
// the stack is empty and the slot holds a segment (with an empty stack every
// open segment is a fast frame's: the general path closes the slot when it
// pops the last frame). Async-signal-safe (reads the thread's own state).
inline uint32_t fast_frame_region() noexcept {
  const ThreadRegions& t = t_regions;
  if (t.depth != 0 || t.slot == nullptr) return kNoRegion;
  return t.slot->state.load(std::memory_order_relaxed) & ~kSlotFlags;
}

// Turns an open fast frame into an ordinary stack frame (untimed, alone on
// the stack: the fast enter requires an empty stack), marks its slot held
// (so that a fast exit with the frame's token leaves it to the general
// path) and closes the gate. Every general-path function that reads or
// changes the stack calls it first. The slot needs nothing else: the fast
// enter opened it as open_segment opens a non-live segment, and payers read
// region|kUntimed|kHeld as region|kUntimed.
void unfast(ThreadRegions& t) noexcept {
  t_fast.gate = g_gate_closed_cache;
  if (t.depth != 0 || t.slot == nullptr) return;
  std::atomic<uint32_t>* const g = &t.slot->state;
  const uint32_t region = g->load(std::memory_order_acquire) & ~kSlotFlags;
  if (region != kNoRegion) {
    if (t.sampled_open) {
      const FastEntry& c = *t.sample_entry;
      t.frames[0] = Frame{c.region, t.sample_weight, t.sample_start, 0, c.type, c.kind, true, true};
    } else {
      // The entry holding the region (one at most: a region has one key,
      // and a key one cache slot).
      const FastEntry* e = nullptr;
      for (const FastEntry& c : t_fast.cache) {
        if (c.completion != nullptr && c.region == region) e = &c;
      }
      t.frames[0] = Frame{region, 0, 0, 0, e != nullptr ? e->type : nullptr, e != nullptr ? e->kind : 0, true, false};
      // Held: only a slot state of exactly region|kUntimed is the fast
      // exit's. A payer may hold the slot busy meanwhile (then it leaves a
      // timed state, or gives back the untimed one: mark that).
      uint32_t st = g->load(std::memory_order_acquire);
      while ((st & kBusy) != 0 || st == (region | kUntimed)) {
        if ((st & kBusy) != 0) {
          cpu_relax();
          st = g->load(std::memory_order_acquire);
        } else if (g->compare_exchange_weak(st, region | kUntimed | kHeld, std::memory_order_acq_rel,
                                            std::memory_order_acquire)) {
          break;
        }
      }
    }
    // The frame before the depth: the signal handler reads the slot while
    // the depth is 0, the frame after.
    std::atomic_signal_fence(std::memory_order_release);
    t.depth = 1;
  }
  t.sampled_open = false;
}

// Opens the gate again if the stack is empty and the slot and counter block
// are taken (the slot is then closed: its last segment was closed); else
// keeps the fast path off. Every general-path function that called unfast
// calls it last.
inline void settle_gate(const ThreadRegions& t) noexcept {
  const bool ok = t.depth == 0 && t.slot != nullptr && t.counters != nullptr &&
                  g_fast_frames.load(std::memory_order_relaxed) == 1;
  t_fast.gate = ok ? t_fast.cache : g_gate_closed_cache;
}

}  // namespace

std::string_view to_string(RegionKind kind) noexcept {
  switch (kind) {
    case RegionKind::handler: return "handler";
    case RegionKind::line: return "line";
    case RegionKind::scope: break;
  }
  return "scope";
}

uint32_t handler_region(const void* actor_type, uint32_t kind) noexcept {
  try {
    Registry& r = registry();
    const HandlerKey key{actor_type, kind};
    {
      std::lock_guard lk(r.mu);
      if (auto it = r.handlers.find(key); it != r.handlers.end()) return it->second;
    }
    // Name outside the lock: the namer takes the runtime's own lock.
    std::string name = handler_region_name(actor_type, kind);
    std::lock_guard lk(r.mu);
    if (auto it = r.handlers.find(key); it != r.handlers.end()) return it->second;
    const uint32_t id = add_region_locked(r, RegionKind::handler, std::move(name));
    r.handlers.emplace(key, id);
    return id;
  } catch (...) {
    return kNoRegion;
  }
}

uint32_t scope_region(std::string_view name) noexcept {
  try {
    Registry& r = registry();
    std::lock_guard lk(r.mu);
    std::string key(name);
    if (auto it = r.scopes.find(key); it != r.scopes.end()) return it->second;
    const uint32_t id = add_region_locked(r, RegionKind::scope, key);
    r.scopes.emplace(std::move(key), id);
    return id;
  } catch (...) {
    return kNoRegion;
  }
}

uint32_t line_region(std::string_view name) noexcept {
  try {
    Registry& r = registry();
    std::lock_guard lk(r.mu);
    std::string key(name);
    if (auto it = r.lines.find(key); it != r.lines.end()) return it->second;
    const uint32_t id = add_region_locked(r, RegionKind::line, key);
    r.lines.emplace(std::move(key), id);
    return id;
  } catch (...) {
    return kNoRegion;
  }
}

const std::string& region_name(uint32_t id) noexcept {
  static const std::string* const empty = new std::string;
  if (id == kNoRegion || id >= kMaxRegions) return *empty;
  Region* r = g_table[id].load(std::memory_order_acquire);
  return r != nullptr ? r->name : *empty;
}

RegionStats region_stats(uint32_t id) {
  if (id == kNoRegion || id >= kMaxRegions) return {};
  Region* reg = g_table[id].load(std::memory_order_acquire);
  if (reg == nullptr) return {};
  const auto [v, cy] = region_total(*reg);
  return RegionStats{reg->id, reg->kind, reg->name, v, cy};
}

std::optional<uint32_t> find_region(std::string_view name) {
  Registry& r = registry();
  uint32_t n;
  {
    std::lock_guard lk(r.mu);
    n = r.next_id;
  }
  for (uint32_t id = 1; id < n; ++id) {
    Region* reg = g_table[id].load(std::memory_order_acquire);
    if (reg != nullptr && reg->name == name) return id;
  }
  return std::nullopt;
}

bool matches_any(std::string_view name, const std::vector<std::string>& entries) noexcept {
  return std::any_of(entries.begin(), entries.end(),
                     [&](const std::string& e) { return !e.empty() && name.find(e) != std::string_view::npos; });
}

std::vector<RegionStats> region_snapshot() {
  Registry& r = registry();
  uint32_t n;
  {
    std::lock_guard lk(r.mu);
    n = r.next_id;
  }
  std::vector<RegionStats> out;
  out.reserve(n);
  for (uint32_t id = 1; id < n; ++id) {
    Region* reg = g_table[id].load(std::memory_order_acquire);
    if (reg == nullptr) continue;
    const auto [v, cy] = region_total(*reg);
    out.push_back(RegionStats{reg->id, reg->kind, reg->name, v, cy});
  }
  return out;
}

void set_completion_handlers(std::vector<std::string> substrings) {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  r.completion_filter = std::move(substrings);
  // Detach: each point keeps what its regions counted while attached.
  for (const Registry::CompletionLink& l : r.completion_links) {
    if (Region* reg = g_table[l.region].load(std::memory_order_acquire)) {
      r.completion_counted[l.point] += region_total(*reg).first - l.base;
    }
  }
  r.completion_links.clear();
  for (uint32_t id = 1; id < r.next_id; ++id) {
    Region* reg = g_table[id].load(std::memory_order_acquire);
    if (reg == nullptr || reg->kind != RegionKind::handler) continue;
    ProgressPoint* p = matches_any(reg->name, r.completion_filter) ? handler_completion_point(reg->name) : nullptr;
    reg->completion.store(p, std::memory_order_release);
    if (p != nullptr) r.completion_links.push_back({p, id, region_total(*reg).first});
  }
}

namespace detail {
uint64_t handler_completion_visits(const ProgressPoint* p) noexcept {
  try {
    Registry& r = registry();
    std::lock_guard lk(r.mu);
    uint64_t n = 0;
    if (auto it = r.completion_counted.find(p); it != r.completion_counted.end()) n = it->second;
    for (const Registry::CompletionLink& l : r.completion_links) {
      if (l.point != p) continue;
      if (Region* reg = g_table[l.region].load(std::memory_order_acquire)) n += region_total(*reg).first - l.base;
    }
    return n;
  } catch (...) {
    return 0;  // the mutex could not be locked (std::system_error): nothing counted
  }
}
}  // namespace detail

namespace {
// See detail::set_begin_experiment_hook. Written at sweep set-up, read by begin_experiment.
std::atomic<void (*)(const Selection&) noexcept> g_begin_experiment_hook{nullptr};
}  // namespace

void begin_experiment(uint32_t region, uint32_t speedup_pct) noexcept {
  const uint32_t epoch = sel_epoch(g_selection.load(std::memory_order_relaxed)) + 1;
  g_experiment_start_cycles.store(calibrate::now_cycles(), std::memory_order_relaxed);
  const uint32_t r = region < kMaxRegions ? region : kNoRegion;
  const uint32_t pct = std::min<uint32_t>(speedup_pct, 100);
  g_selection.store(pack(epoch, r, pct), std::memory_order_release);
  // The fast path's mirror (handler_fast_path.hpp), after the word: a fast
  // path that sees the region live also sees the experiment it belongs to.
  detail::g_live_slot_word.store(pct != 0 && r != kNoRegion ? r | kUntimed : 0, std::memory_order_seq_cst);
  // The handshake (handler_fast_path.hpp): then every fast frame of the
  // region that began before this experiment is found and timed from its
  // start (a line region has no fast frames: nothing to find).
  const Region* reg = r != kNoRegion ? g_table[r].load(std::memory_order_acquire) : nullptr;
  if (pct != 0 && reg != nullptr && reg->kind == RegionKind::handler) {
    (void)heavy_fence();
    claim_fast_frames(r);
  }
  if (auto hook = g_begin_experiment_hook.load(std::memory_order_acquire)) hook(Selection{r, pct, epoch});
}

namespace {
// See detail::set_end_experiment_hook. Written at sweep set-up, read by end_experiment.
std::atomic<void (*)() noexcept> g_end_experiment_hook{nullptr};
}  // namespace

void end_experiment() noexcept {
  if (auto hook = g_end_experiment_hook.load(std::memory_order_acquire)) hook();
  // Publish what the selected region ran up to now (step 5): its owners'
  // segments may end after the selection is cleared, and would add nothing.
  (void)detail::materialize_live();
  const uint32_t epoch = sel_epoch(g_selection.load(std::memory_order_relaxed));
  g_selection.store(pack(epoch, kNoRegion, 0), std::memory_order_release);
  detail::g_live_slot_word.store(0, std::memory_order_release);
}

Selection current_selection() noexcept {
  const uint64_t w = g_selection.load(std::memory_order_acquire);
  return Selection{sel_region(w), sel_pct(w), sel_epoch(w)};
}

namespace detail {

uint64_t materialize_live() noexcept {
  const uint64_t sel = g_selection.load(std::memory_order_acquire);
  const uint32_t region = sel_region(sel);
  if (region == kNoRegion || sel_pct(sel) == 0) return 0;
  const uint32_t n = std::min(g_slots_used.load(std::memory_order_relaxed), kMaxLiveSlots);
  const uint32_t own = t_regions.slot_plus1;  // a thread never publishes for itself
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    LiveSlot& s = g_slots[i];
    uint32_t st = s.state.load(std::memory_order_relaxed);
    if (i + 1 == own || (st & ~(kUntimed | kHeld)) != region) continue;  // (a busy slot has kBusy: skipped)
    // Exactly region|kUntimed: a fast enter's slot after begin_experiment
    // claimed the fast frames, so one whose enter is about to see the
    // region live and close it (a run begun inside the experiment, whose
    // time an untimed claim would count from the experiment's start).
    if (st == (region | kUntimed)) continue;
    if (!s.state.compare_exchange_strong(st, region | kBusy, std::memory_order_acquire, std::memory_order_relaxed)) {
      continue;  // the owner closed or moved on: it adds that part itself
    }
    if (g_selection.load(std::memory_order_acquire) != sel) {
      // Another experiment began since `sel` was read: give the slot back as it was.
      uint32_t busy = region | kBusy;
      (void)s.state.compare_exchange_strong(busy, st, std::memory_order_release, std::memory_order_relaxed);
      continue;
    }
    const bool untimed = (st & kUntimed) != 0;
    const uint64_t now = calibrate::now_cycles();
    const uint64_t from = untimed ? 0 : s.from.load(std::memory_order_relaxed);
    const uint64_t before = untimed ? 0 : s.published.load(std::memory_order_relaxed);
    const uint64_t x = accrued(sel, region, from, now);
    if (x != 0) {
      add_global_delay(x);
      total += x;
    }
    s.published.store(before + x, std::memory_order_relaxed);
    s.from.store(std::max(from, now), std::memory_order_relaxed);
    uint32_t busy = region | kBusy;  // a CAS, not a store: the owner may have closed the slot meanwhile (close_segment)
    (void)s.state.compare_exchange_strong(busy, region, std::memory_order_release, std::memory_order_relaxed);
  }
  return total;
}

namespace {
// Pushes a frame of `id` under selection `sel`. `weight`: what the frame's
// time stands for if the region is not live (0: untimed); a live region is
// always timed exactly (weight 1). Reads the TSC only if this frame or the
// one it pauses is timed or live.
int push_frame(ThreadRegions& t, uint32_t id, const void* type, uint32_t kind, bool handler, uint32_t weight,
               uint64_t sel) noexcept {
  if (t.depth >= kMaxRegionDepth) return -1;
  if (live_for(sel, id)) weight = 1;
  uint64_t now = 0;
  if (t.depth > 0) {
    Frame& below = t.frames[t.depth - 1];
    if (below.weight != 0) below.acc += tsc(now) - below.seg_start;
    close_segment(t, below.region, below.weight != 0 ? below.seg_start : 0, sel, now);
  }
  t.frames[t.depth] = Frame{id, weight, weight != 0 ? tsc(now) : 0, 0, type, kind, handler, false};
  open_segment(t, id, sel, now);
  return static_cast<int>(t.depth++);
}

// Pops the frame at `index` if it still holds `id` (see pop_region); the
// popped frame is copied to `out`. Returns whether it was popped.
bool pop_frame(ThreadRegions& t, uint32_t id, int index, Frame& out) noexcept {
  if (index < 0 || static_cast<uint32_t>(index) >= t.depth) return false;
  Frame f = t.frames[index];
  if (f.region != id) return false;
  const uint64_t sel = g_selection.load(std::memory_order_acquire);
  uint64_t now = 0;
  // The running segment is the top frame's (f's own unless frames leaked above it).
  const Frame& top = t.frames[t.depth - 1];
  close_segment(t, top.region, top.weight != 0 ? top.seg_start : 0, sel, now);
  if (f.weight != 0) f.acc += tsc(now) - f.seg_start;
  t.depth = static_cast<uint32_t>(index);  // drops leaked frames above, unaccounted
  if (t.depth > 0) {
    Frame& below = t.frames[t.depth - 1];
    if (below.weight != 0) below.seg_start = tsc(now);
    open_segment(t, below.region, sel, now);
  }
  account(t, f);
  out = f;
  return true;
}
}  // namespace

int push_region(uint32_t id) noexcept {
  ThreadRegions& t = t_regions;
  unfast(t);
  const int index = push_frame(t, id, nullptr, 0, false, 1, g_selection.load(std::memory_order_acquire));
  settle_gate(t);
  return index;
}

void pop_region(uint32_t id, int index) noexcept {
  ThreadRegions& t = t_regions;
  unfast(t);
  Frame f;
  (void)pop_frame(t, id, index, f);
  settle_gate(t);
}

namespace {
[[gnu::noinline]] void enter_handler_slow(const void* actor_type, uint32_t kind) noexcept;
[[gnu::noinline]] void exit_handler_slow(const void* actor_type, uint32_t kind) noexcept;
}  // namespace

// The fast paths are handler_fast_path.hpp's (inlined into the runtime's
// hooks); these two are what a test calls without the sweep gate.
void enter_handler(const void* actor_type, uint32_t kind) noexcept {
  if (fast_enter(actor_type, kind) == nullptr) enter_handler_slow(actor_type, kind);
}

void exit_handler(const void* actor_type, uint32_t kind) noexcept {
  if (!fast_exit(actor_type, kind)) exit_handler_slow(actor_type, kind);
}

namespace {
// The out-of-line paths of the handler hooks. *_slow: the sampled fast
// frame, else a tail call of *_general: the general path — a new or
// refilled cache entry, a live run (timed exactly), a stack that is not
// empty (a frame left by a skipped exit, a scope around the hook), a
// thread without a slot or counter block, a sampled run that cannot be a
// fast frame. Out of line so that the hooks' callers set up no frame.
[[gnu::noinline]] void enter_handler_general(const void* actor_type, uint32_t kind) noexcept;
[[gnu::noinline]] void exit_handler_general(const void* actor_type, uint32_t kind) noexcept;

// Closes the fast frame open in the slot as a segment that begins and ends
// now (handler_fast_path.hpp "The handshake": the inline enter opened the
// slot, then found its region live, so the run begins inside the
// experiment): no tail, and what a claim or a payer published for it (both
// count from the experiment's start: at most the membarrier's duration
// early) is credited to this thread. The gate is open, so the stack is empty
// and no sampled frame is open.
void close_refused_fast_frame(ThreadRegions& t) noexcept {
  const uint32_t region = t.slot->state.load(std::memory_order_acquire) & ~kSlotFlags;
  uint64_t now = calibrate::now_cycles();
  close_segment(t, region, now, g_selection.load(std::memory_order_acquire), now);
}

// The sampled fast frame: the run the countdown chose, with the gate open
// (empty stack, slot and counters taken) and its region not live. As the
// fast enter, but the frame is timed: one TSC read here, one at its exit.
// Small on purpose (no register saves): the general path is a tail call.
void enter_handler_slow(const void* actor_type, uint32_t kind) noexcept {
  FastThread& f = t_fast;
  FastEntry& c = f.cache[detail::fast_cache_slot(actor_type, kind)];
  ThreadRegions& t = t_regions;
  // A fast frame open at an enter: the inline enter opened the slot, then
  // found the region live (or, from a caller that skipped an exit, a stale
  // frame). With the gate open nothing else can be in the slot.
  if (f.gate == f.cache && t.slot->state.load(std::memory_order_relaxed) != kNoRegion) [[unlikely]] {
    close_refused_fast_frame(t);
  }
  // The gate open (empty stack, slot and counters taken) and no fast frame open.
  if (f.gate == f.cache && t.slot->state.load(std::memory_order_relaxed) == 0 && c.countdown == 0 &&
      c.visits != nullptr && c.type == actor_type && c.kind == kind &&
      detail::g_live_slot_word.load(std::memory_order_acquire) != c.slot_word) {
    t.sample_entry = &c;
    t.sample_weight = uint32_t{c.stride} + 1;
    t.sampled_open = true;
    t.sample_start = calibrate::now_cycles();
    // Closed while the sampled frame is open: no inline fast enter may
    // overwrite its slot (its exit opens the gate again).
    f.gate = g_gate_closed_cache;
    t.slot->state.store(c.slot_word | kHeld, std::memory_order_release);  // as open_segment, not live
    return;
  }
  enter_handler_general(actor_type, kind);
}

// The sampled fast frame's exit, under the fast exit's conditions (the
// region still not live, no payer touched the slot): as pop_frame and
// account for a lone untimed-slot frame, with one TSC read.
void exit_handler_slow(const void* actor_type, uint32_t kind) noexcept {
  FastThread& f = t_fast;
  ThreadRegions& t = t_regions;
  if (t.sampled_open) {  // then the stack is empty (unfast clears sampled_open)
    FastEntry& c = *t.sample_entry;
    if (c.type == actor_type && c.kind == kind &&
        detail::g_live_slot_word.load(std::memory_order_acquire) != c.slot_word &&
        t.slot->state.load(std::memory_order_acquire) == (c.slot_word | kHeld)) {
      const uint64_t acc = calibrate::now_cycles() - t.sample_start;
      t.sampled_open = false;
      t.slot->state.store(kNoRegion, std::memory_order_relaxed);  // close_segment's non-live close
      f.gate = f.cache;  // enter_handler_slow found it open
      bump(*c.visits, 1);
      bump(t.counters->cycles[c.region], acc * t.sample_weight);
      // The next sample: after a run of kExactCycles or more the next run
      // (weight 1), else after a jittered stride of untimed runs.
      c.stride = c.countdown = acc >= kExactCycles ? 0 : next_countdown(t);
      return;
    }
  }
  exit_handler_general(actor_type, kind);
}

void enter_handler_general(const void* actor_type, uint32_t kind) noexcept {
  ThreadRegions& t = t_regions;
  FastEntry& c = t_fast.cache[detail::fast_cache_slot(actor_type, kind)];
  const uint64_t sel = g_selection.load(std::memory_order_acquire);
  unfast(t);  // an open fast frame here is one whose exit was skipped: dropped below
  // Drop a handler frame left by an exit the gate skipped (step 3).
  for (uint32_t i = 0; i < t.depth; ++i) {
    if (t.frames[i].handler) {
      uint64_t now = 0;
      const Frame& top = t.frames[t.depth - 1];
      close_segment(t, top.region, top.weight != 0 ? top.seg_start : 0, sel, now);
      t.depth = i;
      if (t.depth > 0) {  // the frame below runs again (push_frame pauses it at once)
        Frame& below = t.frames[t.depth - 1];
        if (below.weight != 0) below.seg_start = tsc(now);
        open_segment(t, below.region, sel, now);
      }
      break;
    }
  }
  if (c.completion == nullptr || c.type != actor_type || c.kind != kind) {
    const uint32_t region = handler_region(actor_type, kind);
    Region* r = region != kNoRegion ? g_table[region].load(std::memory_order_acquire) : nullptr;
    const uint32_t id = r != nullptr ? region : kNoRegion;
    ThreadCounters* counters = id != kNoRegion ? counters_of(t) : nullptr;
    c = FastEntry{actor_type, kind, id | kUntimed, 0, 0, id, r != nullptr ? &r->completion : &g_no_completion,
                  counters != nullptr ? &counters->visits[id] : nullptr,
                  counters != nullptr ? &t.slot->state : nullptr, {}};
  }
  // Sampling (see kSampleStrideMin): a live region is timed exactly and
  // leaves the countdown alone; a countdown of 0 makes this run the sample,
  // standing for itself and the `stride` untimed runs before it.
  uint32_t weight = 0;
  bool sampled = false;
  if (live_for(sel, c.region)) {
    weight = 1;
  } else if (c.countdown == 0) {
    weight = uint32_t{c.stride} + 1;
    sampled = true;
  } else {
    --c.countdown;  // an untimed run that could not take the fast path
  }
  const int index = push_frame(t, c.region, actor_type, kind, true, weight, sel);
  if (index >= 0) t.frames[index].sampled = sampled;
  settle_gate(t);
}

void exit_handler_general(const void* actor_type, uint32_t kind) noexcept {
  ThreadRegions& t = t_regions;
  unfast(t);
  for (uint32_t i = t.depth; i-- > 0;) {
    const Frame& f = t.frames[i];
    if (f.handler) {
      if (f.type != actor_type || f.kind != kind) break;
      Frame done;
      if (pop_frame(t, f.region, static_cast<int>(i), done) && done.weight != 0) {
        FastEntry& c = t_fast.cache[detail::fast_cache_slot(actor_type, kind)];
        if (c.completion != nullptr && c.type == actor_type && c.kind == kind && c.visits != nullptr) {
          if (done.sampled) {
            // The next sample: after a run of kExactCycles or more the next
            // run (weight 1), else after a jittered stride of untimed runs.
            c.stride = c.countdown = done.acc >= kExactCycles ? 0 : next_countdown(t);
          } else if (done.acc >= kExactCycles) {
            // A long live run: time the next run too, standing for the
            // untimed runs since the last sample and itself.
            c.stride = static_cast<uint16_t>(c.stride - c.countdown);
            c.countdown = 0;
          }
        }
      }
      break;
    }
  }
  settle_gate(t);
}
}  // namespace

#if COACT_CAUSAL_ENABLED
// The runtime's handler hooks (hooks.hpp) come here when the inline fast
// path refused: straight to the general path.
void hook_handler_enter(const void* actor_type, uint32_t kind) noexcept { enter_handler_slow(actor_type, kind); }
void hook_handler_exit(const void* actor_type, uint32_t kind) noexcept { exit_handler_slow(actor_type, kind); }
#endif

uint32_t region_depth() noexcept {
  const ThreadRegions& t = t_regions;
  return t.depth + (fast_frame_region() != kNoRegion ? 1 : 0);
}

FastFrame fast_frame() noexcept {
  if (fast_frame_region() == kNoRegion) return FastFrame::none;
  return t_regions.sampled_open ? FastFrame::sampled : FastFrame::untimed;
}

void sample_next_handler_run(const void* actor_type, uint32_t kind) noexcept {
  FastEntry& c = t_fast.cache[detail::fast_cache_slot(actor_type, kind)];
  if (c.completion != nullptr && c.type == actor_type && c.kind == kind) c.countdown = c.stride = 0;
}

void reset_regions_in_forked_child() noexcept {
  const uint32_t epoch = sel_epoch(g_selection.load(std::memory_order_relaxed)) + 1;
  g_selection.store(pack(epoch, kNoRegion, 0), std::memory_order_relaxed);
  detail::g_live_slot_word.store(0, std::memory_order_relaxed);
  ThreadRegions& t = t_regions;
  t.depth = 0;
  t.sampled_open = false;
  if (t.slot != nullptr) t.slot->state.store(kNoRegion, std::memory_order_relaxed);
  settle_gate(t);
}

void settle_running_segment() noexcept {
  ThreadRegions& t = t_regions;
  unfast(t);  // the frame stays an ordinary one until its exit (the gate stays closed)
  if (t.depth == 0) return;
  const uint64_t sel = g_selection.load(std::memory_order_acquire);
  Frame& top = t.frames[t.depth - 1];
  uint64_t now = 0;  // read lazily (tsc): only a timed frame or a live region reads it
  if (top.weight != 0) top.acc += tsc(now) - top.seg_start;
  close_segment(t, top.region, top.weight != 0 ? top.seg_start : 0, sel, now);
  if (top.weight != 0) top.seg_start = tsc(now);
  open_segment(t, top.region, sel, now);
}

void add_region_counts(uint32_t id, uint64_t visits, uint64_t cycles) noexcept {
  if (id == kNoRegion || id >= kMaxRegions) return;
  if (Region* r = g_table[id].load(std::memory_order_acquire)) {
    r->visits.fetch_add(visits, std::memory_order_relaxed);
    r->cycles.fetch_add(cycles, std::memory_order_relaxed);
  }
}

void set_begin_experiment_hook(void (*hook)(const Selection&) noexcept) noexcept {
  g_begin_experiment_hook.store(hook, std::memory_order_release);
}

void set_end_experiment_hook(void (*hook)() noexcept) noexcept {
  g_end_experiment_hook.store(hook, std::memory_order_release);
}

uint32_t sampled_region() noexcept {
  // An open fast frame first (an empty stack and a segment in the slot):
  // unfast writes the stack frame before it sets the depth, so a signal
  // between the two sees the same region.
  const ThreadRegions& t = t_regions;
  if (const uint32_t r = fast_frame_region(); r != kNoRegion) return r;
  const uint32_t depth = std::min(t.depth, kMaxRegionDepth);
  for (uint32_t i = depth; i-- > 0;) {
    if (t.frames[i].handler) return t.frames[i].region;
  }
  return depth > 0 ? t.frames[depth - 1].region : kNoRegion;
}

}  // namespace detail
}  // namespace coact::causal
