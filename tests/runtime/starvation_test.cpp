// Fairness levers: an endless ping-pong pair (a self-sustaining relay that
// keeps its worker's own deque at 0->1->0, or its hand-off slot, which
// counts as the deque's top, with peer steal off) must not starve mail posted from
// outside the pool (the injector) nor mail to a third actor that the pair
// itself wakes. CAF 0.17 fails the first: work created by actors waking each
// other keeps jumping the queue. The outside-mail bound is counted in
// ping-pong hops (not time), so it holds on a loaded machine: the chain
// backstop probes the injector every local_chain_backstop (64) own pops.
// The third actor lands on the pair worker's own deque, under the chain. With
// an idle sibling the keep-local valve spills it to the injector once the
// worker's cascade has run longer than the valve (wall time on the worker's
// clock, read about every 2 us of dispatching), and the backstop then
// takes it within 64 own pops; with none (one worker), the backstop moves the
// deque's oldest job to the injector once a valve period has passed, and the
// next backstop takes it. So what the argument bounds is the holding
// worker's own pops: at most one valve period of them plus two backstop
// periods. The check counts
// only hops run on the thread that ran the third actor, after the poke, and
// converts the valve period to hops at that thread's own rate (hops per ns
// of its CPU time: the valve's wall time is at least the CPU time, so the
// conversion over-counts the hops a valve period allows, never under-counts).
// The valve is pinned (kValveUs) so the bound does not depend on the
// calibrated hand-off cost.
// Why not total hops: with 2 or 4 workers a sibling may take the spilled
// third actor from the injector and then be descheduled while the pair hops
// on (the total once grew to 1176 at load 10-13; that sibling ran no hops);
// and with the adaptive valve (up to 60 µs) a suite run saw 1048 / 1176 /
// 1176 hops at 1 / 2 / 4 workers against the old 256-hop total bound: the
// valve's time at ~55 ns per hop. With the backstop, the valve and the
// sticky limit turned off, the third actor runs only after the pair stops,
// thousands of own hops late, and the check fails (tried at 2 and 4
// workers; at 1 worker the outside posts are not seen either).
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <coact/runtime/runtime.hpp>

#include "support/runtime_fixture.hpp"
#include "support/spin.hpp"
#include "support/watchdog.hpp"

using namespace std::chrono_literals;

namespace {

constexpr uint32_t kValveUs = 20;  // the keep-local valve, pinned (tuning local_time_budget_us)

// Hops run per worker thread: a thread takes a slot at its first hop of a
// run (t_slot_of: the run's Shared; each GENERATE case has its own threads).
constexpr int kSlots = 64;
struct Shared;
thread_local const Shared* t_slot_of = nullptr;
thread_local int t_slot = -1;

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Shared {
  std::atomic<uint64_t> slot_hops[kSlots] = {};
  std::atomic<int> slots_used{0};
  // Written by the poking hop before its send to Third; read by Third's
  // handler, which that send happens-before.
  uint64_t hops_at_poke[kSlots] = {};
  int poke_slot = -1;
  int64_t poke_cpu_ns = 0;
  // Third's handler: hops on its thread since the poke; that thread's CPU
  // ns since the poke (-1: it did not poke, so not measured).
  std::atomic<int64_t> third_own_hops{-1};
  std::atomic<int64_t> third_own_cpu_ns{-1};
  std::atomic<uint64_t> hops{0};
  std::atomic<bool> quit{false};
  std::atomic<int64_t> third_seen_at{-1};
  std::atomic<int64_t> third_poked_at{-1};
  std::atomic<int64_t> outside_seen_at{-1};
};

struct Third : coact::Actor<Third> {
  Shared* sh;
  explicit Third(Shared* s) : sh(s) {}
  struct FromPair {};
  struct FromOutside {};
  void on(FromPair) {
    sh->third_seen_at.store(int64_t(sh->hops.load()));
    const int slot = t_slot_of == sh ? t_slot : -1;
    sh->third_own_hops.store(slot < 0 ? 0 : int64_t(sh->slot_hops[slot].load() - sh->hops_at_poke[slot]));
    if (slot >= 0 && slot == sh->poke_slot) sh->third_own_cpu_ns.store(thread_cpu_ns() - sh->poke_cpu_ns);
  }
  void on(FromOutside) { sh->outside_seen_at.store(int64_t(sh->hops.load())); }
};

struct Player : coact::Actor<Player> {
  Shared* sh;
  coact::ActorRef<Player> peer;
  coact::ActorRef<Third> third;
  bool poke_third = false;
  explicit Player(Shared* s) : sh(s) {}
  struct Setup {
    coact::ActorRef<Player> peer;
    coact::ActorRef<Third> third;
    bool poke;
  };
  struct Ball {};
  void on(Setup& s) {
    peer = s.peer;
    third = s.third;
    poke_third = s.poke;
  }
  void on(Ball) {
    uint64_t h = sh->hops.fetch_add(1) + 1;
    if (t_slot_of != sh) {
      t_slot_of = sh;
      t_slot = std::min(sh->slots_used.fetch_add(1), kSlots - 1);  // <= 4 workers: never shared
    }
    sh->slot_hops[t_slot].fetch_add(1);
    if (sh->quit.load()) {
      peer.send(Ball{});  // so the peer sees quit too (mail to a stopped peer is dropped)
      stop();
      return;
    }
    if (poke_third && h >= 1000) {  // woken before the peer, so it sits under the chain
      poke_third = false;
      sh->third_poked_at.store(int64_t(h));
      for (int i = 0; i < kSlots; ++i) sh->hops_at_poke[i] = sh->slot_hops[i].load();
      sh->poke_slot = t_slot;
      sh->poke_cpu_ns = thread_cpu_ns();
      third.send(Third::FromPair{});
    }
    peer.send(Ball{});
  }
};

}  // namespace

