// runtime/src/detail/work_deque.hpp: a worker's own deque, Chase-Lev
// (Chase & Lev, SPAA 2005), with the C11 orderings of Lê, Pop, Cohen and
// Zappa Nardelli, "Correct and Efficient Work-Stealing for Weak Memory
// Models" (PPoPP 2013), where the two standalone fences are folded into
// seq_cst accesses (ThreadSanitizer does not model fences).
//
// The owner pushes and pops at the bottom (LIFO: the freshest hop is the
// warmest); stealers take from the top (FIFO). The two roles are two handle
// types, and WorkDeque's operations are private to them, so the compiler
// keeps the roles apart:
//   DequeOwner<T>   - push, pop, size, take_oldest (the owning worker only;
//                     made once per deque by own_deque, move-only)
//   DequeStealer<T> - steal, size (any thread; made by the owner's
//                     stealer(), copyable)
// WorkDeque<T> itself is the storage; whoever holds it makes the owner.
// The ring grows by doubling; retired rings are kept until the deque is
// destroyed (a stealer may still be reading one), so memory is bounded by
// twice the peak size. T must be a trivially copyable pointer type.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sync.hpp"

namespace coact::detail {

template <class T>
class DequeOwner;
template <class T>
class DequeStealer;

template <class T>
class WorkDeque {
 public:
  explicit WorkDeque(int64_t capacity = 256) { buf_.store(alloc(capacity), sync::memory_order_relaxed); }
  WorkDeque(const WorkDeque&) = delete;
  WorkDeque& operator=(const WorkDeque&) = delete;

 private:
  friend class DequeOwner<T>;
  friend class DequeStealer<T>;

  // ---- owner ----
  void push(T x) {
    int64_t b = bottom_.load(sync::memory_order_relaxed);
    int64_t t = top_.load(sync::memory_order_acquire);
    Ring* a = buf_.load(sync::memory_order_relaxed);
    if (b - t > a->cap - 1) a = grow(a, t, b);
    a->at(b).store(x, sync::memory_order_relaxed);
    // release: a stealer that acquires bottom_ sees the slot write.
    bottom_.store(b + 1, sync::memory_order_release);
  }

  T pop() {
    int64_t b = bottom_.load(sync::memory_order_relaxed) - 1;
    Ring* a = buf_.load(sync::memory_order_relaxed);
    // seq_cst store + seq_cst load of top_ replace the paper's fence: a
    // concurrent stealer either sees the lowered bottom or we see its top.
    bottom_.store(b, sync::memory_order_seq_cst);
    int64_t t = top_.load(sync::memory_order_seq_cst);
    if (t <= b) {
      T x = a->at(b).load(sync::memory_order_relaxed);
      if (t == b) {  // last element: race the stealers for it
        if (!top_.compare_exchange_strong(t, t + 1, sync::memory_order_seq_cst, sync::memory_order_relaxed)) {
          x = nullptr;
        }
        bottom_.store(b + 1, sync::memory_order_relaxed);
      }
      return x;
    }
    bottom_.store(b + 1, sync::memory_order_relaxed);
    return nullptr;
  }

  /// Owner, only while no other thread can steal from this deque (peer
  /// steal off: the owner, including its own take_oldest, is the only thread
  /// that touches it): pop without the seq_cst store and the last-element
  /// CAS, which are two locked instructions per chain hop on x86. The
  /// deque's state is the same as after pop(), so the owner may mix the two.
  T pop_unshared() {
    const int64_t b = bottom_.load(sync::memory_order_relaxed) - 1;
    const int64_t t = top_.load(sync::memory_order_relaxed);
    if (t > b) return nullptr;
    T x = buf_.load(sync::memory_order_relaxed)->at(b).load(sync::memory_order_relaxed);
    bottom_.store(b, sync::memory_order_relaxed);
    return x;
  }

  /// Owner, under the same condition as pop_unshared: takes the oldest
  /// element without the CAS of steal().
  T take_oldest_unshared() {
    const int64_t t = top_.load(sync::memory_order_relaxed);
    if (t >= bottom_.load(sync::memory_order_relaxed)) return nullptr;
    T x = buf_.load(sync::memory_order_relaxed)->at(t).load(sync::memory_order_relaxed);
    top_.store(t + 1, sync::memory_order_relaxed);
    return x;
  }

