// coact/causal/region.hpp: the process-wide region table, the per-thread
// region stack, the experiment selection and COACT_SCOPE.
//
// Provides: regions — the units a causal-profiling experiment virtually speeds
// up (docs/DESIGN.md "Causal profiling", "Region"; Coz, Curtsinger & Berger,
// SOSP 2015, §3 "selected line"). Two kinds:
//   * handler regions, one per (actor type, message kind), named
//     "ActorType::on(MsgType)" (demangled), registered lazily by the runtime's
//     handler-enter hook (hooks.hpp);
//   * marked scopes, COACT_SCOPE("name") (RAII), usable in any code.
// Each region has an id (1..kMaxRegions-1; 0 = no region), a name, and two
// cumulative counters: visits (completed runs) and cycles (exclusive running
// time, TSC cycles). Counters only advance while a sweep is active
// (g_sweep_active): outside a sweep no hook and no scope does any work.
//
// Nesting: each thread keeps a stack of running regions; only the innermost
// counts as running. Entering a child pauses the parent's clock; leaving it
// resumes the parent. A region's cycles are its *exclusive* time, and that is
// the Δ virtual speedup uses.
//
// Virtual speedup (docs/DESIGN.md): while an experiment selects region R
// with speedup s (begin_experiment), each time R finishes on a thread after
// running Δ exclusive cycles (counted from the experiment's start at the
// earliest), that thread calls add_delay(s·Δ) (delay_ledger.hpp): G += s·Δ and
// its own L += s·Δ, so every *other* thread owes s·Δ. Paying, crediting and
// timer shifts are done by the runtime through hooks.hpp and the ledger.
//
// Threads: every function may be called from any thread. Registration takes a
// mutex once per new region (handler regions are then served from a per-thread
// cache: a direct-mapped table keyed by (type_info*, kind), no lock, no
// allocation). Enter/exit touch only the calling thread's stack and live slot,
// and on exit single-writer relaxed adds on the calling thread's own counter
// block (sharded: readers sum the blocks; src/detail/region_state.hpp ThreadCounters). The TSC
// is read for scopes, for the selected region while its speedup is > 0, and
// for a sample of the other handler runs (about one in 128, and every run
// after one that lasted >= ~3 µs): a handler region's `cycles` is then an
// unbiased estimate (each sample weighted by the runs it stands for), its
// `visits` exact; delay (virtual speedup) is always computed from exact times.
// Blocking: nothing blocks except the registration mutex (first use of a name).
// Memory ordering: region pointers are published with release and read with
// acquire (the name and kind are immutable after publication). The counters
// are pure counters (relaxed). The selection word is one atomic (release /
// acquire) holding epoch, region and speedup together, so a thread never sees
// a region of one experiment with the speedup of another.
// Lifetime: regions are never freed (the table lives for the process), so a
// region id or name reference stays valid even during static destruction.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <coact/causal/hooks.hpp>

