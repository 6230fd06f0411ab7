// runtime/src/detail/registry.hpp: the registry of live actors (Pid -> cell)
// and the name registry (string -> cell, resolved at send time).
//
// Pids: the registry is split into kShards shards, each a mutex over a slot
// vector and a free list; Pid.id = (slot index << kShardBits) | shard. A slot's
// epoch is bumped on every reuse (0 is skipped), so a stale Pid never resolves
// to the slot's newer actor. The registry holds no reference of its own: the
// cell's life reference is owned by the scheduler until the actor stops, and
// remove() runs before that reference is dropped. lookup() takes a new
// reference under the shard lock, so the cell cannot be freed under it.
// Threads: all members are thread-safe. Blocking: short critical sections.
#pragma once

#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include <coact/runtime/detail/actor_cell.hpp>
#include <coact/runtime/runtime.hpp>

namespace coact::detail {

class Registry {
 public:
  static constexpr uint32_t kShardBits = 6;
  static constexpr uint32_t kShards = 1u << kShardBits;

  /// Assigns c->pid. Any thread.
  void insert(ActorCell* c) {
    static thread_local uint32_t rr = uint32_t(reinterpret_cast<uintptr_t>(&rr) >> 6);
    uint32_t s = (rr++) & (kShards - 1);
    Shard& sh = shards_[s];
    std::lock_guard lk(sh.mu);
    uint32_t idx;
    if (!sh.free.empty()) {
      idx = sh.free.back();
      sh.free.pop_back();
    } else {
      idx = uint32_t(sh.slots.size());
      sh.slots.push_back({0, nullptr});
    }
    Slot& slot = sh.slots[idx];
    if (++slot.epoch == 0) slot.epoch = 1;
    slot.cell = c;
    c->pid = Pid{(idx << kShardBits) | s, slot.epoch};
  }

  /// Unbinds c's pid (c must be the slot's current occupant). Any thread.
  void remove(const ActorCell* c) {
    Shard& sh = shards_[c->pid.id & (kShards - 1)];
    uint32_t idx = c->pid.id >> kShardBits;
    std::lock_guard lk(sh.mu);
    if (idx < sh.slots.size() && sh.slots[idx].cell == c) {
      sh.slots[idx].cell = nullptr;
      sh.free.push_back(idx);
    }
  }

  /// The live cell for pid (of dynamic type `type`, unless null) with a new
  /// reference the caller must release(); nullptr if stale, dead or mistyped.
  ActorCell* lookup(Pid pid, const std::type_info* type) const {
    if (!pid.valid()) return nullptr;
    const Shard& sh = shards_[pid.id & (kShards - 1)];
    uint32_t idx = pid.id >> kShardBits;
    std::lock_guard lk(sh.mu);
    if (idx >= sh.slots.size()) return nullptr;
    const Slot& slot = sh.slots[idx];
    if (slot.epoch != pid.epoch || slot.cell == nullptr) return nullptr;
    if (type && *slot.cell->type != *type) return nullptr;
    slot.cell->add_ref();
    return slot.cell;
  }

  /// Every live cell, each with a new reference (shutdown). Any thread.
  std::vector<ActorCell*> snapshot() const {
    std::vector<ActorCell*> out;
    for (const Shard& sh : shards_) {
      std::lock_guard lk(sh.mu);
      for (const Slot& s : sh.slots) {
        if (s.cell) {
          s.cell->add_ref();
          out.push_back(s.cell);
        }
      }
    }
    return out;
  }

 private:
  struct Slot {
    uint32_t epoch;
    ActorCell* cell;
  };
  struct alignas(64) Shard {
    mutable std::mutex mu;
    std::vector<Slot> slots;     // guarded by mu
    std::vector<uint32_t> free;  // guarded by mu
  };
  Shard shards_[kShards];
};

class NameRegistry {
 public:
  struct Entry {
    ActorCell* cell;  // holds a reference while bound
    uint32_t kind;
    MakeEnvelope make;
  };

  /// False if `name` is bound to another live actor.
  bool bind(const std::string& name, uint32_t kind, ActorCell* cell, MakeEnvelope make) {
    std::unique_lock lk(mu_);
    auto it = map_.find(name);
    if (it != map_.end()) {
      if (!it->second.cell->is_dead()) return false;
      it->second.cell->release();
      map_.erase(it);
    }
    cell->add_ref();
    cell->has_names.store(true, std::memory_order_release);
    map_.emplace(name, Entry{cell, kind, make});
    return true;
  }
  bool unbind(const std::string& name) {
    ActorCell* c = nullptr;
    {
      std::unique_lock lk(mu_);
      auto it = map_.find(name);
      if (it == map_.end()) return false;
      c = it->second.cell;
      map_.erase(it);
    }
    c->release();
    return true;
  }
  /// Removes every name bound to c (c stopped).
  void unbind_all(ActorCell* c) {
    std::vector<ActorCell*> drop;
    {
      std::unique_lock lk(mu_);
      for (auto it = map_.begin(); it != map_.end();) {
        if (it->second.cell == c) {
          drop.push_back(c);
          it = map_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (ActorCell* x : drop) x->release();
  }
  /// The entry for name, with a new reference on its cell; false if unbound,
  /// of another kind, or dead.
  bool lookup(const std::string& name, uint32_t kind, Entry& out) const {
    std::shared_lock lk(mu_);
    auto it = map_.find(name);
    if (it == map_.end() || it->second.kind != kind) return false;
    if (it->second.cell->is_dead()) return false;
    out = it->second;
    out.cell->add_ref();
    return true;
  }
  /// The pid bound to name (any kind), or an invalid Pid.
  Pid pid_of(const std::string& name) const {
    std::shared_lock lk(mu_);
    auto it = map_.find(name);
    if (it == map_.end() || it->second.cell->is_dead()) return Pid{};
    return it->second.cell->pid;
  }
  void clear() {
    std::unique_lock lk(mu_);
    for (auto& [k, e] : map_) e.cell->release();
    map_.clear();
  }

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Entry> map_;  // guarded by mu_
};

}  // namespace coact::detail
