// Timers (timer_heap.hpp): sleep, send_after, cancel and wait timeouts, plus
// send_after(0), the cancel-versus-fire sweep, periodic cancellation, saturation and idle CPU.
// Timing bounds hold on a loaded 2-core machine: lateness is asserted as a
// distribution (median) or with generous maxima, never "exactly on time".
// Delta-sensitive tests serialize on the process-global ledger.
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "support/spin.hpp"
#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/hooks.hpp>
#include <coact/causal/testing.hpp>
#include <coact/runtime/runtime.hpp>

#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using coact::test::cpu_seconds;
namespace {

int64_t since_us(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
}

struct Mark {
  int tag;
};
struct Recorder : coact::Actor<Recorder> {
  std::vector<std::atomic<int64_t>>* at;  // arrival time per tag (µs since t0), -1 = not yet
  std::atomic<int>* count;
  Clock::time_point t0;
  Recorder(std::vector<std::atomic<int64_t>>* a, std::atomic<int>* c, Clock::time_point t)
      : at(a), count(c), t0(t) {}
  void on(const Mark& m) {
    (*at)[size_t(m.tag)].store(since_us(t0));
    count->fetch_add(1);
  }
};

void wait_for(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  auto end = Clock::now() + limit;
  while (!pred() && Clock::now() < end) std::this_thread::sleep_for(200us);
}

}  // namespace

TEST_CASE("wall_timer_ignores_injected_delay: a wall timer fires at its raw deadline while a virtual sibling shifts",
          "[timer][ledger]") {
  std::lock_guard lk(coact::causal::test_ledger_mutex());
  coact::test::Watchdog wd(30, "wall vs virtual");
  std::vector<std::atomic<int64_t>> at(2);
  for (auto& a : at) a = -1;
  std::atomic<int> count{0};
  coact::test::run_checked(2, [&](coact::Runtime& rt) {
    auto t0 = Clock::now();
    auto r = rt.spawn<Recorder>(&at, &count, t0);
    rt.send_after_wall(r, 50ms, Mark{0});
    rt.send_after(r, 50ms, Mark{1});
    coact::causal::inject_delay_cycles_for_test(coact::calibrate::duration_to_cycles(100ms));
    wait_for([&] { return count.load() == 2; }, 5000ms);
    REQUIRE(count.load() == 2);
    INFO("wall at " << at[0].load() << " us, virtual at " << at[1].load() << " us");
    CHECK(at[0].load() >= 50000);
    CHECK(at[0].load() < 140000);   // raw deadline (+ slack for a loaded box), not shifted by 100 ms
    CHECK(at[1].load() >= 150000);  // shifted by the injected 100 ms
    r.stop();
    rt.run();
  });
}

namespace {
struct Sleeper : coact::Actor<Sleeper> {
  std::atomic<int64_t>* woke;
  Clock::time_point t0;
  bool wall;
  Sleeper(std::atomic<int64_t>* w, Clock::time_point t, bool wl) : woke(w), t0(t), wall(wl) {}
  struct Go {
    std::chrono::microseconds d;
  };
  coact::Task on(Go g) {
    if (wall) {
      co_await coact::sleep_wall(g.d);
    } else {
      co_await coact::sleep(g.d);
    }
    woke->store(since_us(t0));
    stop();
  }
};
}  // namespace

TEST_CASE("sleeping_actor_pays_injected_delay", "[timer][ledger]") {
  std::lock_guard lk(coact::causal::test_ledger_mutex());
  coact::test::Watchdog wd(30, "sleeper pays");
  std::atomic<int64_t> woke_virtual{-1}, woke_wall{-1};
  coact::test::run_checked(2, [&](coact::Runtime& rt) {
    auto t0 = Clock::now();
    rt.spawn<Sleeper>(&woke_virtual, t0, false).send(Sleeper::Go{50ms});
    rt.spawn<Sleeper>(&woke_wall, t0, true).send(Sleeper::Go{50ms});
    std::this_thread::sleep_for(10ms);
    coact::causal::inject_delay_cycles_for_test(coact::calibrate::duration_to_cycles(100ms));
    rt.run();
    INFO("virtual sleeper woke at " << woke_virtual.load() << " us, wall sleeper at " << woke_wall.load());
    CHECK(woke_virtual.load() >= 150000);
    CHECK(woke_wall.load() >= 50000);
    CHECK(woke_wall.load() < 140000);
  });
}

namespace {
struct Busy : coact::Actor<Busy> {
  std::atomic<bool>* quit;
  coact::ActorRef<Busy> peer;  // null: self-resend
  explicit Busy(std::atomic<bool>* q) : quit(q) {}
  struct Spin {};
  void on(coact::ActorRef<Busy>& p) { peer = p; }
  void on(Spin) {
    auto end = Clock::now() + 100us;  // a 100 µs handler
    while (Clock::now() < end) {
    }
    if (quit->load()) {
      if (peer) peer.send(Spin{});  // so the peer sees quit too
      stop();
      return;
    }
    (peer ? peer : self()).send(Spin{});
  }
};
}  // namespace

