// SpinPark: no lost wakeup, wake economy, idle CPU.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "support/spin.hpp"
#include <coact/runtime/runtime.hpp>

#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"

using namespace std::chrono_literals;

using coact::test::cpu_seconds;
namespace {

struct Ack {
  std::atomic<uint64_t>* done;
};
struct Relay;
struct Hop {
  uint32_t left;
  std::atomic<uint64_t>* done;
};
struct Relay : coact::Actor<Relay> {
  coact::ActorRef<Relay> next;
  void on(coact::ActorRef<Relay>& n) { next = n; }
  void on(const Hop& h) {
    if (h.left == 0) {
      h.done->fetch_add(1, std::memory_order_release);
    } else {
      next.send(Hop{h.left - 1, h.done});
    }
  }
};

}  // namespace

// Producers outside the pool (root door) and inside it (a relay chain whose
// hops cross workers) race workers that are spinning out and parking: each
// round posts, waits for the chain to finish, then pauses a random 0-300 µs so
// the next post lands in every phase of the park protocol. A lost wakeup
// shows up as a round that never completes: the watchdog fails the test.
TEST_CASE("no lost wakeup: root and in-pool producers racing parking workers", "[stress][spin_park]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts());
  const uint32_t spin_usec = GENERATE(0u, 5u, 50u);
  const int rounds = int(4000 * (coact::test::kStressScale < 1 ? 0.1 : 1.0));
  coact::test::Watchdog wd(240, "lost-wakeup rounds");
  coact::SchedulerTuning t = coact::test::tuning_for(workers);
  t.spin_window_us = spin_usec;
  t.local_time_budget_us = 0;  // valve off: hops stay local unless spilled by stickiness
  const auto body = [&](coact::Runtime& rt) {
    std::vector<coact::ActorRef<Relay>> relays;
    for (int i = 0; i < 8; ++i) relays.push_back(rt.spawn<Relay>());
    for (int i = 0; i < 8; ++i) relays[i].send(coact::ActorRef<Relay>(relays[(i + 1) % 8]));
    std::atomic<uint64_t> done{0};
    std::minstd_rand rng(workers * 100 + spin_usec);
    // A second outside producer posts concurrently.
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> side_done{0};
    uint64_t side_sent = 0;
    std::thread side([&] {
      while (!stop.load()) {
        relays[3].send(Hop{0, &side_done});
        ++side_sent;
        std::this_thread::sleep_for(std::chrono::microseconds(50 + side_sent % 200));
      }
    });
    for (int r = 0; r < rounds; ++r) {
      const uint64_t want = done.load() + 1;
      relays[size_t(r % 8)].send(Hop{uint32_t(rng() % 12), &done});
      auto deadline = std::chrono::steady_clock::now() + 20s;
      while (done.load(std::memory_order_acquire) < want) {
        if (std::chrono::steady_clock::now() > deadline) FAIL("round " << r << " stalled: lost wakeup");
        std::this_thread::yield();
      }
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
    }
    stop = true;
    side.join();
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (side_done.load() < side_sent) {
      if (std::chrono::steady_clock::now() > deadline) FAIL("side producer's mail stalled");
      std::this_thread::sleep_for(1ms);
    }
    CHECK(done.load() == uint64_t(rounds));
    rt.request_stop();
  };
  coact::test::run_checked(t, body, {.live = 8});
}

// One post into a fully parked pool wakes at most 2 workers (counted as futex
// wake syscalls in the sync layer: detail/sync.hpp).
TEST_CASE("posting one message to a fully parked pool wakes at most 2 workers", "[spin_park]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(2));
  coact::test::Watchdog wd(60, "wake count");
  const auto body = [&](coact::Runtime& rt) {
    auto r = rt.spawn<Relay>();
    r.send(coact::ActorRef<Relay>(r));
    std::atomic<uint64_t> done{0};
    for (int trial = 0; trial < 5; ++trial) {
      // Let every worker spin out its 50 µs window and park.
      auto until = std::chrono::steady_clock::now() + 5s;
      uint64_t parks_before;
      do {
        std::this_thread::sleep_for(20ms);
        parks_before = rt.stats().parks;
      } while (std::chrono::steady_clock::now() < until && parks_before < workers);
      std::this_thread::sleep_for(20ms);
      const uint64_t before = rt.stats().futex_wakes;
      r.send(Hop{0, &done});
      while (done.load() < uint64_t(trial + 1)) std::this_thread::sleep_for(100us);
      std::this_thread::sleep_for(20ms);  // let the woken worker spin out and park again
      const uint64_t wakes = rt.stats().futex_wakes - before;
      INFO("workers=" << workers << " trial=" << trial);
      CHECK(wakes <= 2);
      CHECK(wakes >= 1);
    }
    rt.request_stop();
  };
  coact::test::run_checked(workers, body, {.live = 1});
}

TEST_CASE("an idle runtime uses under 1% of one core", "[spin_park][idle]") {
  coact::test::Watchdog wd(60, "idle cpu");
  const auto body = [&](coact::Runtime& rt) {
    std::vector<coact::ActorRef<Relay>> keep;
    for (int i = 0; i < 16; ++i) keep.push_back(rt.spawn<Relay>());
    std::this_thread::sleep_for(100ms);  // boot and spin-out
    const double c0 = cpu_seconds();
    const auto w0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(5s);
    const double cpu = cpu_seconds() - c0;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    INFO("cpu=" << cpu << " s over wall=" << wall << " s");
    CHECK(cpu / wall < 0.01);
    rt.request_stop();
  };
  coact::test::run_checked(4, body, {.live = 16});
}
