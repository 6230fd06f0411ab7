// Request / reply with a timeout (coact::ask): the reply and the WaitTimeout
// timer race; the first resumes the coroutine, the other is stale by protocol.
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <coact/runtime/runtime.hpp>

#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"

using namespace std::chrono_literals;

namespace {

struct Query {
  int key;
  std::chrono::microseconds delay;  // how long the store waits before replying
  coact::ReplyTo<int> reply;
};

struct Store : coact::Actor<Store> {
  std::vector<coact::ReplyTo<int>> held;  // queries never answered (negative delay)
  coact::Task on(Query q) {
    if (q.delay.count() < 0) {
      held.push_back(std::move(q.reply));
      co_return;
    }
    if (q.delay.count() > 0) co_await coact::sleep(q.delay);
    q.reply.send(q.key * 10);
  }
};

struct Result {
  std::atomic<int> answered{0};
  std::atomic<int> timed_out{0};
  std::atomic<int> sum{0};
  std::atomic<int> done{0};
  std::atomic<int> other_mail{0};
};

struct Client : coact::Actor<Client> {
  coact::ActorRef<Store> store;
  Result* res;
  Client(coact::ActorRef<Store> s, Result* r) : store(std::move(s)), res(r) {}
  struct Go {
    int rounds;
    std::chrono::microseconds store_delay;
    std::chrono::microseconds timeout;
  };
  struct Other {};
  coact::Task on(Go g) {
    for (int i = 1; i <= g.rounds; ++i) {
      std::optional<int> v = co_await coact::ask<int>(
          store, [&](coact::ReplyTo<int> r) { return Query{i, g.store_delay, std::move(r)}; }, g.timeout);
      if (v) {
        res->answered.fetch_add(1);
        res->sum.fetch_add(*v);
      } else {
        res->timed_out.fetch_add(1);
      }
    }
    res->done.fetch_add(1);
  }
  void on(Other) { res->other_mail.fetch_add(1); }
};

}  // namespace

TEST_CASE("ask: replies arrive before the timeout and resume the coroutine with the value", "[reply]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 4));
  coact::test::Watchdog wd(30, "ask replies");
  Result res;
  coact::test::run_checked(workers, [&](coact::Runtime& rt) {
    auto store = rt.spawn<Store>();
    auto client = rt.spawn<Client>(store, &res);
    client.send(Client::Go{50, 0us, 2s});
    client.send(Client::Other{});  // kept aside while the client waits, handled after
    auto end = std::chrono::steady_clock::now() + 10s;
    while (res.done.load() == 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
    while (res.other_mail.load() == 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
    CHECK(res.answered.load() == 50);
    CHECK(res.timed_out.load() == 0);
    CHECK(res.sum.load() == 10 * 50 * 51 / 2);
    CHECK(res.other_mail.load() == 1);
    client.stop();
    store.stop();
    rt.run();
  });
}

TEST_CASE("ask: a timeout resumes with nullopt and the late reply is discarded as stale", "[reply][timer]") {
  coact::test::Watchdog wd(30, "ask timeout");
  Result res;
  // The fixture checks dropped_dead == 0: a stale late reply is discarded, not counted as dead mail.
  coact::test::run_checked(2, [&](coact::Runtime& rt) {
    auto store = rt.spawn<Store>();
    auto client = rt.spawn<Client>(store, &res);
    // The store replies after 20 ms; the client gives up after 2 ms.
    client.send(Client::Go{3, 20ms, 2ms});
    auto end = std::chrono::steady_clock::now() + 10s;
    while (res.done.load() == 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(80ms);  // late replies arrive and must be ignored
    CHECK(res.timed_out.load() == 3);
    CHECK(res.answered.load() == 0);
    client.stop();
    store.stop();
    rt.run();
  });
}

TEST_CASE("ask: an answered ask leaves no timer behind, and a stopped asker's timeout is disarmed", "[reply][timer]") {
  // Regression: the WaitTimeout entry of an answered ask stayed in the heap
  // (holding the asker's cell) until its deadline: 10^4 asks with a one-hour
  // timeout left pending_timers() == 10^4 for an hour.
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 4));
  coact::test::Watchdog wd(60, "ask timers");
  constexpr int kAsks = 10'000;
  Result res;
  coact::test::run_checked(workers, [&](coact::Runtime& rt) {
    auto store = rt.spawn<Store>();
    auto client = rt.spawn<Client>(store, &res);
    client.send(Client::Go{kAsks, 0us, 1h});
    auto end = std::chrono::steady_clock::now() + 30s;
    while (res.done.load() == 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
    REQUIRE(res.answered.load() == kAsks);
    CHECK(rt.pending_timers() == 0u);
    // An asker stopped inside its ask: the store keeps the query and never
    // replies (negative delay), so only the stop ends the wait; the one-hour
    // timeout must go with it instead of firing into a dead actor an hour on.
    Result res2;
    auto client2 = rt.spawn<Client>(store, &res2);
    client2.send(Client::Go{1, -1us, 1h});
    end = std::chrono::steady_clock::now() + 10s;
    while (rt.pending_timers() == 0u && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
    CHECK(rt.pending_timers() == 1u);  // the waiting ask's timeout
    client2.stop();
    end = std::chrono::steady_clock::now() + 10s;
    while (rt.pending_timers() != 0u && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
    CHECK(rt.pending_timers() == 0u);
    CHECK(res2.done.load() == 0);  // the coroutine was destroyed, not resumed
    client.stop();
    store.stop();
    rt.run();
  });
}