TEST_CASE("timers_fire_under_full_scheduler_saturation", "[timer]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 2));
  coact::test::Watchdog wd(60, "saturation");
  std::atomic<bool> quit{false};
  const auto body = [&](coact::Runtime& rt) {
    std::vector<coact::ActorRef<Busy>> busy;
    for (int i = 0; i < 4; ++i) busy.push_back(rt.spawn<Busy>(&quit));
    busy[2].send(coact::ActorRef<Busy>(busy[3]));  // a pair waking each other
    busy[3].send(coact::ActorRef<Busy>(busy[2]));
    for (auto& b : busy) b.send(Busy::Spin{});
    std::this_thread::sleep_for(20ms);
    const int n = 50;
    std::vector<std::atomic<int64_t>> at(n);
    for (auto& a : at) a = -1;
    std::atomic<int> count{0};
    auto t0 = Clock::now();
    auto rec = rt.spawn<Recorder>(&at, &count, t0);
    for (int i = 0; i < n; ++i) rt.send_after(rec, std::chrono::milliseconds(1 + i), Mark{i});
    wait_for([&] { return count.load() == n; }, 10000ms);
    quit = true;
    rec.stop();
    rt.run();
    REQUIRE(count.load() == n);
    std::vector<int64_t> late;
    for (int i = 0; i < n; ++i) late.push_back(at[size_t(i)].load() - (1 + i) * 1000);
    std::sort(late.begin(), late.end());
    INFO("workers=" << workers << " lateness p50 " << late[n / 2] << " us, max " << late.back() << " us");
    CHECK(late.front() >= 0);
    CHECK(late[n / 2] < 5000);  // the busy-path due check: about one 100 µs handler, not a starvation
  };
  // Dropped dead: each of the pair's two Spins ends at the peer that stopped first.
  coact::test::run_checked(workers, body, {.dead = 2});
}

TEST_CASE("sub-millisecond sleeps are prompt (no millisecond rounding)", "[timer]") {
  coact::test::Watchdog wd(30, "sub-ms");
  coact::test::run_checked(2, [&](coact::Runtime& rt) {
    std::vector<int64_t> late;
    for (int i = 0; i < 40; ++i) {
      std::atomic<int64_t> woke{-1};
      auto t0 = Clock::now();
      rt.spawn<Sleeper>(&woke, t0, false).send(Sleeper::Go{100us});
      wait_for([&] { return woke.load() >= 0; }, 2000ms);
      REQUIRE(woke.load() >= 100);
      late.push_back(woke.load() - 100);
    }
    std::sort(late.begin(), late.end());
    INFO("lateness of 100 us sleeps: p50 " << late[late.size() / 2] << " us");
#if defined(__SANITIZE_THREAD__)
    // ThreadSanitizer's overhead alone put the median at 689 µs in a CI
    // rehearsal: the rounding is checked by the plain build; here a wake is
    // only required to come (a lost or starved one is seconds late).
    if (late[late.size() / 2] >= 600) WARN("ThreadSanitizer build: p50 lateness " << late[late.size() / 2] << " us");
    CHECK(late[late.size() / 2] < 5000);
#else
    CHECK(late[late.size() / 2] < 600);  // rounding to whole ms would make it >= 900 µs
#endif
    rt.run();
  });
}

TEST_CASE("cancel on a wall send with debt outstanding", "[timer][ledger]") {
  std::lock_guard lk(coact::causal::test_ledger_mutex());
  std::vector<std::atomic<int64_t>> at(1);
  at[0] = -1;
  std::atomic<int> count{0};
  coact::test::run_checked(2, [&](coact::Runtime& rt) {
    auto r = rt.spawn<Recorder>(&at, &count, Clock::now());
    coact::causal::inject_delay_cycles_for_test(coact::calibrate::duration_to_cycles(50ms));
    auto id = rt.send_after_wall(r, 20ms, Mark{0});
    CHECK(rt.cancel(id));
    CHECK_FALSE(rt.cancel(id));  // second cancel: nothing armed
    std::this_thread::sleep_for(60ms);
    CHECK(count.load() == 0);
    r.stop();
    rt.run();
  });
}

namespace {
struct Job {
  int v;
};
struct Sink : coact::Actor<Sink> {
  std::atomic<int>* sum;
  explicit Sink(std::atomic<int>* s) : sum(s) {}
  void on(const Job& j) { sum->fetch_add(j.v); }
};
}  // namespace

