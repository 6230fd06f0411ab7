// coact/causal/handler_fast_path.hpp: the inline fast path of the handler
// hooks during a sweep (hooks.hpp on_handler_enter / on_handler_exit), for
// the common handler run: its region is not being sped up and the run is
// not one of the sampled (timed) ones.
//
// Provides (namespace detail; a program never calls these):
//   * FastEntry: one entry of the calling thread's handler-region cache,
//     keyed by (actor type, message kind): the region id, the sampling
//     countdown, the region's completion point (the entry's validity mark:
//     a completion point counts its region's visits, region_table.cpp
//     set_completion_handlers, so no hook visits it), and the thread's visit
//     counter and live-slot state word;
//   * FastThread t_fast: that cache and `gate`, the cache itself while the
//     fast path may run, else g_gate_closed_cache (entries all empty);
//   * g_live_slot_word: the live slot state of the region that is live now
//     (selected with speedup s > 0; region | kSlotUntimed), else 0 — a mirror
//     of the selection word (selection.cpp), so that the fast path tests liveness
//     with one compare against its entry's slot_word;
//   * fast_enter / fast_exit_entry (fast_exit: the same by keys): the fast
//     path. Each refuses (null, false) when the run needs the general path
//     (handler_sampling.cpp enter_handler_slow / exit_handler_slow), having changed
//     nothing, but for a fast enter that opened the slot and then found the
//     region live (the general enter closes it again). fast_enter returns
//     the entry it opened, which the runtime keeps across the handler call
//     (hooks.hpp on_handler_exit's token), so the exit needs no cache
//     look-up, no key compare and no thread-local access;
//   * g_fast_general: the token of an enter that took the general path
//     (fast_exit_entry refuses it).
//
// What a fast run does: its enter finds a nonzero countdown in the entry of
// (type, kind) in the cache the gate points at, opens the thread's live slot
// untimed (one release store of region | kSlotUntimed, which is also the fast
// frame itself: no TSC read, no region-stack frame), then tests the live word
// and refuses if the region is live. Its exit finds the slot still holding
// exactly region | kSlotUntimed, closes it with one store and counts the
// visit; any other slot state (an experiment claimed the slot, a scope ran
// inside the handler) takes the general path, which adds the run's delay
// from the experiment's start and credits what payers published.
//
// The handshake (why the exit needs no live-word test): begin_experiment
// publishes the live word, calls membarrier(MEMBARRIER_CMD_PRIVATE_
// EXPEDITED) and then claims every slot holding exactly region |
// kSlotUntimed; the fast enter stores its slot, then loads the live word. So
// a run either sees its region live at its enter or has its slot claimed,
// and a slot still holding its word at the exit belongs to a run no
// experiment on its region overlapped. Without membarrier the gate never
// opens and every run takes the general path.
//
// The gate (what keeps the fast path off the region stack): t_fast.gate is
// t_fast.cache only while the region stack is empty, no sampled fast frame
// is open and the slot and counter block are taken; otherwise it is
// g_gate_closed_cache, whose entries are all empty, so fast_enter refuses.
// Every general-path entry point of the region files first turns an open fast
// frame into an ordinary stack frame (unfast) and finally reopens the gate
// from the stack (settle_gate).
//
// The proof of each rule, step by step, with the cases a skipped exit and a
// run that begins during the membarrier make: docs/design/fast-path-handshake.md.
//
// Threads: t_fast is touched only by its own thread (and read by that
// thread's signal handler); a slot's state word also by payers (live_accrual.cpp).
// g_live_slot_word is written by begin_experiment / end_experiment (release)
// and read by every fast enter and exit (acquire).
// A stale read is the same race as a stale read of the selection word (a
// run that begins or ends within nanoseconds of an experiment's edge counts
// as inside or outside it); it never loses a run that straddles the edge
// (src/detail/region_state.hpp, "Straddlers").
// Blocking: never. Lifetime: thread-local state lives as long as its thread.
#pragma once

#include <atomic>
#include <cstdint>

#include <coact/causal/linkage.hpp>

