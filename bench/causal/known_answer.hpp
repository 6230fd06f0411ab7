// bench/causal/known_answer.hpp: the known-answer workloads of the causal
// profiler's accuracy figure (DESIGN.md "Validation"), as coact actors.
//
// Each stage is an actor handler whose cost is a calibrated busy loop on the
// TSC (spin until now_cycles() reaches entry + cost, cost = units x unit x
// (1 - speed)), so the true effect of making a stage a fraction s faster is
// known and can also be run for real (Config::speed_a / speed_b: the stage's
// loop really is that much shorter). Stages are handler regions named by the
// runtime "Type::on(Msg)"; every completed iteration (or item) is one visit of
// the throughput progress point kProgressPoint.
//
//   fork_join    Join sends Go to A (2 units) and B (1 unit) in parallel;
//                both answer Done; the second Done completes an iteration
//                and forks the next. Speeding A by s: min(s, 1/2); B: 0.
//   pipeline     producer A (2 units per item) -> bounded queue (Config::
//                queue items in flight, acks return credit) -> consumer B
//                (1 unit per item); one iteration per item consumed.
//                A: min(s, 1/2); B: 0.
//   ping_pong    A (2 units) sends Ball to B (1 unit), which sends it back;
//                one request in flight; one iteration per round trip.
//                A: 2s/3; B: s/3.
//   timer_stage  fork_join with branch B replaced by T, a coroutine handler
//                that awaits coact::sleep(1 unit) (a virtual timer) instead of
//                computing. T's region runs for microseconds: T: 0 ("never
//                the answer"). A: min(s, 1/2), the fork_join curve: a sleep in
//                the other branch must not change the compute prediction.
//   farm         a dispatcher D keeps kFarmWorkers jobs in flight to as many
//                worker actors of one type W (A: 1/16 unit per job, ~31 µs at
//                the default unit), so short instances of the same handler
//                region run at once on both workers; D (B: 1/64 unit per
//                reply) hands each worker its next job; one iteration per
//                job. With a = 1/16, b = 1/64 and two cores the period is
//                (a + b)/2 while D has slack: A gives s·a/(a+b) = 0.8s (for
//                s <= 0.75, where D becomes the bottleneck), B gives
//                s·b/(a+b) = 0.2s. This is the shape of the archiver's
//                compressor stage (several compressors, short handlers).
//
// Line workloads (sampled-line regions; the sweep samples CPU time):
//   fork_join_lines  fork_join where A's handler runs loop a1 (2 units) then
//                loop a2 (1 unit), each on its own source line, in parallel
//                with B (1.5 units). a1: min(2s/3, 1/2) (A = 3 - 2s against
//                B's 1.5); a2: s/3 (A = 3 - s stays above 1.5); B: 0.
//   shared_callee  fork_join where A and B both call one noinline work(n)
//                whose loop is one source line: A with n = 2 units (critical),
//                B with n = 1 unit (concurrent, off the critical path). Line
//                regions qualified by the calling handler: work@A:
//                min(s, 1/2); work@B: 0; work (both callers): s — speeding
//                work everywhere shortens A's 2 units and B's 1 unit alike,
//                so the period 2(1 - s) never meets a plateau.
// Their loops are the macro COACT_KA_SPIN (TSC builtins and a pause, no
// inlined function): every instruction of a loop maps to the line of its use,
// never to a header's line.
//
// The runtime tuning that the known answers assume (known_answer.cpp sets it;
// the accuracy test too): 2 workers (the branches really run in parallel),
// peer_steal on (a fork's second branch is stolen by the idle worker instead
// of waiting for the forking worker's batch to end), and an idle spin window
// longer than the longest idle gap (2 units), so a branch starts within
// microseconds instead of a futex wake (50-100 us on a virtual machine).
//
// Threads: start() from any thread outside the runtime's handlers; the
// counters are atomics read by any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <coact/calibrate/tsc.hpp>
#include <coact/causal/progress.hpp>
#include <coact/runtime/runtime.hpp>
#include <coact/runtime/task.hpp>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(COACT_KA_COZ)
#include <coz.h>  // Debian's coz-profiler; COZ_PROGRESS_NAMED finds libcoz by dlsym, a no-op without it
#endif

