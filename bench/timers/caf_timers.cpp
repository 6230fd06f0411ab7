// bench/timers/caf_timers.cpp: the timer scenarios written for CAF 0.17
// (Debian's libcaf-dev), with the same pattern as coact_timers.cpp.
//
//   caf-timers --scenario lateness|idle_cpu|cancel_rate [options] [--workers 2]
//
// Runs the scenario once and prints one JSON line (timers_common.hpp defines
// the scenarios and their figures); exits 1 on an inconsistent result.
//
// CAF specifics, chosen so that both runtimes do the same work:
//  - event_based actors (function-based, stateful_actor for mutable state),
//    the scheduler capped with scheduler.max-threads = --workers; every other
//    setting is CAF's default (notably scheduler.max-throughput, unbounded, and
//    the work-stealing idle policy), as in bench/peers.
//  - Timers are self->delayed_send(handle, d, ...) from a handler: CAF's
//    actor_clock thread enqueues the message when it is due.
//  - CAF 0.17 has no per-message cancel of a delayed_send: cancel_rate
//    emulates one with a cancelled set (see timers_common.hpp).
// Pitfalls of 0.17: atoms are atom_constant<atom("...")> (at most 10 chars);
// the configuration ones are in bench/common/caf_support.hpp.
#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "caf_support.hpp"
#include "timers_common.hpp"

