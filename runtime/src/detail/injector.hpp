// runtime/src/detail/injector.hpp: the shared injector, a FIFO of runnable
// actors that any thread may push to and any worker pop from.
//
// A mutex around a ring: the injector is off the hot path by design (kept-local
// work never touches it; roots, spills, budget yields and recruitment do), and
// a mutex keeps it obviously linearizable. `len_` mirrors the length so idle
// workers and the lost-wakeup recheck can test emptiness without the lock; it
// is updated under the lock with seq_cst, which is the "work published" write
// of spin_park.hpp's argument.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

#include "sync.hpp"

namespace coact::detail {

template <class T>
class Injector {
 public:
  void push(T x) {
    std::lock_guard lk(mu_);
    q_.push_back(x);
    len_.store(int64_t(q_.size()), sync::memory_order_seq_cst);
  }
  /// Pushes xs[0..n) in order under one lock (a spilled backlog).
  void push_many(const T* xs, size_t n) {
    if (n == 0) return;
    std::lock_guard lk(mu_);
    q_.insert(q_.end(), xs, xs + n);
    len_.store(int64_t(q_.size()), sync::memory_order_seq_cst);
  }
  T try_pop() {
    if (len_.load(sync::memory_order_seq_cst) == 0) return nullptr;
    std::lock_guard lk(mu_);
    if (q_.empty()) return nullptr;
    T x = q_.front();
    q_.pop_front();
    len_.store(int64_t(q_.size()), sync::memory_order_seq_cst);
    return x;
  }
  /// seq_cst: the recheck step of spin_park.hpp's lost-wakeup argument.
  bool empty() const { return len_.load(sync::memory_order_seq_cst) == 0; }
  int64_t size() const { return len_.load(sync::memory_order_relaxed); }

 private:
  std::mutex mu_;
  std::deque<T> q_;  // guarded by mu_
  // Written under mu_ by push/try_pop; read lock-free by idle checks.
  sync::atomic<int64_t> len_{0};
};

}  // namespace coact::detail
