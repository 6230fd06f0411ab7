// runtime/src/detail/blocking_pool.hpp: the scheduler's side of the blocking
// pool (blocking_pool.cpp; coact/runtime/blocking.hpp).
#pragma once

namespace coact::detail {
class Scheduler;
/// Closes `s`'s blocking pool, if a call ever made one: the calls still
/// queued are discarded (never run), the running ones are waited for (their
/// results dropped) and the threads joined. Called by Scheduler::shutdown
/// after the workers have joined and before the actors are finalized (so a
/// running f never outlives its actor). Blocks until every running call
/// returns.
void blocking_pool_shutdown(Scheduler* s) noexcept;
}  // namespace coact::detail
