// coact/runtime/detail/small_alloc.hpp: per-thread free lists for the
// runtime's small, short-lived objects (envelopes, actor cells).
//
// Every mail outside a burst is one envelope allocation and one free (burst
// dispatch writes a handler's further sends into its MailRing), a burst
// flush allocates one Burst (its group array inline), and a spawn tree
// allocates and frees a cell per actor: glibc's malloc would be a large share
// of every message's and every spawn's instructions. Blocks are kept in
// 16-byte size classes up to kMaxSmallBytes on a thread-local free list of at
// most kMaxCachedPerClass blocks; beyond that (or for larger sizes) the
// global operator new/delete is used. A block freed on another thread than
// the one that allocated it simply joins the freeing thread's list: blocks
// are interchangeable within a class, and the queues that carried the object
// across threads already ordered the accesses.
// Threads: any; each thread touches only its own lists. The lists are
// returned to the global allocator when the thread exits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

namespace coact::detail {

inline constexpr size_t kSmallClassBytes = 16;
inline constexpr size_t kMaxSmallBytes = 1024;
inline constexpr size_t kSmallClasses = kMaxSmallBytes / kSmallClassBytes;
inline constexpr uint32_t kMaxCachedPerClass = 512;

struct SmallCache {
  struct Node {
    Node* next;
  };
  Node* heads[kSmallClasses] = {};
  uint32_t counts[kSmallClasses] = {};
  // Set by the destructor: a free after this thread's thread_locals were
  // destroyed (an ActorRef released by a static destructor on the main
  // thread) goes straight to the global allocator.
  bool dead = false;
  ~SmallCache() {
    dead = true;
    for (Node*& h : heads) {
      while (h != nullptr) {
        Node* n = h->next;
        ::operator delete(static_cast<void*>(h));
        h = n;
      }
    }
  }
};

inline SmallCache& small_cache() noexcept {
  thread_local SmallCache cache;
  return cache;
}

inline size_t small_class(size_t bytes) noexcept { return (bytes + kSmallClassBytes - 1) / kSmallClassBytes - 1; }

/// Allocates `bytes` (aligned for any fundamental type). Throws std::bad_alloc.
inline void* small_alloc(size_t bytes) {
  if (bytes == 0 || bytes > kMaxSmallBytes) return ::operator new(bytes);
  const size_t c = small_class(bytes);
  SmallCache& sc = small_cache();
  if (sc.dead) return ::operator new((c + 1) * kSmallClassBytes);
  if (SmallCache::Node* n = sc.heads[c]) {
    sc.heads[c] = n->next;
    --sc.counts[c];
    return n;
  }
  return ::operator new((c + 1) * kSmallClassBytes);
}

/// Frees a block from small_alloc(bytes) (the same `bytes`). Any thread.
inline void small_free(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes == 0 || bytes > kMaxSmallBytes) {
    ::operator delete(p);
    return;
  }
  const size_t c = small_class(bytes);
  SmallCache& sc = small_cache();
  if (sc.dead || sc.counts[c] >= kMaxCachedPerClass) {
    ::operator delete(p);
    return;
  }
  auto* n = static_cast<SmallCache::Node*>(p);
  n->next = sc.heads[c];
  sc.heads[c] = n;
  ++sc.counts[c];
}

/// Mix-in: class-specific operator new/delete through small_alloc.
struct SmallAllocated {
  static void* operator new(size_t bytes) { return small_alloc(bytes); }
  static void operator delete(void* p, size_t bytes) noexcept { small_free(p, bytes); }
};

}  // namespace coact::detail
