// mailbox_test.cpp: the mailbox's depth and high-water mark (counted with
// COACT_MAILBOX_STATS=on or a bound, off otherwise), the optional
// bound's policy (COACT_MAILBOX_BOUND: senders outside the pool refused and
// counted, pool senders never refused), and the fork rule (a child forked
// while a Runtime is live gets fork_error, not an abort). docs/mailboxes.md.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <coact/runtime/runtime.hpp>

#include "support/child.hpp"
#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"

using coact::ActorRef;
using coact::Runtime;
using coact::test::tuning_for;
using coact::test::Watchdog;

namespace {

struct Hold {
  std::atomic<bool>* entered;
  std::atomic<bool>* release;
};
struct Item {
  int k;
};

// Holds its worker in a Hold handler until released, so mail piles up in its
// inbox; counts the Items it handles.
struct Sink : coact::Actor<Sink> {
  std::atomic<int>* handled;
  explicit Sink(std::atomic<int>* h) : handled(h) {}
  void on(const Hold& h) {
    h.entered->store(true);
    while (!h.release->load()) std::this_thread::yield();
  }
  void on(const Item&) { handled->fetch_add(1, std::memory_order_relaxed); }
};

struct Flood {
  int n;
};
// A pool sender: one handler sends `n` Items to the sink and publishes how
// many send() accepted (no Catch assertion on a worker thread).
struct Feeder : coact::Actor<Feeder> {
  ActorRef<Sink> sink;
  std::atomic<int>* accepted;  // -1 until the handler ran
  Feeder(ActorRef<Sink> s, std::atomic<int>* a) : sink(std::move(s)), accepted(a) {}
  void on(const Flood& f) {
    int n = 0;
    for (int i = 0; i < f.n; ++i) n += sink.send(Item{i}) ? 1 : 0;
    accepted->store(n);
  }
};

void wait_for(const std::atomic<bool>& flag, const char* what) {
  Watchdog wd(30, what);
  while (!flag.load()) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

void wait_handled(const std::atomic<int>& handled, int n) {
  Watchdog wd(30, "sink drains");
  while (handled.load() < n) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

}  // namespace

TEST_CASE("mailbox depth and high-water mark are visible per actor and in mailboxes()", "[mailbox]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 4));
  constexpr int kItems = 1000;
  coact::SchedulerTuning t = tuning_for(workers);
  t.mailbox_stats = true;
  coact::test::run_checked(t, [&](Runtime& rt) {
    std::atomic<int> handled{0};
    std::atomic<bool> entered{false}, release{false};
    auto sink = rt.spawn<Sink>(&handled);
    CHECK(sink.mailbox().counted);
    CHECK(sink.mailbox().depth == 0u);
    CHECK(sink.mailbox().bound == 0u);
    sink.send(Hold{&entered, &release});
    wait_for(entered, "sink holds");
    for (int i = 0; i < kItems; ++i) REQUIRE(sink.send(Item{i}));  // unbounded: never refused
    const coact::MailboxStats held = sink.mailbox();
    INFO("workers=" << workers);
    CHECK(held.depth == uint64_t(kItems));
    CHECK(held.high_water >= uint64_t(kItems));
    CHECK(held.pushed == uint64_t(kItems) + 1);
    const auto listing = rt.mailboxes();
    REQUIRE_FALSE(listing.empty());
    CHECK(listing.front().pid == sink.pid());
    CHECK(listing.front().mailbox.depth == uint64_t(kItems));
    CHECK(listing.front().type.find("Sink") != std::string::npos);
    release.store(true);
    wait_handled(handled, kItems);
    const coact::MailboxStats drained = sink.mailbox();
    CHECK(drained.depth == 0u);
    CHECK(drained.high_water >= uint64_t(kItems));  // sampled at the first pop after the hold
    CHECK(drained.high_water <= uint64_t(kItems) + 1);
    CHECK(rt.stats().mailbox_rejected == 0u);
    sink.stop();
    rt.run();
  });
}

TEST_CASE("without COACT_MAILBOX_STATS or a bound, depth is not counted and says so", "[mailbox]") {
  coact::test::run_checked(2u, [&](Runtime& rt) {
    std::atomic<int> handled{0};
    std::atomic<bool> entered{false}, release{false};
    auto sink = rt.spawn<Sink>(&handled);
    sink.send(Hold{&entered, &release});
    wait_for(entered, "sink holds");
    for (int i = 0; i < 10; ++i) REQUIRE(sink.send(Item{i}));
    const coact::MailboxStats m = sink.mailbox();
    CHECK_FALSE(m.counted);
    CHECK(m.depth == 0u);
    CHECK(m.high_water == 0u);
    release.store(true);
    wait_handled(handled, 10);
    sink.stop();
    rt.run();
  });
}

TEST_CASE("COACT_MAILBOX_BOUND refuses outside senders at the bound and counts every refusal", "[mailbox]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 4));
  constexpr uint32_t kBound = 100;
  constexpr int kSent = 150;
  coact::SchedulerTuning t = tuning_for(workers);
  t.mailbox_bound = kBound;
  coact::test::run_checked(t, [&](Runtime& rt) {
    std::atomic<int> handled{0};
    std::atomic<bool> entered{false}, release{false};
    auto sink = rt.spawn<Sink>(&handled);
    CHECK(sink.mailbox().bound == kBound);
    CHECK(sink.mailbox().counted);  // a bound implies counting
    sink.send(Hold{&entered, &release});
    wait_for(entered, "sink holds");
    int accepted = 0;
    for (int i = 0; i < kSent; ++i) accepted += sink.send(Item{i}) ? 1 : 0;
    INFO("workers=" << workers);
    CHECK(accepted == int(kBound));
    CHECK(sink.mailbox().depth == kBound);
    CHECK(sink.mailbox().rejected == uint64_t(kSent) - kBound);
    CHECK(rt.stats().mailbox_rejected == uint64_t(kSent) - kBound);
    // By pid: the same policy, the same counters.
    CHECK_FALSE(rt.send<Sink>(sink.pid(), Item{-1}));
    CHECK(rt.stats().mailbox_rejected == uint64_t(kSent) - kBound + 1);
    release.store(true);
    wait_handled(handled, int(kBound));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(handled.load() == int(kBound));  // exactly the accepted mail, nothing more, nothing lost silently
    CHECK(sink.send(Item{0}));             // below the bound again: accepted
    wait_handled(handled, int(kBound) + 1);
    sink.stop();
    rt.run();
  });
}

TEST_CASE("COACT_MAILBOX_BOUND never refuses a sender inside the pool", "[mailbox]") {
  // Two workers at least: the sink holds one while the feeder runs on another.
  const uint32_t workers = GENERATE(coact::test::worker_counts(2, 4));
  constexpr uint32_t kBound = 10;
  constexpr int kSent = 200;
  coact::SchedulerTuning t = tuning_for(workers);
  t.mailbox_bound = kBound;
  coact::test::run_checked(t, [&](Runtime& rt) {
    std::atomic<int> handled{0};
    std::atomic<bool> entered{false}, release{false};
    std::atomic<int> accepted{-1};
    auto sink = rt.spawn<Sink>(&handled);
    sink.send(Hold{&entered, &release});
    wait_for(entered, "sink holds");
    auto feeder = rt.spawn<Feeder>(sink, &accepted);
    feeder.send(Flood{kSent});
    {
      Watchdog wd(30, "feeder sends");
      while (accepted.load() < 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    CHECK(accepted.load() == kSent);
    release.store(true);
    wait_handled(handled, kSent);
    INFO("workers=" << workers);
    CHECK(handled.load() == kSent);
    CHECK(sink.mailbox().rejected == 0u);
    // Delivered over the bound, and visible. Under burst dispatch the mail of
    // one Flood invocation is one burst group, which the held sink claims
    // from its producer rather than from its inbox, so the inbox's depth
    // may never see it: there the figure is reported, not asserted.
    if (!t.burst) {
      CHECK(sink.mailbox().high_water > kBound);
    } else if (sink.mailbox().high_water <= kBound) {
      WARN("burst dispatch: the held sink's inbox high-water is " << sink.mailbox().high_water
                                                                  << " (its mail waited in a burst group)");
    }
    CHECK(rt.stats().mailbox_rejected == 0u);
    sink.stop();
    feeder.stop();
    rt.run();
  });
}

namespace {
struct ForkNow {};
// Forks in its handler; the child tries run(), spawn() and a new Runtime and
// exits 3 iff each threw fork_error naming the rule, else 4 (5: no throw).
struct Forker : coact::Actor<Forker> {
  std::atomic<int>* child_status;
  explicit Forker(std::atomic<int>* s) : child_status(s) {}
  void on(ForkNow) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int ok = 0;
      try {
        runtime().run();
      } catch (const coact::fork_error& e) {
        ok += std::string(e.what()).find("fork then exec") != std::string::npos;
      } catch (...) {
        ::_exit(4);
      }
      try {
        runtime().spawn<Forker>(child_status);
      } catch (const coact::fork_error&) {
        ++ok;
      } catch (...) {
        ::_exit(4);
      }
      try {
        Runtime fresh(tuning_for(1));
      } catch (const coact::fork_error&) {
        ++ok;
      } catch (...) {
        ::_exit(4);
      }
      ::_exit(ok == 3 ? 3 : 5);
    }
    int status = 0;
    if (pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) {
      child_status->store(WEXITSTATUS(status));
    } else {
      child_status->store(-1);
    }
    stop();
  }
};
}  // namespace

// Regression: a handler that forked and called run() in the child hit the
// "run() called from a pool worker" invariant and aborted the child.
TEST_CASE("fork in a handler: run(), spawn() and Runtime() in the child throw fork_error", "[mailbox][fork]") {
  auto r = coact::test::run_in_child([] {
    std::atomic<int> status{0};
    {
      Runtime rt(tuning_for(2));
      rt.spawn<Forker>(&status).send(ForkNow{});
      rt.run();
    }
    ::_exit(status.load() == 3 ? 0 : 10 + status.load());
  });
  INFO(r.err);
  CHECK(WIFEXITED(r.status));
  CHECK(WEXITSTATUS(r.status) == 0);
}
