// Tests for coact/causal/delay_ledger.hpp. The ledger is process-global, so
// every test that looks at G or a debt holds test_ledger_mutex().
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/testing.hpp>

namespace cal = coact::calibrate;
namespace ca = coact::causal;
using namespace std::chrono_literals;

namespace {
// Start a test with this thread registered and owing nothing.
void settle() {
  ca::register_thread();
  ca::credit_resume();
  REQUIRE(ca::debt_cycles() == 0u);
}
}  // namespace

TEST_CASE("add_delay on thread A makes thread B owe exactly that", "[ledger]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  settle();  // this thread is B
  const uint64_t g0 = ca::global_delay_cycles();
  constexpr uint64_t kDelay = 123'457;
  uint64_t a_debt_after = ~uint64_t{0};
  uint64_t a_local_gain = 0;
  std::thread a([&] {
    ca::register_thread();
    ca::credit_resume();
    const uint64_t l0 = ca::local_delay_cycles();
    ca::add_delay(kDelay);
    a_local_gain = ca::local_delay_cycles() - l0;
    a_debt_after = ca::debt_cycles();
  });
  a.join();
  CHECK(ca::global_delay_cycles() - g0 == kDelay);
  CHECK(a_local_gain == kDelay);
  CHECK(a_debt_after == 0u);  // the sped-up thread owes nothing for its own region
  CHECK(ca::debt_cycles() == kDelay);
  ca::credit_resume();
}