TEST_CASE("an endless ping-pong pair starves neither outside mail nor a third actor", "[fairness]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 4));
  coact::test::Watchdog wd(60, "starvation");
  Shared sh;
  coact::SchedulerTuning tuning = coact::test::tuning_for(workers);
  tuning.local_time_budget_us = kValveUs;
  const auto body = [&](coact::Runtime& rt) {
    auto third = rt.spawn<Third>(&sh);
    auto a = rt.spawn<Player>(&sh);
    auto b = rt.spawn<Player>(&sh);
    a.send(Player::Setup{b, third, true});
    b.send(Player::Setup{a, third, false});
    a.send(Player::Ball{});
    // Let the pair capture its worker, then post from outside.
    while (sh.hops.load() < 20000) std::this_thread::sleep_for(1ms);
    // 21 outside posts; each latency is measured in pair hops from just before
    // the post (an upper bound on the true latency: descheduling of this thread
    // between the read and the push only inflates it, hence the median).
    std::vector<int64_t> lat;
    bool all_seen = true;
    for (int i = 0; i < 21 && all_seen; ++i) {
      sh.outside_seen_at.store(-1);
      const int64_t before = int64_t(sh.hops.load());
      third.send(Third::FromOutside{});
      auto deadline = std::chrono::steady_clock::now() + 20s;
      while (sh.outside_seen_at.load() < 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
      if (sh.outside_seen_at.load() < 0) all_seen = false;
      lat.push_back(sh.outside_seen_at.load() - before);
    }
    std::sort(lat.begin(), lat.end());
    const int64_t median = lat[lat.size() / 2];
    sh.quit = true;
    third.stop();
    rt.run();
    INFO("workers=" << workers << " outside-post latency median " << median << " hops, max " << lat.back()
                    << "; third poked at hop " << sh.third_poked_at.load() << ", seen at " << sh.third_seen_at.load()
                    << "; on its thread since the poke: " << sh.third_own_hops.load() << " hops, "
                    << sh.third_own_cpu_ns.load() << " ns CPU (-1: not the poking thread)");
    REQUIRE(all_seen);
    REQUIRE(sh.third_seen_at.load() >= 0);
    // Bounds in hops: the backstop probes the injector every 64 own pops (one
    // hop = one own pop), so outside mail waits about 64 hops; 512 leaves room
    // for a loaded machine. The third actor: its thread's own hops since the
    // poke, at most 4 backstop periods (256: one for the backstop, or two at
    // one worker, where one moves it and the next takes it; the rest slack
    // for the clock stride and the hop that spills) plus the hops one
    // valve period allows at that thread's rate (file comment). On another
    // thread than the poking one (it took the spilled actor from the
    // injector), its own hops before the run are bounded by the backstop.
    CHECK(median <= 512);
    const int64_t own = sh.third_own_hops.load(), cpu = sh.third_own_cpu_ns.load();
    REQUIRE(own >= 0);
    const double valve_hops = cpu > 0 ? double(kValveUs) * 1000.0 * double(own) / double(cpu) : 0.0;
    CHECK(double(own) <= 4 * 64 + valve_hops);
  };
  coact::test::run_checked(tuning, body, {.dead = 1});  // the last ball, sent to the player that stopped first
}

// The keep-local valve spills a backlog to the injector only when a sibling
// is idle (spinning or parked) to take it: with none, a spill only reorders
// the backlog oldest-first through the injector's lock.

namespace {

struct Tree {
  std::atomic<uint64_t> leaves{0};
  std::atomic<bool> done{false};
};

// A 4-ary spawn tree of the given depth: each node spawns its children and
// mails them, counts their replies, then replies to its parent and stops.
struct TreeNode : coact::Actor<TreeNode> {
  coact::ActorRef<TreeNode> parent;  // null for the root
  Tree* tree;
  uint32_t pending = 0;
  TreeNode(coact::ActorRef<TreeNode> p, Tree* t) : parent(std::move(p)), tree(t) {}
  struct Grow {
    int depth;
  };
  struct Grown {};
  void finish() {
    if (parent) {
      parent.send(Grown{});
    } else {
      tree->done.store(true);
    }
    stop();
  }
  void on(Grow g) {
    if (g.depth == 0) {
      tree->leaves.fetch_add(1, std::memory_order_relaxed);
      finish();
      return;
    }
    for (int i = 0; i < 4; ++i) runtime().spawn<TreeNode>(self(), tree).send(Grow{g.depth - 1});
    pending = 4;
  }
  void on(Grown) {
    if (--pending == 0) finish();
  }
};

}  // namespace

TEST_CASE("one worker: a spawn tree's backlog never goes through the injector", "[fairness][valve]") {
  coact::test::Watchdog wd(60, "spawn tree");
  coact::SchedulerTuning tuning = coact::test::tuning_for(1);
  tuning.local_time_budget_us = 6;  // the shortest valve: a cascade of this size trips it thousands of times
  Tree tree;
  constexpr int kDepth = 8;  // 4^8 leaves
  const auto body = [&](coact::Runtime& rt) {
    auto root = rt.spawn<TreeNode>(coact::ActorRef<TreeNode>{}, &tree);
    const coact::RuntimeStats before = rt.stats();
    root.send(TreeNode::Grow{kDepth});  // from outside the pool: one injector push
    rt.run();
    const coact::RuntimeStats after = rt.stats();
    const uint64_t pushes = after.injector_pushes - before.injector_pushes;
    const uint64_t mails = after.delivered - before.delivered;
    INFO("injector pushes during the tree: " << pushes << " for " << mails << " mails");
    REQUIRE(tree.done.load());
    CHECK(tree.leaves.load() == uint64_t(1) << (2 * kDepth));
    // With no sibling the backstop moves one job to the injector at most
    // every 64 own pops (a pop runs at least one mail); the rest are the
    // root send and an actor republished at a batch-budget end (a drain
    // stretched past 200 us when this thread was descheduled). A spill moved
    // the whole backlog, over one push per 16 mails here.
    CHECK(pushes <= mails / 64 + 16);
  };
  coact::test::run_checked(tuning, body);
}

namespace {

struct FanShared {
  std::mutex mu;
  std::set<std::thread::id> threads;  // the threads that ran a Busy handler
  std::atomic<int> replies{0};
};

// Fanner mails kFan Busy actors once; each runs kBusyUs of wall time on its
// worker and replies. The reply wakes Fanner behind the rest of the fan.
constexpr int kFan = 32;
constexpr int kBusyUs = 2000;

struct Fanner;

struct Busy : coact::Actor<Busy> {
  FanShared* sh;
  explicit Busy(FanShared* s) : sh(s) {}
  struct Work {
    coact::ActorRef<Fanner> reply_to;
  };
  void on(const Work& w);
};

struct Fanner : coact::Actor<Fanner> {
  FanShared* sh;
  std::vector<coact::ActorRef<Busy>> fan;
  explicit Fanner(FanShared* s) : sh(s) {}
  struct Go {};
  struct Done {};
  void on(Go) {
    for (int i = 0; i < kFan; ++i) fan.push_back(runtime().spawn<Busy>(sh));
    for (auto& b : fan) b.send(Busy::Work{self()});
  }
  void on(Done) {
    if (sh->replies.fetch_add(1) + 1 < kFan) return;
    for (auto& b : fan) b.stop();
    stop();
  }
};

void Busy::on(const Work& w) {
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    sh->threads.insert(std::this_thread::get_id());
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kBusyUs);
  while (std::chrono::steady_clock::now() < until) {
  }
  w.reply_to.send(Fanner::Done{});
}

}  // namespace

