// bench/timers/coact_timers.cpp: the timer scenarios written for coact, with
// the same pattern as caf_timers.cpp.
//
//   coact-timers --scenario lateness|idle_cpu|cancel_rate [options] [--workers 2]
//
// Runs the scenario once and prints one JSON line (timers_common.hpp defines
// the scenarios and their figures); exits 1 on an inconsistent result.
// The scheduler tuning is resolve_tuning() (so COACT_* environment knobs and
// COACT_CONFIG apply, for experiments) with `workers` forced to --workers
// (bench/common/coact_support.hpp).
// Timers are armed from handlers with runtime().send_after(self-ref, d, msg)
// (virtual anchor; without a causal sweep identical to send_after_wall).
#include <coact/runtime/runtime.hpp>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "coact_support.hpp"
#include "timers_common.hpp"

namespace {

using namespace coact::bench;

constexpr const char* kRuntime = "coact";

// The kernel's floor under the idle_cpu and idle-pool lateness figures,
// measured after coact's run in the same process: one bare thread in the parker's timed futex wait
// (timer slack 1 ns, as the workers set it), woken once per period with
// nothing else to do and no early wake. Its CPU per wake (getrusage
// RUSAGE_THREAD) is what no runtime can go below with one kernel timer wake
// per period; its lateness (wake - requested instant) is the wake latency
// distribution the timekeeper's early wake works against (spin_window.hpp).
json_line measure_floor(uint64_t period_ns, uint64_t duration_ns) {
  json_line out = json_line::object();
  std::thread t([&] {
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    const auto thread_cpu_s = [] {
      rusage ru{};
      getrusage(RUSAGE_THREAD, &ru);
      return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    };
    int32_t word = 0;  // never changes: every wait ends by its timeout
    const int64_t period = int64_t(period_ns);
    std::vector<double> late_us;
    const double c0 = thread_cpu_s();
    const int64_t w0 = now_ns();
    int64_t next = w0 + period;
    while (next < w0 + int64_t(duration_ns)) {
      for (int64_t now = now_ns(); now < next; now = now_ns()) {
        timespec ts{time_t((next - now) / 1'000'000'000), long((next - now) % 1'000'000'000)};
        syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, nullptr, 0);
      }
      late_us.push_back(double(now_ns() - next) * 1e-3);
      next += period;
    }
    const double cpu = thread_cpu_s() - c0;
    const double wall = double(now_ns() - w0) * 1e-9;
    std::sort(late_us.begin(), late_us.end());
    const auto q = [&](double f) { return late_us.empty() ? 0.0 : late_us[size_t(f * double(late_us.size() - 1))]; };
    out = {{"floor_cpu_pct", rounded(100.0 * cpu / wall, 3)},
           {"floor_us_per_wake", rounded(late_us.empty() ? 0.0 : cpu * 1e6 / double(late_us.size()), 2)},
           {"floor_late_p5_us", rounded(q(0.05), 1)},
           {"floor_late_p50_us", rounded(q(0.5), 1)},
           {"floor_late_p99_us", rounded(q(0.99), 1)}};
  });
  t.join();
  return out;
}

// ---- lateness -------------------------------------------------------------------

struct chain_start {};
struct tick {
  int64_t arm_ns;
};

struct chain_actor : coact::Actor<chain_actor> {
  lateness_state* s;
  uint32_t index;
  uint64_t fired = 0;
  coact::ActorRef<chain_actor> me;
  chain_actor(lateness_state* st, uint32_t i) : s(st), index(i) {}

  void arm() {
    const int64_t t = s->before_arm(index);
    runtime().send_after(me, std::chrono::nanoseconds(s->period_ns), tick{t});
  }
  void on(const chain_start&) {
    me = self();
    arm();
  }
  void on(const tick& m) {
    if (s->on_fire(index, m.arm_ns, fired)) arm();
  }
};

struct busy_msg {};
struct busy_actor;
struct busy_link {
  coact::ActorRef<busy_actor> next;  // itself (self) or its partner (pairs)
};

// Spins busy_ns per handler, then sends the next busy_msg to `next`.
struct busy_actor : coact::Actor<busy_actor> {
  lateness_state* s;
  coact::ActorRef<busy_actor> next;
  uint64_t handled = 0;
  explicit busy_actor(lateness_state* st) : s(st) {}
  ~busy_actor() override { s->busy_handlers.fetch_add(handled, std::memory_order_relaxed); }

  void work() {
    if (s->stop_busy.load(std::memory_order_relaxed)) return;
    spin_for_ns(s->busy_ns);
    ++handled;
    next.send(busy_msg{});
  }
  void on(busy_link& m) { next = std::move(m.next); }
  void on(const busy_msg&) { work(); }
};

