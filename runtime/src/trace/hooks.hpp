// runtime/src/trace/hooks.hpp: what the scheduler calls while the per-mail
// trace is on (recorder.hpp). Every call site is guarded by one branch on
// Worker::trace (or Scheduler::trace_ for roots), so with COACT_TRACE=off
// none of these runs. Threads: the worker (or sending thread) they describe.
#pragma once

#include <cstdint>

namespace coact::detail {
struct Worker;
struct ActorCell;
struct Envelope;
struct TimerEntry;
}  // namespace coact::detail

namespace coact::detail::trace {

class Ring;
class Session;

/// A send buffered inside a handler: stamps t_construct_start at the
/// invocation's first send and gives a sampled mail its id.
void on_send(Worker& w, Envelope* e) noexcept;
/// The flush point, before routing: one send event per traced mail in
/// w.outbound (t_sent = now). Returns t_sent.
uint64_t on_flush_begin(Worker& w, ActorCell* producer) noexcept;
/// After routing: the flush event (slice [t_sent, now]).
void on_flush_end(Worker& w, ActorCell* producer, uint64_t t_sent, uint32_t mails) noexcept;
/// A handler (or a coroutine resume) ran on w from t_received to now.
void on_handler(Worker& w, ActorCell* c, uint64_t mail, uint32_t kind, uint64_t t_received, bool resume) noexcept;
/// w parked at t_park and woke now.
void on_park(Worker& w, uint64_t t_park, bool timed_out, bool keeper) noexcept;
/// w fires timer `e` now.
void on_timer(Worker& w, const TimerEntry& e) noexcept;
/// A burst flush on w published `groups` groups and recruited `recruited`
/// siblings; `width_gate`: an untrusted cost cell sent the decision to the gate.
void on_recruit(Worker& w, ActorCell* producer, uint32_t groups, uint32_t recruited, bool width_gate) noexcept;

/// A root send (outside any handler): sampled, stamped, recorded on `r`.
struct RootSend {
  uint64_t id = 0;  // 0: not traced
  uint64_t t_sent = 0;
  uint64_t recipient = 0;
  uint32_t kind = 0;
};
RootSend on_root_send_begin(Session& s, Worker* w, ActorCell* target, Envelope* e) noexcept;
void on_root_send_end(Ring& r, const RootSend& rs) noexcept;

/// Pid as recorded: id << 32 | epoch.
uint64_t pid_of(const ActorCell* c) noexcept;

}  // namespace coact::detail::trace
