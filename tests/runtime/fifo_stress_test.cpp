// Stress: no message lost, duplicated or reordered per sender-recipient pair,
// and an actor never runs on two workers at once, over random topologies,
// several seeds and worker counts 1, 2, 4, 8. Senders are handlers (in-pool:
// direct pushes, or buffered and flushed at the handler boundary) and outside
// threads (root door).
// Each (sender, recipient) pair carries its own sequence number; the recipient
// checks it is exactly the next one. Failures are counted in atomics on the
// workers and asserted on the test thread (Catch2 is not thread-safe).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/causal/testing.hpp>
#include <coact/runtime/runtime.hpp>

#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"

namespace {

struct Shared {
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> sent{0};
  std::atomic<uint64_t> order_violations{0};
  std::atomic<uint64_t> overlaps{0};
  std::atomic<uint64_t> tokens_done{0};
  uint64_t tokens_total = 0;
  coact::Runtime* rt = nullptr;
};

struct Node;
struct Neighbor {
  coact::ActorRef<Node> ref;
  uint32_t id;  // the neighbor's node index (its per-recipient sequence slot)
};
struct Wire {
  std::vector<Neighbor> neighbors;
};
struct Token {
  uint32_t from;
  uint64_t seq;
  uint32_t hops_left;
};

struct Node : coact::Actor<Node> {
  Node(Shared* s, uint32_t id, uint32_t senders, uint32_t nodes, uint64_t seed)
      : sh(s), my_id(id), expected(senders, 0), sent_to(nodes, 0), rng(seed) {}

  void on(Wire& w) { neighbors = std::move(w.neighbors); }

  void on(const Token& t) {
    if (busy.fetch_add(1, std::memory_order_acq_rel) != 0) sh->overlaps.fetch_add(1);
    if (t.seq != expected[t.from]) sh->order_violations.fetch_add(1);
    expected[t.from] = t.seq + 1;
    sh->received.fetch_add(1, std::memory_order_relaxed);
    if (t.hops_left > 0) {
      Neighbor& to = neighbors[rng() % neighbors.size()];
      sh->sent.fetch_add(1, std::memory_order_relaxed);
      to.ref.send(Token{my_id, sent_to[to.id]++, t.hops_left - 1});
    } else if (sh->tokens_done.fetch_add(1) + 1 == sh->tokens_total) {
      sh->rt->request_stop();
    }
    busy.fetch_sub(1, std::memory_order_acq_rel);
  }

  Shared* sh;
  uint32_t my_id;
  std::vector<uint64_t> expected;   // next seq per sender id
  std::vector<uint64_t> sent_to;    // next seq per recipient node id
  std::vector<Neighbor> neighbors;
  std::minstd_rand rng;
  std::atomic<int> busy{0};
};

enum class Topology { random_graph, hot_spot, ring };

void run_fifo(uint32_t workers, uint64_t seed, Topology topo, uint64_t total_msgs, bool peer_steal = false) {
  const uint32_t nodes = 64;
  const uint32_t externals = 3;  // outside threads sending through the root door
  const uint32_t senders = nodes + externals;
  const uint64_t tokens = 600;
  const uint32_t hops = uint32_t(total_msgs / tokens);
  Shared sh;
  sh.tokens_total = tokens;
  coact::SchedulerTuning tuning = coact::test::tuning_for(workers);
  tuning.peer_steal = peer_steal;
  INFO("workers=" << workers << " seed=" << seed << " topology=" << int(topo) << " peer_steal=" << peer_steal);
  // The last token's node calls request_stop: the nodes are still live.
  const auto body = [&](coact::Runtime& rt) {
    sh.rt = &rt;
    std::mt19937_64 rng(seed);
    std::vector<coact::ActorRef<Node>> refs;
    for (uint32_t i = 0; i < nodes; ++i) refs.push_back(rt.spawn<Node>(&sh, i, senders, nodes, rng()));
    auto nbr = [&](uint32_t k) { return Neighbor{refs[k], k}; };
    for (uint32_t i = 0; i < nodes; ++i) {
      std::vector<Neighbor> nb;
      switch (topo) {
        case Topology::random_graph: {
          uint32_t deg = 1 + uint32_t(rng() % 8);
          for (uint32_t k = 0; k < deg; ++k) nb.push_back(nbr(uint32_t(rng() % nodes)));
          break;
        }
        case Topology::hot_spot:
          nb.push_back(nbr(0));
          nb.push_back(nbr(0));
          nb.push_back(nbr(uint32_t(rng() % nodes)));
          break;
        case Topology::ring:
          nb.push_back(nbr((i + 1) % nodes));
          break;
      }
      // Sent before any Token: FIFO from this thread puts it first in every inbox.
      refs[i].send(Wire{std::move(nb)});
    }
    // Each external thread owns a slice of tokens, with its own per-recipient seqs.
    std::vector<std::thread> ext;
    for (uint32_t e = 0; e < externals; ++e) {
      ext.emplace_back([&, e] {
        std::vector<uint64_t> seq(nodes, 0);
        std::minstd_rand r(uint32_t(seed * 31 + e));
        for (uint64_t t = e; t < tokens; t += externals) {
          uint32_t to = r() % nodes;
          sh.sent.fetch_add(1, std::memory_order_relaxed);
          refs[to].send(Token{nodes + e, seq[to]++, hops});
        }
      });
    }
    for (auto& t : ext) t.join();
    rt.run();
  };
  coact::test::run_checked(tuning, body, {.live = nodes});
  CHECK(sh.tokens_done.load() == tokens);
  CHECK(sh.order_violations.load() == 0);
  CHECK(sh.overlaps.load() == 0);
  CHECK(sh.received.load() == sh.sent.load());
  CHECK(sh.received.load() == tokens * (uint64_t(hops) + 1));
}

}  // namespace