  /// Approximate length (exact for the owner when no stealer races).
  [[gnu::always_inline]] int64_t size() const {
    int64_t b = bottom_.load(sync::memory_order_relaxed);
    int64_t t = top_.load(sync::memory_order_relaxed);
    return b > t ? b - t : 0;
  }

  // ---- any thread ----
  /// Takes the oldest element, or nullptr when empty or on a lost race.
  T steal() {
    int64_t t = top_.load(sync::memory_order_seq_cst);
    int64_t b = bottom_.load(sync::memory_order_seq_cst);
    if (t < b) {
      Ring* a = buf_.load(sync::memory_order_acquire);
      T x = a->at(t).load(sync::memory_order_relaxed);
      if (!top_.compare_exchange_strong(t, t + 1, sync::memory_order_seq_cst, sync::memory_order_relaxed)) {
        return nullptr;
      }
      return x;
    }
    return nullptr;
  }

  struct Ring {
    int64_t cap;
    std::unique_ptr<sync::atomic<T>[]> slots;
    sync::atomic<T>& at(int64_t i) { return slots[size_t(i & (cap - 1))]; }
  };
  Ring* alloc(int64_t cap) {
    rings_.push_back(std::make_unique<Ring>(Ring{cap, std::make_unique<sync::atomic<T>[]>(size_t(cap))}));
    return rings_.back().get();
  }
  Ring* grow(Ring* a, int64_t t, int64_t b) {
    Ring* n = alloc(a->cap * 2);
    for (int64_t i = t; i < b; ++i)
      n->at(i).store(a->at(i).load(sync::memory_order_relaxed), sync::memory_order_relaxed);
    // release: a stealer acquiring buf_ sees the copied slots.
    buf_.store(n, sync::memory_order_release);
    return n;
  }

  // top_: CASed by stealers and by the owner for the last element.
  alignas(64) sync::atomic<int64_t> top_{0};
  // bottom_: written only by the owner; read by stealers.
  alignas(64) sync::atomic<int64_t> bottom_{0};
  // buf_: written only by the owner (grow); read by stealers.
  sync::atomic<Ring*> buf_{nullptr};
  std::vector<std::unique_ptr<Ring>> rings_;  // owner-only; retired rings live until destruction
};

/// The owning worker's handle: LIFO push/pop at the bottom. Made once per
/// deque (own_deque); move-only, so the owner stays one thread's.
template <class T>
class DequeOwner {
 public:
  DequeOwner(DequeOwner&&) noexcept = default;
  DequeOwner& operator=(DequeOwner&&) noexcept = default;
  DequeOwner(const DequeOwner&) = delete;
  DequeOwner& operator=(const DequeOwner&) = delete;

  /// A handle for the other threads (any number of them).
  DequeStealer<T> stealer() const noexcept { return DequeStealer<T>(d_); }
  void push(T x) { d_->push(x); }
  T pop() { return d_->pop(); }
  /// WorkDeque::pop_unshared: only while no stealer exists (peer steal off).
  T pop_unshared() { return d_->pop_unshared(); }
  [[gnu::always_inline]] int64_t size() const { return d_->size(); }
  /// The owner taking its own oldest element (to spill a backlog to the injector).
  T take_oldest() { return d_->steal(); }
  /// WorkDeque::take_oldest_unshared: only while no stealer exists.
  T take_oldest_unshared() { return d_->take_oldest_unshared(); }

 private:
  template <class U>
  friend DequeOwner<U> own_deque(WorkDeque<U>& d) noexcept;
  explicit DequeOwner(WorkDeque<T>* d) : d_(d) {}
  WorkDeque<T>* d_;
};

/// Any other thread's handle: FIFO steal at the top. Made by the owner's
/// stealer(); copyable.
template <class T>
class DequeStealer {
 public:
  T steal() const { return d_->steal(); }
  [[gnu::always_inline]] int64_t size() const { return d_->size(); }

 private:
  friend class DequeOwner<T>;
  explicit DequeStealer(WorkDeque<T>* d) : d_(d) {}
  WorkDeque<T>* d_;
};

/// The owner handle of d: call it once, from whoever sets up the deque, and
/// give the handle to the owning thread; stealers come from it. The deque
/// must outlive every handle.
template <class T>
DequeOwner<T> own_deque(WorkDeque<T>& d) noexcept {
  return DequeOwner<T>(&d);
}

}  // namespace coact::detail
