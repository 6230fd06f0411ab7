// runtime/src/detail/reactor.hpp: the scheduler's side of the reactor
// (reactor.cpp; coact/runtime/reactor.hpp): the poll role its workers take
// and reactor_shutdown.
#pragma once

#include "parker.hpp"

namespace coact::detail {
class Scheduler;

/// A Scheduler's reactor as its workers drive it (reactor.cpp, "The poll
/// role"). Made for the Scheduler by its first IoWatch
/// (Scheduler::io_poll_or_make) and alive until the Scheduler is destroyed.
/// Pool workers of that Scheduler only, except wake() (Parker::PollWait:
/// any thread).
class IoPoll : public Parker::PollWait {
 public:
  /// Takes the poll role if no worker holds it. Holding it, the worker may
  /// wait (through Parker::park_polling) or poll_now, then must call
  /// deliver_and_end.
  virtual bool try_begin() noexcept = 0;
  /// The holder: collects the readiness epoll has now, without waiting.
  /// Returns whether there is any.
  virtual bool poll_now() noexcept = 0;
  /// The holder, outside any handler: posts what it collected (the reports'
  /// actors made runnable land on its own deque), then releases the role.
  virtual void deliver_and_end() noexcept = 0;

 protected:
  ~IoPoll() = default;
};

/// Closes `s`'s reactor, if a watch ever made one: no report is posted
/// after this returns. Watches still registered only unregister when
/// destroyed. Called by Scheduler::shutdown after the workers have joined
/// (so no worker holds the poll role) and before the actors are finalized.
void reactor_shutdown(Scheduler* s) noexcept;
}  // namespace coact::detail
