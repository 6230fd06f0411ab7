// Tests for coact/causal/progress.hpp: COACT_PROGRESS / COACT_BEGIN / COACT_END
// register once (even when first hit by many threads at once) and lose no counts.
#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include <coact/causal/progress.hpp>

#include "support/child.hpp"

namespace ca = coact::causal;

namespace {

int count_named(const std::string& name) {
  int n = 0;
  for (ca::ProgressPoint* p : ca::progress_points()) n += p->name() == name ? 1 : 0;
  return n;
}

ca::ProgressPoint* find_named(const std::string& name) {
  for (ca::ProgressPoint* p : ca::progress_points()) {
    if (p->name() == name) return p;
  }
  return nullptr;
}

// One call site, first reached by all threads at once.
void hit_eight() { COACT_PROGRESS("progress-test/eight-threads"); }

}  // namespace

TEST_CASE("COACT_PROGRESS first hit by 8 threads at once: registered exactly once, no lost counts",
          "[causal][progress]") {
  REQUIRE(count_named("progress-test/eight-threads") == 0);  // this call site has not run yet
  constexpr int kThreads = 8;
  constexpr int kVisits = 50'000;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      for (int i = 0; i < kVisits; ++i) hit_eight();
    });
  }
  while (ready.load() < kThreads) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  CHECK(count_named("progress-test/eight-threads") == 1);
  ca::ProgressPoint* p = find_named("progress-test/eight-threads");
  REQUIRE(p != nullptr);
  CHECK(p->kind() == ca::ProgressKind::throughput);
  CHECK_FALSE(p->handler_completion());
  CHECK(p->visits() == uint64_t{kThreads} * kVisits);
}

TEST_CASE("COACT_BEGIN / COACT_END share one latency point by name", "[causal][progress]") {
  for (int i = 0; i < 5; ++i) COACT_BEGIN("progress-test/request");
  for (int i = 0; i < 3; ++i) COACT_END("progress-test/request");
  ca::ProgressPoint* p = find_named("progress-test/request");
  REQUIRE(p != nullptr);
  CHECK(count_named("progress-test/request") == 1);
  CHECK(p->kind() == ca::ProgressKind::latency);
  CHECK(p->arrivals() == 5u);
  CHECK(p->departures() == 3u);
}

TEST_CASE("two call sites with one name count into one point", "[causal][progress]") {
  COACT_PROGRESS("progress-test/shared");
  COACT_PROGRESS("progress-test/shared");
  CHECK(count_named("progress-test/shared") == 1);
  CHECK(find_named("progress-test/shared")->visits() == 2u);
  CHECK(ca::progress_point("progress-test/shared", ca::ProgressKind::throughput) == find_named("progress-test/shared"));
}

TEST_CASE("one name used as throughput and latency point aborts with a message naming it", "[causal][progress]") {
  const auto r = coact::test::run_in_child([] {
    COACT_PROGRESS("progress-test/confused");
    COACT_BEGIN("progress-test/confused");
  });
  CHECK(r.signaled(SIGABRT));
  CHECK(r.err.find("'progress-test/confused'") != std::string::npos);
  CHECK(r.err.find("throughput") != std::string::npos);
}
