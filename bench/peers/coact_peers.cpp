// bench/peers/coact_peers.cpp: the four peer workloads written for coact, with
// the same message pattern as caf_peers.cpp.
//
//   coact-peers --workload ping_pong|fan_out|thread_ring|skynet --n N [--workers 2]
//
// Runs the workload once and prints one JSON line (peers_common.hpp defines
// the workloads, "msgs" and the timing window); exits 1 on a wrong result.
// The scheduler tuning is resolve_tuning() (so COACT_* environment knobs and
// COACT_CONFIG apply, for experiments) with `workers` forced to --workers
// (bench/common/coact_support.hpp).
//
// Pattern notes (mirrored in caf_peers.cpp):
//  - Fixed actors are spawned by main before the clock starts; the run starts
//    with one Start message sent from main.
//  - Replies are explicit sends to a ref the actor holds.
//  - Stopping is an explicit Stop message whose handler calls stop().
//  - skynet children are spawned inside the parent's handler and each is sent
//    one Start message (coact's spawn constructs the actor in place; the work
//    runs when its first mail arrives, like CAF's lazy_init).
#include <coact/runtime/runtime.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "coact_support.hpp"
#include "peers_common.hpp"

namespace {

using namespace coact::bench;

constexpr const char* kRuntime = "coact";

struct stop_msg {};

// ---- ping_pong: 2 actors, n round trips; msgs = 2n ---------------------------
// pinger gets start(ponger), sends ping(n-1); ponger answers each ping(k) with
// pong(k); pinger answers pong(k > 0) with ping(k-1); pong(0) ends it.

struct ping_msg {
  int64_t k;
};
struct pong_msg {
  int64_t k;
};

struct pinger;

struct ponger : coact::Actor<ponger> {
  coact::ActorRef<pinger> peer;
  ping_pong_result* r;
  uint64_t pings = 0;
  ponger(coact::ActorRef<pinger> p, ping_pong_result* res) : peer(std::move(p)), r(res) {}
  void on(const ping_msg& m);
  void on(const stop_msg&) {
    r->pings.store(pings, std::memory_order_release);
    stop();
  }
};

struct pinger_start {
  coact::ActorRef<ponger> peer;
};

struct pinger : coact::Actor<pinger> {
  coact::ActorRef<ponger> peer;
  uint64_t n;
  ping_pong_result* r;
  uint64_t pongs = 0;
  pinger(uint64_t rounds, ping_pong_result* res) : n(rounds), r(res) {}
  void on(pinger_start& m) {
    peer = std::move(m.peer);
    peer.send(ping_msg{int64_t(n - 1)});
  }
  void on(const pong_msg& m) {
    ++pongs;
    if (m.k > 0) {
      peer.send(ping_msg{m.k - 1});
      return;
    }
    r->end_ns.store(now_ns(), std::memory_order_release);
    r->pongs.store(pongs, std::memory_order_release);
    peer.send(stop_msg{});
    stop();
  }
};

void ponger::on(const ping_msg& m) {
  ++pings;
  peer.send(pong_msg{m.k});
}

void run_ping_pong(coact::Runtime& rt, const peer_args& a) {
  ping_pong_result r;
  auto pi = rt.spawn<pinger>(a.n, &r);
  auto po = rt.spawn<ponger>(pi, &r);
  int64_t start = now_ns();
  pi.send(pinger_start{std::move(po)});
  rt.run();
  r.check_and_print(kRuntime, a, start);
}

// ---- fan_out: 1 master, 64 workers, n requests in rounds of 64; msgs = 2n ----
// The master spawns the workers on start, sends req(i) to each worker for the
// next (up to) 64 request ids, and sends the next round once all replies
// rep(i) of this one arrived. Workers answer req(i) with rep(i).

struct req_msg {
  int64_t i;
};
struct rep_msg {
  int64_t i;
};
struct fan_start {};

struct fan_master;

struct fan_worker : coact::Actor<fan_worker> {
  coact::ActorRef<fan_master> master;
  fan_out_result* r;
  uint64_t handled = 0;
  fan_worker(coact::ActorRef<fan_master> m, fan_out_result* res) : master(std::move(m)), r(res) {}
  void on(const req_msg& m);
  void on(const stop_msg&) {
    r->handled.fetch_add(handled, std::memory_order_acq_rel);
    stop();
  }
};

struct fan_master : coact::Actor<fan_master> {
  uint64_t n;
  fan_out_result* r;
  std::vector<coact::ActorRef<fan_worker>> workers;
  uint64_t next = 0;         // next request id
  uint64_t outstanding = 0;  // replies missing in this round
  uint64_t replies = 0;
  uint64_t sum = 0;
  fan_master(uint64_t requests, fan_out_result* res) : n(requests), r(res) {}

