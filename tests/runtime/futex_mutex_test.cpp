// FutexMutex (runtime/src/detail/futex_mutex.hpp): the timer heap's and
// SpinPark's lock. Mutual exclusion and no lost wakeup under contention:
// threads increment plain counters under the lock (a second thread inside
// would lose increments, and ThreadSanitizer would report the race), and hold
// it long enough that waiters take the futex path (state 2); a lost wakeup
// hangs a waiter, which the watchdog turns into a failure.
#include <cstdint>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "detail/futex_mutex.hpp"
#include "support/watchdog.hpp"

using coact::detail::FutexMutex;

TEST_CASE("FutexMutex: uncontended lock, try_lock, unlock", "[futex_mutex]") {
  FutexMutex m;
  m.lock();
  CHECK_FALSE(m.try_lock());
  m.unlock();
  REQUIRE(m.try_lock());
  m.unlock();
}

TEST_CASE("FutexMutex: mutual exclusion and no lost wakeup at 1/2/4/8 threads", "[stress][futex_mutex]") {
  for (int threads : {1, 2, 4, 8}) {
    coact::test::Watchdog wd(60, "FutexMutex contention at " + std::to_string(threads) + " threads");
    FutexMutex m;
    uint64_t a = 0, b = 0;  // guarded by m; b mirrors a
    bool inside = false;    // guarded by m
    uint64_t overlaps = 0;
    constexpr int kIters = 20'000;
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        for (int i = 0; i < kIters; ++i) {
          const bool held_long = (i + t) % 64 == 0;  // waiters then sleep on the futex
          if (i % 3 == 0 && m.try_lock()) {
          } else {
            m.lock();
          }
          if (inside) ++overlaps;
          inside = true;
          ++a;
          if (held_long) std::this_thread::sleep_for(std::chrono::microseconds(20));
          ++b;
          inside = false;
          m.unlock();
        }
      });
    }
    for (auto& th : ts) th.join();
    CHECK(overlaps == 0);
    CHECK(a == uint64_t(threads) * kIters);
    CHECK(b == a);
  }
}