TEST_CASE("an idle sibling takes a fan-out of long handlers from the valve's spill", "[fairness][valve]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(2, 4));
  coact::test::Watchdog wd(60, "fan-out spill");
  coact::SchedulerTuning tuning = coact::test::tuning_for(workers);
  tuning.local_time_budget_us = kValveUs;
  FanShared sh;
  const auto body = [&](coact::Runtime& rt) {
    rt.spawn<Fanner>(&sh).send(Fanner::Go{});
    rt.run();
    size_t threads = 0;
    {
      std::lock_guard<std::mutex> lock(sh.mu);
      threads = sh.threads.size();
    }
    INFO("workers=" << workers << ": " << threads << " threads ran the " << kFan << " handlers of " << kBusyUs
                    << " us");
    CHECK(sh.replies.load() == kFan);
    // Without the spill the fan stays on the worker that ran Fanner (the
    // backlog is under 256, the sticky max): one thread.
    CHECK(threads >= 2);
  };
  coact::test::run_checked(tuning, body);
}

namespace {

// The batch time budget (COACT_BATCH_MAX_US) over handlers much longer than
// the clock's read spacing, at one worker. Gate holds the worker until the
// test thread has queued Drainer's backlog (kBacklog mails of kLongUs each)
// and then Probe's mail, so both wait in the injector in that order and
// Drainer's batch starts with Probe already waiting behind it.
constexpr uint32_t kBudgetUs = 200;
constexpr int kLongUs = 20;
constexpr int kBudgetRuns = int(kBudgetUs) / kLongUs;  // the handlers that fit in one budget
constexpr int kBacklog = 20 * kBudgetRuns;

struct BudgetShared {
  std::atomic<bool> queued{false};  // the test thread sent every mail
  std::atomic<int> drainer_runs{0};
  std::atomic<int> runs_at_probe{-1};
};

struct Gate : coact::Actor<Gate> {
  BudgetShared* sh;
  explicit Gate(BudgetShared* s) : sh(s) {}
  struct Hold {};
  struct Quit {};
  // Returns without stopping: the drain then reads the clock after it, so
  // Drainer's batch starts on a fresh clock reading.
  void on(Hold) {
    while (!sh->queued.load()) std::this_thread::yield();
  }
  void on(Quit) { stop(); }
};

struct Drainer : coact::Actor<Drainer> {
  BudgetShared* sh;
  explicit Drainer(BudgetShared* s) : sh(s) {}
  struct Work {};
  void on(Work) {
    coact::test::spin_for(std::chrono::microseconds(kLongUs));
    if (sh->drainer_runs.fetch_add(1) + 1 == kBacklog) stop();
  }
};

struct Probe : coact::Actor<Probe> {
  BudgetShared* sh;
  coact::ActorRef<Gate> gate;
  Probe(BudgetShared* s, coact::ActorRef<Gate> g) : sh(s), gate(std::move(g)) {}
  struct Look {};
  void on(Look) {
    sh->runs_at_probe.store(sh->drainer_runs.load());
    gate.send(Gate::Quit{});
    stop();
  }
};

}  // namespace