namespace coact::causal {

/// Id of "no region" (untracked, or the table is full).
inline constexpr uint32_t kNoRegion = 0;
/// Capacity of the region table (ids 1..kMaxRegions-1). A registration beyond
/// it returns kNoRegion and warns once on stderr.
inline constexpr uint32_t kMaxRegions = 4096;
/// Deepest nesting tracked per thread; deeper enters are ignored (not counted).
inline constexpr uint32_t kMaxRegionDepth = 64;

/// handler: an actor's handler for one message kind; scope: COACT_SCOPE;
/// line: a sampled source line ("path.cpp:41"), or a line qualified by the
/// handler that was running ("Type::on(Msg) @ path.cpp:41"); line regions'
/// visits are CPU-time samples and their cycles the sampled CPU time
/// (line_region.hpp).
enum class RegionKind : uint8_t { handler, scope, line };

/// "handler" / "scope" / "line".
std::string_view to_string(RegionKind kind) noexcept;

/// A copy of one region's state (see region_snapshot()).
struct RegionStats {
  uint32_t id = kNoRegion;
  RegionKind kind = RegionKind::scope;
  std::string name;
  uint64_t visits = 0;  ///< Completed runs since the process started (sweeps only).
  uint64_t cycles = 0;  ///< Exclusive running time, TSC cycles (sweeps only).
};

/// The handler region of (actor type, message kind), registering it on first
/// use with the name "ActorType::on(MsgType)": the actor type demangled with
/// abi::__cxa_demangle, the message kind named by the function given to
/// set_kind_namer() (hooks.hpp), or "kind#N" if none was given.
/// `actor_type` is a `const std::type_info*` (may be null: named "?").
/// Any thread. Returns kNoRegion if the table is full or allocation failed.
uint32_t handler_region(const void* actor_type, uint32_t kind) noexcept;

/// The scope region called `name` (one region per distinct name), registering
/// it on first use. Any thread; takes the registration mutex.
/// Returns kNoRegion if the table is full or allocation failed.
uint32_t scope_region(std::string_view name) noexcept;

/// The line region called `name` (one per distinct name), registering it on
/// first use. Any thread; takes the registration mutex. Returns kNoRegion if
/// the table is full or allocation failed. line_region.cpp.
uint32_t line_region(std::string_view name) noexcept;

/// Name of a region ("" for kNoRegion or an unknown id). Any thread; no lock.
const std::string& region_name(uint32_t id) noexcept;

/// A copy of region `id` (RegionStats{} with id kNoRegion if unknown). Any
/// thread; no lock.
RegionStats region_stats(uint32_t id);

/// First region whose name equals `name` exactly. Any thread; takes the mutex.
std::optional<uint32_t> find_region(std::string_view name);

/// All registered regions, by id. Counters are read relaxed one by one (a
/// region running concurrently may be one visit ahead of its cycles). Any
/// thread; takes the registration mutex to read the count only.
std::vector<RegionStats> region_snapshot();

/// The one name filter of causal profiling (region filter, progress points,
/// handler-completion points): true iff some non-empty entry of `entries` is
/// a substring of `name`. An empty entry matches nothing — the option lists
/// drop empty items, and an empty string would otherwise select every name.
/// Pure; any thread.
bool matches_any(std::string_view name, const std::vector<std::string>& entries) noexcept;

/// Handler-completion progress points ("completion of a chosen handler", no
/// code change): every handler region — registered now or later — whose name
/// contains one of `substrings` gets a throughput progress point named after
/// the region (progress.hpp, handler_completion_point) that counts each
/// completed run: its visits() are the region's visits since it was
/// attached (plus what earlier attachments counted); a call re-attaches
/// every matching region from its current count, so a region is counted
/// once however often it is called. An empty list detaches all (a point
/// keeps what it counted). Any thread; takes the mutex.
/// Used by the controller at sweep start and end.
void set_completion_handlers(std::vector<std::string> substrings);

/// The current experiment selection. `epoch` changes at every begin_experiment.
struct Selection {
  uint32_t region = kNoRegion;
  uint32_t speedup_pct = 0;  ///< 0..100 (s = speedup_pct / 100).
  uint32_t epoch = 0;
};

/// Starts an experiment: from now on, `region` finishing after Δ exclusive
/// cycles adds add_delay(Δ·speedup_pct/100) on its thread. Preconditions:
/// region < kMaxRegions, speedup_pct <= 100 (clamped), calibrate::tsc_hz() has
/// been called (add_delay's precondition). Called by the controller (one at a
/// time) and by tests. Any thread; never blocks. Does not set g_sweep_active.
void begin_experiment(uint32_t region, uint32_t speedup_pct) noexcept;

/// Ends the experiment: no region is selected (no delay is added) until the
/// next begin_experiment. Any thread; never blocks.
void end_experiment() noexcept;

/// The selection as one consistent read. Any thread.
Selection current_selection() noexcept;

namespace detail {
/// Pushes `id` on the calling thread's region stack (pausing the region
/// below). Returns the stack index, or -1 if the stack is full (then the
/// matching pop_region must not be called). Any thread; no lock; one TSC read.
int push_region(uint32_t id) noexcept;
/// Pops the frame at `index` if it still holds `id` (else does nothing: the
/// frame was dropped as stale), accounts its exclusive time, applies virtual
/// speedup, and resumes the region below.
void pop_region(uint32_t id, int index) noexcept;
/// Runtime hooks (called by hooks.cpp while a sweep is active).
void enter_handler(const void* actor_type, uint32_t kind) noexcept;
void exit_handler(const void* actor_type, uint32_t kind) noexcept;
/// The region the calling thread is running, for a CPU-time sample: its
/// innermost handler frame, else its innermost frame, else kNoRegion.
/// Async-signal-safe (reads the thread's own stack; a sample that interrupts
/// a push or pop may see the region before or after it). Read by the sampling signal's handler (sample_signal.cpp).
uint32_t sampled_region() noexcept;
/// Adds `visits` and `cycles` to region `id`'s counters (sampled line
/// regions: samples and sampled CPU time). Any thread; relaxed adds.
void add_region_counts(uint32_t id, uint64_t visits, uint64_t cycles) noexcept;
/// A function begin_experiment calls last, after it published the new
/// selection (line regions publish the selected line's addresses for the
/// sampling signal handler). Null: none.
void set_begin_experiment_hook(void (*hook)(const Selection&) noexcept) noexcept;
/// A function end_experiment calls first, before it publishes and clears
/// the selection (line regions flush their undrained samples). Null: none.
void set_end_experiment_hook(void (*hook)() noexcept) noexcept;
/// Live accrual (live_accrual.cpp; src/detail/region_state.hpp step 5): publishes into G
/// (add_global_delay) the part of the selected region that has run so far on
/// *other* threads, and returns the delay added (cycles). Called by every pay
/// point before it reads its debt, and by end_experiment. Any thread; never
/// blocks except while an owner closes a slot (nanoseconds).
uint64_t materialize_live() noexcept;
/// Settles the calling thread's running segment now (step 6 in
/// src/detail/region_state.hpp, without ending the frame): its virtual speedup so far goes
/// into G and this thread's L (add_delay), what payers published for it is
/// credited (credit_local), and a new segment starts. Accounting of the
/// frame is unchanged. Used before stamping a virtual timer
/// (hooks.hpp timer_stamp_cycles). Calling thread only; never blocks except
/// while a payer updates its slot.
void settle_running_segment() noexcept;
/// settle_running_segment in two halves, for a pay point inside a handler
/// (hooks.hpp on_pay_point_in_handler): suspend closes the running segment
/// as settle does and starts none; resume starts a new one. The time between
/// them is in neither the frame's exclusive cycles nor its virtual speedup:
/// the thread waits for the ledger then, it does not run the region. Every
/// suspend is followed by one resume before the frame's exit or any other
/// region hook on this thread. Calling thread only; never blocks except
/// while a payer updates its slot.
void suspend_running_segment() noexcept;
void resume_running_segment() noexcept;
/// fork() child handler (hooks.cpp): no region selected, the forking
/// thread's region stack emptied and its live slot closed.
void reset_regions_in_forked_child() noexcept;
/// fork() child handler (controller.cpp): forget the parent's sweep (its
/// controller thread is not in the child) and start none from the environment.
void leave_sweep_in_forked_child() noexcept;
}  // namespace detail

/// RAII guard behind COACT_SCOPE: enters region `id` if a sweep is active at
/// construction and leaves it at destruction. Not copyable or movable; must be
/// destroyed on the thread that constructed it (a stack object).
class ScopeGuard {
 public:
  explicit ScopeGuard(uint32_t id) noexcept
      : id_(id), index_(g_sweep_active.load(std::memory_order_relaxed) ? detail::push_region(id) : -1) {}
  ~ScopeGuard() {
    if (index_ >= 0) detail::pop_region(id_, index_);
  }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  uint32_t id_;
  int index_;  // stack index of our frame, -1: not pushed
};

}  // namespace coact::causal

