// The actor registry under churn (runtime/src/detail/registry.hpp): workers
// spawn and stop actors (slot indices move between the workers' free lists
// and the depot, slots are reused with new epochs) while threads outside the
// pool resolve and send by pids old and new. A pid must resolve to its own
// incarnation or to nothing, and mail sent by pid must reach only that
// incarnation. And the end of a run without a shared live counter
// (Scheduler::all_stopped): run() returns when the last actors stop on several
// workers at once. Worker counts 1, 2, 4, 8; also run under TSan (label stress).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <coact/runtime/runtime.hpp>

#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"

using coact::Pid;
using coact::Runtime;
using coact::test::kTestWorkerCounts;
using coact::test::Watchdog;

namespace {

// Recently spawned pids, written by the drivers, read by the resolvers.
constexpr size_t kPidRing = 1024;
struct Shared {
  std::atomic<uint64_t> pids[kPidRing] = {};
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> misdelivered{0};  // a probe reached another incarnation
  std::atomic<uint64_t> delivered{0};
  // The resolvers' probes not yet run or dropped. Bounded (kMaxInflight): two
  // unthrottled outside senders against one worker that got a smaller share
  // of a loaded machine outran it: every stopping leaf had more probes to
  // drop than the last, and a run at load ~10 took over 120 s (the watchdog;
  // backtraces showed the worker in finalize_stop's drop loop each time).
  std::atomic<int64_t> inflight{0};
  void record(Pid p) {
    pids[next.fetch_add(1, std::memory_order_relaxed) % kPidRing].store((uint64_t{p.id} << 32) | p.epoch,
                                                                         std::memory_order_relaxed);
  }
};
Pid unpack(uint64_t v) { return Pid{uint32_t(v >> 32), uint32_t(v)}; }

constexpr int64_t kMaxInflight = 512;

// counted: a resolver's probe, which gives back its Shared::inflight unit when
// destroyed (run, or dropped with its actor, or never sent).
struct Probe {
  Pid to;
  Shared* counted = nullptr;
  explicit Probe(Pid p, Shared* c = nullptr) : to(p), counted(c) {}
  Probe(Probe&& o) noexcept : to(o.to), counted(std::exchange(o.counted, nullptr)) {}
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;
  Probe& operator=(Probe&&) = delete;
  ~Probe() {
    if (counted != nullptr) counted->inflight.fetch_sub(1, std::memory_order_relaxed);
  }
};
struct Quit {};

struct Leaf : coact::Actor<Leaf> {
  Shared* sh;
  explicit Leaf(Shared* s) : sh(s) {}
  void on(const Probe& p) {
    sh->delivered.fetch_add(1, std::memory_order_relaxed);
    if (p.to != pid()) sh->misdelivered.fetch_add(1, std::memory_order_relaxed);
  }
  void on(Quit) { stop(); }
};

struct Go {
  int rounds;
};

// Each round: spawn a batch of leaves (recording their pids), tell them to
// quit, then go again.
struct Driver : coact::Actor<Driver> {
  Shared* sh;
  explicit Driver(Shared* s) : sh(s) {}
  void on(const Go& g) {
    for (int i = 0; i < 40; ++i) {
      auto leaf = runtime().spawn<Leaf>(sh);
      sh->record(leaf.pid());
      if (i % 3 != 0) leaf.send(Probe{leaf.pid()});
      leaf.send(Quit{});
    }
    if (g.rounds > 1) {
      self().send(Go{g.rounds - 1});
    } else {
      stop();
    }
  }
};

}  // namespace

