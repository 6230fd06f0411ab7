// runtime/src/trace/hooks.cpp: the scheduler's trace hooks (hooks.hpp).
#include "hooks.hpp"

#include "../detail/scheduler.hpp"
#include "../detail/sync.hpp"
#include "recorder.hpp"

namespace coact::detail::trace {

uint64_t pid_of(const ActorCell* c) noexcept { return (uint64_t(c->pid.id) << 32) | c->pid.epoch; }

void on_send(Worker& w) noexcept {
  if (w.trace.first_send == 0) w.trace.first_send = sync::now_ns();
}

uint64_t mark(Ring& r, Envelope* e) noexcept {
  const uint16_t tag = uint16_t(r.next_id() % 65535 + 1);
  e->trace_tag = tag;
  return mail_key(e);
}

uint64_t on_flush_begin(Worker& w, ActorCell* producer, uint32_t& traced) noexcept {
  const uint64_t now = sync::now_ns();
  traced = 0;
  const uint64_t first = w.trace.first_send != 0 ? w.trace.first_send : now;
  for (auto& [t, e] : w.outbound) {
    if (!w.trace.session->sample(w.trace.rng)) continue;  // sampled here, before the mail is published
    Event ev{};
    ev.type = EventType::send;
    ev.t0 = first;
    ev.t1 = now;
    ev.id = mark(*w.trace.ring, e);
    ev.a = pid_of(t);
    ev.kind = e->kind;
    ev.kind2 = w.trace.kind;
    ev.type_info = producer != nullptr ? producer->type : nullptr;
    w.trace.ring->append(ev);
    ++traced;
  }
  return now;
}

void on_flush_end(Worker& w, ActorCell* producer, uint64_t t_sent, uint32_t mails, uint32_t traced) noexcept {
  if (traced == 0) {  // no traced mail: nothing to show (and the ring lasts at low rates)
    w.trace.first_send = 0;
    return;
  }
  Event ev{};
  ev.type = EventType::flush;
  ev.t0 = w.trace.first_send != 0 ? w.trace.first_send : t_sent;
  ev.t1 = t_sent;
  ev.t2 = sync::now_ns();
  ev.count = mails;
  ev.kind = w.trace.kind;
  ev.a = producer != nullptr ? pid_of(producer) : 0;
  ev.type_info = producer != nullptr ? producer->type : nullptr;
  w.trace.ring->append(ev);
  w.trace.first_send = 0;
}

void on_handler(Worker& w, ActorCell* c, uint64_t mail, uint32_t kind, uint64_t t_received, bool resume) noexcept {
  const uint64_t now = sync::now_ns();
  if (w.trace.pickup == 0) w.trace.pickup = t_received;  // the job's first handler (run_job cleared it)
  if (mail != 0 || (resume && w.trace.session->all())) {
    Event ev{};
    ev.type = EventType::handler;
    ev.flags = resume ? 1 : 0;
    ev.t0 = w.trace.pickup;
    ev.t1 = t_received;
    ev.t2 = now;
    ev.id = mail;
    ev.a = pid_of(c);
    ev.kind = kind;
    ev.type_info = c->type;
    w.trace.ring->append(ev);
  }
  w.trace.session->poll_experiment(*w.trace.ring, now);
}

void on_park(Worker& w, uint64_t t_park, bool timed_out, bool keeper) noexcept {
  Event ev{};
  ev.type = EventType::park;
  ev.flags = uint8_t((timed_out ? 1 : 0) | (keeper ? 2 : 0));
  ev.t0 = t_park;
  ev.t1 = sync::now_ns();
  w.trace.ring->append(ev);
  w.trace.session->poll_experiment(*w.trace.ring, ev.t1);
}

void on_timer(Worker& w, const TimerEntry& e) noexcept {
  Event ev{};
  ev.type = EventType::timer;
  ev.kind = uint32_t(e.reason);
  ev.t0 = sync::now_ns();
  ev.t1 = e.deadline_ns;
  w.trace.ring->append(ev);
}

void on_recruit(Worker& w, ActorCell* producer, uint32_t groups, uint32_t recruited, bool width_gate) noexcept {
  Event ev{};
  ev.type = EventType::recruit;
  ev.flags = width_gate ? 1 : 0;
  ev.t0 = sync::now_ns();
  ev.kind = w.trace.kind;
  ev.kind2 = groups;
  ev.count = recruited;
  ev.a = pid_of(producer);
  ev.type_info = producer->type;
  w.trace.ring->append(ev);
}

RootSend on_root_send_begin(Session& s, Worker* w, ActorCell* target, Envelope* e) noexcept {
  thread_local uint64_t rng = 0;
  uint64_t& state = w != nullptr ? w->trace.rng : rng;
  if (state == 0) state = (reinterpret_cast<uintptr_t>(&state) | 1) * 0x9E3779B97F4A7C15ull;
  RootSend rs;
  if (!s.sample(state)) return rs;
  Ring& r = w != nullptr ? *w->trace.ring : s.external();
  rs.id = mark(r, e);
  rs.t_sent = sync::now_ns();
  rs.recipient = pid_of(target);
  rs.kind = e->kind;
  return rs;
}

void on_root_send_end(Ring& r, const RootSend& rs) noexcept {
  if (rs.id == 0) return;
  Event ev{};
  ev.type = EventType::send;
  ev.t0 = rs.t_sent;
  ev.t1 = rs.t_sent;
  ev.t2 = sync::now_ns();
  ev.id = rs.id;
  ev.a = rs.recipient;
  ev.kind = rs.kind;
  r.append(ev);
}

}  // namespace coact::detail::trace
