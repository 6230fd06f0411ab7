// bench/peers/caf_peers.cpp: the four peer workloads written for CAF 0.17
// (Debian's libcaf-dev), with the same message pattern as coact_peers.cpp.
//
//   caf-peers --workload ping_pong|fan_out|thread_ring|skynet --n N [--workers 2]
//
// Runs the workload once and prints one JSON line (peers_common.hpp defines
// the workloads, "msgs" and the timing window); exits 1 on a wrong result.
//
// CAF specifics, chosen so that both runtimes do the same work:
//  - event_based actors (function-based, stateful_actor for mutable state),
//    the scheduler capped with scheduler.max-threads = --workers.
//  - Every actor is spawned with caf::lazy_init: it is not scheduled until its
//    first message, as a coact actor is constructed at spawn and first runs
//    when mail arrives. (Without it CAF schedules each new actor once just to
//    run its init function, which coact does not do.)
//  - Replies are explicit sends to a handle the actor holds (coact has no
//    request/response sugar), never CAF's request()/response promises.
//  - Stopping is an explicit `stop` message whose handler calls quit(), the
//    counterpart of coact's Stop message + stop().
// Pitfalls of 0.17: atoms are atom_constant<atom("...")> (at most 10 chars);
// the configuration ones are in bench/common/caf_support.hpp.
#include <caf/all.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "caf_support.hpp"
#include "peers_common.hpp"