TEST_CASE("credit_resume zeroes the debt", "[ledger]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  settle();
  ca::inject_delay_cycles_for_test(50'000);
  CHECK(ca::debt_cycles() == 50'000u);
  ca::credit_resume();
  CHECK(ca::debt_cycles() == 0u);
  CHECK(ca::local_delay_cycles() == ca::global_delay_cycles());
  CHECK(ca::pay_debt() == 0u);  // nothing left to pay
}

TEST_CASE("a thread owes delay injected after it registered, not before", "[ledger]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  settle();
  ca::inject_delay_cycles_for_test(1'000);  // before the helper exists
  std::atomic<int> step{0};
  uint64_t debt_at_start = ~uint64_t{0};
  uint64_t debt_after_inject = 0;
  std::thread helper([&] {
    ca::register_thread();
    debt_at_start = ca::debt_cycles();
    step.store(1);
    while (step.load() != 2) std::this_thread::yield();
    debt_after_inject = ca::debt_cycles();
    ca::credit_resume();
  });
  while (step.load() != 1) std::this_thread::yield();
  ca::inject_delay_cycles_for_test(777);
  step.store(2);
  helper.join();
  CHECK(debt_at_start == 0u);
  CHECK(debt_after_inject == 777u);
  CHECK(ca::debt_cycles() == 1'777u);  // this thread was registered before both
  ca::credit_resume();
}

TEST_CASE("pay_debt pays the whole debt, never under-pays, overshoots < 1 ms", "[ledger]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  settle();
  const uint64_t hz = cal::tsc_hz();
  for (auto owed_time : {1us, 10us, 100us, 1000us}) {
    const uint64_t owed = cal::duration_to_cycles(owed_time, hz);
    std::vector<std::chrono::nanoseconds> over;
    for (int i = 0; i < 20; ++i) {
      ca::inject_delay_cycles_for_test(owed);
      REQUIRE(ca::debt_cycles() == owed);
      const uint64_t t0 = cal::now_cycles();
      const uint64_t paid = ca::pay_debt();
      const uint64_t t1 = cal::now_cycles();
      REQUIRE(paid == owed);
      REQUIRE(t1 - t0 >= owed);  // never under-pays, whatever the load
      over.push_back(cal::cycles_to_duration(t1 - t0 - owed, hz));
      CHECK(ca::debt_cycles() == 0u);
    }
    std::sort(over.begin(), over.end());
    INFO("debt " << owed_time.count() << " us: overshoot median " << over[10].count() << " ns, 2nd worst "
                 << over[18].count() << " ns, worst " << over[19].count() << " ns");
    // Overshoot beyond the spin granularity is a scheduler event (a late
    // wake-up, a preempted spin). On a shared, loaded 2-core box ~1-5% of
    // 1 ms payments overshoot by 1-9 ms (see the table in delay_ledger.hpp),
    // so the 1 ms bound is on the median and the tail bound is looser.
    CHECK(over[10] < 1ms);
    CHECK(over[16] < 10ms);
  }
}

TEST_CASE("pay_debt pays what was owed at entry; delay added meanwhile is paid next time", "[ledger]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  settle();
  const uint64_t hz = cal::tsc_hz();
  const uint64_t first = cal::duration_to_cycles(5ms, hz);
  const uint64_t extra = cal::duration_to_cycles(20us, hz);
  ca::inject_delay_cycles_for_test(first);
  std::atomic<bool> paying{false};
  std::thread injector([&] {
    while (!paying.load()) std::this_thread::yield();
    std::this_thread::sleep_for(1ms);
    ca::inject_delay_cycles_for_test(extra);
  });
  paying.store(true);
  const uint64_t paid = ca::pay_debt();
  injector.join();
  // Almost always the injection lands mid-payment (paid == first, extra left
  // owing); if this thread was descheduled before reading G it pays both at
  // once. Either way nothing is lost or paid twice.
  CHECK((paid == first || paid == first + extra));
  CHECK(paid + ca::debt_cycles() == first + extra);
  const uint64_t second = ca::pay_debt();
  CHECK(paid + second == first + extra);
  CHECK(ca::debt_cycles() == 0u);
}

TEST_CASE("concurrent add_delay from 4 threads sums exactly", "[ledger]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  settle();
  const uint64_t g0 = ca::global_delay_cycles();
  constexpr int kThreads = 4;
  constexpr int kEach = 50'000;
  std::vector<uint64_t> own(kThreads, 0);
  std::vector<uint64_t> local_gain(kThreads, 0);  // Catch2 v2 assertions are main-thread only
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ca::register_thread();
      const uint64_t l0 = ca::local_delay_cycles();
      uint64_t sum = 0;
      for (int i = 0; i < kEach; ++i) {
        const uint64_t c = static_cast<uint64_t>(1 + (i * 7 + t) % 13);
        ca::add_delay(c);
        sum += c;
      }
      own[static_cast<size_t>(t)] = sum;
      local_gain[static_cast<size_t>(t)] = ca::local_delay_cycles() - l0;
    });
  }
  for (auto& th : threads) th.join();
  uint64_t expected = 0;
  for (uint64_t s : own) expected += s;
  CHECK(local_gain == own);  // each L covers exactly its own additions
  CHECK(ca::global_delay_cycles() - g0 == expected);
  CHECK(ca::debt_cycles() == expected);  // this thread owes every other thread's speedup
  ca::credit_resume();
}

TEST_CASE("ledger calls are cheap no-ops on a thread with nothing owed", "[ledger]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  settle();
  const uint64_t t0 = cal::now_cycles();
  uint64_t acc = 0;
  for (int i = 0; i < 100'000; ++i) acc += ca::pay_debt() + ca::debt_cycles();
  const auto elapsed = cal::cycles_to_duration(cal::now_cycles() - t0);
  CHECK(acc == 0u);
  CHECK(elapsed < 100ms);  // ~1 ns per call unloaded; the bound only catches a syscall or sleep
}

// Not run by default: measures pay_debt's overshoot distribution (a table
// per debt size; earlier results: docs/perf/history/). Run with:
// <test binary> "[ledger][measure]".
TEST_CASE("measure pay_debt overshoot distribution", "[.][ledger][measure]") {
  std::lock_guard lock(ca::test_ledger_mutex());
  settle();
  const uint64_t hz = cal::tsc_hz();
  std::printf("pay_debt overshoot (tsc_hz %llu, source %s), 1000 payments per debt:\n",
              static_cast<unsigned long long>(hz), std::string(cal::to_string(cal::tsc_hz_source())).c_str());
  for (auto owed_time : {1us, 10us, 100us, 1000us}) {
    const uint64_t owed = cal::duration_to_cycles(owed_time, hz);
    std::vector<int64_t> over_ns;
    int64_t under = 0;
    for (int i = 0; i < 1000; ++i) {
      ca::inject_delay_cycles_for_test(owed);
      const uint64_t t0 = cal::now_cycles();
      (void)ca::pay_debt();
      const uint64_t t1 = cal::now_cycles();
      if (t1 - t0 < owed) ++under;
      over_ns.push_back(cal::cycles_to_duration(t1 - t0 > owed ? t1 - t0 - owed : 0, hz).count());
    }
    std::sort(over_ns.begin(), over_ns.end());
    std::printf("  debt %5lld us: overshoot p50 %7lld ns  p90 %7lld ns  p99 %7lld ns  max %8lld ns  under-paid %lld\n",
                static_cast<long long>(owed_time.count()), static_cast<long long>(over_ns[500]),
                static_cast<long long>(over_ns[900]), static_cast<long long>(over_ns[990]),
                static_cast<long long>(over_ns.back()), static_cast<long long>(under));
    CHECK(under == 0);
  }
}
