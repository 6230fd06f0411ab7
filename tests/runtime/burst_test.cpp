// tests/runtime/burst_test.cpp: burst dispatch (runtime/src/detail/burst.hpp):
// the packed lifecycle word under concurrent claimers and a publishing
// producer; recruit_k; and, through the runtime, per-recipient FIFO and
// exactly-once across flushes with seize/deposit races and recruitment at
// 1/2/4/8 workers, the knobs (COACT_BURST, ring size, recruit min/max) and
// the synchronization count of a wide fan-out.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <coact/runtime/runtime.hpp>

#include "detail/burst.hpp"
#include "detail/scheduler.hpp"
#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"

using coact::detail::Lifecycle;

TEST_CASE("Lifecycle: claims hand out each published group once, complete retires") {
  Lifecycle lc(3);
  CHECK(lc.claim() == 0u);
  CHECK(lc.claim() == 1u);
  CHECK(lc.claim() == 2u);
  CHECK_FALSE(lc.claim().has_value());
  CHECK(lc.publish(2) == Lifecycle::Published::ok);
  CHECK(lc.claim() == 3u);
  CHECK_FALSE(lc.complete());
  CHECK_FALSE(lc.complete());
  CHECK_FALSE(lc.complete());
  CHECK_FALSE(lc.complete());
  CHECK(lc.claim() == 4u);
  CHECK(lc.complete());  // done == len: retired
  CHECK(lc.retired());
  CHECK(lc.publish(1) == Lifecycle::Published::retired);
  auto s = lc.snapshot();
  CHECK(s.cursor == 5);
  CHECK(s.len == 5);
  CHECK(s.done == 5);
  CHECK(s.sealed);
  Lifecycle full(Lifecycle::kMaxGroups);
  CHECK(full.publish(1) == Lifecycle::Published::full);
}

TEST_CASE("Lifecycle: many threads claiming one published burst partition its groups exactly", "[stress]") {
  for (uint32_t threads : {1u, 2u, 4u, 8u}) {
    coact::test::Watchdog wd(60, "lifecycle partition");
    constexpr uint32_t kLen = 100000;
    Lifecycle lc(kLen);
    std::vector<std::vector<uint32_t>> got(threads);
    std::atomic<uint32_t> retirers{0};
    std::vector<std::thread> ts;
    for (uint32_t t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        while (auto i = lc.claim()) {
          got[t].push_back(*i);
          if (lc.complete()) retirers.fetch_add(1);
        }
      });
    }
    for (auto& t : ts) t.join();
    std::vector<uint32_t> all;
    for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
    std::sort(all.begin(), all.end());
    REQUIRE(all.size() == kLen);
    for (uint32_t i = 0; i < kLen; ++i) REQUIRE(all[i] == i);
    CHECK(retirers.load() == 1);
    CHECK(lc.retired());
  }
}

TEST_CASE("Lifecycle: complete_and_claim completes and claims in one step; many threads partition exactly",
          "[stress]") {
  {
    Lifecycle lc(2);
    bool retired = true;
    CHECK(lc.claim() == 0u);
    CHECK(lc.complete_and_claim(retired) == 1u);  // 0 done, 1 claimed
    CHECK_FALSE(retired);
    auto s = lc.snapshot();
    CHECK((s.cursor == 2 && s.done == 1 && !s.sealed));
    CHECK_FALSE(lc.complete_and_claim(retired).has_value());  // 1 done: retired, nothing to claim
    CHECK(retired);
    CHECK(lc.retired());
    CHECK(lc.publish(1) == Lifecycle::Published::retired);
  }
  {
    Lifecycle lc(2);  // two drainers: the first to finish finds nothing left and does not retire
    bool retired = true;
    CHECK(lc.claim() == 0u);
    CHECK(lc.claim() == 1u);
    CHECK_FALSE(lc.complete_and_claim(retired).has_value());
    CHECK_FALSE(retired);
    CHECK(lc.publish(1) == Lifecycle::Published::ok);  // still open: a later group is claimable
    CHECK(lc.complete_and_claim(retired) == 2u);
    CHECK_FALSE(retired);
    CHECK_FALSE(lc.complete_and_claim(retired).has_value());
    CHECK(retired);
  }
  for (uint32_t threads : {1u, 2u, 4u, 8u}) {
    coact::test::Watchdog wd(60, "lifecycle complete_and_claim partition");
    constexpr uint32_t kLen = 100000;
    Lifecycle lc(kLen);
    std::vector<std::vector<uint32_t>> got(threads);
    std::atomic<uint32_t> retirers{0};
    std::vector<std::thread> ts;
    for (uint32_t t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        std::optional<uint32_t> i = lc.claim();
        while (i) {
          got[t].push_back(*i);
          bool retired = false;
          i = lc.complete_and_claim(retired);
          if (retired) retirers.fetch_add(1);
        }
      });
    }
    for (auto& t : ts) t.join();
    std::vector<uint32_t> all;
    for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
    std::sort(all.begin(), all.end());
    REQUIRE(all.size() == kLen);
    for (uint32_t i = 0; i < kLen; ++i) REQUIRE(all[i] == i);
    CHECK(retirers.load() == 1);
    CHECK(lc.retired());
  }
}

