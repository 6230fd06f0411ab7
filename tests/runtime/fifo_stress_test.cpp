// Stress: no message lost, duplicated or reordered per sender-recipient pair,
// and an actor never runs on two workers at once, over random topologies,
// several seeds and worker counts 1, 2, 4, 8. Senders are handlers (in-pool,
// buffered and flushed at the handler boundary) and outside threads (root door).
// Each (sender, recipient) pair carries its own sequence number; the recipient
// checks it is exactly the next one. Failures are counted in atomics on the
// workers and asserted on the test thread (Catch2 is not thread-safe).
#include <atomic>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <coact/runtime/runtime.hpp>

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
  coact::Runtime rt(tuning);
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
  INFO("workers=" << workers << " seed=" << seed << " topology=" << int(topo) << " peer_steal=" << peer_steal);
  CHECK(sh.tokens_done.load() == tokens);
  CHECK(sh.order_violations.load() == 0);
  CHECK(sh.overlaps.load() == 0);
  CHECK(sh.received.load() == sh.sent.load());
  CHECK(sh.received.load() == tokens * (uint64_t(hops) + 1));
  CHECK(rt.stats().dropped_dead == 0);
}

}  // namespace

TEST_CASE("no mail lost, duplicated or reordered per sender-recipient pair; never two workers at once",
          "[stress][fifo]") {
  const uint32_t workers = GENERATE(1u, 2u, 4u, 8u);
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
  const uint32_t workers = GENERATE(2u, 4u);
  const uint64_t per_run = uint64_t(1.2e6 * coact::test::kStressScale);
  coact::test::Watchdog wd(300, "fifo stress, peer steal");
  for (Topology topo : {Topology::random_graph, Topology::hot_spot}) run_fifo(workers, 7, topo, per_run, true);
}
