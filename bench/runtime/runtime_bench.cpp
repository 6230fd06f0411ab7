// Group `runtime` of scripts/bench.sh: Google Benchmark micro-benchmarks of
// the runtime's mechanisms. Each variant says what it isolates. Numbers that
// matter are ratios measured side by side (scripts/perf-compare.sh, peers);
// absolute times here are for tracking.
#include <benchmark/benchmark.h>

#include <atomic>
#include <thread>

#include <coact/causal/hooks.hpp>
#include <coact/runtime/detail/mailbox.hpp>
#include <coact/runtime/detail/run_token.hpp>
#include <coact/runtime/runtime.hpp>

#include "detail/work_deque.hpp"

namespace {

// Isolates the MPSC inbox: one thread pushes then pops (no contention).
void BM_MailboxPushPop(benchmark::State& st) {
  coact::detail::Mailbox mb;
  coact::detail::Envelope e;
  for (auto _ : st) {
    mb.push(&e);
    benchmark::DoNotOptimize(mb.pop());
  }
  st.SetItemsProcessed(int64_t(st.iterations()));
}
BENCHMARK(BM_MailboxPushPop);

// Isolates the run-token round trip a handoff costs: the push that takes the
// token (the wake), the holder's pop, and its release.
void BM_RunTokenCycle(benchmark::State& st) {
  coact::detail::Mailbox mb;
  coact::detail::Envelope e;
  for (auto _ : st) {
    benchmark::DoNotOptimize(mb.push(&e));
    benchmark::DoNotOptimize(mb.pop());
    benchmark::DoNotOptimize(mb.try_release());
  }
  st.SetItemsProcessed(int64_t(st.iterations()));
}
BENCHMARK(BM_RunTokenCycle);

// Isolates the owner side of the Chase-Lev deque: push + LIFO pop.
void BM_DequePushPop(benchmark::State& st) {
  coact::detail::WorkDeque<int*> d;
  coact::detail::DequeOwner<int*> own = coact::detail::own_deque(d);
  int x = 0;
  for (auto _ : st) {
    own.push(&x);
    benchmark::DoNotOptimize(own.pop());
  }
  st.SetItemsProcessed(int64_t(st.iterations()));
}
BENCHMARK(BM_DequePushPop);

// The cost of the causal hooks when compiled in and no sweep runs (one
// relaxed load each); compiled out they are empty (COACT_CAUSAL=OFF build).
void BM_CausalHooksIdle(benchmark::State& st) {
  for (auto _ : st) {
    coact::causal::on_handler_enter(nullptr, 1);
    coact::causal::on_handler_exit(nullptr, 1);
    coact::causal::on_pay_point();
  }
  st.SetItemsProcessed(int64_t(st.iterations()));
}
BENCHMARK(BM_CausalHooksIdle);

struct Ball {
  int left;
};
struct Player : coact::Actor<Player> {
  coact::ActorRef<Player> peer;
  std::atomic<bool>* done;
  explicit Player(std::atomic<bool>* d) : done(d) {}
  void on(coact::ActorRef<Player>& p) { peer = p; }
  void on(const Ball& b) {
    if (b.left == 0) {
      done->store(true, std::memory_order_release);
      return;
    }
    peer.send(Ball{b.left - 1});
  }
};

// Whole path of one message between two actors (send, flush, deposit, wake,
// dispatch) on `workers` workers; items = messages.
void BM_PingPong(benchmark::State& st) {
  coact::SchedulerTuning t;
  t.workers = uint32_t(st.range(0));
  coact::Runtime rt(t);
  std::atomic<bool> done{false};
  auto a = rt.spawn<Player>(&done);
  auto b = rt.spawn<Player>(&done);
  a.send(coact::ActorRef<Player>(b));
  b.send(coact::ActorRef<Player>(a));
  const int n = 100000;
  for (auto _ : st) {
    done = false;
    a.send(Ball{n});
    while (!done.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  st.SetItemsProcessed(int64_t(st.iterations()) * n);
  rt.request_stop();
}
BENCHMARK(BM_PingPong)->ArgNames({"workers"})->Arg(1)->Arg(2)->Arg(4)->UseRealTime()->Unit(benchmark::kMillisecond);

struct Leaf : coact::Actor<Leaf> {
  std::atomic<int>* left;
  explicit Leaf(std::atomic<int>* l) : left(l) {}
  struct Go {};
  void on(Go) {
    left->fetch_sub(1, std::memory_order_acq_rel);
    stop();
  }
};

// Spawn + one message + stop, from outside the pool: registry, cell
// allocation, root door, finalize.
void BM_SpawnStop(benchmark::State& st) {
  coact::SchedulerTuning t;
  t.workers = uint32_t(st.range(0));
  coact::Runtime rt(t);
  const int n = 10000;
  for (auto _ : st) {
    std::atomic<int> left{n};
    for (int i = 0; i < n; ++i) rt.spawn<Leaf>(&left).send(Leaf::Go{});
    while (left.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  }
  st.SetItemsProcessed(int64_t(st.iterations()) * n);
  rt.request_stop();
}
BENCHMARK(BM_SpawnStop)->ArgNames({"workers"})->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