TEST_CASE("send_after delivery and cancel for Name<M> and Pid targets; silent drop when unresolved", "[timer]") {
  coact::test::Watchdog wd(30, "named/pid timers");
  std::atomic<int> sum{0};
  const auto body = [&](coact::Runtime& rt) {
    auto s = rt.spawn<Sink>(&sum);
    coact::Name<Job> jobs("jobs");
    REQUIRE(rt.register_name(jobs, s));
    rt.send_after_named(jobs, 5ms, Job{1});
    rt.send_after<Sink>(s.pid(), 5ms, Job{10});
    auto c1 = rt.send_after_named(jobs, 30ms, Job{100});
    auto c2 = rt.send_after<Sink>(s.pid(), 30ms, Job{1000});
    CHECK(rt.cancel(c1));
    CHECK(rt.cancel(c2));
    wait_for([&] { return sum.load() == 11; }, 2000ms);
    std::this_thread::sleep_for(50ms);
    CHECK(sum.load() == 11);
    // Unresolved at fire time: an unbound name and a dead pid.
    coact::Name<Job> nobody("nobody");
    const auto before = rt.stats().dropped_unresolved;
    rt.send_after_named(nobody, 1ms, Job{5});
    const coact::Pid dead = s.pid();
    s.stop();
    wait_for([&] { return rt.stats().live == 0; }, 2000ms);
    rt.send_after<Sink>(dead, 1ms, Job{7});
    wait_for([&] { return rt.stats().dropped_unresolved >= before + 2; }, 2000ms);
    CHECK(rt.stats().dropped_unresolved == before + 2);
    CHECK(sum.load() == 11);
    rt.run();
  };
  coact::test::run_checked(2, body, {.unresolved = 2});  // the unbound name's and the dead pid's timer mail
}

TEST_CASE("cancelling an actor mid sleep(30s) does not keep run() alive", "[timer]") {
  coact::test::Watchdog wd(20, "stop sleeper");
  std::atomic<int64_t> woke{-1};
  // Not on run_checked: a sleep always runs to its deadline (timer_heap.hpp,
  // cancellable()), so the stopped sleeper's entry is still pending after
  // run() (pending_timers() is 1), unlike an ask's timeout, which is cancelled.
  coact::Runtime rt(coact::test::tuning_for(2));
  auto t0 = Clock::now();
  auto s = rt.spawn<Sleeper>(&woke, t0, false);
  s.send(Sleeper::Go{30s});
  std::this_thread::sleep_for(30ms);
  s.stop();
  rt.run();
  CHECK(since_us(t0) < 5'000'000);
  CHECK(woke.load() == -1);
}

TEST_CASE("send_after(0) delivers without waiting", "[timer]") {
  std::vector<std::atomic<int64_t>> at(1);
  at[0] = -1;
  std::atomic<int> count{0};
  coact::test::run_checked(2, [&](coact::Runtime& rt) {
    auto t0 = Clock::now();
    auto r = rt.spawn<Recorder>(&at, &count, t0);
    rt.send_after(r, 0ms, Mark{0});
    wait_for([&] { return count.load() == 1; }, 2000ms);
    CHECK(count.load() == 1);
    CHECK(at[0].load() < 100000);
    r.stop();
    rt.run();
  });
}

namespace {
struct Tally : coact::Actor<Tally> {
  std::vector<std::atomic<int>>* got;
  explicit Tally(std::vector<std::atomic<int>>* g) : got(g) {}
  void on(const Mark& m) { (*got)[size_t(m.tag)].fetch_add(1); }
};
}  // namespace

TEST_CASE("cancel versus fire swept around the deadline balances exactly", "[timer][stress]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(1, 4));
  coact::test::Watchdog wd(120, "cancel sweep");
  const int n = 2000;
  std::vector<std::atomic<int>> got(n);
  for (auto& g : got) g = 0;
  coact::test::run_checked(workers, [&](coact::Runtime& rt) {
    auto t = rt.spawn<Tally>(&got);
    std::minstd_rand rng(workers);
    std::vector<bool> cancelled(n);
    for (int i = 0; i < n; ++i) {
      const auto d = std::chrono::microseconds(rng() % 200);
      auto id = rt.send_after(t, d, Mark{i});
      const auto wait = std::chrono::microseconds(rng() % 250);  // before, at or after the deadline
      auto end = Clock::now() + wait;
      while (Clock::now() < end) {
      }
      cancelled[size_t(i)] = rt.cancel(id);
    }
    std::this_thread::sleep_for(100ms);
    t.stop();
    rt.run();
    int true_count = 0, bad = 0;
    for (int i = 0; i < n; ++i) {
      const int g = got[size_t(i)].load();
      if (cancelled[size_t(i)]) {
        ++true_count;
        if (g != 0) ++bad;  // cancel returned true: must never be delivered
      } else if (g != 1) {
        ++bad;  // cancel returned false: delivered exactly once
      }
    }
    INFO("workers=" << workers << " cancels that won: " << true_count << " of " << n);
    CHECK(bad == 0);
    CHECK(true_count > 0);
    CHECK(true_count < n);
  });
}

