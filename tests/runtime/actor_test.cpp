// Basic actor semantics: spawn, typed handlers, ActorRef, Pid with epochs,
// Name<M> resolved at send time, stop, run() termination, dead-mail counting.
#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <coact/runtime/runtime.hpp>

#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"

using coact::ActorRef;
using coact::Pid;
using coact::Runtime;
using coact::test::tuning_for;
using coact::test::Watchdog;

namespace {

struct Add {
  int k;
};
struct Stop {};
struct Get {
  std::atomic<int>* out;
};

struct Counter : coact::Actor<Counter> {
  int n = 0;
  std::atomic<int>* destroyed;
  explicit Counter(std::atomic<int>* d = nullptr) : destroyed(d) {}
  ~Counter() override {
    if (destroyed) destroyed->fetch_add(1);
  }
  void on(const Add& a) { n += a.k; }
  void on(const Get& g) { g.out->store(n); }
  void on(Stop) { stop(); }
};

}  // namespace

TEST_CASE("run() returns once every actor stopped, and handlers saw all mail", "[actor]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts());
  Watchdog wd(30, "actor basic");
  std::atomic<int> destroyed{0};
  std::atomic<int> total{-1};
  const coact::RuntimeStats s = coact::test::run_checked(workers, [&](Runtime& rt) {
    auto c = rt.spawn<Counter>(&destroyed);
    for (int i = 1; i <= 100; ++i) c.send(Add{i});
    c.send(Get{&total});
    c.send(Stop{});
    rt.run();
  });
  CHECK(s.stopped == 1);
  CHECK(s.delivered == 102);  // every handler run: 100 Add, Get and Stop
  CHECK(total.load() == 5050);
  CHECK(destroyed.load() == 1);
}

TEST_CASE("mail to a stopped actor is dropped and counted, never a crash", "[actor]") {
  Watchdog wd(30, "dead mail");
  const auto body = [&](Runtime& rt) {
    auto c = rt.spawn<Counter>();
    c.send(Stop{});
    rt.run();
    for (int i = 0; i < 10; ++i) c.send(Add{1});
  };
  coact::test::run_checked(2, body, {.dead = 10});
}

TEST_CASE("a stale Pid never reaches the newer actor in its slot", "[actor][pid]") {
  Watchdog wd(30, "pid epochs");
  const auto body = [&](coact::Runtime& rt) {
    std::vector<Pid> old;
    // Spawn and stop enough actors that slots are reused: stopped slots go back
    // to the stopping worker's free list and reach the registry's depot (where
    // spawns from outside the pool take them) once a worker holds 2 x 256, so
    // 3 x 1000 stops put at least 3000 - 2 x 511 of them in the depot.
    for (int round = 0; round < 3; ++round) {
      std::vector<ActorRef<Counter>> refs;
      for (int i = 0; i < 1000; ++i) refs.push_back(rt.spawn<Counter>());
      for (auto& r : refs) {
        old.push_back(r.pid());
        r.send(Stop{});
      }
      rt.run();
    }
    std::map<uint32_t, Pid> old_by_id;
    for (Pid p : old) old_by_id[p.id] = p;  // the latest stale pid per slot
    std::vector<ActorRef<Counter>> fresh;
    std::vector<Pid> stale_twin;  // the old pid of each fresh actor's slot
    for (int i = 0; i < 300; ++i) {
      fresh.push_back(rt.spawn<Counter>());
      auto it = old_by_id.find(fresh.back().pid().id);
      stale_twin.push_back(it == old_by_id.end() ? Pid{} : it->second);
    }
    size_t reused = 0;
    for (Pid t : stale_twin) reused += t.valid() ? 1 : 0;
    REQUIRE(reused > 0);  // otherwise this test checks nothing about reuse
    // Every old pid is stale now, including those whose slot holds a fresh actor.
    for (Pid p : old) {
      CHECK_FALSE(rt.send<Counter>(p, Add{1}));
      CHECK_FALSE(rt.resolve<Counter>(p));
    }
    CHECK(rt.stats().dropped_unresolved == old.size());
    std::vector<std::atomic<int>> got(fresh.size());
    for (size_t i = 0; i < fresh.size(); ++i) {
      got[i] = -1;
      CHECK(rt.send<Counter>(fresh[i].pid(), Add{7}));
      CHECK(rt.send<Counter>(fresh[i].pid(), Get{&got[i]}));
      fresh[i].send(Stop{});
    }
    rt.run();
    for (auto& g : got) CHECK(g.load() == 7);  // no stale send reached a fresh actor
  };
  coact::test::run_checked(2, body, {.unresolved = 3 * 1000});  // one send to each old pid
}

