// coact/runtime/timer.hpp: timer identities and anchors (docs/DESIGN.md).
//
// A TimerId names one armed send timer (send_after and friends). cancel(id)
// returns true iff the cancel beat the fire: then the mail is never delivered;
// false means it was (or is being) delivered exactly once.
// Anchors: a virtual timer's deadline lives in the program's virtual time: it
// shifts by the delay the causal profiler injected since it was armed (its
// delay_stamp), so timeout/retry pacing stays consistent with a dilated
// workload. A wall-anchored timer (sleep_wall, send_after_wall) fires at its
// raw deadline regardless of injected delay: for deadlines that reflect the
// outside world (protocol timeouts, the profiler's own windows). Without a
// sweep the two are identical.
#pragma once

#include <cstdint>

#include <coact/runtime/detail/small_alloc.hpp>

namespace coact {

struct TimerId {
  uint64_t seq = 0;
  explicit operator bool() const noexcept { return seq != 0; }
  friend bool operator==(TimerId, TimerId) = default;
};

enum class Anchor : uint8_t { virtual_time = 0, wall = 1 };

namespace detail {
/// A type-erased send-timer action: fire() delivers (resolving the address
/// now), destruction without fire() drops it. Allocated from the per-thread
/// free lists (small_alloc.hpp): a periodic timer arms one per period, and
/// glibc's malloc and free would put their instructions and cold cache
/// lines on every idle tick. Freed on
/// the firing worker (or the thread that cancels or shuts down).
struct TimerAction : SmallAllocated {
  virtual ~TimerAction() = default;
  virtual void fire() = 0;
};
template <class F>
struct TimerActionImpl final : TimerAction {
  explicit TimerActionImpl(F f) : f_(std::move(f)) {}
  void fire() override { f_(); }
  F f_;
};
}  // namespace detail

}  // namespace coact