TEST_CASE("no mail lost, duplicated or reordered per sender-recipient pair; never two workers at once",
          "[stress][fifo]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts());
  // >= 10^7 messages per worker count in a normal build (3 seeds x 3 topologies);
  // ThreadSanitizer builds scale this down (kStressScale).
  const uint64_t per_run = uint64_t(1.2e6 * coact::test::kStressScale);
  coact::test::Watchdog wd(600, "fifo stress");
  for (uint64_t seed : {1ull, 2ull, 3ull}) {
    for (Topology topo : {Topology::random_graph, Topology::hot_spot, Topology::ring}) {
      run_fifo(workers, seed, topo, per_run);
    }
  }
}

TEST_CASE("FIFO and exclusivity hold with peer steal on (stealers take from deque tops)", "[stress][fifo]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(2, 4));
  const uint64_t per_run = uint64_t(1.2e6 * coact::test::kStressScale);
  coact::test::Watchdog wd(300, "fifo stress, peer steal");
  for (Topology topo : {Topology::random_graph, Topology::hot_spot}) run_fifo(workers, 7, topo, per_run, true);
}

// Burst off, a send inside a handler pushes into the recipient's inbox at once
// (a direct send); while a pay point would pay something (a causal sweep runs
// and delay was injected: causal::pay_point_is_noop) the sender first pays
// mid-handler, its running region suspended (causal::on_pay_point_in_handler).
// Here every handler sends several seq-numbered mails to one sink while
// another thread flips the sweep gate, so invocations straddle the flip both
// ways (frames opened with the gate on and closed with it off, and the
// reverse) and per-sender FIFO must hold throughout. G is made nonzero first
// (1 cycle, below the pay catch-up threshold, so no pay point waits): with
// G == 0 a pay point pays nothing and the in-handler pay is never taken.
namespace {
struct Sink : coact::Actor<Sink> {
  explicit Sink(Shared* s, uint32_t sources) : sh(s), expected(sources, 0) {}
  void on(const Token& t) {
    if (t.seq != expected[t.from]) sh->order_violations.fetch_add(1);
    expected[t.from] = t.seq + 1;
    if (sh->received.fetch_add(1) + 1 == sh->tokens_total) sh->rt->request_stop();
  }
  Shared* sh;
  std::vector<uint64_t> expected;
};
struct Go {
  uint32_t rounds;
};
struct Source : coact::Actor<Source> {
  Source(uint32_t id, coact::ActorRef<Sink> s) : my_id(id), sink(std::move(s)) {}
  void on(const Go& g) {
    for (int k = 0; k < 4; ++k) sink.send(Token{my_id, seq++, 0});
    if (g.rounds > 1) self().send(Go{g.rounds - 1});
  }
  uint32_t my_id;
  coact::ActorRef<Sink> sink;
  uint64_t seq = 0;
};
}  // namespace