TEST_CASE("Name<M> resolves at send time and drops when unbound", "[actor][name]") {
  Watchdog wd(30, "names");
  const auto body = [&](coact::Runtime& rt) {
    coact::Name<Add> adds("adder");
    CHECK_FALSE(rt.send(adds, Add{1}));  // nobody yet
    auto a = rt.spawn<Counter>();
    REQUIRE(rt.register_name(adds, a));
    CHECK(rt.whereis("adder") == a.pid());
    auto b = rt.spawn<Counter>();
    CHECK_FALSE(rt.register_name(adds, b));  // taken by a live actor
    CHECK(rt.send(adds, Add{5}));
    std::atomic<int> got{-1};
    a.send(Get{&got});
    a.send(Stop{});
    b.send(Stop{});
    rt.run();
    CHECK(got.load() == 5);
    // a stopped: its name is gone, sends are dropped and counted.
    CHECK_FALSE(rt.send(adds, Add{1}));
    CHECK_FALSE(rt.whereis("adder").valid());
  };
  // Dropped unresolved: the send before the name was bound and the one after `a` stopped.
  coact::test::run_checked(2, body, {.unresolved = 2});
}

TEST_CASE("ActorRef::stop stops after the mail queued ahead of it", "[actor]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts());
  Watchdog wd(30, "ref stop");
  std::atomic<int> got{-1};
  coact::test::run_checked(
      workers,
      [&](Runtime& rt) {
        auto c = rt.spawn<Counter>();
        c.send(Add{2});
        c.send(Get{&got});
        c.stop();
        c.send(Add{100});  // after the stop request: dropped and counted
        rt.run();
      },
      {.dead = 1});
  CHECK(got.load() == 2);
}

namespace {
struct Spawner : coact::Actor<Spawner> {
  std::atomic<int>* leaves;
  explicit Spawner(std::atomic<int>* l) : leaves(l) {}
  struct Go {
    int depth;
  };
  void on(const Go& g) {
    if (g.depth == 0) {
      leaves->fetch_add(1);
    } else {
      for (int i = 0; i < 3; ++i) runtime().spawn<Spawner>(leaves).send(Go{g.depth - 1});
    }
    stop();
  }
};
}  // namespace

TEST_CASE("actors spawn actors from handlers; run() waits for all of them", "[actor]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts());
  Watchdog wd(60, "spawn tree");
  std::atomic<int> leaves{0};
  const coact::RuntimeStats s = coact::test::run_checked(workers, [&](Runtime& rt) {
    rt.spawn<Spawner>(&leaves).send(Spawner::Go{6});
    rt.run();
  });
  CHECK(leaves.load() == 729);
  CHECK(s.spawned == 1 + 3 + 9 + 27 + 81 + 243 + 729);
}

TEST_CASE("request_stop makes run() return while actors are live; destructor cleans up", "[actor]") {
  Watchdog wd(30, "request_stop");
  std::atomic<int> destroyed{0};
  {
    Runtime rt(tuning_for(2));
    for (int i = 0; i < 10; ++i) rt.spawn<Counter>(&destroyed).send(Add{1});
    rt.request_stop();
    rt.run();
    CHECK(rt.stats().live == 10);
  }
  CHECK(destroyed.load() == 10);
}

namespace {
// A file-local (static) function: only the ELF symbol table names it, so a
// backtrace that names frames from exported symbols alone misnames it.
[[gnu::noinline]] static void throw_boom_deep(int k) {
  if (k > 0) throw std::runtime_error("boom in handler");
}
struct Thrower : coact::Actor<Thrower> {
  void on(int k) {
    try {  // an exception caught inside the handler is not the one reported
      throw std::logic_error("caught inside");
    } catch (const std::logic_error&) {
    }
    throw_boom_deep(k);
  }
};
}  // namespace

#include "support/child.hpp"

