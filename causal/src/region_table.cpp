// The region table: registration of handler, scope and line regions (ids,
// names, the registry under its lock), the per-thread visit and cycle
// counter blocks and their totals (region_stats, region_snapshot), and the
// handler-completion progress points. Callers: the runtime's hooks on a
// handler type's first run (handler_region), scopes and the line sampler
// (scope_region, line_region), the controller and the profile writer
// (region_snapshot, find_region); account() by every popped frame
// (region_stack.cpp, handler_sampling.cpp). A region id is written once
// under the registry's lock and read without it (g_table); a counter block
// has one writer, its thread, and readers sum the blocks.
#include "detail/region_state.hpp"

namespace coact::causal {

namespace {

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

}  // namespace

std::string_view to_string(RegionKind kind) noexcept {
  switch (kind) {
    case RegionKind::handler:
      return "handler";
    case RegionKind::line:
      return "line";
    case RegionKind::scope:
      break;
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

namespace detail {

void add_region_counts(uint32_t id, uint64_t visits, uint64_t cycles) noexcept {
  if (id == kNoRegion || id >= kMaxRegions) return;
  if (Region* r = g_table[id].load(std::memory_order_acquire)) {
    r->visits.fetch_add(visits, std::memory_order_relaxed);
    r->cycles.fetch_add(cycles, std::memory_order_relaxed);
  }
}

}  // namespace detail

}  // namespace coact::causal
