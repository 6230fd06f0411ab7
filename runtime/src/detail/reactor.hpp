// runtime/src/detail/reactor.hpp: the scheduler's side of the reactor
// (reactor.cpp; coact/runtime/reactor.hpp).
#pragma once

namespace coact::detail {
class Scheduler;
/// Stops `s`'s reactor thread, if a watch ever started one: no report is
/// posted after this returns. Watches still registered only unregister when
/// destroyed. Called by Scheduler::shutdown after the workers have joined
/// and before the actors are finalized. Blocks until the thread has joined.
void reactor_shutdown(Scheduler* s) noexcept;
}  // namespace coact::detail