TEST_CASE("per-sender FIFO holds while the causal sweep gate flips mid-handler", "[stress][fifo]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts());
  const uint32_t sources = 16;
  const uint32_t rounds = uint32_t(20000 * coact::test::kStressScale) + 10;
  coact::test::Watchdog wd(300, "fifo stress, sweep gate flips");
  if (coact::causal::global_delay_cycles() == 0) {
    std::lock_guard<std::mutex> lock(coact::causal::test_ledger_mutex());
    coact::causal::inject_delay_cycles_for_test(1);
  }
  REQUIRE(coact::causal::global_delay_cycles() != 0);
  Shared sh;
  sh.tokens_total = uint64_t(sources) * rounds * 4;
  // The sink's last token calls request_stop: the sink and the sources are still live.
  const auto body = [&](coact::Runtime& rt) {
    sh.rt = &rt;
    auto sink = rt.spawn<Sink>(&sh, sources);
    std::vector<coact::ActorRef<Source>> src;
    for (uint32_t i = 0; i < sources; ++i) src.push_back(rt.spawn<Source>(i, sink));
    std::atomic<bool> done{false};
    std::thread flipper([&] {
      for (uint64_t i = 0; !done.load(std::memory_order_relaxed); ++i) {
        coact::causal::g_sweep_active.store(i % 2 == 0, std::memory_order_relaxed);
        for (int k = 0; k < 64; ++k) std::this_thread::yield();
      }
      coact::causal::g_sweep_active.store(false);
    });
    for (auto& s : src) s.send(Go{rounds});
    rt.run();
    done.store(true);
    flipper.join();
  };
  coact::test::run_checked(workers, body, {.live = sources + 1});
  INFO("workers=" << workers);
  CHECK(sh.order_violations.load() == 0);
  CHECK(sh.received.load() == sh.tokens_total);
}

// Burst off, during a sweep that injected delay, a handler's send pays the
// sender's debt first and then reaches a recipient that is already running
// at once, before the handler returns, as it does without a sweep
// (Scheduler::post; hooks.hpp on_pay_point_in_handler). The Waiter holds a
// worker until the Sender has sent; the Sender owes kOwed when it sends and
// waits, bounded, for the Waiter to have handled the mail before it returns.
// Mail held to the end of the handler would never arrive in that wait.
namespace {
struct MidRun {
  std::atomic<bool> waiter_running{false}, sent{false}, pinged{false};
  std::atomic<int64_t> send_ns{-1};
};
bool wait_flag(const std::atomic<bool>& f, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!f.load()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}
struct Waiter : coact::Actor<Waiter> {
  struct Hold {};
  struct Ping {};
  explicit Waiter(MidRun* m) : mr(m) {}
  void on(Hold) {
    mr->waiter_running = true;
    (void)wait_flag(mr->sent, std::chrono::seconds(10));
  }
  void on(Ping) {
    mr->pinged = true;
    stop();
  }
  MidRun* mr;
};
struct Sender : coact::Actor<Sender> {
  struct Go {};
  static constexpr auto kOwed = std::chrono::milliseconds(20);
  Sender(MidRun* m, coact::ActorRef<Waiter> w) : mr(m), waiter(std::move(w)) {}
  void on(Go) {
    together = wait_flag(mr->waiter_running, std::chrono::seconds(10));
    coact::causal::register_thread();
    coact::causal::inject_delay_cycles_for_test(coact::calibrate::duration_to_cycles(kOwed));  // this worker owes it
    const auto t0 = std::chrono::steady_clock::now();
    waiter.send(Waiter::Ping{});
    mr->send_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    mr->sent = true;
    delivered_in_handler = wait_flag(mr->pinged, std::chrono::seconds(5));
    stop();
  }
  MidRun* mr;
  coact::ActorRef<Waiter> waiter;
  static inline std::atomic<bool> together{false}, delivered_in_handler{false};
};
}  // namespace

TEST_CASE("burst off: a handler's send during a sweep pays first and reaches a running recipient before it returns",
          "[causal][send]") {
  std::lock_guard<std::mutex> lock(coact::causal::test_ledger_mutex());
  coact::test::Watchdog wd(60, "send mid-handler under a sweep");
  (void)coact::calibrate::tsc_hz();
  if (coact::causal::global_delay_cycles() == 0) coact::causal::inject_delay_cycles_for_test(1);
  coact::causal::g_sweep_active.store(true);
  MidRun mr;
  Sender::together = false;
  Sender::delivered_in_handler = false;
  coact::SchedulerTuning tuning = coact::test::tuning_for(2);
  tuning.burst = false;  // the direct sends (burst on routes a handler's sends at its end, sweep or not)
  coact::test::run_checked(tuning, [&](coact::Runtime& rt) {
    auto w = rt.spawn<Waiter>(&mr);
    auto s = rt.spawn<Sender>(&mr, w);
    w.send(Waiter::Hold{});
    s.send(Sender::Go{});
    rt.run();
  });
  coact::causal::g_sweep_active.store(false);
  coact::causal::credit_resume();
  REQUIRE(Sender::together.load());  // the two ran on two workers at once
  CHECK(mr.send_ns.load() >= std::chrono::nanoseconds(Sender::kOwed).count() * 9 / 10);  // the send paid the debt
  CHECK(Sender::delivered_in_handler.load());
}