namespace {
struct Ticker : coact::Actor<Ticker> {
  std::atomic<int>* ticks;
  std::atomic<uint64_t>* current;  // the armed TimerId's seq
  explicit Ticker(std::atomic<int>* t, std::atomic<uint64_t>* c) : ticks(t), current(c) {}
  struct Tick {};
  struct Start {};
  void arm() { current->store(runtime().send_after(self(), 2ms, Tick{}).seq); }
  void on(Start) { arm(); }
  void on(Tick) {
    ticks->fetch_add(1);
    arm();
  }
};
}  // namespace

TEST_CASE("a periodic timer cancelled after 0, 1 and 5 ticks delivers nothing afterwards beyond one in flight",
          "[timer]") {
  const int after = GENERATE(0, 1, 5);
  coact::test::Watchdog wd(30, "periodic cancel");
  std::atomic<int> ticks{0};
  std::atomic<uint64_t> current{0};
  coact::test::run_checked(2, [&](coact::Runtime& rt) {
    auto tk = rt.spawn<Ticker>(&ticks, &current);
    tk.send(Ticker::Start{});
    wait_for([&] { return ticks.load() >= after && current.load() != 0; }, 5000ms);
    // Cancel whatever is armed now; if it already fired, the tick in flight
    // re-arms once more, so cancel that one too.
    int in_flight = 0;
    for (int tries = 0; tries < 100; ++tries) {
      const uint64_t seq = current.load();
      if (rt.cancel(coact::TimerId{seq})) break;
      ++in_flight;
      wait_for([&] { return current.load() != seq; }, 1000ms);
    }
    const int at_cancel = ticks.load();
    std::this_thread::sleep_for(30ms);  // 15 periods
    INFO("after=" << after << " ticks at cancel " << at_cancel << ", later " << ticks.load());
    CHECK(ticks.load() - at_cancel <= 1);
    tk.stop();
    rt.run();
  });
}

namespace {
struct SelfSpinner : coact::Actor<SelfSpinner> {
  std::atomic<bool>* quit;
  explicit SelfSpinner(std::atomic<bool>* q) : quit(q) {}
  struct Go {};
  void on(Go) {
    if (quit->load()) {
      stop();
      return;
    }
    self().send(Go{});
  }
};
}  // namespace

TEST_CASE("one worker spinning on self-sends still sees a 200 ms send_after on time", "[timer]") {
  coact::test::Watchdog wd(30, "self-send spinner");
  std::atomic<bool> quit{false};
  std::vector<std::atomic<int64_t>> at(1);
  at[0] = -1;
  std::atomic<int> count{0};
  coact::test::run_checked(1, [&](coact::Runtime& rt) {
    rt.spawn<SelfSpinner>(&quit).send(SelfSpinner::Go{});
    auto t0 = Clock::now();
    auto r = rt.spawn<Recorder>(&at, &count, t0);
    rt.send_after(r, 200ms, Mark{0});
    wait_for([&] { return count.load() == 1; }, 5000ms);
    quit = true;
    r.stop();
    rt.run();
    REQUIRE(count.load() == 1);
    INFO("delivered at " << at[0].load() << " us");
    CHECK(at[0].load() >= 200000);
    CHECK(at[0].load() < 200000 + 50000);  // 200 ms plus one (tiny) handler, with slack for a loaded box
  });
}

// Hidden from the unit run ([.]): ctest's idle-timer-cpu runs it in a process
// of its own. The hand-off cost is probed once per process, at the first
// Runtime's boot (lifecycle.cpp), and seeds every later runtime's timekeeper
// wake margin; probed while other test cases loaded the machine, it makes
// this runtime spin longer margins than its own boot would.
TEST_CASE("an idle runtime with one 2 s periodic timer stays under 1% of a core", "[timer][idle][.][idle_cpu]") {
  coact::test::Watchdog wd(30, "idle periodic");
  std::atomic<int> ticks{0};
  std::atomic<uint64_t> current{0};
  // The runtime's own threads are measured: threads other test cases of
  // this process left behind (or the test harness's) are not its CPU.
  const std::vector<pid_t> before = coact::test::thread_ids();
  coact::Runtime rt(coact::test::tuning_for(2));
  struct Slow : coact::Actor<Slow> {
    std::atomic<int>* ticks;
    explicit Slow(std::atomic<int>* t) : ticks(t) {}
    struct Tick {};
    void on(Tick) {
      ticks->fetch_add(1);
      runtime().send_after(self(), 2s, Tick{});
    }
  };
  auto s = rt.spawn<Slow>(&ticks);
  s.send(Slow::Tick{});
  std::this_thread::sleep_for(100ms);
  const std::vector<pid_t> mine = coact::test::new_threads(before, coact::test::thread_ids());
  REQUIRE(!mine.empty());
  const double c0 = coact::test::threads_cpu_seconds(mine), p0 = cpu_seconds();
  auto w0 = Clock::now();
  std::this_thread::sleep_for(5s);
  const double cpu = coact::test::threads_cpu_seconds(mine) - c0, process = cpu_seconds() - p0;
  const double wall = std::chrono::duration<double>(Clock::now() - w0).count();
  INFO("cpu " << cpu << " s (the runtime's " << mine.size() << " threads; the whole process " << process << " s) over "
              << wall << " s, ticks " << ticks.load());
  CHECK(cpu / wall < 0.01);
  CHECK(ticks.load() >= 3);
  s.stop();
  rt.run();
  (void)current;
}