void run_lateness(coact::Runtime& rt, const timer_args& a) {
  lateness_state s(a);
  std::vector<coact::ActorRef<chain_actor>> chains;
  for (uint32_t i = 0; i < a.chains; ++i) chains.push_back(rt.spawn<chain_actor>(&s, i));
  std::vector<coact::ActorRef<busy_actor>> busy;
  if (a.load != "idle")
    for (uint32_t i = 0; i < a.busy_actors; ++i) busy.push_back(rt.spawn<busy_actor>(&s));

  const coact::RuntimeStats st0 = rt.stats();
  const int64_t start = now_ns();
  for (auto& c : chains) c.send(chain_start{});
  while (!s.all_armed()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  const int64_t load_start = now_ns();
  // Every link is in its actor's inbox before any seed is sent (a partner's
  // first busy_msg can only come after the seed), so no handler sees a null `next`.
  for (size_t i = 0; i < busy.size(); ++i)
    busy[i].send(busy_link{a.load == "self" ? busy[i] : busy[i ^ 1]});
  for (auto& b : busy) b.send(busy_msg{});  // the seed: 4 runnable messages
  const uint32_t stalled = s.wait_done_or_stalled();
  const int64_t end = now_ns();
  const coact::RuntimeStats st1 = rt.stats();

  s.stop_busy.store(true, std::memory_order_relaxed);
  for (auto& b : busy) b.stop();
  for (auto& c : chains) c.stop();
  rt.run();  // returns once every actor stopped
  busy.clear();
  chains.clear();
  check_lateness(kRuntime, a, s, stalled);
  // The idle pool's floor: a bare thread's timed wake at the same period
  // (1000 wakes; the runtime is quiet now), what a runtime that parks until
  // the deadline and does not spin gets.
  // The runtime's side over the run: kernel timer wakes, wakes of a sibling
  // (futex_wakes: a cross-thread wake per fired timer would be on its path),
  // injector pushes, and the timekeeper's early-wake spin and wake lateness.
  const uint64_t timed = st1.timed_parks - st0.timed_parks;
  const double per = timed == 0 ? 0.0 : 1e-3 / double(timed);
  json_line extra{{"timed_parks", timed},
                  {"futex_wakes", st1.futex_wakes - st0.futex_wakes},
                  {"injector_pushes", st1.injector_pushes - st0.injector_pushes},
                  {"early_spin_us_per_park", rounded(double(st1.early_wake_spin_ns - st0.early_wake_spin_ns) * per, 2)},
                  {"wake_late_us_per_park", rounded(double(st1.wake_late_ns - st0.wake_late_ns) * per, 2)}};
  if (a.load == "idle")
    extra.update(measure_floor(a.period_us * 1000, std::min<uint64_t>(1000, a.timers) * a.period_us * 1000));
  print_lateness(kRuntime, a, s, stalled, start, end, load_start, extra);
}

// ---- idle_cpu --------------------------------------------------------------------

struct periodic_tick {};

struct periodic_actor : coact::Actor<periodic_actor> {
  idle_state* s;
  std::chrono::nanoseconds period;
  coact::ActorRef<periodic_actor> me;
  periodic_actor(idle_state* st, std::chrono::nanoseconds p) : s(st), period(p) {}
  void on(const chain_start&) {
    me = self();
    runtime().send_after(me, period, periodic_tick{});
  }
  void on(const periodic_tick&) {
    s->ticks.fetch_add(1, std::memory_order_release);
    runtime().send_after(me, period, periodic_tick{});
  }
};

void run_idle_cpu(coact::Runtime& rt, const timer_args& a) {
  idle_state s;
  auto p = rt.spawn<periodic_actor>(&s, std::chrono::milliseconds(a.period_ms));
  p.send(chain_start{});
  // Runtime counters over the window: how often workers parked and were woken
  // per tick (the idle path's share of the CPU figure).
  coact::RuntimeStats st0;
  measure_idle_cpu(kRuntime, a, s, [&](bool end) -> json_line {
    if (!end) {
      st0 = rt.stats();
      return json_line::object();
    }
    const coact::RuntimeStats st1 = rt.stats();
    const uint64_t timed = st1.timed_parks - st0.timed_parks;
    const double per = timed == 0 ? 0.0 : 1e-3 / double(timed);
    p.stop();  // the runtime goes quiet: the floor is measured alone
    json_line floor = measure_floor(uint64_t(a.period_ms) * 1'000'000, uint64_t(a.duration_ms) * 1'000'000);
    json_line line{{"parks", st1.parks - st0.parks},
            {"futex_wakes", st1.futex_wakes - st0.futex_wakes},
            {"timed_parks", timed},
            // The timekeeper's early wake, per timed park (µs): how long it spun
            // before the deadline, and how late its park returned past the early wake.
            {"early_spin_us_per_park", rounded(double(st1.early_wake_spin_ns - st0.early_wake_spin_ns) * per, 2)},
            {"wake_late_us_per_park", rounded(double(st1.wake_late_ns - st0.wake_late_ns) * per, 2)}};
    line.update(floor);
    return line;
  });
  p = {};
  rt.run();
}

// ---- cancel_rate -----------------------------------------------------------------

struct cancel_batch {};
struct never_msg {};

struct cancel_actor : coact::Actor<cancel_actor> {
  cancel_state* s;
  std::chrono::nanoseconds delay;
  int64_t duration_ns;
  coact::ActorRef<cancel_actor> me;
  uint64_t pairs = 0, cancelled = 0;
  int64_t start = 0;
  cancel_actor(cancel_state* st, std::chrono::nanoseconds d, int64_t dur) : s(st), delay(d), duration_ns(dur) {}

  void on(const cancel_batch&) {
    if (!me) {
      me = self();
      start = now_ns();
    }
    coact::Runtime& rt = runtime();
    const int64_t batch_t0 = now_ns();
    for (uint32_t i = 0; i < kCancelBatch; ++i) {
      coact::TimerId id = rt.send_after(me, delay, never_msg{});
      if (rt.cancel(id)) {
        ++cancelled;
      } else if (now_ns() - batch_t0 < delay.count()) {
        // Lost the race although less than the delay passed since it was armed:
        // the timer fired early (a runtime bug, not preemption).
        s->early.fetch_add(1, std::memory_order_relaxed);
      }
    }
    pairs += kCancelBatch;
    const int64_t now = now_ns();
    if (now - start < duration_ns) {
      me.send(cancel_batch{});
      return;
    }
    s->start_ns.store(start);
    s->end_ns.store(now);
    s->pairs.store(pairs);
    s->cancelled.store(cancelled);
    s->finished.store(true, std::memory_order_release);
  }
  // Only a timer whose cancel() returned false may arrive (exactly once).
  void on(const never_msg&) { s->delivered.fetch_add(1, std::memory_order_relaxed); }
};

void run_cancel_rate(coact::Runtime& rt, const timer_args& a) {
  cancel_state s;
  auto c = rt.spawn<cancel_actor>(&s, std::chrono::milliseconds(a.delay_ms), int64_t(a.duration_ms) * 1'000'000);
  c.send(cancel_batch{});
  wait_flag(s.finished);
  // Stay a little past the delay so a cancelled timer that fired anyway would
  // be seen in `delivered`.
  std::this_thread::sleep_for(std::chrono::milliseconds(a.delay_ms + 20));
  c.stop();
  c = {};
  rt.run();
  // cancel() false means the timer fired first (the handler's thread was
  // descheduled for longer than the delay): its mail is then delivered exactly
  // once; true means never.
  if (s.early.load() != 0)
    fail_check(kRuntime, a, std::to_string(s.early.load()) + " cancels lost to a timer that fired before its delay");
  if (s.delivered.load() != s.pairs.load() - s.cancelled.load())
    fail_check(kRuntime, a,
               "pairs=" + std::to_string(s.pairs.load()) + " cancelled=" + std::to_string(s.cancelled.load()) +
                   " but delivered=" + std::to_string(s.delivered.load()) + " (want pairs - cancelled)");
  print_cancel_rate(kRuntime, a, s, "native");
}

}  // namespace

int main(int argc, char** argv) {
  coact::options::init(argc, argv);  // --coact-* out of argv; a bad option: one line, exit 2
  timer_args a = parse_args(argc, argv);
  apply_timer_slack(a);
  coact_setup setup("coact-timers", a.workers);
  if (!setup.has_workers("coact-timers", a.workers)) return 1;
  coact::Runtime& rt = setup.rt;
  auto dog = arm_watchdog(kRuntime, a, [&rt] {
    coact::RuntimeStats st = rt.stats();
    return "live=" + std::to_string(st.live) + " delivered=" + std::to_string(st.delivered) +
           " dropped_dead=" + std::to_string(st.dropped_dead) + " parks=" + std::to_string(st.parks) +
           " pending_timers=" + std::to_string(rt.pending_timers());
  });
  if (a.scenario == "lateness")
    run_lateness(rt, a);
  else if (a.scenario == "idle_cpu")
    run_idle_cpu(rt, a);
  else
    run_cancel_rate(rt, a);
  return 0;
}
