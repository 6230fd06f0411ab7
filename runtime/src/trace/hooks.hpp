// runtime/src/trace/hooks.hpp: what the scheduler calls while the per-mail
// trace is on (recorder.hpp). With COACT_TRACE=off none of these runs, and
// the untraced paths pay (per message): one branch per dispatch on
// Worker::trace.gate (dispatch picks its traced or untraced copy, and the copy
// picks the flush and, through Worker::dispatch.in_handler, the send path) and one
// store per job (run_job clears Worker::trace.pickup). Off the per-message
// path: parks, timer fires, coroutine resumes, burst recruitment and root
// sends (Scheduler::trace_) test the same pointers. Threads: the worker (or
// sending thread) they describe.
#pragma once

#include <cstdint>

#include <coact/runtime/detail/mailbox.hpp>

namespace coact::detail {
struct Worker;
struct ActorCell;
struct TimerEntry;
}  // namespace coact::detail

namespace coact::detail::trace {

class Ring;
class Session;

/// A send buffered inside a traced handler: stamps t_construct_start at the
/// invocation's first send.
void on_send(Worker& w) noexcept;
/// The flush point, before routing: samples the mail in w.outbound, tags
/// the traced ones (Envelope::trace_tag) and records one send event each
/// (t_sent = now). Returns t_sent; `traced`: the mails it tagged.
uint64_t on_flush_begin(Worker& w, ActorCell* producer, uint32_t& traced) noexcept;
/// After routing: the flush event (slice [t_sent, now]) if `traced` > 0.
void on_flush_end(Worker& w, ActorCell* producer, uint64_t t_sent, uint32_t mails, uint32_t traced) noexcept;
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

/// The mail key recorded in send and handler events: the envelope's address
/// with its trace tag in bits 48..63 (user-space addresses are below 2^48).
/// Envelopes are reused only after their mail was consumed, so the exporter
/// joins a handler to the latest send of the same key before it (export.cpp).
inline uint64_t mail_key(const Envelope* e) noexcept {
  return e->trace_tag == 0 ? 0 : uint64_t(reinterpret_cast<uintptr_t>(e)) ^ (uint64_t(e->trace_tag) << 48);
}
/// Tags `e` as traced with the next id of ring `r`; returns its key.
uint64_t mark(Ring& r, Envelope* e) noexcept;

/// Pid as recorded: id << 32 | epoch.
uint64_t pid_of(const ActorCell* c) noexcept;

}  // namespace coact::detail::trace