namespace {
struct Injector : coact::Actor<Injector> {
  std::chrono::milliseconds delay;
  explicit Injector(std::chrono::milliseconds d) : delay(d) {}
  struct Go {};
  void on(Go) {
    // Delay injected while the caller of run() is blocked in it: give it time
    // to get there (a caller that is still running when the delay appears
    // owes it, and run() then credits nothing if nothing is left to wait for).
    std::this_thread::sleep_for(50ms);
    coact::causal::inject_delay_cycles_for_test(coact::calibrate::duration_to_cycles(delay));
    stop();
  }
};
}  // namespace

TEST_CASE("run() credits its caller: a driver looping over runs does not pay the delay injected while it waited",
          "[timer][ledger]") {
  // Regression: coact-dedup's driver calls run() once per pass. Its thread
  // was never credited, so each pass's first send paid all the delay of the
  // previous pass (~100 ms stalls under a sweep that were not injected
  // delay; the archiver's profile predicted -17 % where +15 % was measured).
  std::lock_guard lk(coact::causal::test_ledger_mutex());
  coact::test::Watchdog wd(30, "run credits caller");
  coact::causal::g_sweep_active.store(true);  // the hooks act, as under a sweep
  coact::causal::register_thread();          // this thread's L = G now
  coact::test::run_checked(2, [&](coact::Runtime& rt) {
    for (int pass = 0; pass < 3; ++pass) {
      rt.spawn<Injector>(300ms).send(Injector::Go{});
      rt.run();
      INFO("pass " << pass << ": debt after run() " << coact::causal::debt_cycles() << " cycles");
      CHECK(coact::causal::debt_cycles() == 0);
    }
    // The next send must not stall: it owes nothing (300 ms if it did).
    const auto t0 = Clock::now();
    rt.spawn<Injector>(0ms).send(Injector::Go{});
    CHECK(since_us(t0) < 150000);
    rt.run();
    // A run() that does not block (nothing live) credits nothing: its caller
    // was running, not waiting, and still owes what it owed.
    coact::causal::inject_delay_cycles_for_test(coact::calibrate::duration_to_cycles(50ms));
    const uint64_t owed = coact::causal::debt_cycles();
    CHECK(owed > 0u);
    rt.run();
    CHECK(coact::causal::debt_cycles() == owed);
    coact::causal::credit_resume();
    coact::causal::g_sweep_active.store(false);
  });
}

namespace {
// Owes D, then arms a timer of T: the thread's debt at arming is part of the
// timer's virtual wait (hooks.hpp timer_stamp_cycles). The handler injects D
// itself, so its worker owes D (its L is untouched) when it arms.
struct OwingArmer : coact::Actor<OwingArmer> {
  enum class How { sleep, send_after, send_after_wall };
  struct Go {
    How how;
  };
  std::chrono::milliseconds d, t;
  coact::ActorRef<Recorder> rec;
  std::atomic<int64_t>* woke;   // sleep: wake time (µs since t0)
  std::atomic<uint64_t>* debt;  // debt right after arming (cycles)
  Clock::time_point t0;
  OwingArmer(std::chrono::milliseconds dd, std::chrono::milliseconds tt, coact::ActorRef<Recorder> r,
             std::atomic<int64_t>* w, std::atomic<uint64_t>* db, Clock::time_point t00)
      : d(dd), t(tt), rec(std::move(r)), woke(w), debt(db), t0(t00) {}
  coact::Task on(Go g) {
    coact::causal::inject_delay_cycles_for_test(coact::calibrate::duration_to_cycles(d));
    if (g.how == How::sleep) {
      co_await coact::sleep(t);
      woke->store(since_us(t0));
      co_return;
    }
    if (g.how == How::send_after) {
      runtime().send_after(rec, t, Mark{0});
    } else {
      runtime().send_after_wall(rec, t, Mark{0});
    }
    debt->store(coact::causal::debt_cycles());
    rec.send(Mark{1});  // the flush is this thread's next pay point: it pays D first
  }
};
}  // namespace

