// tests/runtime/mail_ring_test.cpp: MailRing (runtime/src/detail/mail_ring.hpp):
// wraps and skip fillers, the heap fallback (alloc refuses), a shadow-model
// test over random operation sequences, and one producer with several
// consumers where no live region is ever reused (tag bytes).
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "detail/mail_ring.hpp"
#include "support/watchdog.hpp"

using coact::detail::MailRing;
using coact::detail::release_region;
using coact::detail::RegionReleaseBatch;
using coact::detail::t_region_batch;
using coact::detail::RingRegion;

namespace {

struct Mail {
  unsigned char* p;
  size_t n;
  RingRegion* r;
  unsigned char tag;
};

// True iff [a, a+n) and [b, b+m) overlap (offsets in the ring).
bool overlaps(size_t a, size_t n, size_t b, size_t m) { return a < b + m && b < a + n; }

}  // namespace

TEST_CASE("MailRing: appends in place, seals with one count per mail, reclaims released regions") {
  MailRing ring(1024);
  RingRegion* r1 = nullptr;
  RingRegion* r2 = nullptr;
  void* a = ring.alloc(40, &r1);
  void* b = ring.alloc(40, &r2);
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(r1 == r2);  // one region per handler invocation
  CHECK(static_cast<unsigned char*>(b) - static_cast<unsigned char*>(a) == 48);  // 40 rounded to 16
  CHECK(reinterpret_cast<uintptr_t>(a) % MailRing::kAlign == 0);
  CHECK(ring.building());
  ring.seal();
  CHECK_FALSE(ring.building());
  CHECK(r1->lock.load() == 2);
  const size_t used = ring.used();
  CHECK(used == MailRing::kHeader + 96);
  CHECK(ring.reclaim() == 0);  // live: nothing freed
  release_region(r1);
  CHECK(ring.reclaim() == 0);  // one reader left
  release_region(r1);
  CHECK(ring.reclaim() == used);
  CHECK(ring.used() == 0);
}

TEST_CASE("MailRing: a release batch holds a region's releases until it flushes; the ring's open flushes it") {
  MailRing ring(4096);
  RingRegion* r1 = nullptr;
  RingRegion* r2 = nullptr;
  REQUIRE(ring.alloc(32, &r1) != nullptr);
  REQUIRE(ring.alloc(32, &r1) != nullptr);
  REQUIRE(ring.alloc(32, &r1) != nullptr);
  ring.seal();
  REQUIRE(ring.alloc(32, &r2) != nullptr);
  ring.seal();
  REQUIRE(r1 != r2);
  RegionReleaseBatch batch;
  t_region_batch = &batch;
  struct Uninstall {  // a failed REQUIRE must not leave the thread pointing at this frame
    ~Uninstall() { t_region_batch = nullptr; }
  } uninstall;
  release_region(r1);
  release_region(r1);
  CHECK(r1->lock.load() == 3);  // held back
  CHECK(batch.region == r1);
  CHECK(batch.n == 2);
  release_region(r2);  // another region: r1's two go back at once
  CHECK(r1->lock.load() == 1);
  CHECK(r2->lock.load() == 1);  // r2's one is held
  release_region(r1);           // and back to r1: r2's goes back
  CHECK(r2->lock.load() == 0);
  CHECK(r1->lock.load() == 1);
  CHECK(ring.reclaim() == 0);  // r1 (oldest) still counts as live
  // The producer's next open gives the thread's held releases back first,
  // so it reclaims both regions and restarts at 0.
  RingRegion* r3 = nullptr;
  REQUIRE(ring.alloc(32, &r3) != nullptr);
  CHECK(batch.n == 0);
  CHECK(r1 == r3);  // the empty ring restarted at offset 0
  CHECK(ring.used() == MailRing::kHeader + 32);
  ring.seal();
  t_region_batch = nullptr;
  release_region(r3);  // no batch: at once
  CHECK(r3->lock.load() == 0);
  CHECK(ring.reclaim() == MailRing::kHeader + 32);
}

