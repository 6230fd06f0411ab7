// runtime/src/detail/per_scheduler.hpp: a service that a Scheduler starts on
// first use and stops at its shutdown (the blocking pool, the reactor), kept
// in a small table keyed by the Scheduler. Thread-safe (a mutex); only the
// rare paths touch it: a service's first use and the scheduler's shutdown.
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace coact::detail {

class Scheduler;

template <class Service>
class PerScheduler {
 public:
  /// s's service, made by `make()` (returning a std::shared_ptr<Service>)
  /// under the table's lock if s has none yet, so two first uses racing
  /// make one. Who may call: any thread, while s is alive.
  template <class Make>
  std::shared_ptr<Service> get_or_make(Scheduler* s, Make&& make) {
    std::lock_guard lk(mu_);
    for (auto& [sched, service] : entries_) {
      if (sched == s) return service;
    }
    entries_.emplace_back(s, make());
    return entries_.back().second;
  }

  /// Removes s's service from the table and returns it (null if s never
  /// made one): the caller stops it. After this, get_or_make(s) would make
  /// a new one, so call it only from s's shutdown.
  std::shared_ptr<Service> take(Scheduler* s) {
    std::lock_guard lk(mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == s) {
        std::shared_ptr<Service> service = std::move(it->second);
        entries_.erase(it);
        return service;
      }
    }
    return nullptr;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<Scheduler*, std::shared_ptr<Service>>> entries_;  // guarded by mu_
};

}  // namespace coact::detail