namespace coact::known_answer {

/// The throughput progress point every workload visits once per iteration.
inline constexpr const char* kProgressPoint = "known_answer.iteration";

enum class Workload {
  fork_join, pipeline, ping_pong, timer_stage, farm, sleepers, sleepers_spin, sleepers_send, fork_join_lines, shared_callee
};

inline constexpr Workload kAllWorkloads[] = {Workload::fork_join,     Workload::pipeline,     Workload::ping_pong,
                                             Workload::timer_stage,   Workload::farm,         Workload::sleepers,
                                             Workload::sleepers_spin, Workload::sleepers_send, Workload::fork_join_lines,
                                             Workload::shared_callee};

/// Source lines of the line workloads' loops (this file; static_asserts at
/// the loops keep them true). Display names are the shortest unique path
/// suffix (symbolizer.hpp): "known_answer.hpp:N" for coact-known-answer.
inline constexpr int kLineA1 = 615;
inline constexpr int kLineA2 = 616;
inline constexpr int kLineWork = 645;
inline constexpr int kLineB = 620;  ///< fork_join_lines: B's loop (its handler body's one line)
inline std::string line_name(int line) { return "known_answer.hpp:" + std::to_string(line); }

/// sleepers*: per round A computes kSleepersA units then waits kSleepersAWait
/// units, B computes kSleepersB then waits kSleepersBWait (virtual timers);
/// the round ends when both are done (14 ms at the default unit: B's path).
inline constexpr double kSleepersA = 4, kSleepersAWait = 5, kSleepersB = 8, kSleepersBWait = 20;

/// True for the three shapes of the sleepers workload.
inline constexpr bool is_sleepers(Workload w) noexcept {
  return w == Workload::sleepers || w == Workload::sleepers_spin || w == Workload::sleepers_send;
}

/// farm: jobs in flight (one per worker actor), and the stages' costs in units.
inline constexpr int kFarmWorkers = 4;
inline constexpr double kFarmUnitsA = 1.0 / 16;
inline constexpr double kFarmUnitsB = 1.0 / 64;

inline std::string_view to_string(Workload w) noexcept {
  switch (w) {
    case Workload::fork_join: return "fork_join";
    case Workload::pipeline: return "pipeline";
    case Workload::ping_pong: return "ping_pong";
    case Workload::timer_stage: return "timer_stage";
    case Workload::farm: return "farm";
    case Workload::sleepers: return "sleepers";
    case Workload::sleepers_spin: return "sleepers_spin";
    case Workload::sleepers_send: return "sleepers_send";
    case Workload::fork_join_lines: return "fork_join_lines";
    case Workload::shared_callee: return "shared_callee";
  }
  return "?";
}

inline std::optional<Workload> parse_workload(std::string_view s) noexcept {
  for (Workload w : kAllWorkloads) {
    if (to_string(w) == s) return w;
  }
  return std::nullopt;
}

/// One stage of a workload: its --speed key, its region's name, its cost in
/// units (0 for the timer stage, which computes nothing), the kind of region
/// ("handler" or "line"), the cost slots (bit 0: Shared::a_cycles, 1:
/// b_cycles, 2: c_cycles) that --speed KEY=S really shortens, and the source
/// line of the stage's loop ("known_answer.hpp:N") where the stage has one
/// of its own (what Coz's --fixed-line can select; empty where the loop is
/// spin_cycles, shared by every stage of the workload).
struct Stage {
  std::string key;
  std::string region;
  double units;
  std::string kind = "handler";
  unsigned slots = 0;
  std::string line = {};
};

/// The stages of `w` that --speed and the profiler's regions refer to.
inline std::vector<Stage> stages(Workload w) {
  switch (w) {
    case Workload::fork_join:
      return {{"A", "fork_join::A::on(fork_join::Go)", 2, "handler", 1}, {"B", "fork_join::B::on(fork_join::Go)", 1, "handler", 2}};
    case Workload::pipeline:
      return {{"A", "pipeline::A::on(pipeline::Produce)", 2, "handler", 1}, {"B", "pipeline::B::on(pipeline::Item)", 1, "handler", 2}};
    case Workload::ping_pong:
      return {{"A", "ping_pong::A::on(ping_pong::Ball)", 2, "handler", 1}, {"B", "ping_pong::B::on(ping_pong::Ball)", 1, "handler", 2}};
    case Workload::timer_stage:
      return {{"A", "timer_stage::A::on(timer_stage::Go)", 2, "handler", 1}, {"T", "timer_stage::T::on(timer_stage::Go)", 0, "handler", 0}};
    case Workload::farm:
      return {{"A", "farm::W::on(farm::Job)", kFarmUnitsA, "handler", 1}, {"B", "farm::D::on(farm::Done)", kFarmUnitsB, "handler", 2}};
    case Workload::sleepers:
    case Workload::sleepers_spin:
    case Workload::sleepers_send:
      return {{"A", "sleepers::A::on(sleepers::Go)", kSleepersA, "handler", 1},
              {"B", "sleepers::B::on(sleepers::Go)", kSleepersB, "handler", 2}};
    case Workload::fork_join_lines:
      return {{"a1", line_name(kLineA1), 2, "line", 1, line_name(kLineA1)},
              {"a2", line_name(kLineA2), 1, "line", 4, line_name(kLineA2)},
              {"B", "fork_join_lines::B::on(fork_join_lines::Go)", 1.5, "handler", 2, line_name(kLineB)}};
    case Workload::shared_callee:
      return {{"work@A", "shared_callee::A::on(shared_callee::Go) @ " + line_name(kLineWork), 2, "line", 1, line_name(kLineWork)},
              {"work@B", "shared_callee::B::on(shared_callee::Go) @ " + line_name(kLineWork), 1, "line", 2, line_name(kLineWork)},
              {"work", line_name(kLineWork), 3, "line", 3, line_name(kLineWork)}};
  }
  return {};
}

/// The ideal program speedup (1 - period_s / period_0) of making stage `key`
/// of `w` a fraction s faster, hand-off costs neglected (the header comment).
inline double ideal_speedup(Workload w, std::string_view key, double s) {
  switch (w) {
    case Workload::fork_join:
    case Workload::pipeline:
    case Workload::timer_stage:
      return key == "A" ? std::min(s, 0.5) : 0.0;
    case Workload::ping_pong:
      return key == "A" ? 2.0 * s / 3.0 : key == "B" ? s / 3.0 : 0.0;
    case Workload::farm: {
      // period = max((a' + b')/2, b') with the sped-up stage's cost scaled by (1 - s).
      const double a = kFarmUnitsA * (key == "A" ? 1.0 - s : 1.0);
      const double b = kFarmUnitsB * (key == "B" ? 1.0 - s : 1.0);
      const double p0 = (kFarmUnitsA + kFarmUnitsB) / 2;
      return 1.0 - std::max((a + b) / 2, b) / p0;
    }
    case Workload::sleepers:
    case Workload::sleepers_spin:
    case Workload::sleepers_send: {
      // period = max(A's path, B's path), a stage's compute scaled by (1 - s).
      const double pa = kSleepersA * (key == "A" ? 1.0 - s : 1.0) + kSleepersAWait;
      const double pb = kSleepersB * (key == "B" ? 1.0 - s : 1.0) + kSleepersBWait;
      return 1.0 - std::max(pa, pb) / (kSleepersB + kSleepersBWait);
    }
    case Workload::fork_join_lines:
      return key == "a1" ? std::min(2.0 * s / 3.0, 0.5) : key == "a2" ? s / 3.0 : 0.0;
    case Workload::shared_callee:
      return key == "work@A" ? std::min(s, 0.5) : key == "work" ? s : 0.0;
  }
  return 0.0;
}

/// Units of stage cost per iteration on the critical path with 2 free cores
/// (hand-offs neglected): what a baseline period close to it says is that the
/// machine gave the workload its two cores (no other process took one).
inline double ideal_period_units(Workload w) noexcept {
  switch (w) {
    case Workload::ping_pong: return 3.0;
    case Workload::fork_join_lines: return 3.0;
    case Workload::farm: return (kFarmUnitsA + kFarmUnitsB) / 2;
    case Workload::sleepers:
    case Workload::sleepers_spin:
    case Workload::sleepers_send: return kSleepersB + kSleepersBWait;
    default: return 2.0;
  }
}

struct Config {
  Workload workload = Workload::fork_join;
  std::chrono::microseconds unit{500};  ///< One unit of stage cost.
  double speed_a = 0;  ///< Stage A really runs (1 - speed_a) of its cost (0..1).
  double speed_b = 0;  ///< Stage B likewise (ignored by timer_stage: T computes nothing).
  double speed_c = 0;  ///< Cost slot c likewise (fork_join_lines: a2).
  uint32_t queue = 4;  ///< pipeline: items in flight (queue bound).
};

/// Shared by a workload's actors; outlives the runtime's handlers.
struct Shared {
  /// Stage A's and B's busy loops, TSC cycles. Atomics (relaxed) so that a
  /// harness may really speed a stage up while the workload runs.
  std::atomic<uint64_t> a_cycles{0};
  std::atomic<uint64_t> b_cycles{0};
  std::atomic<uint64_t> c_cycles{0};  ///< fork_join_lines: loop a2.
  uint64_t unit_cycles = 0;  ///< One unit, TSC cycles (set by start()).
  std::chrono::nanoseconds sleep{0};  ///< timer_stage: T's virtual sleep.
  std::chrono::nanoseconds a_wait{0}, b_wait{0};  ///< sleepers: A's and B's virtual waits.
  bool send_after = false;  ///< sleepers_send: wait with send_after instead of co_await sleep.
  uint32_t queue = 4;
  std::atomic<uint64_t> iterations{0};  ///< Completed iterations (relaxed counter).
  /// Set by stop(): handlers stop passing work on, so the actors quiesce (a
  /// runtime joins its workers only once they go idle).
  std::atomic<bool> stopping{false};
  bool running() const noexcept { return !stopping.load(std::memory_order_relaxed); }
};

/// Busy loop on the TSC: returns once `cycles` have passed since entry. A
/// deadline, not an iteration count, so a time slice lost to another process
/// does not lengthen the stage unless the loop is descheduled past its end.
inline void spin_cycles(uint64_t cycles) noexcept {
  const uint64_t end = calibrate::now_cycles() + cycles;
  while (calibrate::now_cycles() < end) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }
}

