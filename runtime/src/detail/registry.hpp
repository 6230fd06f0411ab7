// runtime/src/detail/registry.hpp: the registry of live actors (Pid -> cell)
// and the name registry (string -> cell, resolved at send time).
//
// Pids: Pid.id is a slot index into one table of slots; a slot holds the
// occupant's cell pointer (bit 0: the slot's lock) and an epoch bumped on
// every reuse (0 is skipped), so a stale Pid never resolves to the slot's
// newer actor. The registry holds no reference of its own: the cell's life
// reference is owned by the scheduler until the actor stops, and remove()
// runs before that reference is dropped.
//
// Spawn cost (skynet spawns and stops an actor per two messages): no mutex
// and no shared counter on the spawn and stop paths:
//   insert: the slot comes from the calling worker's own free list (no lock,
//     no atomic RMW); the epoch is stored, then the cell pointer (release).
//   remove: one CAS of the cell word to 0 (waits while a lookup holds the
//     slot's lock); the index joins the removing worker's free list.
//   lookup: locks the slot (CAS of bit 0 on a non-null word), checks the
//     epoch and type, takes a reference, unlocks (a release store). The lock
//     is what keeps the cell alive under the lookup: remove cannot clear the
//     word while it is held, and remove comes before the life reference is
//     dropped. A lookup whose word was replaced meanwhile (even by a new
//     cell at the same address) fails its CAS, or wins it on the new word
//     after the insert's release store, so it reads the new epoch.
// Free lists: one per worker (owner thread only), balanced through a shared
// depot in batches of kBatch indices under one mutex (a spawner on one worker
// and a stopper on another move indices in batches, not one by one); threads
// outside the pool (spawns from main, shutdown) use the depot directly. Fresh
// indices come kBatch at a time from the slot table, which grows by chunks
// of doubling size (never moved, freed with the registry), so a lookup reads
// a slot without a lock on the table.
// Threads: all members are thread-safe; `worker` arguments name the calling
// thread's worker index in this scheduler, or -1 for any other thread.
// Blocking: the depot mutex once per kBatch spawns or stops at most; lookup
// and remove may spin while another thread holds a slot's lock (a few
// instructions).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <thread>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include <coact/runtime/detail/actor_cell.hpp>
#include <coact/runtime/runtime.hpp>

#include "sync.hpp"

namespace coact::detail {

class Registry {
 public:
  /// Indices moved between a worker's free list and the depot at a time.
  static constexpr uint32_t kBatch = 256;

  explicit Registry(uint32_t workers) : locals_(std::make_unique<Local[]>(workers == 0 ? 1 : workers)) {}
  ~Registry() {
    for (auto& ch : chunks_) delete[] ch.load(std::memory_order_relaxed);
  }
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// Assigns c->pid and publishes c. `worker`: the caller's worker index or -1.
  /// Throws std::bad_alloc when the slot table cannot grow.
  void insert(ActorCell* c, int32_t worker) {
    uint32_t idx;
    if (worker >= 0) {
      std::vector<uint32_t>& f = locals_[size_t(worker)].free;
      if (f.empty()) refill(f);
      idx = f.back();
      f.pop_back();
    } else {
      std::lock_guard lk(mu_);
      if (depot_.empty()) grow_locked();
      idx = depot_.back();
      depot_.pop_back();
    }
    Slot& s = *slot(idx, std::memory_order_relaxed);  // ours: came through our list or mu_
    uint32_t epoch = s.epoch.load(std::memory_order_relaxed) + 1;
    if (epoch == 0) epoch = 1;
    s.epoch.store(epoch, std::memory_order_relaxed);
    c->pid = Pid{idx, epoch};
    s.word.store(reinterpret_cast<uintptr_t>(c), std::memory_order_release);
  }

  /// Unbinds c's pid (a no-op unless c is the slot's occupant). `worker` as
  /// for insert.
  void remove(const ActorCell* c, int32_t worker) {
    Slot* s = slot(c->pid.id, std::memory_order_acquire);
    if (s == nullptr) return;
    const uintptr_t mine = reinterpret_cast<uintptr_t>(c);
    uintptr_t expected = mine;
    uint32_t spins = 0;
    while (!s->word.compare_exchange_weak(expected, 0, std::memory_order_acq_rel, std::memory_order_relaxed)) {
      if ((expected & ~kLocked) != mine) return;  // not the occupant
      expected = mine;
      backoff(spins);
    }
    if (worker >= 0) {
      std::vector<uint32_t>& f = locals_[size_t(worker)].free;
      f.push_back(c->pid.id);
      if (f.size() >= 2 * kBatch) {  // hand a batch to the depot (a stopper that never spawns)
        std::lock_guard lk(mu_);
        depot_.insert(depot_.end(), f.end() - kBatch, f.end());
        f.resize(f.size() - kBatch);
      }
    } else {
      std::lock_guard lk(mu_);
      depot_.push_back(c->pid.id);
    }
  }