TEST_CASE("a virtual timer armed while its thread owes D fires at T + D (+ delay injected meanwhile), never at T; "
          "a wall one fires at T and its thread still pays D",
          "[timer][ledger]") {
  // The sleepers known-answer workload's bug at ledger level: a timer was
  // stamped with G, which already held the delay its arming thread still
  // owed, so that debt never shifted it (an off-path region's speedup looked
  // like a program speedup of s·2/14).
  using How = OwingArmer::How;
  std::lock_guard lk(coact::causal::test_ledger_mutex());
  coact::test::Watchdog wd(60, "owing armer");
  coact::causal::g_sweep_active.store(true);  // stamps use the arming thread's ledger position only in a sweep
  coact::causal::register_thread();
  constexpr auto D = 60ms, T = 30ms, kInjected = 40ms;
  const int64_t d_us = 60000, t_us = 30000, inj_us = 40000;
  for (How how : {How::sleep, How::send_after, How::send_after_wall}) {
    std::vector<std::atomic<int64_t>> at(2);
    for (auto& a : at) a = -1;
    std::atomic<int> count{0};
    std::atomic<int64_t> woke{-1};
    std::atomic<uint64_t> debt{0};
    coact::test::run_checked(2, [&](coact::Runtime& rt) {
      const auto t0 = Clock::now();
      auto rec = rt.spawn<Recorder>(&at, &count, t0);
      auto armer = rt.spawn<OwingArmer>(D, T, rec, &woke, &debt, t0);
      armer.send(OwingArmer::Go{how});
      const bool inject = how != How::send_after_wall;
      if (inject) {  // delay injected during the wait shifts a virtual timer too
        std::this_thread::sleep_for(10ms);
        coact::causal::inject_delay_cycles_for_test(coact::calibrate::duration_to_cycles(kInjected));
      }
      if (how == How::sleep) {
        wait_for([&] { return woke.load() >= 0; }, 5000ms);
        INFO("co_await sleep(T) with D owed woke at " << woke.load() << " us");
        CHECK(woke.load() >= t_us + d_us + inj_us);          // T + D + injected, not T + injected (70 ms)
        CHECK(woke.load() < t_us + d_us + inj_us + 200000);  // generous: a loaded box
      } else {
        wait_for([&] { return count.load() == 2; }, 5000ms);
        REQUIRE(count.load() == 2);
        INFO((how == How::send_after ? "send_after" : "send_after_wall")
             << ": timer mail at " << at[0].load() << " us, next send at " << at[1].load() << " us, debt after arming "
             << debt.load());
        CHECK(debt.load() >= coact::calibrate::duration_to_cycles(D));  // arming pays nothing and forgives nothing
        CHECK(at[1].load() >= d_us);                                    // the thread paid D at its next pay point
        if (how == How::send_after) {
          CHECK(at[0].load() >= t_us + d_us + inj_us);
          CHECK(at[0].load() < t_us + d_us + inj_us + 200000);
        } else {
          CHECK(at[0].load() >= t_us);
          CHECK(at[0].load() < t_us + d_us);  // at T: the wall timer does not carry the debt
        }
      }
      rec.stop();
      armer.stop();
      rt.run();
    });
  }
  coact::causal::credit_resume();
  coact::causal::g_sweep_active.store(false);
}

TEST_CASE("cancelled timers do not keep memory: 10^6 one-hour send_after + cancel; drops at shutdown are counted",
          "[timer]") {
  // Regression: cancelled entries stayed in the heap until their deadline
  // (+86 MB and pending_timers() == 10^6 after 10^6 arm + cancel).
  coact::test::Watchdog wd(120, "cancel memory");
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__) || defined(COACT_TSAN)
  constexpr int kTimers = 100'000;  // the instrumented build is ~10x slower; the bound scales
#else
  constexpr int kTimers = 1'000'000;
