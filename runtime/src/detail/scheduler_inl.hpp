// runtime/src/detail/scheduler_inl.hpp: what the scheduler's files share
// and must inline across them: the running worker (t_worker), the Stash of a
// waiting actor, the Resume mail, the pay-point test and the single-writer
// counter bump. Included by the runtime/src/*.cpp files that implement
// Scheduler (lifecycle, send, burst_dispatch, worker_loop, idle, timers),
// which compile as one unit (runtime/CMakeLists.txt: the inlining of the
// send, flush and schedule paths depends on it); nothing outside
// runtime/src includes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>

#include <coact/causal/hooks.hpp>

#include "scheduler.hpp"

namespace coact::detail {

struct Stash {
  std::deque<Envelope*> q;  // holder-only: user mail kept aside while the actor waits
};

// The running worker of this thread (worker_main sets and clears it), null
// off the pool. constinit: no thread-local wrapper call on access.
inline constinit thread_local Worker* t_worker = nullptr;

// The wake of a waiting actor: system mail carrying the wait epoch.
struct ResumeEnvelope final : Envelope {
  uint64_t epoch;
  explicit ResumeEnvelope(uint64_t ep) : epoch(ep) {
    system = SystemMail::resume;
    drop = [](Envelope* self) { delete static_cast<ResumeEnvelope*>(self); };
  }
};

// Whether a pay point would pay nothing now (no causal sweep, or a sweep that
// has injected no delay yet, e.g. one at speedup 0): direct sends stay on
// while it holds (Scheduler::post).
inline bool pay_point_is_noop() noexcept { return causal::pay_point_is_noop(); }

// Relaxed single-writer increment: the owning worker is the only writer, so a
// load+store pair avoids a locked instruction per dispatch.
inline void bump(std::atomic<uint64_t>& c) noexcept {
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace coact::detail
