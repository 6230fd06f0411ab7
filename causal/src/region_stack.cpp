// The per-thread region stack (detail/region_state.hpp, steps 1-2):
// push_frame / pop_frame (also used by the handler general paths),
// push_region / pop_region for scopes, region_depth, sampled_region (the
// profiling signal handler's read of the innermost handler frame:
// async-signal-safe) and the reset in a forked child. A stack is touched
// only by its own thread.
#include "detail/region_state.hpp"

namespace coact::causal {

namespace detail {

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

uint32_t region_depth() noexcept {
  const ThreadRegions& t = t_regions;
  return t.depth + (fast_frame_region() != kNoRegion ? 1 : 0);
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