TEST_CASE("MailRing: an abandoned envelope does not count toward the lock") {
  MailRing ring(1024);
  RingRegion* r = nullptr;
  REQUIRE(ring.alloc(32, &r) != nullptr);
  REQUIRE(ring.alloc(32, &r) != nullptr);
  ring.abandon(r);
  ring.seal();
  CHECK(r->lock.load() == 1);
  release_region(r);
  ring.reclaim();
  CHECK(ring.used() == 0);
}

TEST_CASE("MailRing: wraps with a skip filler; a full ring refuses (heap fallback)") {
  MailRing ring(512);
  RingRegion* live = nullptr;
  // Region A: header 16 + 160 = 176 bytes at 0.
  REQUIRE(ring.alloc(160, &live) != nullptr);
  ring.seal();
  RingRegion* rb = nullptr;
  // Region B: 16 + 240 = 256 at 176 -> write at 432; 80 bytes of tail left.
  REQUIRE(ring.alloc(240, &rb) != nullptr);
  ring.seal();
  release_region(live);  // A released: [0, 176) reclaimable at the next open
  // Region C needs 16 + 96 = 112 > 80 of tail: a filler over [432, 512), C at 0.
  RingRegion* rc = nullptr;
  void* c = ring.alloc(96, &rc);
  REQUIRE(c != nullptr);
  CHECK(static_cast<unsigned char*>(c) == ring.base() + MailRing::kHeader);
  CHECK(ring.fillers() == 1);
  ring.seal();
  // B still live, C live: [112, 176) free (64 bytes) - a 64-byte envelope plus
  // header does not fit, and B blocks everything behind it: refuse.
  RingRegion* rd = nullptr;
  CHECK(ring.alloc(64, &rd) == nullptr);
  // Larger than the whole ring: always refused.
  CHECK(ring.alloc(1024, &rd) == nullptr);
  release_region(rb);
  release_region(rc);
  ring.reclaim();
  CHECK(ring.used() == 0);
  CHECK(ring.alloc(400, &rd) != nullptr);
  ring.seal();
  release_region(rd);
}

TEST_CASE("MailRing: a region that outgrows the tail is sealed early and continues at 0") {
  MailRing ring(256);
  RingRegion* r1 = nullptr;
  RingRegion* first = nullptr;
  REQUIRE(ring.alloc(96, &first) != nullptr);  // [0,16) header, [16,112)
  ring.seal();
  release_region(first);
  REQUIRE(ring.alloc(96, &r1) != nullptr);  // reclaims; new region at 0 again
  RingRegion* r2 = nullptr;
  REQUIRE(ring.alloc(96, &r2) != nullptr);  // same region, [112, 208)
  CHECK(r1 == r2);
  RingRegion* r3 = nullptr;
  // 48 left in the tail: 96 does not extend; the region is sealed (lock 2)
  // and a new one cannot fit in [0, front) while r1 is live: refuse.
  CHECK(ring.alloc(96, &r3) == nullptr);
  CHECK(r1->lock.load() == 2);
  ring.seal();
  release_region(r1);
  release_region(r1);
  ring.reclaim();
  CHECK(ring.used() == 0);
}