// Regression: the backtrace was the scheduler's catch site (the throwing
// frames were unwound by then), its frames named by the nearest exported
// symbol, so a static function or a call ending a function came out misnamed.
TEST_CASE("an exception escaping a handler aborts naming the actor and the throw site", "[actor][panic]") {
  auto r = coact::test::run_in_child([] {
    Runtime rt(tuning_for(2));
    auto t = rt.spawn<Thrower>();
    t.send(42);
    rt.run();
  });
  INFO(r.err);
  CHECK(r.signaled(SIGABRT));
  CHECK_THAT(r.err, Catch::Contains("boom in handler"));
  CHECK_THAT(r.err, Catch::Contains("Thrower"));
  CHECK_THAT(r.err, Catch::Contains("pid "));
  CHECK_THAT(r.err, Catch::Contains("backtrace: the throw site"));
  // Frame #0 is the throwing function, named and placed at its source line.
  const auto f0 = r.err.find("#0 ");
  REQUIRE(f0 != std::string::npos);
  const std::string frame0 = r.err.substr(f0, r.err.find('\n', f0) - f0);
  CHECK_THAT(frame0, Catch::Contains("throw_boom_deep(int)"));
  CHECK_THAT(frame0, Catch::Contains("actor_test.cpp:"));
  // Frame #1 is the handler's call (its return address looked up inside the
  // call instruction): the handler's own source line, wherever it was inlined.
  const auto f1 = r.err.find("#1 ");
  REQUIRE(f1 != std::string::npos);
  CHECK_THAT(r.err.substr(f1, r.err.find("#2 ", f1) - f1), Catch::Contains("actor_test.cpp:"));
}

namespace {
struct Forever : coact::Actor<Forever> {
  struct Go {};
  void on(Go) { self().send(Go{}); }  // a cascade that never lets its worker idle
};
}  // namespace

// Regression: shutdown only stopped workers that reached idle(), so a runtime
// whose actors kept their workers busy forever never finished its destructor.
TEST_CASE("the destructor stops workers that never go idle", "[actor]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 2));
  coact::test::Watchdog wd(30, "busy shutdown");
  {
    Runtime rt(tuning_for(workers));
    for (int i = 0; i < 3; ++i) rt.spawn<Forever>().send(Forever::Go{});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    rt.request_stop();
    rt.run();
  }
  SUCCEED("destructor returned");
}

namespace {
struct Ball {
  int left;
};
struct Player : coact::Actor<Player> {
  ActorRef<Player> peer;
  std::atomic<int>* hits;
  explicit Player(std::atomic<int>* h) : hits(h) {}
  void on(const ActorRef<Player>& p) { peer = p; }
  void on(const Ball& b) {
    hits->fetch_add(1, std::memory_order_relaxed);
    if (b.left == 0) {
      peer.send(Stop{});
      stop();
      return;
    }
    peer.send(Ball{b.left - 1});
  }
  void on(Stop) { stop(); }
};
}  // namespace

// The worker's hand-off slot (scheduler.hpp, Worker::next): a chain hop's
// recipient is the own deque's top kept out of the deque, taken by the next
// own pop. With peer steal off it is used and a ping-pong pushes (almost)
// nothing onto the own deque; with peer steal on (thieves could take the
// deque's top, the slot would hide it) it is never used and every hop is a
// push. Either way every ball is delivered, in order (the count).
TEST_CASE("a chain hop goes through the worker's hand-off slot only with peer steal off", "[actor]") {
  const bool steal = GENERATE(false, true);
  Watchdog wd(30, "hand-off slot");
  constexpr int kHops = 20000;
  std::atomic<int> hits{0};
  coact::SchedulerTuning t = tuning_for(1);
  t.peer_steal = steal;
  uint64_t pushes = 0;
  coact::test::run_checked(t, [&](Runtime& rt) {
    auto a = rt.spawn<Player>(&hits);
    auto b = rt.spawn<Player>(&hits);
    a.send(b);
    b.send(a);
    const uint64_t before = rt.stats().deque_pushes;
    a.send(Ball{kHops});
    rt.run();
    pushes = rt.stats().deque_pushes - before;
  });
  INFO("peer_steal=" << steal << " deque pushes " << pushes);
  CHECK(hits.load() == kHops + 1);
  if (steal) {
    CHECK(pushes >= uint64_t(kHops) / 2);  // about one per hop (19999 or 20000 seen)
  } else {
    CHECK(pushes < uint64_t(kHops) / 100);
  }
}