TEST_CASE("the batch time budget ends a drain of long handlers within one handler of it", "[fairness]") {
  coact::test::Watchdog wd(60, "batch time budget");
  coact::SchedulerTuning tuning = coact::test::tuning_for(1);
  tuning.batch_max_us = kBudgetUs;
  tuning.batch_max_mails = 1'000'000;  // only the time budget can end Drainer's batch
  BudgetShared sh;
  const auto body = [&](coact::Runtime& rt) {
    auto gate = rt.spawn<Gate>(&sh);
    gate.send(Gate::Hold{});
    auto drainer = rt.spawn<Drainer>(&sh);
    auto probe = rt.spawn<Probe>(&sh, gate);
    for (int i = 0; i < kBacklog; ++i) drainer.send(Drainer::Work{});
    probe.send(Probe::Look{});
    sh.queued.store(true);
    rt.run();
    const int seen = sh.runs_at_probe.load();
    INFO("Drainer ran " << seen << " handlers of " << kLongUs << " us before Probe ran; the budget holds "
                        << kBudgetRuns);
    // Each handler spins kLongUs of wall time, so after kBudgetRuns of them
    // the budget has passed and the batch ends at the next clock read; a read
    // only every 8th dispatch let 15 run here. Preemption only lowers the
    // count. Drainer was queued before Probe, so it ran first, at least one
    // handler (no budget ends a batch before its first).
    CHECK(seen >= 1);
    CHECK(seen <= kBudgetRuns + 1);
  };
  coact::test::run_checked(tuning, body);
}