  /// The live cell for pid (of dynamic type `type`, unless null) with a new
  /// reference the caller must release(); nullptr if stale, dead or mistyped.
  ActorCell* lookup(Pid pid, const std::type_info* type) const {
    if (!pid.valid()) return nullptr;
    Slot* s = slot(pid.id, std::memory_order_acquire);
    if (s == nullptr) return nullptr;
    const uintptr_t w = lock(*s);
    if (w == 0) return nullptr;
    auto* c = reinterpret_cast<ActorCell*>(w);
    ActorCell* out = nullptr;
    if (s->epoch.load(std::memory_order_relaxed) == pid.epoch && (type == nullptr || *c->type == *type)) {
      c->add_ref();
      out = c;
    }
    s->word.store(w, std::memory_order_release);  // unlock
    return out;
  }

  /// Every live cell, each with a new reference (shutdown). Any thread.
  std::vector<ActorCell*> snapshot() const {
    std::vector<ActorCell*> out;
    for (uint32_t k = 0; k < kChunks; ++k) {
      Slot* ch = chunks_[k].load(std::memory_order_acquire);
      if (ch == nullptr) break;
      for (uint32_t i = 0, n = chunk_size(k); i < n; ++i) {
        Slot& s = ch[i];
        const uintptr_t w = lock(s);
        if (w == 0) continue;
        auto* c = reinterpret_cast<ActorCell*>(w);
        c->add_ref();
        out.push_back(c);
        s.word.store(w, std::memory_order_release);
      }
    }
    return out;
  }

 private:
  static constexpr uintptr_t kLocked = 1;  // cells are at least 8-byte aligned
  static constexpr uint32_t kFirstChunk = 4096;
  static constexpr uint32_t kChunks = 20;  // 4096 * (2^20 - 1) slots: about 2^32
  struct Slot {
    std::atomic<uintptr_t> word{0};  // the occupant's cell | kLocked; 0 = free
    std::atomic<uint32_t> epoch{0};  // written by the inserting thread before word
  };
  struct alignas(64) Local {
    std::vector<uint32_t> free;  // the owning worker's thread only
  };

  static uint32_t chunk_size(uint32_t k) noexcept { return kFirstChunk << k; }
  static uint64_t chunk_start(uint32_t k) noexcept { return uint64_t(kFirstChunk) * ((uint64_t{1} << k) - 1); }

  /// The slot of index idx, or nullptr if its chunk does not exist (a forged
  /// or foreign pid).
  Slot* slot(uint32_t idx, std::memory_order mo) const noexcept {
    const uint64_t v = uint64_t(idx) / kFirstChunk + 1;  // chunk k holds v in [2^k, 2^(k+1))
    const uint32_t k = uint32_t(63 - __builtin_clzll(v));
    if (k >= kChunks) return nullptr;
    Slot* ch = chunks_[k].load(mo);
    return ch == nullptr ? nullptr : ch + (idx - chunk_start(k));
  }

  static void backoff(uint32_t& spins) noexcept {
    if (++spins < 64) {
      sync::cpu_relax();
    } else {
      std::this_thread::yield();  // the holder was preempted
    }
  }

  /// Locks a non-free slot; returns its word (0: free, nothing locked).
  static uintptr_t lock(Slot& s) noexcept {
    uintptr_t w = s.word.load(std::memory_order_relaxed);
    uint32_t spins = 0;
    for (;;) {
      if (w == 0) return 0;
      if ((w & kLocked) != 0) {
        backoff(spins);
        w = s.word.load(std::memory_order_relaxed);
        continue;
      }
      if (s.word.compare_exchange_weak(w, w | kLocked, std::memory_order_acquire, std::memory_order_relaxed)) return w;
    }
  }

  /// Refills an empty worker free list with up to kBatch indices.
  void refill(std::vector<uint32_t>& f) {
    std::lock_guard lk(mu_);
    if (depot_.empty()) grow_locked();
    const size_t n = std::min<size_t>(kBatch, depot_.size());
    f.insert(f.end(), depot_.end() - ptrdiff_t(n), depot_.end());
    depot_.resize(depot_.size() - n);
  }

  /// Puts kBatch never-used indices in the depot (lowest on top). Under mu_.
  void grow_locked() {
    const uint64_t first = next_fresh_;
    const uint64_t end = first + kBatch;
    if (end > chunk_start(kChunks)) throw std::bad_alloc();
    for (uint32_t k = 0; k < kChunks; ++k) {
      if (chunk_start(k) >= end) break;
      if (chunks_[k].load(std::memory_order_relaxed) == nullptr) {
        chunks_[k].store(new Slot[chunk_size(k)], std::memory_order_release);
      }
    }
    for (uint64_t i = end; i > first; --i) depot_.push_back(uint32_t(i - 1));
    next_fresh_ = end;
  }

  std::unique_ptr<Local[]> locals_;
  std::atomic<Slot*> chunks_[kChunks] = {};
  std::mutex mu_;
  std::vector<uint32_t> depot_;  // guarded by mu_
  uint64_t next_fresh_ = 0;      // guarded by mu_: the next never-used index
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
