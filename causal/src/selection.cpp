// The selection word (detail/region_state.hpp): begin_experiment and
// end_experiment (the controller; one experiment at a time) publish the
// selected region and speedup (release) that push and pop read (acquire);
// begin_experiment then claims the region's open fast frames (its half of
// the fast frames' handshake, after its membarrier) and end_experiment
// publishes the running part (materialize_live) before clearing the word.
// Also current_selection and the begin/end hooks the runtime registers.
#include "detail/region_state.hpp"

namespace coact::causal {

namespace {

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

}  // namespace

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

void set_begin_experiment_hook(void (*hook)(const Selection&) noexcept) noexcept {
  g_begin_experiment_hook.store(hook, std::memory_order_release);
}

void set_end_experiment_hook(void (*hook)() noexcept) noexcept {
  g_end_experiment_hook.store(hook, std::memory_order_release);
}

}  // namespace detail

}  // namespace coact::causal