  void send_round() {
    uint64_t m = std::min<uint64_t>(kFanOutWorkers, n - next);
    for (uint64_t j = 0; j < m; ++j) workers[j].send(req_msg{int64_t(next++)});
    outstanding = m;
  }
  void on(const fan_start&) {
    workers.reserve(kFanOutWorkers);
    for (uint32_t j = 0; j < kFanOutWorkers; ++j) workers.push_back(runtime().spawn<fan_worker>(self(), r));
    send_round();
  }
  void on(const rep_msg& m) {
    ++replies;
    sum += uint64_t(m.i);
    if (--outstanding > 0) return;
    if (next < n) {
      send_round();
      return;
    }
    r->end_ns.store(now_ns(), std::memory_order_release);
    r->replies.store(replies, std::memory_order_release);
    r->reply_sum.store(sum, std::memory_order_release);
    for (auto& w : workers) w.send(stop_msg{});
    stop();
  }
};

void fan_worker::on(const req_msg& m) {
  ++handled;
  master.send(rep_msg{m.i});
}

void run_fan_out(coact::Runtime& rt, const peer_args& a) {
  fan_out_result r;
  auto m = rt.spawn<fan_master>(a.n, &r);
  int64_t start = now_ns();
  m.send(fan_start{});
  rt.run();
  r.check_and_print(kRuntime, a, start);
}

// ---- thread_ring: 503 actors, token passed n hops; msgs = n ------------------
// Node 0 gets start(node 1, n) and holds token n. A node holding token k > 0
// sends token(k-1) to the next node (one hop); the node that receives token 0
// ends the run (it is node n % 503) and sends ring_stop(503 - 1) around the
// ring; each node adds its hop count to the total and forwards
// ring_stop(r - 1) while r > 0.

struct token_msg {
  int64_t k;
};
struct ring_stop {
  int64_t remaining;
};
struct ring_node;
struct ring_start {
  coact::ActorRef<ring_node> next;
  int64_t n;
};

struct ring_node : coact::Actor<ring_node> {
  int64_t index;
  coact::ActorRef<ring_node> next;
  ring_result* r;
  uint64_t hops = 0;
  ring_node(int64_t i, coact::ActorRef<ring_node> nx, ring_result* res)
      : index(i), next(std::move(nx)), r(res) {}

  void stop_pass(int64_t remaining) {
    r->hops.fetch_add(hops, std::memory_order_acq_rel);
    if (remaining > 0) next.send(ring_stop{remaining - 1});
    stop();
  }
  void token(int64_t k) {
    if (k > 0) {
      ++hops;
      next.send(token_msg{k - 1});
      return;
    }
    r->end_ns.store(now_ns(), std::memory_order_release);
    r->final_node.store(index, std::memory_order_release);
    stop_pass(int64_t(kRingSize) - 1);
  }
  void on(ring_start& m) {
    next = std::move(m.next);
    token(m.n);
  }
  void on(const token_msg& m) { token(m.k); }
  void on(const ring_stop& m) { stop_pass(m.remaining); }
};

void run_thread_ring(coact::Runtime& rt, const peer_args& a) {
  ring_result r;
  auto head = rt.spawn<ring_node>(int64_t(0), coact::ActorRef<ring_node>{}, &r);
  coact::ActorRef<ring_node> next = head;
  for (int64_t i = kRingSize - 1; i >= 1; --i) next = rt.spawn<ring_node>(i, next, &r);
  int64_t start = now_ns();
  head.send(ring_start{std::move(next), int64_t(a.n)});
  rt.run();
  r.check_and_print(kRuntime, a, start);
}

// ---- skynet: 10-ary spawn tree, n leaves; msgs = actors spawned --------------
// A node gets start(num, size). size == 1: reply result(num, 1) to the parent
// and stop. Else spawn 10 children, send child i start(num + i*size/10,
// size/10), sum the 10 result(sum, actors) replies, reply result(sum, actors+1)
// and stop. The root (no parent) records the totals. Want sum = n(n-1)/2 and
// actors = 1 + 10 + ... + n.

struct skynet_start {
  int64_t num;
  int64_t size;
};
struct skynet_reply {
  int64_t sum;
  int64_t actors;
};

struct skynet_node : coact::Actor<skynet_node> {
  coact::ActorRef<skynet_node> parent;  // null for the root
  skynet_result* r;
  uint32_t pending = 0;
  uint64_t sum = 0;
  uint64_t actors = 0;
  skynet_node(coact::ActorRef<skynet_node> p, skynet_result* res) : parent(std::move(p)), r(res) {}