/// The busy loop of the line workloads, as a macro so that every instruction
/// of it belongs to the line where it is used (x86-64 with an invariant TSC:
/// the cycles are calibrate::now_cycles() cycles there).
#define COACT_KA_SPIN(cycles)                                                                   \
  do {                                                                                          \
    const uint64_t coact_ka_end_ = __builtin_ia32_rdtsc() + (cycles);                           \
    while (__builtin_ia32_rdtsc() < coact_ka_end_) __builtin_ia32_pause();                      \
  } while (0)

inline void iteration_done(Shared& sh) noexcept {
  COACT_PROGRESS(kProgressPoint);
#if defined(COACT_KA_COZ)
  COZ_PROGRESS_NAMED(kProgressPoint);  // the coz-flavoured build (coact-known-answer-coz): Coz's progress point
#endif
  sh.iterations.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace coact::known_answer

// The actors live in short top-level namespaces so that their regions read
// "fork_join::A::on(fork_join::Go)" in profiles and tables.

namespace fork_join {
namespace ka = coact::known_answer;
struct Join;
struct Go {
  coact::ActorRef<Join> join;
};
struct Done {
  int branch;
};
struct Start {};
struct A : coact::Actor<A> {
  ka::Shared* sh;
  explicit A(ka::Shared* s) : sh(s) {}
  void on(Go& g);
};
struct B : coact::Actor<B> {
  ka::Shared* sh;
  explicit B(ka::Shared* s) : sh(s) {}
  void on(Go& g);
};
struct Join : coact::Actor<Join> {
  ka::Shared* sh;
  coact::ActorRef<A> a;
  coact::ActorRef<B> b;
  int pending = 0;
  Join(ka::Shared* s, coact::ActorRef<A> ra, coact::ActorRef<B> rb) : sh(s), a(std::move(ra)), b(std::move(rb)) {}
  void fork() {
    pending = 2;
    a.send(Go{self()});  // A first: the forking worker keeps the freshest (B), the idle one steals A
    b.send(Go{self()});
  }
  void on(Start&) { fork(); }
  void on(Done&) {
    if (--pending > 0) return;
    ka::iteration_done(*sh);
    if (sh->running()) fork();
  }
};
inline void A::on(Go& g) {
  ka::spin_cycles(sh->a_cycles.load(std::memory_order_relaxed));
  g.join.send(Done{0});
}
inline void B::on(Go& g) {
  ka::spin_cycles(sh->b_cycles.load(std::memory_order_relaxed));
  g.join.send(Done{1});
}
}  // namespace fork_join

namespace pipeline {
namespace ka = coact::known_answer;
struct B;
struct Produce {};
struct Ack {};
struct Item {
  uint64_t seq;
};
struct A : coact::Actor<A> {
  ka::Shared* sh;
  coact::ActorRef<B> b;
  uint32_t credits;
  bool stalled = false;
  uint64_t seq = 0;
  A(ka::Shared* s, coact::ActorRef<B> rb) : sh(s), b(std::move(rb)), credits(s->queue) {}
  void on(Produce&);
  void on(Ack&) {
    ++credits;
    if (stalled && sh->running()) {
      stalled = false;
      self().send(Produce{});
    }
  }
};
struct B : coact::Actor<B> {
  ka::Shared* sh;
  coact::ActorRef<A> a;  // set by Hello
  explicit B(ka::Shared* s) : sh(s) {}
  void on(Item&);
  void on(coact::ActorRef<A>& ra) { a = ra; }
};
inline void A::on(Produce&) {
  ka::spin_cycles(sh->a_cycles.load(std::memory_order_relaxed));
  b.send(Item{seq++});
  if (--credits > 0 && sh->running()) {
    self().send(Produce{});
  } else {
    stalled = true;
  }
}
inline void B::on(Item&) {
  ka::spin_cycles(sh->b_cycles.load(std::memory_order_relaxed));
  ka::iteration_done(*sh);
  a.send(Ack{});
}
}  // namespace pipeline

namespace ping_pong {
namespace ka = coact::known_answer;
struct B;
struct Ball {};
struct A : coact::Actor<A> {
  ka::Shared* sh;
  coact::ActorRef<B> b;
  A(ka::Shared* s, coact::ActorRef<B> rb) : sh(s), b(std::move(rb)) {}
  void on(Ball&);
};
struct B : coact::Actor<B> {
  ka::Shared* sh;
  coact::ActorRef<A> a;
  explicit B(ka::Shared* s) : sh(s) {}
  void on(Ball&);
  void on(coact::ActorRef<A>& ra) { a = ra; }
};
inline void A::on(Ball&) {
  ka::spin_cycles(sh->a_cycles.load(std::memory_order_relaxed));
  ka::iteration_done(*sh);
  if (sh->running()) b.send(Ball{});
}
inline void B::on(Ball&) {
  ka::spin_cycles(sh->b_cycles.load(std::memory_order_relaxed));
  a.send(Ball{});
}
}  // namespace ping_pong

namespace timer_stage {
namespace ka = coact::known_answer;
struct Join;
struct Go {
  coact::ActorRef<Join> join;
};
struct Done {
  int branch;
};
struct Start {};
struct A : coact::Actor<A> {
  ka::Shared* sh;
  explicit A(ka::Shared* s) : sh(s) {}
  void on(Go& g);
};
struct T : coact::Actor<T> {
  ka::Shared* sh;
  explicit T(ka::Shared* s) : sh(s) {}
  coact::Task on(Go& g);
};
struct Join : coact::Actor<Join> {
  ka::Shared* sh;
  coact::ActorRef<A> a;
  coact::ActorRef<T> t;
  int pending = 0;
  Join(ka::Shared* s, coact::ActorRef<A> ra, coact::ActorRef<T> rt) : sh(s), a(std::move(ra)), t(std::move(rt)) {}
  void fork() {
    pending = 2;
    a.send(Go{self()});
    t.send(Go{self()});
  }
  void on(Start&) { fork(); }
  void on(Done&) {
    if (--pending > 0) return;
    ka::iteration_done(*sh);
    if (sh->running()) fork();
  }
};
inline void A::on(Go& g) {
  ka::spin_cycles(sh->a_cycles.load(std::memory_order_relaxed));
  g.join.send(Done{0});
}
inline coact::Task T::on(Go& g) {
  co_await coact::sleep(sh->sleep);  // virtual time: shifts with injected delay
  g.join.send(Done{1});
}
}  // namespace timer_stage

namespace farm {
namespace ka = coact::known_answer;
struct D;
struct Job {
  coact::ActorRef<D> d;
  int worker;
};
struct Done {
  int worker;
};
struct Start {};
struct W : coact::Actor<W> {
  ka::Shared* sh;
  explicit W(ka::Shared* s) : sh(s) {}
  void on(Job& j);
};
struct D : coact::Actor<D> {
  ka::Shared* sh;
  std::vector<coact::ActorRef<W>> workers;
  D(ka::Shared* s, std::vector<coact::ActorRef<W>> ws) : sh(s), workers(std::move(ws)) {}
  void on(Start&) {
    for (int i = 0; i < static_cast<int>(workers.size()); ++i) workers[static_cast<size_t>(i)].send(Job{self(), i});
  }
  void on(Done& d) {
    ka::spin_cycles(sh->b_cycles.load(std::memory_order_relaxed));
    ka::iteration_done(*sh);
    if (sh->running()) workers[static_cast<size_t>(d.worker)].send(Job{self(), d.worker});
  }
};
inline void W::on(Job& j) {
  ka::spin_cycles(sh->a_cycles.load(std::memory_order_relaxed));
  j.d.send(Done{j.worker});
}
}  // namespace farm

namespace sleepers {
// The shape of a program where the compute that looks busy is off the
// critical path: A's branch (compute + wait) is shorter than B's, so only B's
// compute moves the period. A virtual wait armed by a thread that still owes
// injected delay must fire that much later (issue: predicted A ≈ 2s/14).
namespace ka = coact::known_answer;
struct Join;
struct Go {
  coact::ActorRef<Join> join;
};
struct Done {
  int branch;
};
struct Start {};
struct Fire {  // sleepers_send: the timer's mail to the branch itself
  coact::ActorRef<Join> join;
};
template <class Self>
struct Branch : coact::Actor<Self> {
  ka::Shared* sh;
  int index;
  Branch(ka::Shared* s, int i) : sh(s), index(i) {}
  coact::Task on(Go& g);
  void on(Fire& f);
};
struct A : Branch<A> {
  explicit A(ka::Shared* s) : Branch<A>(s, 0) {}
};
struct B : Branch<B> {
  explicit B(ka::Shared* s) : Branch<B>(s, 1) {}
};
struct Join : coact::Actor<Join> {
  ka::Shared* sh;
  coact::ActorRef<A> a;
  coact::ActorRef<B> b;
  int pending = 0;
  Join(ka::Shared* s, coact::ActorRef<A> ra, coact::ActorRef<B> rb) : sh(s), a(std::move(ra)), b(std::move(rb)) {}
  void fork() {
    pending = 2;
    a.send(Go{self()});
    b.send(Go{self()});
  }
  void on(Start&) { fork(); }
  void on(Done&) {
    if (--pending > 0) return;
    ka::iteration_done(*sh);
    if (sh->running()) fork();
  }
};
template <class Self>
coact::Task Branch<Self>::on(Go& g) {
  const auto& cycles = index == 0 ? sh->a_cycles : sh->b_cycles;
  const auto wait = index == 0 ? sh->a_wait : sh->b_wait;
  ka::spin_cycles(cycles.load(std::memory_order_relaxed));
  if (sh->send_after) {
    this->runtime().send_after(this->self(), wait, Fire{g.join});
    co_return;
  }
  co_await coact::sleep(wait);  // virtual time: shifts with injected delay
  g.join.send(Done{index});
}
template <class Self>
void Branch<Self>::on(Fire& f) {
  f.join.send(Done{index});
}
}  // namespace sleepers

// The line workloads: one fork-join template of actors, instantiated per
// namespace so that regions read "fork_join_lines::A::on(fork_join_lines::Go)".
namespace fork_join_lines {
namespace ka = coact::known_answer;
struct Join;
struct Go {
  coact::ActorRef<Join> join;
};
struct Done {};
struct Start {};
struct A : coact::Actor<A> {
  ka::Shared* sh;
  explicit A(ka::Shared* s) : sh(s) {}
  void on(Go& g);
};
struct B : coact::Actor<B> {
  ka::Shared* sh;
  explicit B(ka::Shared* s) : sh(s) {}
  void on(Go& g);
};
struct Join : coact::Actor<Join> {
  ka::Shared* sh;
  coact::ActorRef<A> a;
  coact::ActorRef<B> b;
  int pending = 0;
  Join(ka::Shared* s, coact::ActorRef<A> ra, coact::ActorRef<B> rb) : sh(s), a(std::move(ra)), b(std::move(rb)) {}
  void fork() {
    pending = 2;
    a.send(Go{self()});
    b.send(Go{self()});
  }
  void on(Start&) { fork(); }
  void on(Done&) {
    if (--pending > 0) return;
    ka::iteration_done(*sh);
    if (sh->running()) fork();
  }
};
inline void A::on(Go& g) {
  COACT_KA_SPIN(sh->a_cycles.load(std::memory_order_relaxed)); static_assert(__LINE__ == ka::kLineA1);  // loop a1
  COACT_KA_SPIN(sh->c_cycles.load(std::memory_order_relaxed)); static_assert(__LINE__ == ka::kLineA2);  // loop a2
  g.join.send(Done{});
}
inline void B::on(Go& g) {
  COACT_KA_SPIN(sh->b_cycles.load(std::memory_order_relaxed)); static_assert(__LINE__ == ka::kLineB);  // B's loop
  g.join.send(Done{});
}
}  // namespace fork_join_lines

namespace shared_callee {
namespace ka = coact::known_answer;
struct Join;
struct Go {
  coact::ActorRef<Join> join;
};
struct Done {};
struct Start {};
struct A : coact::Actor<A> {
  ka::Shared* sh;
  explicit A(ka::Shared* s) : sh(s) {}
  void on(Go& g);
};
struct B : coact::Actor<B> {
  ka::Shared* sh;
  explicit B(ka::Shared* s) : sh(s) {}
  void on(Go& g);
};
// The shared callee: one loop on one line, whoever calls it.
__attribute__((noinline)) inline void work(uint64_t cycles) {
  COACT_KA_SPIN(cycles); static_assert(__LINE__ == ka::kLineWork);
}
struct Join : coact::Actor<Join> {
  ka::Shared* sh;
  coact::ActorRef<A> a;
  coact::ActorRef<B> b;
  int pending = 0;
  Join(ka::Shared* s, coact::ActorRef<A> ra, coact::ActorRef<B> rb) : sh(s), a(std::move(ra)), b(std::move(rb)) {}
  void fork() {
    pending = 2;
    a.send(Go{self()});
    b.send(Go{self()});
  }
  void on(Start&) { fork(); }
  void on(Done&) {
    if (--pending > 0) return;
    ka::iteration_done(*sh);
    if (sh->running()) fork();
  }
};
inline void A::on(Go& g) {
  work(sh->a_cycles.load(std::memory_order_relaxed));
  g.join.send(Done{});
}
inline void B::on(Go& g) {
  work(sh->b_cycles.load(std::memory_order_relaxed));
  g.join.send(Done{});
}
}  // namespace shared_callee

namespace coact::known_answer {

/// Whether the known answers of `w` hold only with each runtime worker on a
/// core of its own, so that coact-known-answer and the accuracy test pin the
/// workers (worker_pinning.hpp): sleepers and sleepers_send. Their pool parks
/// for most of every round, so each round starts with a cross-CPU wake, and the
/// kernel may place the woken worker on the forking worker's core: the
/// forking worker then stalls while its sibling runs A, and B after it, so A
/// is on the real program's critical path. A slightly faster A mostly avoids
/// that stall (a step in the really-faster program's curve, not a slope), and
/// no virtual speedup can predict it: a virtual speedup keeps A's real length
/// and with it the kernel's decision. Pinned, each wake lands on the idle
/// core and the program has the shape its ideal describes. The other
/// workloads, sleepers_spin included, keep their idle workers spinning
/// through the round's gaps (workload_tuning), so no wake placement decides
/// their period, and unpinned workers can still move off a core that another
/// process takes.
inline constexpr bool pins_workers(Workload w) noexcept {
  return w == Workload::sleepers || w == Workload::sleepers_send;
}

/// The runtime tuning the known answers assume (header comment), starting
/// from `base` (e.g. resolve_tuning(): COACT_* knobs still apply to the rest).
/// sleepers_spin: an idle worker spins through the whole round (it never
/// parks); sleepers: the pool parks while both branches wait.
inline SchedulerTuning workload_tuning(SchedulerTuning base, std::chrono::microseconds unit,
                                       Workload w = Workload::fork_join) {
  base.workers = 2;
  base.peer_steal = true;
  // Longer than the longest idle gap (2 units) plus slack.
  base.spin_window_us = static_cast<uint32_t>(std::max<int64_t>(base.spin_window_us, 4 * unit.count()));
  if (w == Workload::sleepers_spin) {
    const double round = kSleepersB + kSleepersBWait;  // longer than any idle gap of the round
    base.spin_window_us = static_cast<uint32_t>(2 * round * static_cast<double>(unit.count()));
  }
  return base;
}

/// Sets the real speed of stages A and B (fractions of their cost removed,
/// 0..1) while the workload runs. Any thread; takes effect at each stage's
/// next run.
inline void set_speed(Shared& sh, Workload w, double speed_a, double speed_b, double speed_c = 0) {
  auto cost = [&](double units, double speed) {
    return static_cast<uint64_t>(static_cast<double>(sh.unit_cycles) * units * (1.0 - speed));
  };
  // Base units of the cost slots a, b, c: the single-slot stages' units.
  double units[3] = {0, 0, 0};
  for (const auto& st : stages(w)) {
    for (int i = 0; i < 3; ++i) {
      if (st.slots == (1u << i)) units[i] = st.units;
    }
  }
  sh.a_cycles.store(cost(units[0], speed_a), std::memory_order_relaxed);
  sh.b_cycles.store(cost(units[1], speed_b), std::memory_order_relaxed);
  sh.c_cycles.store(cost(units[2], speed_c), std::memory_order_relaxed);
}

/// Spawns the actors of `c.workload` in `rt` and starts them; they run until
/// the runtime stops. `sh` must outlive the runtime's handlers.
inline void start(Runtime& rt, const Config& c, Shared& sh) {
  sh.unit_cycles = calibrate::duration_to_cycles(c.unit);
  set_speed(sh, c.workload, c.speed_a, c.speed_b, c.speed_c);
  sh.queue = c.queue == 0 ? 1 : c.queue;
  switch (c.workload) {
    case Workload::fork_join: {
      auto a = rt.spawn<fork_join::A>(&sh);
      auto b = rt.spawn<fork_join::B>(&sh);
      auto j = rt.spawn<fork_join::Join>(&sh, a, b);
      j.send(fork_join::Start{});
      break;
    }
    case Workload::pipeline: {
      auto b = rt.spawn<pipeline::B>(&sh);
      auto a = rt.spawn<pipeline::A>(&sh, b);
      b.send(a);  // the consumer learns where to send acks before the first item
      a.send(pipeline::Produce{});
      break;
    }
    case Workload::ping_pong: {
      auto b = rt.spawn<ping_pong::B>(&sh);
      auto a = rt.spawn<ping_pong::A>(&sh, b);
      b.send(a);
      a.send(ping_pong::Ball{});
      break;
    }
    case Workload::timer_stage: {
      sh.sleep = std::chrono::duration_cast<std::chrono::nanoseconds>(c.unit);
      auto a = rt.spawn<timer_stage::A>(&sh);
      auto t = rt.spawn<timer_stage::T>(&sh);
      auto j = rt.spawn<timer_stage::Join>(&sh, a, t);
      j.send(timer_stage::Start{});
      break;
    }
    case Workload::sleepers:
    case Workload::sleepers_spin:
    case Workload::sleepers_send: {
      auto units = [&](double u) {
        return std::chrono::nanoseconds(static_cast<int64_t>(u * static_cast<double>(c.unit.count()) * 1000.0));
      };
      sh.a_wait = units(kSleepersAWait);
      sh.b_wait = units(kSleepersBWait);
      sh.send_after = c.workload == Workload::sleepers_send;
      auto a = rt.spawn<sleepers::A>(&sh);
      auto b = rt.spawn<sleepers::B>(&sh);
      auto j = rt.spawn<sleepers::Join>(&sh, a, b);
      j.send(sleepers::Start{});
      break;
    }
    case Workload::fork_join_lines: {
      auto a = rt.spawn<fork_join_lines::A>(&sh);
      auto b = rt.spawn<fork_join_lines::B>(&sh);
      auto j = rt.spawn<fork_join_lines::Join>(&sh, a, b);
      j.send(fork_join_lines::Start{});
      break;
    }
    case Workload::shared_callee: {
      auto a = rt.spawn<shared_callee::A>(&sh);
      auto b = rt.spawn<shared_callee::B>(&sh);
      auto j = rt.spawn<shared_callee::Join>(&sh, a, b);
      j.send(shared_callee::Start{});
      break;
    }
    case Workload::farm: {
      std::vector<ActorRef<farm::W>> ws;
      for (int i = 0; i < kFarmWorkers; ++i) ws.push_back(rt.spawn<farm::W>(&sh));
      auto d = rt.spawn<farm::D>(&sh, std::move(ws));
      d.send(farm::Start{});
      break;
    }
  }
}

}  // namespace coact::known_answer