#endif
  std::vector<std::atomic<int64_t>> at(1);
  at[0] = -1;
  std::atomic<int> count{0};
  auto rt = std::make_unique<coact::Runtime>(coact::test::tuning_for(2));
  auto r = rt->spawn<Recorder>(&at, &count, Clock::now());
  for (int i = 0; i < 10; ++i) rt->send_after(r, 1h, Mark{0});  // live ones stay
  const size_t heap_before = mallinfo2().uordblks;
  int won = 0;
  for (int i = 0; i < kTimers; ++i) won += rt->cancel(rt->send_after(r, 1h, Mark{0})) ? 1 : 0;
  CHECK(won == kTimers);
  const size_t heap_after = mallinfo2().uordblks;
  const double grew_mb = (double(heap_after) - double(heap_before)) / 1e6;
  INFO("malloc'd bytes grew by " << grew_mb << " MB over " << kTimers << " arm + cancel");
  CHECK(rt->pending_timers() == 10u);
  // 86 MB before: one 64-byte entry + action + set node per cancelled timer.
  // The bound leaves room for what the allocator's caches hold at that
  // moment, which depends on the other threads' timing (a loaded CI run
  // went past a 2 MB bound once).
  constexpr double kSlackMb = 4.0;
  CHECK(grew_mb < kSlackMb);
  // Arm them all first, then cancel them all: memory returns once they are gone.
  std::vector<coact::TimerId> ids;
  ids.reserve(kTimers / 10);
  for (int i = 0; i < kTimers / 10; ++i) ids.push_back(rt->send_after(r, 1h, Mark{0}));
  CHECK(rt->pending_timers() == 10u + kTimers / 10);
  won = 0;
  for (auto id : ids) won += rt->cancel(id) ? 1 : 0;
  CHECK(won == kTimers / 10);
  CHECK(rt->pending_timers() == 10u);
  const double grew_all_mb = (double(mallinfo2().uordblks) - double(heap_before)) / 1e6;
  INFO("after arming " << kTimers / 10 << " then cancelling them all: grew " << grew_all_mb << " MB");
  CHECK(grew_all_mb < kSlackMb + double(ids.capacity() * sizeof(coact::TimerId)) / 1e6);
  CHECK(rt->stats().timers_cancelled == uint64_t(kTimers + kTimers / 10));
  // A sleeper (one live sleep) and the 10 live sends are dropped at shutdown, and counted.
  std::atomic<int64_t> woke{-1};
  rt->spawn<Sleeper>(&woke, Clock::now(), false).send(Sleeper::Go{std::chrono::microseconds(3'600'000'000LL)});
  wait_for([&] { return rt->pending_timers() == 11u; }, 5000ms);
  CHECK(rt->pending_timers() == 11u);
  rt->shutdown();
  CHECK(rt->stats().timers_dropped == 11u);
  CHECK(count.load() == 0);
  CHECK(woke.load() == -1);
  rt.reset();  // the destructor after shutdown(): nothing left to do
}

namespace {
// Issue: `co_await sleep(d)` for d = 100–300 µs on an idle pool arrived ~300 µs
// late in 6–13% of samples while `send_after(d)` did not. Measured apart, the
// difference was where the timer is armed, not sleep vs send_after: a timer
// armed inside a handler wakes nobody, and the arming worker, once idle, took
// the deadline into its own timed futex park, which woke late; one armed from
// outside the pool wakes a worker that spins through a short deadline. The
// timekeeper now parks until the deadline minus its measured wake latency and
// spins the rest (idle.cpp, keep_time). This test alternates the three
// ways of arming sample by sample, so machine load hits them alike, and
// asserts the in-handler ways are no worse in the tail than the outside one.
int64_t now_abs_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}
struct LateProbe : coact::Actor<LateProbe> {
  struct Sleep {
    std::chrono::microseconds d;
  };
  struct Arm {
    std::chrono::microseconds d;
  };
  struct Fired {};
  std::atomic<int64_t>* armed_ns;  // written by the arming handler (ways 0, 1)
  std::atomic<int64_t>* woke_ns;
  LateProbe(std::atomic<int64_t>* a, std::atomic<int64_t>* w) : armed_ns(a), woke_ns(w) {}
  coact::Task on(Sleep m) {
    armed_ns->store(now_abs_ns());
    co_await coact::sleep(m.d);
    woke_ns->store(now_abs_ns());
  }
  void on(const Arm& m) {
    armed_ns->store(now_abs_ns());
    runtime().send_after(self(), m.d, Fired{});
  }
  void on(const Fired&) { woke_ns->store(now_abs_ns()); }
  struct Stop {};
  void on(const Stop&) { stop(); }
};

// Samples more than 250 µs late, of sorted `v`.
size_t over_250us(const std::vector<int64_t>& v) {
  return size_t(std::count_if(v.begin(), v.end(), [](int64_t x) { return x > 250; }));
}
}  // namespace

TEST_CASE("sleep(d) and send_after(d) armed in a handler are as prompt as send_after from outside the pool",
          "[timer]") {
  coact::test::Watchdog wd(120, "sleep-vs-send_after lateness");
  coact::test::run_checked(2, [&](coact::Runtime& rt) {
    std::atomic<int64_t> armed{0}, woke{-1};
    auto probe = rt.spawn<LateProbe>(&armed, &woke);
    constexpr int kPerWay = 100;  // samples per way and delay
    const char* names[3] = {"co_await sleep in a handler", "send_after in a handler", "send_after from outside"};
    std::vector<int64_t> late_us[3];  // µs past the deadline
    for (auto d : {100us, 200us, 300us}) {
      for (int i = 0; i < kPerWay; ++i) {
        for (int way = 0; way < 3; ++way) {
          std::this_thread::sleep_for(1ms);  // the pool goes idle before each sample
          woke.store(-1);
          if (way == 0) probe.send(LateProbe::Sleep{d});
          if (way == 1) probe.send(LateProbe::Arm{d});
          if (way == 2) {
            armed.store(now_abs_ns());
            rt.send_after(probe, d, LateProbe::Fired{});
          }
          wait_for([&] { return woke.load() >= 0; }, 2000ms);
          REQUIRE(woke.load() >= 0);
          late_us[way].push_back((woke.load() - armed.load()) / 1000 - d.count());
        }
      }
    }
    for (auto& v : late_us) std::sort(v.begin(), v.end());
    const size_t n = late_us[0].size();
    for (int way = 0; way < 3; ++way) {
      const auto& v = late_us[way];
      UNSCOPED_INFO(names[way] << ": p50 " << v[n / 2] << " us, p90 " << v[n * 9 / 10] << " us, p99 " << v[n * 99 / 100]
                               << " us, " << over_250us(v) << "/" << n << " over 250 us late");
    }
    // Promptness is a property of the plain build: under a sanitizer the
    // handler-side arming runs instrumented code the outside arming does not,
    // and a 300-sample tail comparison moves by a sample or two run to run
    // (there it is reported, not asserted). Never early holds everywhere.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__) || defined(COACT_TSAN)
    constexpr bool kPromptnessAsserted = false;
#else
    constexpr bool kPromptnessAsserted = true;
#endif
    for (int way = 0; way < 2; ++way) {
      CHECK(late_us[way].front() >= 0);  // never early
      // The tail: no more 250-µs-late samples than outside arming plus 3% of the
      // samples (the issue: 6–13% vs ~0%), and the median within 100 µs of it.
      const bool tail_ok = over_250us(late_us[way]) <= over_250us(late_us[2]) + n * 3 / 100;
      const bool median_ok = late_us[way][n / 2] <= late_us[2][n / 2] + 100;
      if (kPromptnessAsserted) {
        CHECK(tail_ok);
        CHECK(median_ok);
      } else if (!tail_ok || !median_ok) {
        WARN("sanitizer build: " << names[way] << " less prompt than outside arming (not asserted here)");
      }
    }
    probe.send(LateProbe::Stop{});
    rt.run();
  });
}

namespace {
// Arms three timers to three recorders (out of deadline order), then keeps
// the only worker busy past all three deadlines, so one due check fires them
// together.
struct OrderLog {
  std::mutex mu;
  std::vector<int> ran;  // recorder tags in the order their handlers ran
};
struct OrderRecorder : coact::Actor<OrderRecorder> {
  OrderLog* log;
  int tag;
  OrderRecorder(OrderLog* l, int t) : log(l), tag(t) {}
  void on(const Mark&) {
    std::lock_guard lk(log->mu);
    log->ran.push_back(tag);
  }
};
struct Armer : coact::Actor<Armer> {
  std::vector<coact::ActorRef<OrderRecorder>> to;  // to[i] gets a timer of (i + 1) ms
  explicit Armer(std::vector<coact::ActorRef<OrderRecorder>> t) : to(std::move(t)) {}
  void on(const Mark&) {
    // Deadlines 1 ms apart: far more than an arm costs, even under TSan
    // (which made 100 µs steps arm out of order).
    for (int i : {2, 0, 1}) runtime().send_after(to[size_t(i)], std::chrono::milliseconds(i + 1), Mark{i});
    coact::test::spin_for(10ms);  // all three are due when this handler returns
  }
};
}  // namespace

TEST_CASE("timers fired together run their handlers in deadline order", "[timer]") {
  coact::test::Watchdog wd(30, "fired-together order");
  // The reorder (timers.cpp, run_fired_in_deadline_order) is skipped when
  // the keep-local valve spilled part of the fired set to the injector; the
  // valve is off here, so every round tests the reorder alone.
  const int rounds = 5;
  int in_order = 0;
  for (int round = 0; round < rounds; ++round) {
    OrderLog log;
    coact::SchedulerTuning tuning = coact::test::tuning_for(1);
    tuning.local_time_budget_us = 0;  // valve off
    coact::test::run_checked(tuning, [&](coact::Runtime& rt) {
      std::vector<coact::ActorRef<OrderRecorder>> rec;
      for (int i = 0; i < 3; ++i) rec.push_back(rt.spawn<OrderRecorder>(&log, i));
      auto armer = rt.spawn<Armer>(rec);
      armer.send(Mark{-1});
      REQUIRE(coact::test::wait_until(
          [&] {
            std::lock_guard lk(log.mu);
            return log.ran.size() == 3;
          },
          5000ms));
      // The own deque is LIFO: before, the latest deadline ran first (2, 1, 0).
      {
        std::lock_guard lk(log.mu);
        if (log.ran == std::vector<int>{0, 1, 2}) ++in_order;
        UNSCOPED_INFO("round " << round << ": ran " << log.ran[0] << ", " << log.ran[1] << ", " << log.ran[2]);
      }
      for (auto& r : rec) r.stop();
      armer.stop();
      rt.run();
    });
  }
  CHECK(in_order == rounds);
}
