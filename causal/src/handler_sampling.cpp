// Handler runs off the inline fast path (detail/region_state.hpp, steps 3
// and 3b; handler_fast_path.hpp): the sampled fast frame (one run in a
// jittered stride is timed and weighted by the runs it stands for), the
// general enter and exit (a live run, a stack that is not empty, a new cache
// entry), the runtime's out-of-line hooks (hooks.hpp: called when the
// inline fast path refuses) and the test entry points enter_handler /
// exit_handler. Each general path calls unfast first and settle_gate last.
#include "detail/region_state.hpp"

namespace coact::causal {

namespace {

// The next sampling stride's countdown (kSampleStrideMin - 1 .. + kSampleStrideJitter - 1).
uint16_t next_countdown(ThreadRegions& t) noexcept {
  uint32_t x = t.rng != 0 ? t.rng : 0x9E3779B9u ^ static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&t));
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  t.rng = x;
  return static_cast<uint16_t>(kSampleStrideMin - 1 + (x & (kSampleStrideJitter - 1)));
}

}  // namespace

namespace detail {

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
      f.gate = f.cache;                                           // enter_handler_slow found it open
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
    c = FastEntry{actor_type,
                  kind,
                  id | kUntimed,
                  0,
                  0,
                  id,
                  r != nullptr ? &r->completion : &g_no_completion,
                  counters != nullptr ? &counters->visits[id] : nullptr,
                  counters != nullptr ? &t.slot->state : nullptr,
                  {}};
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

void sample_next_handler_run(const void* actor_type, uint32_t kind) noexcept {
  FastEntry& c = t_fast.cache[detail::fast_cache_slot(actor_type, kind)];
  if (c.completion != nullptr && c.type == actor_type && c.kind == kind) c.countdown = c.stride = 0;
}

}  // namespace detail

}  // namespace coact::causal
