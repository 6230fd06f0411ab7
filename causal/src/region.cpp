// The region table, the per-thread region stack, the experiment selection.
//
// Region stack protocol (one stack per thread, touched only by its thread):
//  1. push(id): read the TSC once; the frame below (if any) adds the time since
//     its segment started to its accumulated exclusive time; the new frame
//     starts a segment now and remembers the experiment epoch it began in.
//  2. pop(id, index): if the frame at `index` no longer holds `id` (it was
//     dropped as stale) nothing happens. Otherwise frames above it (leaked by a
//     missing exit) are dropped unaccounted, the frame adds its last segment,
//     the frame below starts a new segment now, and the frame is accounted:
//     visits += 1, cycles += exclusive time, its completion point (if any)
//     gets a visit, and if the region is the selected one with speedup s > 0,
//     add_delay(s·Δ) where Δ is the exclusive time, clamped to the time since
//     the current experiment began when the frame began in an earlier epoch.
//  3. Handler frames: the runtime's enter/exit hooks are gated by
//     g_sweep_active, so a sweep can start or stop between a handler's enter
//     and its exit. An exit without a frame is ignored; a handler frame left
//     on the stack by a skipped exit is dropped at the thread's next handler
//     enter (handlers never nest on a worker).
//
// Selection word (g_selection): epoch (32 bits) | region (24) | speedup % (8).
// Written by begin_experiment / end_experiment (release), read by push/pop
// (acquire). g_experiment_start_cycles is stored (relaxed) before the word
// (release), so a reader that sees an epoch sees at least that experiment's
// start (it may see a later one if another experiment began meanwhile; the
// clamp is then tighter, never looser).
#include <coact/causal/region.hpp>

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <typeinfo>
#include <unordered_map>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/progress.hpp>

namespace coact::causal {

namespace {

struct Region {
  uint32_t id;
  RegionKind kind;
  std::string name;
  // Cumulative completed runs / exclusive cycles. Written by any thread that
  // pops the region (relaxed fetch_add), read by the controller (relaxed):
  // counters, nothing is published through them.
  std::atomic<uint64_t> visits{0};
  std::atomic<uint64_t> cycles{0};
  // Handler-completion point of this region, or null. Written under g_mu by
  // set_completion_handlers / registration (release); read at every pop
  // (acquire) so the point's constructor happens-before its first visit.
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
  std::vector<std::string> completion_filter;                        // guarded by mu
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

bool matches_any(const std::string& name, const std::vector<std::string>& subs) {
  return std::any_of(subs.begin(), subs.end(),
                     [&](const std::string& s) { return !s.empty() && name.find(s) != std::string::npos; });
}

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
    reg->completion.store(handler_completion_point(reg->name), std::memory_order_release);
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

// ---- per-thread state ------------------------------------------------------

struct Frame {
  uint32_t region;
  uint32_t epoch;       // experiment epoch at push
  uint64_t seg_start;   // TSC at which the current running segment began
  uint64_t acc;         // exclusive cycles accumulated in earlier segments
  const void* type;     // handler frames: actor type; scope frames: null
  uint32_t kind;        // handler frames: message kind
  bool handler;
};

constexpr uint32_t kCacheSlots = 64;  // power of two
struct CacheEntry {
  const void* type;
  uint32_t kind;
  uint32_t region;
  bool valid;
};

struct ThreadRegions {
  uint32_t depth;
  Frame frames[kMaxRegionDepth];
  CacheEntry cache[kCacheSlots];
};
// Touched only by its own thread. constinit: no TLS init guard on access.
constinit thread_local ThreadRegions t_regions{};

uint32_t cache_slot(const void* type, uint32_t kind) {
  const auto h = (reinterpret_cast<uintptr_t>(type) >> 4) ^ (uintptr_t{kind} * 0x9E3779B1u);
  return static_cast<uint32_t>(h ^ (h >> 17)) & (kCacheSlots - 1);
}

void account(const Frame& f, uint64_t now) noexcept {
  if (f.region == kNoRegion) return;
  Region* r = g_table[f.region].load(std::memory_order_acquire);
  if (r == nullptr) return;
  r->visits.fetch_add(1, std::memory_order_relaxed);
  r->cycles.fetch_add(f.acc, std::memory_order_relaxed);
  if (ProgressPoint* p = r->completion.load(std::memory_order_acquire)) p->visit();
  const uint64_t sel = g_selection.load(std::memory_order_acquire);
  const uint32_t pct = sel_pct(sel);
  if (sel_region(sel) != f.region || pct == 0) return;
  uint64_t delta = f.acc;
  if (sel_epoch(sel) != f.epoch) {  // began before this experiment: count only its part in it
    const uint64_t start = g_experiment_start_cycles.load(std::memory_order_relaxed);
    delta = std::min(delta, now > start ? now - start : 0);
  }
  // Δ < 2^57 cycles (years), so Δ·100 does not overflow.
  add_delay(delta * pct / 100);
}

}  // namespace

std::string_view to_string(RegionKind kind) noexcept { return kind == RegionKind::handler ? "handler" : "scope"; }

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
  return RegionStats{reg->id, reg->kind, reg->name, reg->visits.load(std::memory_order_relaxed),
                     reg->cycles.load(std::memory_order_relaxed)};
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
    out.push_back(RegionStats{reg->id, reg->kind, reg->name, reg->visits.load(std::memory_order_relaxed),
                              reg->cycles.load(std::memory_order_relaxed)});
  }
  return out;
}