TEST_CASE("Lifecycle: complete_and_claim_n claims runs by guided self-scheduling; many threads partition exactly",
          "[stress]") {
  {
    Lifecycle lc(64);
    bool retired = true;
    auto r = lc.complete_and_claim_n(0, 8, 4, retired);  // 64 unclaimed / 4 = 16: the cap 8 holds
    CHECK((r.first == 0 && r.n == 8));
    CHECK_FALSE(retired);
    r = lc.complete_and_claim_n(8, 100, 4, retired);  // 56 / 4 = 14
    CHECK((r.first == 8 && r.n == 14));
    auto s = lc.snapshot();
    CHECK((s.cursor == 22 && s.done == 8));
    r = lc.complete_and_claim_n(14, 100, 64, retired);  // 42 / 64 = 0: at least one
    CHECK((r.first == 22 && r.n == 1));
    r = lc.complete_and_claim_n(0, 0, 4, retired);  // want 0: claims nothing
    CHECK(r.n == 0);
    r = lc.complete_and_claim_n(1, 1000, 1, retired);  // everything left
    CHECK((r.first == 23 && r.n == 41));
    CHECK_FALSE(retired);
    CHECK(lc.complete_and_claim_n(40, 8, 1, retired).n == 0);  // one claimed group still open
    CHECK_FALSE(retired);
    CHECK_FALSE(lc.retired());
    CHECK(lc.complete_and_claim_n(1, 8, 1, retired).n == 0);
    CHECK(retired);
    CHECK(lc.retired());
    CHECK(lc.publish(1) == Lifecycle::Published::retired);
  }
  for (uint32_t threads : {1u, 2u, 4u, 8u}) {
    coact::test::Watchdog wd(60, "lifecycle complete_and_claim_n partition");
    constexpr uint32_t kLen = 100000;
    Lifecycle lc(kLen);
    std::vector<std::vector<uint32_t>> got(threads);
    std::atomic<uint32_t> retirers{0};
    std::vector<std::thread> ts;
    for (uint32_t t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        bool retired = false;
        uint32_t want = 1 + t % 8;
        auto r = lc.complete_and_claim_n(0, want, 2 * threads, retired);
        while (r.n != 0) {
          for (uint32_t i = 0; i < r.n; ++i) got[t].push_back(r.first + i);
          want = want % 8 + 1;
          r = lc.complete_and_claim_n(r.n, want, 2 * threads, retired);
          if (retired) retirers.fetch_add(1);
        }
      });
    }
    for (auto& t : ts) t.join();
    std::vector<uint32_t> all;
    for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
    std::sort(all.begin(), all.end());
    REQUIRE(all.size() == kLen);
    for (uint32_t i = 0; i < kLen; ++i) REQUIRE(all[i] == i);
    CHECK(retirers.load() == 1);
    CHECK(lc.retired());
  }
}

TEST_CASE("Lifecycle: publishing while claimers run loses and duplicates nothing", "[stress]") {
  for (uint32_t threads : {1u, 2u, 4u, 8u}) {
    coact::test::Watchdog wd(60, "lifecycle publish vs claim");
    constexpr uint32_t kBatches = 20000;
    Lifecycle lc(1);
    std::atomic<bool> producer_done{false};
    std::vector<std::vector<uint32_t>> got(threads);
    std::vector<std::thread> ts;
    for (uint32_t t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        for (;;) {
          if (auto i = lc.claim()) {
            got[t].push_back(*i);
          } else if (producer_done.load(std::memory_order_acquire)) {
            if (auto j = lc.claim()) {
              got[t].push_back(*j);
            } else {
              return;
            }
          } else {
            std::this_thread::yield();
          }
        }
      });
    }
    for (uint32_t b = 0; b < kBatches; ++b) REQUIRE(lc.publish(1 + b % 3) == Lifecycle::Published::ok);
    producer_done.store(true, std::memory_order_release);
    for (auto& t : ts) t.join();
    std::vector<uint32_t> all;
    for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
    std::sort(all.begin(), all.end());
    const uint32_t len = lc.snapshot().len;
    REQUIRE(all.size() == len);
    for (uint32_t i = 0; i < len; ++i) REQUIRE(all[i] == i);
  }
}

TEST_CASE("recruit_k: the makespan closed form and its gates") {
  using coact::detail::recruit_k;
  CHECK(recruit_k(1000, 100, 64, 8, 5000) == 1);       // below the wake break-even
  CHECK(recruit_k(64000, 1000, 64, 8, 5000) == 8);     // capped by workers
  CHECK(recruit_k(64000, 1000, 4, 8, 5000) == 4);      // capped by groups
  CHECK(recruit_k(64000, 60000, 64, 8, 5000) == 1);    // one fat group: nobody helps
  CHECK(recruit_k(30000, 10000, 64, 8, 5000) == 3);
  CHECK(recruit_k(64000, 0, 64, 8, 5000) == 1);
  // The gain must pay for the wake: (K-1)/K of the work against wake_ns
  // (no move cost here).
  CHECK(recruit_k(12000, 1000, 4, 2, 5000, 0) == 2);  // 1/2 * 12000 > 5000
  CHECK(recruit_k(9000, 1000, 4, 2, 5000, 0) == 1);   // 1/2 * 9000 < 5000, though 9000 > 5000
  // ... and for the moves: a wide burst of cheap groups (fan-out width 512,
  // 0 us handlers: 511 groups of 37 ns, figures logged by the scheduler here)
  // stays local, the same with 20 us handlers is shared.
  CHECK(recruit_k(18907, 37, 511, 2, 4596) == 1);
  CHECK(recruit_k(18907, 37, 511, 2, 4596, 0) == 2);
  CHECK(recruit_k(10281831, 20121, 511, 2, 4596) == 2);
  CHECK(recruit_k(160000, 20000, 8, 2, 4596) == 2);  // width 8, 20 us
}