  void finish(uint64_t total_sum, uint64_t total_actors) {
    if (parent) {
      parent.send(skynet_reply{int64_t(total_sum), int64_t(total_actors)});
    } else {
      r->end_ns.store(now_ns(), std::memory_order_release);
      r->sum.store(total_sum, std::memory_order_release);
      r->actors.store(total_actors, std::memory_order_release);
    }
    stop();
  }
  void on(const skynet_start& m) {
    if (m.size == 1) {
      finish(uint64_t(m.num), 1);
      return;
    }
    int64_t child = m.size / kSkynetBranching;
    for (uint32_t i = 0; i < kSkynetBranching; ++i) {
      auto c = runtime().spawn<skynet_node>(self(), r);
      c.send(skynet_start{m.num + int64_t(i) * child, child});
    }
    pending = kSkynetBranching;
  }
  void on(const skynet_reply& m) {
    sum += uint64_t(m.sum);
    actors += uint64_t(m.actors);
    if (--pending > 0) return;
    finish(sum, actors + 1);
  }
};

void run_skynet(coact::Runtime& rt, const peer_args& a) {
  skynet_result r;
  auto root = rt.spawn<skynet_node>(coact::ActorRef<skynet_node>{}, &r);
  int64_t start = now_ns();
  root.send(skynet_start{0, int64_t(a.n)});
  rt.run();
  r.check_and_print(kRuntime, a, start);
}

}  // namespace

int main(int argc, char** argv) {
  coact::options::init(argc, argv);  // --coact-* out of argv; a bad option: one line, exit 2
  peer_args a = parse_args(argc, argv);
  coact_setup setup("coact-peers", a.workers);
  if (!setup.has_workers("coact-peers", a.workers)) return 1;
  coact::Runtime& rt = setup.rt;
  auto dog = arm_watchdog(kRuntime, a, [&rt] {
    coact::RuntimeStats st = rt.stats();
    return "spawned=" + std::to_string(st.spawned) + " stopped=" + std::to_string(st.stopped) +
           " live=" + std::to_string(st.live) + " delivered=" + std::to_string(st.delivered) +
           " dropped_dead=" + std::to_string(st.dropped_dead) +
           " dropped_unresolved=" + std::to_string(st.dropped_unresolved) +
           " futex_wakes=" + std::to_string(st.futex_wakes) + " parks=" + std::to_string(st.parks) +
           " injector_pushes=" + std::to_string(st.injector_pushes);
  });
  if (a.workload == "ping_pong")
    run_ping_pong(rt, a);
  else if (a.workload == "fan_out")
    run_fan_out(rt, a);
  else if (a.workload == "thread_ring")
    run_thread_ring(rt, a);
  else
    run_skynet(rt, a);
  // Scheduling synchronizations (wakes + injector + deque pushes), for
  // coact-burst-bench's on/off comparison; stderr, so stdout stays one JSON line.
  // The parts follow for analysis (wakes, pushes, parks, futex wake syscalls, bursts).
  const coact::RuntimeStats st = rt.stats();
  auto u = [](uint64_t x) { return static_cast<unsigned long long>(x); };
  std::fprintf(stderr,
               "coact-peers stats: syncs=%llu wakes=%llu injector_pushes=%llu deque_pushes=%llu parks=%llu "
               "futex_wakes=%llu bursts=%llu seized=%llu seize_lost=%llu ring_fallbacks=%llu\n",
               u(st.syncs()), u(st.wakes), u(st.injector_pushes), u(st.deque_pushes), u(st.parks), u(st.futex_wakes),
               u(st.bursts), u(st.seized), u(st.seize_lost), u(st.ring_fallbacks));
  return 0;
}