void set_completion_handlers(std::vector<std::string> substrings) {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  r.completion_filter = std::move(substrings);
  for (uint32_t id = 1; id < r.next_id; ++id) {
    Region* reg = g_table[id].load(std::memory_order_acquire);
    if (reg == nullptr || reg->kind != RegionKind::handler) continue;
    ProgressPoint* p = matches_any(reg->name, r.completion_filter) ? handler_completion_point(reg->name) : nullptr;
    reg->completion.store(p, std::memory_order_release);
  }
}

void begin_experiment(uint32_t region, uint32_t speedup_pct) noexcept {
  const uint32_t epoch = sel_epoch(g_selection.load(std::memory_order_relaxed)) + 1;
  g_experiment_start_cycles.store(calibrate::now_cycles(), std::memory_order_relaxed);
  g_selection.store(pack(epoch, region < kMaxRegions ? region : kNoRegion, std::min<uint32_t>(speedup_pct, 100)),
                    std::memory_order_release);
}

void end_experiment() noexcept {
  const uint32_t epoch = sel_epoch(g_selection.load(std::memory_order_relaxed));
  g_selection.store(pack(epoch, kNoRegion, 0), std::memory_order_release);
}

Selection current_selection() noexcept {
  const uint64_t w = g_selection.load(std::memory_order_acquire);
  return Selection{sel_region(w), sel_pct(w), sel_epoch(w)};
}

namespace detail {

namespace {
int push_frame(uint32_t id, const void* type, uint32_t kind, bool handler) noexcept {
  ThreadRegions& t = t_regions;
  if (t.depth >= kMaxRegionDepth) return -1;
  const uint64_t now = calibrate::now_cycles();
  if (t.depth > 0) {
    Frame& below = t.frames[t.depth - 1];
    below.acc += now - below.seg_start;
  }
  const uint32_t epoch = sel_epoch(g_selection.load(std::memory_order_acquire));
  t.frames[t.depth] = Frame{id, epoch, now, 0, type, kind, handler};
  return static_cast<int>(t.depth++);
}
}  // namespace

int push_region(uint32_t id) noexcept { return push_frame(id, nullptr, 0, false); }

void pop_region(uint32_t id, int index) noexcept {
  ThreadRegions& t = t_regions;
  if (index < 0 || static_cast<uint32_t>(index) >= t.depth) return;
  Frame f = t.frames[index];
  if (f.region != id) return;
  const uint64_t now = calibrate::now_cycles();
  f.acc += now - f.seg_start;
  t.depth = static_cast<uint32_t>(index);  // drops leaked frames above, unaccounted
  if (t.depth > 0) t.frames[t.depth - 1].seg_start = now;
  account(f, now);
}

void enter_handler(const void* actor_type, uint32_t kind) noexcept {
  ThreadRegions& t = t_regions;
  // Drop a handler frame left by an exit the gate skipped (step 3).
  for (uint32_t i = 0; i < t.depth; ++i) {
    if (t.frames[i].handler) {
      t.depth = i;
      break;
    }
  }
  CacheEntry& c = t.cache[cache_slot(actor_type, kind)];
  uint32_t id;
  if (c.valid && c.type == actor_type && c.kind == kind) {
    id = c.region;
  } else {
    id = handler_region(actor_type, kind);
    c = CacheEntry{actor_type, kind, id, true};
  }
  (void)push_frame(id, actor_type, kind, true);
}

void exit_handler(const void* actor_type, uint32_t kind) noexcept {
  ThreadRegions& t = t_regions;
  for (uint32_t i = t.depth; i-- > 0;) {
    const Frame& f = t.frames[i];
    if (f.handler) {
      if (f.type == actor_type && f.kind == kind) pop_region(f.region, static_cast<int>(i));
      return;
    }
  }
}

uint32_t region_depth() noexcept { return t_regions.depth; }

}  // namespace detail
}  // namespace coact::causal