namespace coact::causal {

class ProgressPoint;

namespace detail {

/// A live slot's state flag: the open segment was opened without a TSC read
/// (its region was not live). src/detail/region_state.hpp LiveSlot.
inline constexpr uint32_t kSlotUntimed = 0x40000000u;
/// A live slot's state flag: the open untimed segment is not a fast untimed
/// frame's (it is a region-stack frame's, or a sampled fast frame's), so the
/// fast exit, which closes only a slot holding exactly region | kSlotUntimed,
/// leaves it to the general path. Payers treat it as kSlotUntimed.
inline constexpr uint32_t kSlotHeld = 0x20000000u;
/// Entries of the per-thread handler-region cache (a power of two).
inline constexpr uint32_t kFastCacheSlots = 64;

/// One cache entry. Written only by its thread: the keys, region, slot and
/// completion by the general path (handler_sampling.cpp) when it (re)fills the entry; the
/// countdown by both paths.
struct FastEntry {
  const void* type;    ///< actor type (key); with `kind`, valid iff `completion` is set
  uint32_t kind;       ///< message kind (key)
  uint32_t slot_word;  ///< region | kSlotUntimed: the live slot state of a fast untimed run
  uint16_t countdown;  ///< untimed runs left before the next sampled one; 0: the next run takes the general path
  uint16_t stride;     ///< the countdown's value when it was set (handler_sampling.cpp: the sample's weight)
  uint32_t region;     ///< the handler region (kNoRegion if the table was full)
  /// The region's handler-completion point (src/detail/region_state.hpp Region::completion),
  /// or a null atomic for kNoRegion; null: the entry is empty.
  const std::atomic<ProgressPoint*>* completion;
  /// This thread's visit counter of the region (its counter block, region_state.hpp
  /// ThreadCounters); null while the thread has none (then `countdown` stays 0).
  uint64_t* visits;
  /// This thread's live slot's state word (set with `visits`): the fast exit
  /// reads it here, with no thread-local access.
  std::atomic<uint32_t>* slot;
  uint64_t pad[2];  ///< 64 bytes: an entry's address is the slot index shifted
};
static_assert(sizeof(FastEntry) == 64, "cache entries are indexed by shifting");

/// The calling thread's fast-path state; see the file comment.
struct FastThread {
  FastEntry cache[kFastCacheSlots];  ///< first: an entry's address is the thread's base plus its offset
  /// See "The gate": `cache` while the fast path may run, else g_gate_closed_cache.
  FastEntry* gate;
};

/// The gate's value while the fast path is refused: a cache whose entries
/// are all empty (countdown 0), so fast_enter refuses before it writes
/// anything. Never written.
COACT_CAUSAL_LOCAL inline constinit FastEntry g_gate_closed_cache[kFastCacheSlots] = {};
/// A state word that matches no fast run's slot word (the slot of
/// g_fast_general, below).
COACT_CAUSAL_LOCAL inline constinit std::atomic<uint32_t> g_gate_closed{kSlotHeld};
/// The token hooks.hpp on_handler_enter returns after a general-path enter:
/// never a cache entry; its slot word matches no slot state, so
/// fast_exit_entry refuses it.
COACT_CAUSAL_LOCAL inline constinit FastEntry g_fast_general{nullptr, 0,       0xFFFFFFFFu,    0, 0, 0,
                                                             nullptr, nullptr, &g_gate_closed, {}};
/// The calling thread's state. constinit: no TLS guard on access. A new
/// thread starts with the gate closed: its first run takes the general path,
/// which takes the slot and counter block and opens the gate (fast_gate.cpp
/// settle_gate).
COACT_CAUSAL_LOCAL_TLS inline constinit thread_local FastThread t_fast{{}, g_gate_closed_cache};
/// The live region's slot state (region | kSlotUntimed; the region selected
/// with s > 0), or 0. See the file comment.
COACT_CAUSAL_LOCAL inline constinit std::atomic<uint32_t> g_live_slot_word{0};

/// The byte offset of (type, kind)'s entry in a cache: slot ((type >> 4) +
/// kind * 0x9E3779B1) mod kFastCacheSlots, times 64, computed as one
/// multiply, one lea and one mask. Cheap on purpose (it runs once per
/// handler run): type_info objects are a few dozen bytes apart, message
/// kinds are small dense integers; the odd multiplier keeps (t, k) and
/// (t + 16, k + 1) apart. A collision costs a refill on the general path,
/// never a wrong region (the entry holds its keys).
inline uint32_t fast_cache_offset(const void* type, uint32_t kind) noexcept {
  static_assert(kFastCacheSlots == 64, "the offset is slot * 64 within 4096 bytes");
  // type * 4 carries (type >> 4) into bits 6..11; its bits 2..5 are masked off.
  const auto t4 = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(type)) * 4u;
  return (kind * (0x9E3779B1u << 6) + t4) & ((kFastCacheSlots - 1) << 6);
}
/// The cache slot of (type, kind) (fast_cache_offset / 64).
inline uint32_t fast_cache_slot(const void* type, uint32_t kind) noexcept { return fast_cache_offset(type, kind) >> 6; }
/// (type, kind)'s entry in the cache at `base`.
inline FastEntry& fast_cache_entry(FastEntry* base, const void* type, uint32_t kind) noexcept {
  return *reinterpret_cast<FastEntry*>(reinterpret_cast<char*>(base) + fast_cache_offset(type, kind));
}

/// Adds 1 to `*p`, a counter that only the calling thread writes and other
/// threads read with relaxed atomic loads (std::atomic_ref). On x86-64 one
/// unlocked `incq` to memory: its store is an aligned 8-byte store, so a
/// reader sees the old value or the new one, never a torn one, and with one
/// writer no increment is lost; GCC compiles the atomic_ref load + store to
/// three instructions. The atomic_ref form elsewhere and under
/// ThreadSanitizer (GCC's __SANITIZE_THREAD__, or the build's COACT_TSAN:
/// TSan must see the write to check the readers).
inline void bump_single_writer(uint64_t* p) noexcept {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(COACT_TSAN)
  asm volatile("incq %0" : "+m"(*p));
#else
  std::atomic_ref<uint64_t> v(*p);
  v.store(v.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
#endif
}

/// Whether `*a` holds `v`, as an acquire load and a compare. On x86-64 one
/// `cmp` with memory (GCC loads an atomic into a register first, then
/// compares: one instruction more on every fast enter and exit). x86 loads
/// are acquire; the asm's memory clobber keeps the compiler from moving
/// memory accesses across it (it is also a compiler fence). The atomic load
/// elsewhere and under ThreadSanitizer (see bump_single_writer).
inline bool load_equals(const std::atomic<uint32_t>* a, uint32_t v) noexcept {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(COACT_TSAN)
  static_assert(sizeof(std::atomic<uint32_t>) == 4 && std::atomic<uint32_t>::is_always_lock_free);
  bool eq;
  asm volatile("cmpl %[v], %[m]" : "=@ccz"(eq) : [m] "m"(*a), [v] "r"(v) : "memory");
  return eq;
#else
  return a->load(std::memory_order_acquire) == v;
#endif
}

/// The fast handler enter (file comment). Calling thread only. Returns the
/// opened fast frame's cache entry (the exit's token: hooks.hpp
/// on_handler_exit), or null: take the general path (nothing was done, or
/// the slot was opened and the region found live: the general enter,
/// handler_sampling.cpp enter_handler_slow, closes it first).
inline FastEntry* fast_enter(const void* type, uint32_t kind) noexcept {
  // The gate is the cache itself: closed, every entry is empty.
  FastEntry& e = fast_cache_entry(t_fast.gate, type, kind);
  // A nonzero countdown implies a filled entry whose region is not kNoRegion
  // and whose `visits` and `slot` are set (handler_sampling.cpp sets it only then).
  // (Tested first, and decremented last: the decrement first, as one `subw`
  // and a branch on its borrow, is one instruction fewer but ran slower;
  // docs/results/sweep-cost-history.md.)
  if (e.countdown == 0 || e.type != type || e.kind != kind) return nullptr;
  const uint32_t word = e.slot_word;
  // The slot before the live word ("The handshake" in the file comment):
  // begin_experiment's scan finds this open slot, or this load finds the
  // region live. The signal fence keeps the compiler from reordering the
  // two; the processor's store-load reordering is begin_experiment's
  // membarrier's business.
  e.slot->store(word, std::memory_order_release);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  // Live: the general path (handler_sampling.cpp enter_handler_slow) closes the slot
  // just opened and times the run. (No call here: a call would keep the
  // keys in callee-saved registers, two more instructions on every
  // dispatch, with or without a sweep.)
  if (load_equals(&g_live_slot_word, word)) [[unlikely]]
    return nullptr;
  --e.countdown;
  return &e;
}

/// The fast handler exit of the fast frame that fast_enter opened on entry
/// `e` (file comment). The slot still holding exactly e's slot word is the
/// whole identity test: only fast_enter stores that word (a stack frame's
/// or a sampled frame's untimed state carries kSlotHeld, a timed one no
/// kSlotUntimed), and every general-path function that turns the open fast
/// frame into a stack frame marks the slot held first (fast_gate.cpp unfast).
/// Calling thread only; false: nothing was done, take the general path.
inline bool fast_exit_entry(FastEntry* e) noexcept {
  // No live-word test: an experiment on the region that began while the run
  // went on claimed the slot at its begin (region_state.hpp, "Straddlers"), so
  // the slot no longer holds e's slot word. acquire: pairs with the
  // claimer's and payers' release (then the general path reads what they
  // published).
  std::atomic<uint32_t>* const slot = e->slot;
  if (!load_equals(slot, e->slot_word)) return false;
  slot->store(0, std::memory_order_relaxed);  // live_accrual.cpp close_segment: a non-live close
  bump_single_writer(e->visits);              // region_total reads it relaxed
  return true;
}

/// The fast handler exit by keys, for a caller that kept no token (file
/// comment; handler_sampling.cpp exit_handler): the open fast frame must be
/// (type, kind)'s. Calling thread only; false: nothing was done.
inline bool fast_exit(const void* type, uint32_t kind) noexcept {
  FastEntry* const base = t_fast.gate;
  if (base != t_fast.cache) return false;
  FastEntry& e = fast_cache_entry(base, type, kind);
  // slot set: a filled entry of a region (kNoRegion's entries have none:
  // testing `completion` here let such an entry reach a null slot).
  if (e.slot == nullptr || e.type != type || e.kind != kind) return false;
  return fast_exit_entry(&e);
}

}  // namespace detail
}  // namespace coact::causal
