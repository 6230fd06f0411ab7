// tests/runtime/work_deque_test.cpp: the work deque's two roles
// (runtime/src/detail/work_deque.hpp): the handle types allow only their
// role's operations (checked at compile time), the owner's LIFO and the
// stealers' FIFO order, growth, and an owner racing stealers where every
// element is taken exactly once.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#include "detail/work_deque.hpp"
#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"

using coact::detail::DequeOwner;
using coact::detail::DequeStealer;
using coact::detail::own_deque;
using coact::detail::WorkDeque;

namespace {

template <class H>
concept CanPush = requires(H h, int* x) {
  h.push(x);
};
template <class H>
concept CanPop = requires(H h) {
  h.pop();
};
template <class H>
concept CanSteal = requires(H h) {
  h.steal();
};
template <class D>
concept CallableDirectly = requires(D d, int* x) {
  d.push(x);
};

// The roles, as the compiler sees them.
static_assert(CanPush<DequeOwner<int*>> && CanPop<DequeOwner<int*>>);
static_assert(!CanPush<DequeStealer<int*>> && !CanPop<DequeStealer<int*>>);
static_assert(CanSteal<DequeStealer<int*>> && !CanSteal<DequeOwner<int*>>);
static_assert(!CallableDirectly<WorkDeque<int*>>, "the deque's operations are reached only through the handles");
static_assert(!std::is_copy_constructible_v<DequeOwner<int*>>, "one owner");
static_assert(std::is_copy_constructible_v<DequeStealer<int*>>);
static_assert(!std::is_constructible_v<DequeOwner<int*>, WorkDeque<int*>*>, "owners come from own_deque");
static_assert(!std::is_constructible_v<DequeStealer<int*>, WorkDeque<int*>*>, "stealers come from the owner");

}  // namespace

TEST_CASE("the owner pops newest first, stealers take oldest first, across growth", "[deque]") {
  WorkDeque<int*> d(4);  // grows twice below
  DequeOwner<int*> own = own_deque(d);
  const DequeStealer<int*> thief = own.stealer();
  std::vector<int> v(16);
  for (int& x : v) own.push(&x);
  REQUIRE(own.size() == 16);
  REQUIRE(thief.steal() == &v[0]);
  REQUIRE(thief.steal() == &v[1]);
  REQUIRE(own.pop() == &v[15]);
  REQUIRE(own.take_oldest() == &v[2]);
  REQUIRE(thief.size() == 12);
  for (int i = 14; i >= 3; --i) REQUIRE(own.pop() == &v[size_t(i)]);
  REQUIRE(own.pop() == nullptr);
  REQUIRE(thief.steal() == nullptr);
}

TEST_CASE("an owner racing stealers: every element is taken exactly once", "[deque][stress]") {
  // Stealers: one fewer than each worker count of the fixture's list (at
  // least one), as a pool's other workers would be.
  const uint32_t workers = GENERATE(coact::test::worker_counts(2));
  const uint32_t stealers = workers - 1;
  coact::test::Watchdog wd(60, "work deque: owner and stealers");
  constexpr int kItems = 200000;
  std::vector<int> items(kItems);
  std::vector<std::atomic<int>> taken(kItems);
  WorkDeque<int*> d(8);
  DequeOwner<int*> own = own_deque(d);
  std::atomic<bool> done{false};
  std::atomic<int> stolen{0};
  auto take = [&](int* p) { taken[size_t(p - items.data())].fetch_add(1, std::memory_order_relaxed); };
  std::vector<std::thread> thieves;
  for (uint32_t t = 0; t < stealers; ++t) {
    thieves.emplace_back([&, thief = own.stealer()] {
      while (!done.load(std::memory_order_acquire) || thief.size() > 0) {
        if (int* p = thief.steal()) {
          take(p);
          stolen.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  // The owner pushes in bursts and pops some back, as a worker's handlers do.
  int popped = 0;
  for (int i = 0; i < kItems; ++i) {
    own.push(&items[size_t(i)]);
    if (i % 3 == 0) {
      if (int* p = own.pop()) {
        take(p);
        ++popped;
      }
    }
  }
  while (int* p = own.pop()) {
    take(p);
    ++popped;
  }
  done.store(true, std::memory_order_release);
  for (std::thread& t : thieves) t.join();
  int twice = 0, never = 0;
  for (const std::atomic<int>& n : taken) {
    twice += n.load() > 1;
    never += n.load() == 0;
  }
  INFO("workers " << workers << ": popped " << popped << ", stolen " << stolen.load());
  REQUIRE(twice == 0);
  REQUIRE(never == 0);
  REQUIRE(popped + stolen.load() == kItems);
}
