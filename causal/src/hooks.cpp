// causal/src/hooks.cpp: slow paths of the runtime hooks (coact/causal/hooks.hpp)
// and the kind namer. The hooks run only while a sweep is active:
// handler enter/exit drive the region stack (region_stack.cpp: visits, exclusive
// cycles, virtual speedup, handler-completion points); pay points and resumes
// drive the delay ledger.
#include <coact/causal/hooks.hpp>

#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/region.hpp>
#include <coact/causal/sampler.hpp>

#include <pthread.h>

#include <algorithm>
#include <utility>

#include <coact/calibrate/tsc.hpp>

namespace coact::causal {

namespace {
// The runtime's kind namer. Written by set_kind_namer (any thread, release),
// read when a handler region is first named (acquire): the pointer is all
// that is published, and the function it points to is code.
std::atomic<std::string (*)(uint32_t)> g_kind_namer{nullptr};
}  // namespace

void set_kind_namer(std::string (*namer)(uint32_t)) noexcept { g_kind_namer.store(namer, std::memory_order_release); }

namespace detail {

std::string (*kind_namer() noexcept)(uint32_t) { return g_kind_namer.load(std::memory_order_acquire); }

namespace {
// fork() while a sweep runs: the child leaves the sweep. Its one thread (the
// forking one) would otherwise inherit the running experiment, the global
// delay and its own debt, and pay them at its first send (a 1.05 s job took
// up to 22.6 s), and its exit would end the parent's sweep in the parent's
// profile. So in the child: hooks off, no experiment selected, G and the
// thread's L zero, its region stack empty, the parent's controller
// forgotten and no sweep started from the environment (controller.cpp).
void leave_sweep_in_child() noexcept {
  g_sweep_active.store(false, std::memory_order_relaxed);
  leave_sweep_in_forked_child();
  reset_regions_in_forked_child();
  reset_ledger_in_forked_child();
}
[[maybe_unused]] const int g_atfork = ::pthread_atfork(nullptr, nullptr, &leave_sweep_in_child);
}  // namespace

#if COACT_CAUSAL_ENABLED
namespace {
// Below this, a thread counts as caught up (about 0.2 µs of cycles).
constexpr uint64_t kPayCatchUpCycles = 512;
// Safety cap on payment rounds in one pay point. The loop ends by itself
// when the experiment ends (end_experiment publishes the rest and clears the
// selection), so this only bounds a pathological case.
constexpr int kMaxPayRounds = 10'000'000;
// This thread's excess: cycles its pay points took beyond what it owed (a
// late wake, a lost time slice, and the pay point's own bookkeeping), not
// yet injected as delay. Published (add_delay) once it passes
// kPayCatchUpCycles: one RMW on G per several pay points that each took a
// few hundred cycles, not one per pay point. Own thread only.
constinit thread_local uint64_t t_excess_cycles = 0;

}  // namespace

// hook_handler_enter / hook_handler_exit are defined in handler_sampling.cpp (next to
// their fast paths, so a hook is one call).

namespace {
[[gnu::noinline]] void pay_point_slow() noexcept;
}  // namespace

void hook_pay_point() noexcept {
  // While no delay was ever injected (a sweep at speedup 0) a pay point is
  // this one load: the slow path's frame (try/catch, the pay loop) is not set
  // up twice per message for nothing.
  if (global_delay_cycles() == 0) return;
  pay_point_slow();
}

void hook_pay_point_in_handler() noexcept {
  if (global_delay_cycles() == 0) return;
  // What the selected region has run on other threads so far is owed now
  // (materialize_live), and this thread's own samples' delay is not. A
  // thread that then owes no more than a catch-up's worth would wait for
  // nothing: it sends at once, its fast frame left fast and its region
  // unsuspended (as after a pay at its last dispatch, with no other thread
  // in the selected region since). The rest, under kPayCatchUpCycles, is
  // owed at the next pay point.
  (void)materialize_live();
  if (const uint64_t own = take_sample_credit(); own != 0) credit_local(own);
  if (global_delay_cycles() <= local_delay_cycles() + kPayCatchUpCycles) return;
  // The running region is suspended while the thread pays: the wait is
  // neither its exclusive time nor its virtual speedup, as a pay point at the
  // flush (after the handler's exit) is not. Closing its segment first also
  // means no payer waits on this thread's part of the selected region while
  // this thread waits on theirs.
  suspend_running_segment();
  pay_point_slow();
  resume_running_segment();
}

namespace {
void pay_point_slow() noexcept {
  // Pay until caught up: first publish what the selected region has run so
  // far on other threads (it is owed now, not when the region ends), then
  // wait; delay that accrues while waiting is owed too. A thread must not
  // make another runnable before the wall time at which its own virtual time
  // has caught up with the global delay, or a consumer of its mail would see
  // it virtually early (fork-join's short branch would beat the sped-up long
  // one past the plateau). While a region with speedup s < 1 runs, each
  // round waits about s times the previous one; with s = 1 the thread waits
  // until the region's segment ends, as it would in virtual time.
  //
  // Accounting (the ledger's pay_debt would credit only what was owed at
  // its entry): L0 = this thread's L at entry; every cycle spent in this
  // pay point, from its entry (its own bookkeeping: publishing live
  // accrual, reading the ledger) counts as paid; at the end L = G
  // (credit_resume). Time beyond what was owed — a nanosleep that woke
  // late, a time slice lost while spinning, and the bookkeeping of a pay
  // point that owed nothing — delayed this thread beyond the virtual
  // schedule: the profiler's time, which the program does not have. That
  // excess becomes injected delay (add_delay: G and this thread's L grow by
  // it; t_excess_cycles batches the small ones), so every other thread owes
  // it too and the program's virtual time stays consistent: effective time
  // (wall − G) leaves it out. Without it, a critical-path region's
  // prediction falls below its truth: by late wakes on a loaded machine
  // (fork-join A near its plateau; the accuracy tests), and, where handlers
  // are short, by the bookkeeping, which costs more while a region is sped
  // up than in a speedup-0 window, and nothing before any delay was
  // injected (the farm workload's W: short handlers on both workers).
  // Coz keeps such overshoot as the overshooting thread's "excess delay"
  // instead; here it would be lost at once, since a worker that paid is
  // usually credited on its next resume.
  try {
    const uint64_t start = calibrate::now_cycles();
    // Delay injected for this thread's own samples of a selected line
    // (line_region.cpp) is not owed by it.
    if (const uint64_t own = take_sample_credit(); own != 0) credit_local(own);
    (void)materialize_live();
    uint64_t g = global_delay_cycles();
    const uint64_t l0 = local_delay_cycles();
    uint64_t now = calibrate::now_cycles();
    for (int i = 0; i < kMaxPayRounds; ++i) {
      const uint64_t covered = l0 + (now - start);
      if (g <= covered + kPayCatchUpCycles) break;
      wait_until_cycles(now + (g - covered));  // the ledger's spin / sleep wait
      (void)materialize_live();
      g = global_delay_cycles();
      now = calibrate::now_cycles();
    }
    const uint64_t covered = l0 + (now - start);
    if (covered < g) {
      // Owed less than kPayCatchUpCycles more than this pay point took: the
      // time it took is paid, the rest is owed at the next pay point.
      credit_local(now - start);
      return;
    }
    credit_resume();  // L = G (>= g)
    const uint64_t l1 = local_delay_cycles();
    if (covered > l1) t_excess_cycles += covered - l1;
    if (t_excess_cycles > kPayCatchUpCycles) add_delay(std::exchange(t_excess_cycles, 0));
  } catch (...) {
    // Only a first-use tsc_hz() with a bad COACT_TSC_HZ throws; the controller
    // calls tsc_hz() before activating a sweep, so this is unreachable there.
  }
}
}  // namespace

void hook_resume() noexcept {
  // L = G covers the delay of this thread's own samples too: a credit still
  // pending would otherwise forgive it later delay that others injected.
  (void)take_sample_credit();
  credit_resume();
}

uint64_t hook_timer_stamp() noexcept {
  // The running region's speedup so far goes into G and this thread's L
  // first (settle_running_segment): else the part of it not yet in L would
  // shift the thread's own timer by its own speedup.
  settle_running_segment();
  if (const uint64_t own = take_sample_credit(); own != 0) credit_local(own);  // its own samples' delay too
  return std::min(local_delay_cycles(), global_delay_cycles());
}
#endif

}  // namespace detail
}  // namespace coact::causal
