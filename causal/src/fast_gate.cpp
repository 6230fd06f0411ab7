// The fast path's gate (handler_fast_path.hpp, "The gate"): whether the
// calling thread's handler runs may stay off the region stack. Every
// general-path function (region_stack.cpp, handler_sampling.cpp,
// live_accrual.cpp) calls unfast first, turning an open fast frame into an
// ordinary stack frame, and settle_gate last, reopening the gate once the
// stack is empty. Touched only by the calling thread (fast_frame_region is
// async-signal-safe).
#include "detail/region_state.hpp"

namespace coact::causal {

namespace {

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
  const bool ok =
      t.depth == 0 && t.slot != nullptr && t.counters != nullptr && g_fast_frames.load(std::memory_order_relaxed) == 1;
  t_fast.gate = ok ? t_fast.cache : g_gate_closed_cache;
}

}  // namespace

namespace detail {

FastFrame fast_frame() noexcept {
  if (fast_frame_region() == kNoRegion) return FastFrame::none;
  return t_regions.sampled_open ? FastFrame::sampled : FastFrame::untimed;
}

}  // namespace detail

}  // namespace coact::causal
