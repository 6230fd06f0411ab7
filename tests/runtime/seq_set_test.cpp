// SeqSet (runtime/src/detail/timer_heap.hpp): the timer heap's armed set.
// Random inserts and erases against std::set, with the consecutive seqs the
// heap arms and the far-apart survivors of long timers, so probe runs wrap
// and backward-shift deletion moves entries across the array's end.
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "detail/timer_heap.hpp"

using coact::detail::SeqSet;

TEST_CASE("SeqSet agrees with std::set under random insert, erase and shrink", "[timer][unit]") {
  std::mt19937_64 rng(12345);
  SeqSet s;
  std::set<uint64_t> ref;
  uint64_t next = 1;
  for (int round = 0; round < 200; ++round) {
    const int inserts = int(rng() % 300);
    for (int i = 0; i < inserts; ++i) {
      const uint64_t k = next++;
      s.insert(k);
      ref.insert(k);
    }
    std::vector<uint64_t> live(ref.begin(), ref.end());
    const int erases = live.empty() ? 0 : int(rng() % (live.size() + 1));
    for (int i = 0; i < erases; ++i) {
      const uint64_t k = live[rng() % live.size()];
      REQUIRE(s.erase(k) == ref.erase(k));
    }
    // Absent keys: never armed, and already erased ones.
    REQUIRE(s.erase(next + 7) == 0);
    REQUIRE_FALSE(s.contains(next + 7));
    REQUIRE(s.size() == ref.size());
    for (uint64_t k : live) REQUIRE(s.contains(k) == (ref.count(k) == 1));
    REQUIRE(s.capacity() >= 2 * s.size());  // load at most 1/2
    if (round % 17 == 0) {
      s.shrink();
      REQUIRE(s.size() == ref.size());
      for (uint64_t k : ref) REQUIRE(s.contains(k));
    }
  }
  s.clear();
  REQUIRE(s.size() == 0);
  REQUIRE_FALSE(s.contains(1));
  REQUIRE(s.erase(1) == 0);
  s.insert(42);
  REQUIRE(s.contains(42));
}

TEST_CASE("SeqSet: a duplicate insert is one entry; erase of a full probe run", "[timer][unit]") {
  SeqSet s;
  s.insert(5);
  s.insert(5);
  REQUIRE(s.size() == 1);
  for (uint64_t k = 1; k <= 32; ++k) s.insert(k);  // fills the minimum array to its load limit
  REQUIRE(s.size() == 32);
  for (uint64_t k = 1; k <= 32; k += 2) REQUIRE(s.erase(k) == 1);
  for (uint64_t k = 1; k <= 32; ++k) REQUIRE(s.contains(k) == (k % 2 == 0));
}
