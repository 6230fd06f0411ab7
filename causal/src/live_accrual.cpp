// Live accrual (detail/region_state.hpp, steps 4-6): a thread's live slot,
// opening and closing its running segment (open_segment / close_segment:
// called by the region stack and the handler paths around every segment),
// materialize_live (every pay point before it reads its debt, and
// end_experiment) publishing other threads' running part of the selected
// region into the global delay, suspending, resuming and settling the
// running segment (suspend_running_segment and friends), and the membarrier
// registration the fast frames' handshake needs (heavy_fence: called by
// begin_experiment). The slot hand-off protocol is at LiveSlot.
#include "detail/region_state.hpp"

namespace coact::causal {

namespace {

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

}  // namespace

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

void suspend_running_segment() noexcept {
  ThreadRegions& t = t_regions;
  unfast(t);  // the frame stays an ordinary one until its exit (the gate stays closed)
  if (t.depth == 0) return;
  const uint64_t sel = g_selection.load(std::memory_order_acquire);
  Frame& top = t.frames[t.depth - 1];
  uint64_t now = 0;  // read lazily (tsc): only a timed frame or a live region reads it
  if (top.weight != 0) top.acc += tsc(now) - top.seg_start;
  close_segment(t, top.region, top.weight != 0 ? top.seg_start : 0, sel, now);
}

void resume_running_segment() noexcept {
  ThreadRegions& t = t_regions;
  if (t.depth == 0) return;
  // Read afresh: an experiment may have begun or ended since the suspend.
  const uint64_t sel = g_selection.load(std::memory_order_acquire);
  Frame& top = t.frames[t.depth - 1];
  uint64_t now = 0;
  if (top.weight != 0) top.seg_start = tsc(now);
  open_segment(t, top.region, sel, now);
}

void settle_running_segment() noexcept {
  suspend_running_segment();
  resume_running_segment();
}

}  // namespace detail

}  // namespace coact::causal
