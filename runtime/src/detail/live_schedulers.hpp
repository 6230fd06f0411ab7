// runtime/src/detail/live_schedulers.hpp: the set of schedulers still alive,
// so a cell freed after its runtime is gone (a user kept an ActorRef) does not
// count dropped mail into freed memory. Only the rare path touches it: boot,
// shutdown, and freeing a cell that still held mail. Thread-safe (a mutex).
#pragma once

#include <cstdint>

namespace coact::detail {
class Scheduler;
void live_schedulers_add(Scheduler* s);
void live_schedulers_remove(Scheduler* s);
/// Counts n dropped mails on s if s is still alive; otherwise does nothing.
void count_late_drops(Scheduler* s, uint64_t n) noexcept;
}  // namespace coact::detail
