// Regression (stress): fan-out/fan-in rounds never strand mail.
// Interleaving that failed: the master's inbox pop() returned nullptr in
// Vyukov's "retry later" state (a replier exchanged the head while pop()
// re-pushed the stub, and linked its node after pop() looked), the replier's
// try_wake failed against Running, and the master released its run-token
// after a recheck that saw head == stub: the reply sat in the inbox of an
// Idle actor and the round never completed (coact-peers fan_out hung about 2
// runs in 150). The fix: release only from the canonical empty state.
#include <atomic>
#include <vector>

#include <catch2/catch.hpp>
#include <coact/runtime/runtime.hpp>

#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"

namespace {

struct Master;
struct Req {
  uint64_t i;
};
struct Rep {
  uint64_t i;
};
struct Worker : coact::Actor<Worker> {
  coact::ActorRef<Master> master;
  void on(coact::ActorRef<Master>& m) { master = m; }
  void on(const Req& r);
  struct Quit {};
  void on(Quit) { stop(); }
};
struct Master : coact::Actor<Master> {
  std::vector<coact::ActorRef<Worker>> workers;
  uint64_t rounds_left;
  uint64_t pending = 0;
  uint64_t* replies;
  Master(uint64_t rounds, uint64_t* r) : rounds_left(rounds), replies(r) {}
  struct Start {};
  void on(std::vector<coact::ActorRef<Worker>>& w) { workers = std::move(w); }
  void round() {
    for (uint64_t j = 0; j < workers.size(); ++j) workers[j].send(Req{j});
    pending = workers.size();
  }
  void on(Start) { round(); }
  void on(const Rep&) {
    ++*replies;
    if (--pending > 0) return;
    if (--rounds_left > 0) {
      round();
    } else {
      for (auto& w : workers) w.send(Worker::Quit{});
      stop();
    }
  }
};
void Worker::on(const Req& r) { master.send(Rep{r.i}); }

}  // namespace

TEST_CASE("fan-out/fan-in rounds never strand a reply in an idle actor's inbox", "[stress][fan_in]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts(2));
  const uint64_t rounds = uint64_t(20000 * coact::test::kStressScale) + 50;
  coact::test::Watchdog wd(300, "fan-in rounds");
  for (int rep = 0; rep < 5; ++rep) {
    uint64_t replies = 0;
    INFO("workers=" << workers << " rep=" << rep);
    coact::test::run_checked(workers, [&](coact::Runtime& rt) {
      auto m = rt.spawn<Master>(rounds, &replies);
      std::vector<coact::ActorRef<Worker>> ws;
      for (int i = 0; i < 64; ++i) {
        ws.push_back(rt.spawn<Worker>());
        ws.back().send(coact::ActorRef<Master>(m));
      }
      m.send(std::move(ws));
      m.send(Master::Start{});
      rt.run();
    });
    CHECK(replies == rounds * 64);
  }
}