TEST_CASE("registry churn: a pid resolves only to its own incarnation while slots are reused", "[stress][pid]") {
  for (uint32_t workers : kTestWorkerCounts) {
    INFO("workers=" << workers);
    Watchdog wd(120, "registry churn");
    Shared sh;
    std::atomic<bool> done{false};
    std::atomic<uint64_t> wrong{0}, resolved{0}, probes_sent{0};
    const int drivers = int(2 * workers);
    const auto body = [&](Runtime& rt) {
      std::vector<std::thread> resolvers;
      for (int r = 0; r < 2; ++r) {
        resolvers.emplace_back([&, r] {
          std::minstd_rand rng(uint32_t(r) + 1);
          while (!done.load(std::memory_order_relaxed)) {
            const uint64_t v = sh.pids[rng() % kPidRing].load(std::memory_order_relaxed);
            if (v == 0) continue;
            const Pid p = unpack(v);
            if (auto ref = rt.resolve<Leaf>(p)) {
              resolved.fetch_add(1, std::memory_order_relaxed);
              if (ref.pid() != p) wrong.fetch_add(1, std::memory_order_relaxed);
            }
            if (rt.resolve<Driver>(p)) wrong.fetch_add(1, std::memory_order_relaxed);  // a leaf's pid, never a driver
            if (sh.inflight.load(std::memory_order_relaxed) >= kMaxInflight) {
              std::this_thread::yield();  // the pool is behind: resolve only
              continue;
            }
            sh.inflight.fetch_add(1, std::memory_order_relaxed);
            if (rt.send<Leaf>(p, Probe{p, &sh})) probes_sent.fetch_add(1, std::memory_order_relaxed);
          }
        });
      }
      for (int d = 0; d < drivers; ++d) rt.spawn<Driver>(&sh).send(Go{100});
      rt.run();
      done.store(true);
      for (auto& t : resolvers) t.join();
    };
    // The resolvers' probes race the stops: how many are dropped (dead or
    // unresolved) varies; the dead ones are bounded below.
    const coact::RuntimeStats st =
        coact::test::run_checked(workers, body, {.dead = std::nullopt, .unresolved = std::nullopt});
    CHECK(wrong.load() == 0);
    CHECK(sh.misdelivered.load() == 0);
    CHECK(st.spawned == uint64_t(drivers) * (1 + 100 * 40));
    CHECK(st.stopped == st.spawned);
    // Every probe the resolvers' sends delivered, plus the drivers' own, either
    // ran or was dropped with its actor.
    CHECK(sh.delivered.load() + st.dropped_dead >= probes_sent.load());
    CHECK(sh.inflight.load() == 0);  // every counted probe ran or was destroyed with its actor
  }
}

TEST_CASE("registry: pids resolve across the depot (spawned on one thread, stopped on another)", "[pid]") {
  for (uint32_t workers : kTestWorkerCounts) {
    INFO("workers=" << workers);
    Watchdog wd(60, "registry depot");
    Shared sh;
    coact::test::run_checked(workers, [&](Runtime& rt) {
      // From main (no worker): these indices come from the depot directly.
      std::vector<coact::ActorRef<Leaf>> refs;
      for (int i = 0; i < 1000; ++i) refs.push_back(rt.spawn<Leaf>(&sh));
      for (auto& r : refs) {
        auto again = rt.resolve<Leaf>(r.pid());
        REQUIRE(again);
        CHECK(again.pid() == r.pid());
      }
      std::vector<Pid> old;
      for (auto& r : refs) {
        old.push_back(r.pid());
        r.send(Quit{});
      }
      refs.clear();
      rt.run();
      for (Pid p : old) CHECK_FALSE(rt.resolve<Leaf>(p));
      // Reused from the depot and from the workers' lists: new epochs.
      for (int d = 0; d < 4; ++d) rt.spawn<Driver>(&sh).send(Go{20});
      rt.run();
      for (Pid p : old) CHECK_FALSE(rt.resolve<Leaf>(p));
    });
    CHECK(sh.misdelivered.load() == 0);
  }
}

namespace {
struct Spin {
  int us;
};
// Stops after a short busy handler, so the last stops of a round land on
// several workers at about the same time.
struct Quitter : coact::Actor<Quitter> {
  void on(const Spin& s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(s.us);
    while (std::chrono::steady_clock::now() < end) {
    }
    stop();
  }
};
}  // namespace

TEST_CASE("run() returns when the last actors stop on several workers at once", "[stress][lifecycle]") {
  for (uint32_t workers : kTestWorkerCounts) {
    INFO("workers=" << workers);
    Watchdog wd(120, "run() termination");
    coact::test::run_checked(workers, [&](Runtime& rt) {
      std::minstd_rand rng(workers);
      for (int round = 0; round < 300; ++round) {
        const int n = 1 + int(rng() % (2 * workers));
        std::vector<coact::ActorRef<Quitter>> qs;
        for (int i = 0; i < n; ++i) qs.push_back(rt.spawn<Quitter>());
        for (auto& q : qs) q.send(Spin{int(rng() % 20)});
        qs.clear();
        rt.run();
        // The subject: live is 0 as soon as each round's run() returns.
        const coact::RuntimeStats st = rt.stats();
        REQUIRE(st.live == 0);
        REQUIRE(st.stopped == st.spawned);
      }
    });
  }
}