namespace {

struct Seq {
  uint32_t producer;
  uint64_t n;
};
struct Go {
  uint32_t rounds;
};

// Receives numbered mail from many producers; checks per-producer order and
// that no two handlers of this actor ever overlap (the run-token).
struct Sink : coact::Actor<Sink> {
  std::vector<uint64_t> next;
  std::atomic<int>* inside;
  std::atomic<uint64_t>* errors;
  std::atomic<uint64_t>* received;
  Sink(uint32_t producers, std::atomic<int>* in, std::atomic<uint64_t>* err, std::atomic<uint64_t>* rec)
      : next(producers, 0), inside(in), errors(err), received(rec) {}
  void on(const Seq& s) {
    if (inside->fetch_add(1) != 0) errors->fetch_add(1);
    if (s.n != next[s.producer]) errors->fetch_add(1);
    next[s.producer] = s.n + 1;
    received->fetch_add(1, std::memory_order_relaxed);
    inside->fetch_sub(1);
  }
};

// Each Go: a burst to every sink, several mails per sink (FIFO inside one
// flush and across flushes), then Go itself again until the rounds are done.
struct Producer : coact::Actor<Producer> {
  uint32_t id;
  std::vector<coact::ActorRef<Sink>> sinks;
  uint64_t n = 0;
  uint32_t per_sink;
  Producer(uint32_t i, std::vector<coact::ActorRef<Sink>> s, uint32_t k) : id(i), sinks(std::move(s)), per_sink(k) {}
  void on(const Go& g) {
    for (uint32_t k = 0; k < per_sink; ++k) {
      for (auto& s : sinks) s.send(Seq{id, n});  // n is per producer: the same n for all sinks
      ++n;
    }
    if (g.rounds > 1) self().send(Go{g.rounds - 1});
  }
};

struct Totals {
  uint64_t received;
  uint64_t errors;
  coact::RuntimeStats stats;
};

// Every producer sends `rounds` bursts of per_sink mails to each sink; a
// root thread also sends to the sinks meanwhile (deposits racing seizes).
Totals run_fanout(coact::SchedulerTuning t, uint32_t producers, uint32_t sinks, uint32_t rounds, uint32_t per_sink,
                  bool root_sender) {
  std::atomic<uint64_t> errors{0}, received{0};
  std::vector<std::unique_ptr<std::atomic<int>>> inside;
  // The sinks and producers never stop: the destructor stops them.
  const auto body = [&](coact::Runtime& rt) {
    std::vector<coact::ActorRef<Sink>> ss;
    for (uint32_t i = 0; i < sinks; ++i) {
      inside.push_back(std::make_unique<std::atomic<int>>(0));
      ss.push_back(rt.spawn<Sink>(producers + 1, inside.back().get(), &errors, &received));
    }
    std::vector<coact::ActorRef<Producer>> ps;
    for (uint32_t p = 0; p < producers; ++p) ps.push_back(rt.spawn<Producer>(p, ss, per_sink));
    for (auto& p : ps) p.send(Go{rounds});
    if (root_sender) {
      for (uint64_t n = 0; n < uint64_t(rounds) * per_sink; ++n) {
        for (auto& s : ss) s.send(Seq{producers, n});
      }
    }
    const uint64_t want = uint64_t(producers + (root_sender ? 1 : 0)) * rounds * per_sink * sinks;
    while (received.load() < want) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  const coact::RuntimeStats stats = coact::test::run_checked(t, body, {.live = uint64_t(sinks) + producers});
  return Totals{received.load(), errors.load(), stats};
}

}  // namespace

TEST_CASE("burst: per-recipient FIFO and exactly-once across flushes, seize/deposit races, recruitment",
          "[stress]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts());
  for (bool burst : {true, false}) {
    coact::test::Watchdog wd(120, "burst FIFO stress");
    coact::SchedulerTuning t = coact::test::tuning_for(workers);
    t.burst = burst;
    t.burst_recruit_min = 2;  // recruit on most flushes: more claimers racing
    const uint32_t producers = 4, sinks = 24, rounds = 400, per_sink = 3;
    Totals r = run_fanout(t, producers, sinks, rounds, per_sink, true);
    INFO("workers " << workers << " burst " << burst);
    CHECK(r.errors == 0);
    CHECK(r.received == uint64_t(producers + 1) * rounds * per_sink * sinks);
    CHECK(r.stats.delivered >= r.received);
    if (burst) {
      CHECK(r.stats.bursts > 0);
      CHECK(r.stats.seized > 0);
      if (workers > 1) CHECK(r.stats.recruited > 0);
    } else {
      CHECK(r.stats.bursts == 0);
      CHECK(r.stats.seized == 0);
    }
  }
}

namespace {
// Like Sink, but checks only that each producer's numbers increase (Mixed
// skips numbers for the sinks it does not send to).
struct MonoSink : coact::Actor<MonoSink> {
  std::vector<int64_t> last;
  std::atomic<int>* inside;
  std::atomic<uint64_t>* errors;
  std::atomic<uint64_t>* received;
  MonoSink(uint32_t producers, std::atomic<int>* in, std::atomic<uint64_t>* err, std::atomic<uint64_t>* rec)
      : last(producers, -1), inside(in), errors(err), received(rec) {}
  void on(const Seq& s) {
    if (inside->fetch_add(1) != 0) errors->fetch_add(1);
    if (int64_t(s.n) <= last[s.producer]) errors->fetch_add(1);
    last[s.producer] = int64_t(s.n);
    received->fetch_add(1, std::memory_order_relaxed);
    inside->fetch_sub(1);
  }
};

// Spawns `sinks` MonoSinks and `producers` producers (make(rt, p, sinks),
// an ActorRef to an actor taking Go, spawning `per_producer` actors), sends
// each Go{rounds} and waits until `want` mails arrived (then 5 ms: nothing
// beyond `want` arrives). No actor stops: the destructor stops them.
struct SinkRun {
  uint64_t errors = 0, received = 0;
  coact::RuntimeStats stats;
};
template <class Make>
SinkRun run_to_sinks(const coact::SchedulerTuning& t, uint32_t producers, uint32_t sinks, uint32_t rounds,
                     uint64_t want, uint32_t per_producer, Make make) {
  std::atomic<uint64_t> errors{0}, received{0};
  std::vector<std::unique_ptr<std::atomic<int>>> inside;
  SinkRun out;
  const auto body = [&](coact::Runtime& rt) {
    std::vector<coact::ActorRef<MonoSink>> ss;
    for (uint32_t i = 0; i < sinks; ++i) {
      inside.push_back(std::make_unique<std::atomic<int>>(0));
      ss.push_back(rt.spawn<MonoSink>(producers, inside.back().get(), &errors, &received));
    }
    for (uint32_t p = 0; p < producers; ++p) make(rt, p, ss).send(Go{rounds});
    while (received.load() < want) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  out.stats = coact::test::run_checked(t, body, {.live = sinks + uint64_t(producers) * per_producer});
  out.errors = errors.load();
  out.received = received.load();
  return out;
}

// Alternates one-mail invocations (the first send goes straight into the
// inbox when no burst of this producer is live) with invocations whose first
// send may go direct and whose later sends, some to the same sink, are
// buffered and batched: per-producer FIFO must hold across the two paths.
struct Mixed : coact::Actor<Mixed> {
  uint32_t id;
  std::vector<coact::ActorRef<MonoSink>> sinks;
  uint64_t n = 0;
  Mixed(uint32_t i, std::vector<coact::ActorRef<MonoSink>> s) : id(i), sinks(std::move(s)) {}
  void on(const Go& g) {
    const size_t k = sinks.size();
    switch (g.rounds % 3) {
      case 0:  // one mail: a reply-like single send
        sinks[g.rounds % k].send(Seq{id, n});
        break;
      case 1:  // one mail to sink 0, then two to every sink (sink 0 again first)
        sinks[0].send(Seq{id, n});
        for (uint64_t j = 1; j <= 2; ++j)
          for (auto& s : sinks) s.send(Seq{id, n + j});
        break;
      default:  // a plain burst
        for (auto& s : sinks) s.send(Seq{id, n});
        break;
    }
    n += 3;  // numbers increase per producer across invocations
    if (g.rounds > 1) self().send(Go{g.rounds - 1});
  }
};
}  // namespace

TEST_CASE("burst: a handler's first send direct, its later sends batched: per-recipient FIFO and exactly-once",
          "[stress]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts());
  coact::test::Watchdog wd(120, "burst direct-first FIFO stress");
  coact::SchedulerTuning t = coact::test::tuning_for(workers);
  t.burst = true;
  t.burst_recruit_min = 2;  // recruit on most flushes: more claimers racing
  const uint32_t producers = 4, sinks = 16, rounds = 600;
  uint64_t want = 0;
  for (uint32_t r = rounds; r >= 1; --r) want += r % 3 == 0 ? 1 : r % 3 == 1 ? 1 + 2 * sinks : sinks;
  want *= producers;
  const SinkRun run = run_to_sinks(t, producers, sinks, rounds, want, 1,
                                   [](coact::Runtime& rt, uint32_t p, auto& ss) { return rt.spawn<Mixed>(p, ss); });
  INFO("workers " << workers);
  CHECK(run.errors == 0);
  CHECK(run.received == want);
  CHECK(run.stats.bursts > 0);
}

namespace {
// Even rounds: Go to itself first (straight into its own inbox: the first
// send, no live burst yet), then three mails to the sink (buffered: one
// group, published by the flush, its drainer queued). Odd rounds: one mail
// to the sink as the invocation's first send. At 1 worker the odd round runs
// in the same drain as the even one (its Go is already in the inbox), before
// the drainer: the producer's burst is live and its group to the sink open,
// so the single send must queue behind that group (flush: push onto the
// open group), not go straight into the sink's inbox (the one-mail fast
// path, Scheduler::post_burst / post, is only for a producer without a live
// burst). Taking the direct path here delivers n + 3 before n .. n + 2.
struct OpenGroupRacer : coact::Actor<OpenGroupRacer> {
  uint32_t id;
  coact::ActorRef<MonoSink> sink;
  uint64_t n = 0;
  OpenGroupRacer(uint32_t i, coact::ActorRef<MonoSink> s) : id(i), sink(s) {}
  void on(const Go& g) {
    if (g.rounds % 2 == 0) {
      self().send(Go{g.rounds - 1});
      for (int k = 0; k < 3; ++k) sink.send(Seq{id, n++});
    } else {
      sink.send(Seq{id, n++});
      if (g.rounds > 1) self().send(Go{g.rounds - 1});
    }
  }
};
}  // namespace

TEST_CASE("burst: a one-mail send never overtakes the producer's open group to the same recipient", "[stress]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts());
  coact::test::Watchdog wd(120, "burst open-group FIFO");
  coact::SchedulerTuning t = coact::test::tuning_for(workers);
  t.burst = true;
  const uint32_t producers = 3, rounds = 2000;  // even: every producer ends on an odd round
  const uint64_t want = uint64_t(producers) * (rounds / 2) * 4;
  std::atomic<uint64_t> errors{0}, received{0};
  std::atomic<int> inside{0};
  // The sink and the racers never stop: the destructor stops them.
  const auto body = [&](coact::Runtime& rt) {
    auto sink = rt.spawn<MonoSink>(producers, &inside, &errors, &received);
    std::vector<coact::ActorRef<OpenGroupRacer>> ps;
    for (uint32_t p = 0; p < producers; ++p) ps.push_back(rt.spawn<OpenGroupRacer>(p, sink));
    for (auto& p : ps) p.send(Go{rounds});
    while (received.load() < want) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // nothing beyond `want` arrives
  };
  const coact::RuntimeStats stats = coact::test::run_checked(t, body, {.live = 1u + producers});
  INFO("workers " << workers);
  CHECK(errors.load() == 0);
  CHECK(received.load() == want);
  CHECK(stats.bursts > 0);  // groups were published (later mail mostly joins the open group)
}

namespace {
// Narrow, cheap invocations (fewer sends than the width gate: the direct
// hint goes on once their costs are trusted, and their later sends go
// direct) interleaved with wide ones (past the gate: the hint ends
// mid-invocation, the sends before it direct, the rest buffered), some
// mail to the same sink twice in one invocation. The next invocation comes
// back through a Bounce actor (a reply, as a fan-out's round ends), so it
// starts after its last burst retired: a self-send would run inside it.
struct Narrow;
struct Bounced {
  uint32_t rounds;
  coact::ActorRef<Narrow> back;
};
struct Bounce : coact::Actor<Bounce> {
  void on(const Bounced& b);
};
struct Narrow : coact::Actor<Narrow> {
  uint32_t id;
  std::vector<coact::ActorRef<MonoSink>> sinks;
  coact::ActorRef<Bounce> bounce;
  uint64_t n = 0;
  Narrow(uint32_t i, std::vector<coact::ActorRef<MonoSink>> s, coact::ActorRef<Bounce> b)
      : id(i), sinks(std::move(s)), bounce(std::move(b)) {}
  void on(const Go& g) {
    const size_t k = sinks.size();
    if (g.rounds % 7 == 0) {
      for (auto& s : sinks) s.send(Seq{id, n});  // wide: k >= the gate
    } else {
      for (uint64_t j = 0; j < 4; ++j) sinks[(g.rounds + j / 2) % k].send(Seq{id, n + j});  // 4 mails, 2 sinks
    }
    n += 4;
    if (g.rounds > 1) bounce.send(Bounced{g.rounds - 1, self()});
  }
};
void Bounce::on(const Bounced& b) { b.back.send(Go{b.rounds}); }
}  // namespace

TEST_CASE("burst: the direct hint: narrow cheap invocations send direct; FIFO and exactly-once across the paths",
          "[stress]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 4));
  coact::test::Watchdog wd(120, "burst direct hint");
  coact::SchedulerTuning t = coact::test::tuning_for(workers);
  t.burst = true;  // the default width gate (9)
  const uint32_t producers = 4, sinks = 12, rounds = 2000;
  uint64_t want = 0;
  for (uint32_t r = rounds; r >= 1; --r) want += r % 7 == 0 ? sinks : 4;
  want *= producers;
  const SinkRun run = run_to_sinks(t, producers, sinks, rounds, want, 2, [](coact::Runtime& rt, uint32_t p, auto& ss) {
    return rt.spawn<Narrow>(p, ss, rt.spawn<Bounce>());
  });
  const coact::RuntimeStats& stats = run.stats;
  INFO("workers " << workers << ": bursts " << stats.bursts << " of " << producers * rounds << " invocations");
  CHECK(run.errors == 0);
  CHECK(run.received == want);
  // Every invocation sends 2+ mails (the bounce included), so without
  // the hint each would burst; with it, the wide ones (1 in 7), the
  // refreshes (1 in 16 of the hinted) and those before the costs were
  // trusted do: well under half (the costs are timed per worker on
  // claimed mail; a loaded machine delays trust by a few rounds only).
  // Under ThreadSanitizer at 1 worker a fixed cost-sampling stride of 16
  // never timed the bounce's kind (8,000 of 8,000 burst): the stride is
  // drawn per sample now (Scheduler::dispatch_claimed).
  CHECK(stats.bursts > 0);
#if !defined(__SANITIZE_THREAD__) && !defined(COACT_TSAN)
  // The hint decides by timed handler costs; under ThreadSanitizer those
  // timings (and the oversubscribed 4-worker case on a 2-core machine)
  // say little, so the instrumented build checks only the correctness
  // above: FIFO and exactly-once across both paths.
  CHECK(stats.bursts < uint64_t(producers) * rounds / 2);
#endif
}

TEST_CASE("burst: a tiny ring takes the heap fallback and stays correct; a ring of 0 never uses the ring") {
  for (uint32_t ring : {0u, 256u, 65536u}) {
    coact::test::Watchdog wd(60, "burst ring sizes");
    coact::SchedulerTuning t = coact::test::tuning_for(2);
    t.burst = true;
    t.burst_ring_bytes = ring;
    Totals r = run_fanout(t, 2, 32, 50, 2, false);
    INFO("ring " << ring);
    CHECK(r.errors == 0);
    CHECK(r.received == 2u * 50 * 2 * 32);
    if (ring == 256) CHECK(r.stats.ring_fallbacks > 0);
    if (ring == 0) CHECK(r.stats.ring_fallbacks == 0);  // no ring: heap envelopes, not fallbacks
  }
}

namespace {
struct Fan;
struct Done {};
struct Ping {
  coact::ActorRef<Fan> from;
};
struct Leaf : coact::Actor<Leaf> {
  std::atomic<uint64_t>* hits;
  explicit Leaf(std::atomic<uint64_t>* h) : hits(h) {}
  void on(const Ping& p);
};
// One round: a Ping to every leaf; the next round when all replied.
struct Fan : coact::Actor<Fan> {
  std::vector<coact::ActorRef<Leaf>> leaves;
  uint32_t rounds = 0;
  uint32_t waiting = 0;
  explicit Fan(std::vector<coact::ActorRef<Leaf>> l) : leaves(std::move(l)) {}
  void round() {
    waiting = uint32_t(leaves.size());
    for (auto& l : leaves) l.send(Ping{self()});
  }
  void on(const Go& g) {
    rounds = g.rounds;
    round();
  }
  void on(const Done&) {
    if (--waiting == 0 && --rounds > 0) round();
  }
};
void Leaf::on(const Ping& p) {
  hits->fetch_add(1, std::memory_order_relaxed);
  p.from.send(Done{});
}

coact::RuntimeStats fan_stats(coact::SchedulerTuning t, uint32_t width, uint32_t rounds) {
  std::atomic<uint64_t> hits{0};
  coact::RuntimeStats before, s;
  // The fan and its leaves never stop: the destructor stops them.
  const auto body = [&](coact::Runtime& rt) {
    std::vector<coact::ActorRef<Leaf>> ls;
    for (uint32_t i = 0; i < width; ++i) ls.push_back(rt.spawn<Leaf>(&hits));
    auto f = rt.spawn<Fan>(ls);
    before = rt.stats();
    f.send(Go{rounds});
    while (hits.load() < uint64_t(width) * rounds) std::this_thread::sleep_for(std::chrono::microseconds(200));
    s = rt.stats();
  };
  coact::test::run_checked(t, body, {.live = width + 1u});
  s.deque_pushes -= before.deque_pushes;
  s.injector_pushes -= before.injector_pushes;
  s.wakes -= before.wakes;
  return s;
}
}  // namespace

TEST_CASE("burst: a fan-out of 64 costs far fewer scheduling syncs than with COACT_BURST=off") {
  coact::test::Watchdog wd(60, "burst sync count");
  coact::SchedulerTuning on = coact::test::tuning_for(1);
  on.burst = true;
  coact::SchedulerTuning off = on;
  off.burst = false;
  const auto s_on = fan_stats(on, 64, 200);
  const auto s_off = fan_stats(off, 64, 200);
  INFO("syncs on " << s_on.syncs() << " off " << s_off.syncs());
  // Off: one deque push (or spill) per leaf per round, plus the fan's wake;
  // on: one drainer per round plus the fan's wake (leaves run in place).
  CHECK(s_off.syncs() >= 64u * 200);
  CHECK(s_on.syncs() * 10 <= s_off.syncs());
  CHECK(s_on.bursts >= 200);
  // The fan's first send of a round goes straight into its leaf's inbox
  // when the previous round's burst has retired (Scheduler::post): at most
  // one leaf per round is not seized.
  CHECK(s_on.seized >= 63u * 200 - 64);
  CHECK(s_off.bursts == 0);
}

TEST_CASE("burst: COACT_BURST_RECRUIT_MIN gates and COACT_BURST_RECRUIT_MAX caps recruitment") {
  coact::test::Watchdog wd(60, "burst recruitment knobs");
  coact::SchedulerTuning t = coact::test::tuning_for(4);
  t.burst = true;
  // 7 leaves + the self-send = 8 groups < min 9: while the cost cells are
  // untrusted the width gate keeps it local; once trusted, the work stays
  // below the (pinned, 2 ms) wake break-even: still no recruitment.
  t.handoff_cost_ns = 1000000;
  auto narrow = fan_stats(t, 7, 100);
  CHECK(narrow.recruited == 0);
  t.burst_recruit_min = 4;
  t.burst_recruit_max = 0;  // never recruit
  auto capped = fan_stats(t, 64, 100);
  CHECK(capped.recruited == 0);
  t.burst_recruit_max = 2;
  t.handoff_cost_ns = 1;  // a tiny wake break-even: trusted cells recruit too
  auto wide = fan_stats(t, 64, 100);
  CHECK(wide.recruited > 0);
  CHECK(wide.recruited <= 2u * wide.bursts);
}

TEST_CASE("burst: COACT_BURST=off and on parse; the knobs resolve from the environment") {
  coact::TuningSources s;
  s.env = std::vector<std::string>{"COACT_BURST=off", "COACT_BURST_RING_BYTES=4096", "COACT_BURST_RECRUIT_MIN=3",
                                   "COACT_BURST_RECRUIT_MAX=5"};
  auto t = coact::resolve_tuning(s);
  CHECK_FALSE(t.burst);
  CHECK(t.burst_ring_bytes == 4096);
  CHECK(t.burst_recruit_min == 3);
  CHECK(t.burst_recruit_max == 5);
  s.env = std::vector<std::string>{"COACT_BURST=banana"};
  CHECK_THROWS_AS(coact::resolve_tuning(s), coact::tuning_error);
}

TEST_CASE("burst: the cost estimates are fed by mail claimed from a burst group, not by other dispatches") {
  // Recruitment asks the CostTable about the kinds a flush batches; those
  // handlers run as claimed mail (burst step 6), and only those are timed
  // (every 16th), so a chain hop or a reply pays nothing for the estimates.
  // Here the leaves' Ping is claimed mail (640 of them: ~40 samples), the
  // fan's Done never is (a leaf's one send goes straight into the fan's inbox).
  coact::test::Watchdog wd(60, "burst cost sampling");
  coact::SchedulerTuning t = coact::test::tuning_for(1);
  t.burst = true;
  std::atomic<uint64_t> hits{0};
  // The fan and its leaves never stop: the destructor stops them.
  const auto body = [&](coact::Runtime& rt) {
    std::vector<coact::ActorRef<Leaf>> ls;
    for (uint32_t i = 0; i < 64; ++i) ls.push_back(rt.spawn<Leaf>(&hits));
    auto f = rt.spawn<Fan>(ls);
    f.send(Go{10});
    while (hits.load() < 64u * 10) std::this_thread::sleep_for(std::chrono::microseconds(200));
    const coact::detail::CostTable& costs = rt.scheduler().costs();
    CHECK(rt.stats().seized >= 63u * 10 - 10);
    // Which kinds were sampled, not whether their estimate is steady: under
    // ThreadSanitizer a zero-work handler's timings spread past their mean
    // (mean absolute deviation > mean: never trusted), and the CI run failed on
    // trusted(Ping) there.
    CHECK(costs.samples(coact::kind_id<Ping>()) == coact::detail::CostTable::kMinSamples);
    CHECK(costs.samples(coact::kind_id<Done>()) == 0);
  };
  coact::test::run_checked(t, body, {.live = 65});
}

namespace {
// A fixed tree for the drain-order test: Start runs a node, which logs its id
// and sends Start to each child in one handler (the first send direct, the
// others one burst).
struct Start {};
struct OrderNode : coact::Actor<OrderNode> {
  int id;
  std::vector<coact::ActorRef<OrderNode>> kids;
  std::vector<int>* log;
  std::atomic<int>* ran;
  OrderNode(int i, std::vector<coact::ActorRef<OrderNode>> k, std::vector<int>* l, std::atomic<int>* r)
      : id(i), kids(std::move(k)), log(l), ran(r) {}
  void on(const Start&) {
    log->push_back(id);
    for (auto& k : kids) k.send(Start{});
    ran->fetch_add(1, std::memory_order_release);
  }
};
}  // namespace

TEST_CASE("burst: a drainer yields to the subtree of a claimed recipient that burst (depth first)") {
  // Root 0 sends to 1, 2, 3; node n sends to 10n+1..10n+3 (leaves). One
  // worker, no valve (nothing spills): 1 is the root's direct first send and
  // runs first, then its subtree; the root's drainer claims 2, which bursts
  // to 21..23, and yields to them before it claims 3 (breadth first, it ran
  // 3 right after 2, then 31..33, then 21..23).
  coact::test::Watchdog wd(60, "burst drain order");
  coact::SchedulerTuning t = coact::test::tuning_for(1);
  t.burst = true;
  t.local_time_budget_us = 0;
  std::vector<int> log;
  std::atomic<int> ran{0};
  // The 13 nodes never stop: the destructor stops them.
  const auto body = [&](coact::Runtime& rt) {
    std::vector<coact::ActorRef<OrderNode>> mid;
    for (int n = 1; n <= 3; ++n) {
      std::vector<coact::ActorRef<OrderNode>> leaves;
      for (int k = 1; k <= 3; ++k) {
        leaves.push_back(rt.spawn<OrderNode>(10 * n + k, std::vector<coact::ActorRef<OrderNode>>{}, &log, &ran));
      }
      mid.push_back(rt.spawn<OrderNode>(n, leaves, &log, &ran));
    }
    auto root = rt.spawn<OrderNode>(0, mid, &log, &ran);
    root.send(Start{});
    while (ran.load(std::memory_order_acquire) < 13) std::this_thread::sleep_for(std::chrono::microseconds(200));
  };
  coact::test::run_checked(t, body, {.live = 13});
  CHECK(log == std::vector<int>{0, 1, 11, 12, 13, 2, 21, 22, 23, 3, 31, 32, 33});
}

namespace {
// A spawn tree whose every node gets Start then kSeqs numbered mails from its
// parent in one handler (per-recipient FIFO across the direct first send, the
// groups and the drainers' yields), spawns its children on Start, and
// replies its subtree's node count once it has all its mail and replies.
constexpr uint32_t kTreeSeqs = 3;
struct TreeStart {
  uint32_t depth;
};
struct TreeSeq {
  uint32_t n;
};
struct TreeDone {
  uint64_t nodes;
};
struct TreeNode : coact::Actor<TreeNode> {
  coact::ActorRef<TreeNode> parent;
  uint32_t fan;
  std::atomic<uint64_t>* errors;
  std::atomic<uint64_t>* total;  // root only: the tree's node count
  bool started = false;
  uint32_t seqs = 0, pending = 0;
  uint64_t nodes = 1;
  TreeNode(coact::ActorRef<TreeNode> p, uint32_t f, std::atomic<uint64_t>* e, std::atomic<uint64_t>* t)
      : parent(std::move(p)), fan(f), errors(e), total(t) {}
  void on(const TreeStart& s) {
    if (started || seqs != 0) errors->fetch_add(1);
    started = true;
    if (s.depth > 0) {
      pending = fan;
      for (uint32_t i = 0; i < fan; ++i) {
        auto c = runtime().spawn<TreeNode>(self(), fan, errors, nullptr);
        c.send(TreeStart{s.depth - 1});
        for (uint32_t k = 0; k < kTreeSeqs; ++k) c.send(TreeSeq{k});
      }
    }
    if (!parent) seqs = kTreeSeqs;  // the root gets no numbered mail
    maybe_done();
  }
  void on(const TreeSeq& m) {
    if (!started || m.n != seqs) errors->fetch_add(1);
    ++seqs;
    maybe_done();
  }
  void on(const TreeDone& d) {
    if (pending == 0) errors->fetch_add(1);
    nodes += d.nodes;
    --pending;
    maybe_done();
  }
  void maybe_done() {
    if (!started || seqs != kTreeSeqs || pending != 0) return;
    if (parent) {
      parent.send(TreeDone{nodes});
    } else {
      total->store(nodes, std::memory_order_release);
    }
    stop();
  }
};
}  // namespace

TEST_CASE("burst: spawn trees with drainers yielding depth first: per-recipient FIFO and exactly-once", "[stress]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts());
  coact::test::Watchdog wd(120, "burst spawn-tree stress");
  coact::SchedulerTuning t = coact::test::tuning_for(workers);
  t.burst = true;
  t.burst_recruit_min = 2;            // recruit on most flushes: drainers race for the groups
  const uint32_t fan = 6, depth = 5;  // 1 + 6 + ... + 6^5 = 9331 nodes
  uint64_t want = 0;
  for (uint32_t d = 0, p = 1; d <= depth; ++d, p *= fan) want += p;
  for (int round = 0; round < 3; ++round) {
    std::atomic<uint64_t> errors{0}, total{0};
    const coact::RuntimeStats stats = coact::test::run_checked(t, [&](coact::Runtime& rt) {
      auto root = rt.spawn<TreeNode>(coact::ActorRef<TreeNode>{}, fan, &errors, &total);
      root.send(TreeStart{depth});
      rt.run();
    });
    INFO("workers " << workers << " round " << round);
    CHECK(errors.load() == 0);
    CHECK(total.load() == want);
    CHECK(stats.bursts > 0);
  }
}

namespace {
// An actor that keeps itself busy: Go starts a chain of kBusySteps mails to
// itself, each handler storing its step number.
constexpr uint32_t kBusySteps = 20000;
struct BusyGo {};
struct BusyStep {
  uint32_t n;
};
struct Busy : coact::Actor<Busy> {
  std::atomic<uint32_t>* step;
  explicit Busy(std::atomic<uint32_t>* s) : step(s) {}
  void on(const BusyGo&) { self().send(BusyStep{1}); }
  void on(const BusyStep& m) {
    step->store(m.n, std::memory_order_relaxed);
    if (m.n < kBusySteps) self().send(BusyStep{m.n + 1});
  }
};
// Records the busy actor's step when its mail arrives.
struct Witness : coact::Actor<Witness> {
  std::atomic<uint32_t>* step;
  std::atomic<uint32_t>* seen;
  std::atomic<int>* ran;
  Witness(std::atomic<uint32_t>* s, std::atomic<uint32_t>* v, std::atomic<int>* r) : step(s), seen(v), ran(r) {}
  void on(const BusyGo&) {
    seen->store(step->load(std::memory_order_relaxed), std::memory_order_relaxed);
    ran->fetch_add(1, std::memory_order_release);
  }
};
struct BusyFan : coact::Actor<BusyFan> {
  std::vector<coact::ActorRef<Witness>> before, after;
  coact::ActorRef<Busy> busy;
  BusyFan(std::vector<coact::ActorRef<Witness>> b, coact::ActorRef<Busy> r, std::vector<coact::ActorRef<Witness>> a)
      : before(std::move(b)), after(std::move(a)), busy(std::move(r)) {}
  void on(const BusyGo&) {
    for (auto& w : before) w.send(BusyGo{});  // the first goes direct, the second opens the burst's first group
    busy.send(BusyGo{});
    for (auto& w : after) w.send(BusyGo{});
  }
};
}  // namespace

TEST_CASE("burst: a claimed run's later groups do not wait for an actor run in place that keeps itself busy") {
  // One worker, no valve. The fan's burst: groups w1, busy, w2..w6 (w0 went
  // direct). The drainer claims w1 alone, then a run of two: busy and w2.
  // Run in place, busy keeps itself busy (a chain of 20,000 mails to
  // itself); at its budget end the drainer still holds w2 (Worker::
  // claimed_left), so busy is published instead of given another batch, and
  // w2..w6 get their mail while busy is at its first budget, not after its
  // 20,000 steps.
  coact::test::Watchdog wd(60, "burst claimed run behind a busy actor");
  coact::SchedulerTuning t = coact::test::tuning_for(1);
  t.burst = true;
  t.local_time_budget_us = 0;
  std::atomic<uint32_t> step{0};
  std::atomic<int> ran{0};
  std::vector<std::atomic<uint32_t>> seen(7);
  for (auto& s : seen) s.store(UINT32_MAX);
  // The witnesses, the busy actor and the fan never stop: the destructor stops them.
  const auto body = [&](coact::Runtime& rt) {
    std::vector<coact::ActorRef<Witness>> before, after;
    for (int i = 0; i < 2; ++i) before.push_back(rt.spawn<Witness>(&step, &seen[i], &ran));
    for (int i = 2; i < 7; ++i) after.push_back(rt.spawn<Witness>(&step, &seen[i], &ran));
    auto busy = rt.spawn<Busy>(&step);
    auto fan = rt.spawn<BusyFan>(before, busy, after);
    fan.send(BusyGo{});
    while (ran.load(std::memory_order_acquire) < 7 || step.load(std::memory_order_relaxed) < kBusySteps)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  };
  coact::test::run_checked(t, body, {.live = 9});
  for (int i = 0; i < 7; ++i) {
    INFO("witness " << i << " saw the busy actor at step " << seen[i].load());
    CHECK(seen[i].load() < kBusySteps);
  }
}