// Shadow model: every live mail's bytes carry its tag and never overlap
// another live mail or a live region header; the ring's used bytes match the
// model's accounting after reclaim; alloc refuses only when the model
// agrees there is no room for a contiguous region (checked loosely: a
// refusal with an empty model is a failure).
TEST_CASE("MailRing: random operation sequences against a shadow model") {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    const size_t cap = 256 + 16 * (rng() % 64);
    MailRing ring(cap);
    std::vector<Mail> live;  // sealed or building, not yet released
    std::vector<Mail> building;
    unsigned char next_tag = 1;
    auto check_tags = [&] {
      for (const Mail& m : live) {
        for (size_t i = 0; i < m.n; ++i) REQUIRE(m.p[i] == m.tag);
      }
      for (const Mail& m : building) {
        for (size_t i = 0; i < m.n; ++i) REQUIRE(m.p[i] == m.tag);
      }
    };
    for (int step = 0; step < 4000; ++step) {
      const uint32_t op = rng() % 10;
      if (op < 5) {  // send: alloc and fill with a fresh tag
        const size_t n = 1 + rng() % 120;
        RingRegion* r = nullptr;
        void* p = ring.alloc(n, &r);
        if (p == nullptr) {
          REQUIRE((!live.empty() || !building.empty() || n + MailRing::kHeader > cap));
          continue;
        }
        auto* b = static_cast<unsigned char*>(p);
        REQUIRE(b >= ring.base());
        REQUIRE(b + n <= ring.base() + cap);
        const size_t off = size_t(b - ring.base());
        for (const auto* set : {&live, &building}) {
          for (const Mail& m : *set) {
            REQUIRE_FALSE(overlaps(off, n, size_t(m.p - ring.base()), m.n));
            REQUIRE_FALSE(overlaps(off, n, size_t(reinterpret_cast<unsigned char*>(m.r) - ring.base()),
                                   MailRing::kHeader));
          }
        }
        std::memset(b, next_tag, n);
        building.push_back(Mail{b, n, r, next_tag});
        next_tag = next_tag == 255 ? 1 : next_tag + 1;
      } else if (op < 7) {  // flush: seal
        ring.seal();
        for (const Mail& m : building) live.push_back(m);
        building.clear();
      } else if (!live.empty()) {  // a reader releases a random live mail
        const size_t i = rng() % live.size();
        release_region(live[i].r);
        live[i] = live.back();
        live.pop_back();
      }
      check_tags();
    }
    ring.seal();
    for (const Mail& m : building) release_region(m.r);
    for (const Mail& m : live) release_region(m.r);
    ring.reclaim();
    CHECK(ring.used() == 0);
  }
}

// One producer, several consumers: mail travels through a shared queue;
// consumers check the tag bytes (a reused live region would show another
// tag), wait a little, re-check, then release. The producer checks every
// new allocation against the consumers' live set.
TEST_CASE("MailRing: one producer, several consumers, no live region reused", "[stress]") {
  for (uint32_t consumers : {1u, 2u, 4u, 8u}) {
    coact::test::Watchdog wd(60, "MailRing producer/consumers");
    MailRing ring(4096);
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Mail> q;
    bool done = false;
    std::atomic<uint64_t> bad{0}, consumed{0};
    std::vector<std::thread> ts;
    for (uint32_t c = 0; c < consumers; ++c) {
      ts.emplace_back([&, c] {
        std::mt19937 rng(c + 7);
        for (;;) {
          Mail m{};
          {
            std::unique_lock lk(mu);
            cv.wait(lk, [&] { return done || !q.empty(); });
            if (q.empty()) return;
            m = q.front();
            q.pop_front();
          }
          for (size_t i = 0; i < m.n; ++i) bad += m.p[i] != m.tag;
          if (rng() % 4 == 0) std::this_thread::yield();
          for (size_t i = 0; i < m.n; ++i) bad += m.p[i] != m.tag;
          consumed.fetch_add(1, std::memory_order_relaxed);
          release_region(m.r);
        }
      });
    }
    std::mt19937 rng(consumers);
    uint64_t sent = 0, refused = 0;
    unsigned char tag = 1;
    for (int burst = 0; burst < 20000; ++burst) {
      std::vector<Mail> out;
      const int mails = 1 + int(rng() % 8);
      for (int k = 0; k < mails; ++k) {
        const size_t n = 8 + rng() % 200;
        RingRegion* r = nullptr;
        void* p = ring.alloc(n, &r);
        for (int retry = 0; p == nullptr && retry < 100; ++retry) {
          ++refused;  // in the runtime: the heap fallback; here, give the readers time
          std::this_thread::yield();
          p = ring.alloc(n, &r);
        }
        if (p == nullptr) continue;
        std::memset(p, tag, n);
        out.push_back(Mail{static_cast<unsigned char*>(p), n, r, tag});
        tag = tag == 255 ? 1 : tag + 1;
      }
      ring.seal();
      {
        std::lock_guard lk(mu);
        for (const Mail& m : out) q.push_back(m);
      }
      cv.notify_all();
      sent += out.size();
    }
    {
      std::lock_guard lk(mu);
      done = true;
    }
    cv.notify_all();
    for (auto& t : ts) t.join();
    ring.reclaim();
    CHECK(bad.load() == 0);
    CHECK(consumed.load() == sent);
    CHECK(ring.used() == 0);
    CHECK(sent > 10000);
    INFO("refused " << refused);
  }
}