namespace {

using namespace coact::bench;

using tick_atom = caf::atom_constant<caf::atom("tick")>;
using busy_atom = caf::atom_constant<caf::atom("busy")>;
using batch_atom = caf::atom_constant<caf::atom("batch")>;
using never_atom = caf::atom_constant<caf::atom("never")>;
using link_atom = caf::atom_constant<caf::atom("link")>;

constexpr const char* kRuntime = "caf";

// ---- lateness -------------------------------------------------------------------

struct chain_state {
  caf::actor me;
  uint64_t fired = 0;
};

caf::behavior chain_actor(caf::stateful_actor<chain_state>* self, lateness_state* s, uint32_t index) {
  auto arm = [=] {
    const int64_t t = s->before_arm(index);
    self->delayed_send(self->state.me, std::chrono::nanoseconds(s->period_ns), tick_atom::value, t);
  };
  return {
      [=](start_atom) {
        self->state.me = caf::actor_cast<caf::actor>(self);
        arm();
      },
      [=](tick_atom, int64_t arm_ns) {
        if (s->on_fire(index, arm_ns, self->state.fired)) arm();
      },
      [=](stop_atom) {
        self->state.me = nullptr;
        self->quit();
      },
  };
}

struct busy_state {
  caf::actor next;  // itself (self) or its partner (pairs)
  uint64_t handled = 0;
};

// Spins busy_ns per handler, then sends the next busy message to `next`.
caf::behavior busy_actor(caf::stateful_actor<busy_state>* self, lateness_state* s) {
  auto work = [=] {
    if (s->stop_busy.load(std::memory_order_relaxed)) return;
    spin_for_ns(s->busy_ns);
    ++self->state.handled;
    self->send(self->state.next, busy_atom::value);
  };
  return {
      [=](link_atom, caf::actor next) { self->state.next = std::move(next); },
      [=](busy_atom) { work(); },
      [=](stop_atom) {
        s->busy_handlers.fetch_add(self->state.handled, std::memory_order_relaxed);
        self->state.next = nullptr;
        self->quit();
      },
  };
}

void run_lateness(caf::actor_system& sys, const timer_args& a) {
  lateness_state s(a);
  std::vector<caf::actor> chains;
  for (uint32_t i = 0; i < a.chains; ++i) chains.push_back(sys.spawn<caf::lazy_init>(chain_actor, &s, i));
  std::vector<caf::actor> busy;
  if (a.load != "idle")
    for (uint32_t i = 0; i < a.busy_actors; ++i) busy.push_back(sys.spawn<caf::lazy_init>(busy_actor, &s));

  const int64_t start = now_ns();
  for (auto& c : chains) caf::anon_send(c, start_atom::value);
  while (!s.all_armed()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  const int64_t load_start = now_ns();
  // Every link is in its actor's mailbox before any seed is sent (as in coact_timers.cpp).
  for (size_t i = 0; i < busy.size(); ++i)
    caf::anon_send(busy[i], link_atom::value, a.load == "self" ? busy[i] : busy[i ^ 1]);
  for (auto& b : busy) caf::anon_send(b, busy_atom::value);  // the seed: 4 runnable messages
  const uint32_t stalled = s.wait_done_or_stalled();
  const int64_t end = now_ns();

  s.stop_busy.store(true, std::memory_order_relaxed);
  for (auto& b : busy) caf::anon_send(b, stop_atom::value);
  for (auto& c : chains) caf::anon_send(c, stop_atom::value);
  busy.clear();
  chains.clear();
  sys.await_all_actors_done();
  check_lateness(kRuntime, a, s, stalled);
  print_lateness(kRuntime, a, s, stalled, start, end, load_start);
}

// ---- idle_cpu --------------------------------------------------------------------

struct periodic_state {
  caf::actor me;
};

caf::behavior periodic_actor(caf::stateful_actor<periodic_state>* self, idle_state* s,
                             std::chrono::nanoseconds period) {
  return {
      [=](start_atom) {
        self->state.me = caf::actor_cast<caf::actor>(self);
        self->delayed_send(self->state.me, period, tick_atom::value);
      },
      [=](tick_atom) {
        s->ticks.fetch_add(1, std::memory_order_release);
        self->delayed_send(self->state.me, period, tick_atom::value);
      },
      [=](stop_atom) {
        self->state.me = nullptr;
        self->quit();
      },
  };
}

void run_idle_cpu(caf::actor_system& sys, const timer_args& a) {
  idle_state s;
  auto p = sys.spawn<caf::lazy_init>(periodic_actor, &s, std::chrono::nanoseconds(std::chrono::milliseconds(a.period_ms)));
  caf::anon_send(p, start_atom::value);
  measure_idle_cpu(kRuntime, a, s);
  caf::anon_send(p, stop_atom::value);
  p = nullptr;
  sys.await_all_actors_done();
}

// ---- cancel_rate -----------------------------------------------------------------

struct cancel_actor_state {
  caf::actor me;
  std::unordered_set<uint64_t> cancelled;  // the emulated cancel: seqs whose message must be dropped
  uint64_t seq = 0;
  uint64_t pairs = 0;
  int64_t start = 0;
  bool started = false;  // not `!me`: under C++20 CAF may construct the state with me = self
  bool finished = false;
};

caf::behavior cancel_actor(caf::stateful_actor<cancel_actor_state>* self, cancel_state* s,
                           std::chrono::nanoseconds delay, int64_t duration_ns) {
  return {
      [=](batch_atom) {
        auto& st = self->state;
        if (!st.started) {
          st.started = true;
          st.me = caf::actor_cast<caf::actor>(self);
          st.cancelled.reserve(1 << 16);
          st.start = now_ns();
        }
        for (uint32_t i = 0; i < kCancelBatch; ++i) {
          const uint64_t id = ++st.seq;
          self->delayed_send(st.me, delay, never_atom::value, id);  // "send_after"
          st.cancelled.insert(id);                                  // "cancel"
        }
        st.pairs += kCancelBatch;
        const int64_t now = now_ns();
        if (now - st.start < duration_ns) {
          self->send(st.me, batch_atom::value);
          return;
        }
        st.finished = true;
        s->start_ns.store(st.start);
        s->end_ns.store(now);
        s->pairs.store(st.pairs);
        s->cancelled.store(st.pairs);
        s->finished.store(true, std::memory_order_release);
      },
      [=](never_atom, uint64_t id) {
        if (self->state.cancelled.erase(id) != 0) {
          s->discarded.fetch_add(1, std::memory_order_relaxed);
        } else {
          s->delivered.fetch_add(1, std::memory_order_relaxed);
        }
      },
      [=](stop_atom) {
        self->state.me = nullptr;
        self->quit();
      },
  };
}

void run_cancel_rate(caf::actor_system& sys, const timer_args& a) {
  cancel_state s;
  auto c = sys.spawn<caf::lazy_init>(cancel_actor, &s, std::chrono::nanoseconds(std::chrono::milliseconds(a.delay_ms)),
                                     int64_t(a.duration_ms) * 1'000'000);
  caf::anon_send(c, batch_atom::value);
  wait_flag(s.finished);
  std::this_thread::sleep_for(std::chrono::milliseconds(a.delay_ms + 20));
  caf::anon_send(c, stop_atom::value);
  c = nullptr;
  sys.await_all_actors_done();
  if (s.delivered.load() != 0)
    fail_check(kRuntime, a, "a delayed message not in the cancelled set arrived (" + std::to_string(s.delivered.load()) + ")");
  print_cancel_rate(kRuntime, a, s, "emulated: delayed_send + cancelled-set flag (CAF 0.17 has no cancel)");
}

}  // namespace

int main(int argc, char** argv) {
  timer_args a = parse_args(argc, argv);
  apply_timer_slack(a);
  caf_setup setup(a.workers);
  if (!setup.has_workers("caf-timers", a.workers)) return 1;
  caf::actor_system& sys = setup.sys;
  auto dog = arm_watchdog(kRuntime, a, [&setup] { return setup.running_actors(); });
  if (a.scenario == "lateness")
    run_lateness(sys, a);
  else if (a.scenario == "idle_cpu")
    run_idle_cpu(sys, a);
  else
    run_cancel_rate(sys, a);
  return 0;
}