namespace {

using namespace coact::bench;

using ping_atom = caf::atom_constant<caf::atom("ping")>;
using pong_atom = caf::atom_constant<caf::atom("pong")>;
using req_atom = caf::atom_constant<caf::atom("req")>;
using rep_atom = caf::atom_constant<caf::atom("rep")>;
using token_atom = caf::atom_constant<caf::atom("token")>;
using result_atom = caf::atom_constant<caf::atom("result")>;

constexpr const char* kRuntime = "caf";

// ---- ping_pong: 2 actors, n round trips; msgs = 2n ---------------------------
// pinger gets (start, ponger), sends ping(n-1); ponger answers each ping(k)
// with pong(k); pinger answers pong(k > 0) with ping(k-1); pong(0) ends it.

struct ponger_state {
  uint64_t pings = 0;
};

caf::behavior ponger(caf::stateful_actor<ponger_state>* self, caf::actor pinger,
                     ping_pong_result* r) {
  return {
      [=](ping_atom, int64_t k) {
        ++self->state.pings;
        self->send(pinger, pong_atom::value, k);
      },
      [=](stop_atom) {
        r->pings.store(self->state.pings, std::memory_order_release);
        self->quit();
      },
  };
}

struct pinger_state {
  caf::actor peer;
  uint64_t pongs = 0;
};

caf::behavior pinger(caf::stateful_actor<pinger_state>* self, uint64_t n, ping_pong_result* r) {
  return {
      [=](start_atom, caf::actor peer) {
        self->state.peer = peer;
        self->send(peer, ping_atom::value, int64_t(n - 1));
      },
      [=](pong_atom, int64_t k) {
        ++self->state.pongs;
        if (k > 0) {
          self->send(self->state.peer, ping_atom::value, k - 1);
          return;
        }
        r->end_ns.store(now_ns(), std::memory_order_release);
        r->pongs.store(self->state.pongs, std::memory_order_release);
        self->send(self->state.peer, stop_atom::value);
        self->quit();
      },
  };
}

void run_ping_pong(caf::actor_system& sys, const peer_args& a) {
  ping_pong_result r;
  auto pi = sys.spawn<caf::lazy_init>(pinger, a.n, &r);
  auto po = sys.spawn<caf::lazy_init>(ponger, pi, &r);
  int64_t start = now_ns();
  caf::anon_send(pi, start_atom::value, po);
  sys.await_all_actors_done();
  r.check_and_print(kRuntime, a, start);
}

// ---- fan_out: 1 master, 64 workers, n requests in rounds of 64; msgs = 2n ----
// The master spawns the workers on start, sends req(i) to each worker for the
// next (up to) 64 request ids, and sends the next round once all replies
// rep(i) of this one arrived. Workers answer req(i) with rep(i).

struct fan_worker_state {
  uint64_t handled = 0;
};

caf::behavior fan_worker(caf::stateful_actor<fan_worker_state>* self, caf::actor master,
                         fan_out_result* r) {
  return {
      [=](req_atom, int64_t i) {
        ++self->state.handled;
        self->send(master, rep_atom::value, i);
      },
      [=](stop_atom) {
        r->handled.fetch_add(self->state.handled, std::memory_order_acq_rel);
        self->quit();
      },
  };
}

struct fan_master_state {
  std::vector<caf::actor> workers;
  uint64_t next = 0;         // next request id
  uint64_t outstanding = 0;  // replies missing in this round
  uint64_t replies = 0;
  uint64_t sum = 0;
};

caf::behavior fan_master(caf::stateful_actor<fan_master_state>* self, uint64_t n, fan_out_result* r) {
  auto send_round = [=] {
    auto& s = self->state;
    uint64_t m = std::min<uint64_t>(kFanOutWorkers, n - s.next);
    for (uint64_t j = 0; j < m; ++j) self->send(s.workers[j], req_atom::value, int64_t(s.next++));
    s.outstanding = m;
  };
  return {
      [=](start_atom) {
        auto me = caf::actor_cast<caf::actor>(self);
        for (uint32_t j = 0; j < kFanOutWorkers; ++j)
          self->state.workers.push_back(self->spawn<caf::lazy_init>(fan_worker, me, r));
        send_round();
      },
      [=](rep_atom, int64_t i) {
        auto& s = self->state;
        ++s.replies;
        s.sum += uint64_t(i);
        if (--s.outstanding > 0) return;
        if (s.next < n) {
          send_round();
          return;
        }
        r->end_ns.store(now_ns(), std::memory_order_release);
        r->replies.store(s.replies, std::memory_order_release);
        r->reply_sum.store(s.sum, std::memory_order_release);
        for (auto& w : s.workers) self->send(w, stop_atom::value);
        self->quit();
      },
  };
}

void run_fan_out(caf::actor_system& sys, const peer_args& a) {
  fan_out_result r;
  auto m = sys.spawn<caf::lazy_init>(fan_master, a.n, &r);
  int64_t start = now_ns();
  caf::anon_send(m, start_atom::value);
  sys.await_all_actors_done();
  r.check_and_print(kRuntime, a, start);
}

// ---- thread_ring: 503 actors, token passed n hops; msgs = n ------------------
// Node 0 gets (start, node 1, n) and holds token n. A node holding token k > 0
// sends token(k-1) to the next node (one hop); the node that receives token 0
// ends the run (it is node n % 503) and sends stop(503 - 1) around the ring;
// each node adds its hop count to the total and forwards stop(r - 1) while r > 0.

struct ring_state {
  caf::actor next;
  uint64_t hops = 0;
};

caf::behavior ring_node(caf::stateful_actor<ring_state>* self, int64_t index, caf::actor next,
                        ring_result* r) {
  self->state.next = std::move(next);
  auto stop_pass = [=](int64_t remaining) {
    r->hops.fetch_add(self->state.hops, std::memory_order_acq_rel);
    if (remaining > 0) self->send(self->state.next, stop_atom::value, remaining - 1);
    self->quit();
  };
  auto token = [=](int64_t k) {
    if (k > 0) {
      ++self->state.hops;
      self->send(self->state.next, token_atom::value, k - 1);
      return;
    }
    r->end_ns.store(now_ns(), std::memory_order_release);
    r->final_node.store(index, std::memory_order_release);
    stop_pass(int64_t(kRingSize) - 1);
  };
  return {
      [=](start_atom, caf::actor first_next, int64_t n) {
        self->state.next = std::move(first_next);
        token(n);
      },
      [=](token_atom, int64_t k) { token(k); },
      [=](stop_atom, int64_t remaining) { stop_pass(remaining); },
  };
}

void run_thread_ring(caf::actor_system& sys, const peer_args& a) {
  ring_result r;
  auto head = sys.spawn<caf::lazy_init>(ring_node, int64_t(0), caf::actor{}, &r);
  caf::actor next = head;
  for (int64_t i = kRingSize - 1; i >= 1; --i) next = sys.spawn<caf::lazy_init>(ring_node, i, next, &r);
  int64_t start = now_ns();
  caf::anon_send(head, start_atom::value, next, int64_t(a.n));
  next = nullptr;
  head = nullptr;
  sys.await_all_actors_done();
  r.check_and_print(kRuntime, a, start);
}

// ---- skynet: 10-ary spawn tree, n leaves; msgs = actors spawned --------------
// A node gets (start, num, size). size == 1: reply result(num, 1) to the parent
// and quit. Else spawn 10 children, send child i (start, num + i*size/10,
// size/10), sum the 10 result(sum, actors) replies, reply result(sum, actors+1)
// and quit. The root (no parent) records the totals. Want sum = n(n-1)/2 and
// actors = 1 + 10 + ... + n.

struct skynet_state {
  uint32_t pending = 0;
  uint64_t sum = 0;
  uint64_t actors = 0;
};

caf::behavior skynet_node(caf::stateful_actor<skynet_state>* self, caf::actor parent, skynet_result* r) {
  return {
      [=](start_atom, int64_t num, int64_t size) {
        if (size == 1) {
          if (parent) {
            self->send(parent, result_atom::value, num, int64_t(1));
          } else {  // n == 1: the root is the only leaf
            r->end_ns.store(now_ns(), std::memory_order_release);
            r->sum.store(uint64_t(num), std::memory_order_release);
            r->actors.store(1, std::memory_order_release);
          }
          self->quit();
          return;
        }
        int64_t child = size / kSkynetBranching;
        auto me = caf::actor_cast<caf::actor>(self);
        for (uint32_t i = 0; i < kSkynetBranching; ++i) {
          auto c = self->spawn<caf::lazy_init>(skynet_node, me, r);
          self->send(c, start_atom::value, num + int64_t(i) * child, child);
        }
        self->state.pending = kSkynetBranching;
      },
      [=](result_atom, int64_t sum, int64_t actors) {
        auto& s = self->state;
        s.sum += uint64_t(sum);
        s.actors += uint64_t(actors);
        if (--s.pending > 0) return;
        if (parent) {
          self->send(parent, result_atom::value, int64_t(s.sum), int64_t(s.actors + 1));
        } else {
          r->end_ns.store(now_ns(), std::memory_order_release);
          r->sum.store(s.sum, std::memory_order_release);
          r->actors.store(s.actors + 1, std::memory_order_release);
        }
        self->quit();
      },
  };
}

void run_skynet(caf::actor_system& sys, const peer_args& a) {
  skynet_result r;
  auto root = sys.spawn<caf::lazy_init>(skynet_node, caf::actor{}, &r);
  int64_t start = now_ns();
  caf::anon_send(root, start_atom::value, int64_t(0), int64_t(a.n));
  root = nullptr;
  sys.await_all_actors_done();
  r.check_and_print(kRuntime, a, start);
}

}  // namespace

int main(int argc, char** argv) {
  peer_args a = parse_args(argc, argv);
  caf_setup setup(a.workers);
  if (!setup.has_workers("caf-peers", a.workers)) return 1;
  caf::actor_system& sys = setup.sys;
  auto dog = arm_watchdog(kRuntime, a, [&setup] { return setup.running_actors(); });
  if (a.workload == "ping_pong")
    run_ping_pong(sys, a);
  else if (a.workload == "fan_out")
    run_fan_out(sys, a);
  else if (a.workload == "thread_ring")
    run_thread_ring(sys, a);
  else
    run_skynet(sys, a);
  return 0;
}