#define COACT_CAUSAL_CAT2_(a, b) a##b
#define COACT_CAUSAL_CAT_(a, b) COACT_CAUSAL_CAT2_(a, b)

#if COACT_CAUSAL_ENABLED
/// COACT_SCOPE("name"): the rest of the enclosing block is the region "name".
/// Exclusive time: while it runs, the enclosing region (the handler, or an
/// outer scope) is paused, so the scope's time is not the handler's, and an
/// experiment on the handler speeds up only the handler's own code (a scope
/// in a function two handlers call takes that work out of both). Inclusive
/// time is not measured; see docs/profiling.md.
/// The region is registered once (a function-local static, thread-safe even
/// when first reached by many threads at once). Outside a sweep the cost is
/// the static's guard load and one relaxed load of g_sweep_active. Several
/// COACT_SCOPEs may share a line or a block (the names are unique per use).
#define COACT_SCOPE(name) COACT_SCOPE_I_(name, __COUNTER__)
#define COACT_SCOPE_I_(name, n)                                                                      \
  static const uint32_t COACT_CAUSAL_CAT_(coact_scope_id_, n) = ::coact::causal::scope_region(name); \
  const ::coact::causal::ScopeGuard COACT_CAUSAL_CAT_(coact_scope_guard_, n)(COACT_CAUSAL_CAT_(coact_scope_id_, n))
#else
#define COACT_SCOPE(name) static_assert(true, "COACT_SCOPE: causal profiling compiled out")
#endif
