// causal/src/sample_timers.cpp: the sources that signal a sample (coact/
// causal/sampler.hpp): each registered thread's POSIX CPU-clock timer (the
// base mode) and its perf task-clock event (the precise mode of a line
// experiment), armed for the current mode under g_mu (arm), and the switch
// between the modes (detail::set_armed_period). Part of the sampler's unit
// (detail/sampler_state.hpp).
#include <coact/causal/sampler.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/region.hpp>

#include "detail/sampler_state.hpp"

namespace coact::causal {

namespace {

// The perf event at `period_ns`, opened if it is not open; 0: closed. Closed,
// not just disabled, outside the precise mode: a disabled per-thread event
// still costs each context switch of its thread ~0.8 us here (an enabled
// one ~4.7 us: 13.7 / 14.5 / 18.3 us of CPU per 1-us sleep without, with a
// disabled, with an enabled task-clock event). A signal it queued before it
// was closed is still delivered, weighed by perf_ns.
bool arm_perf(Ring& r, uint64_t period_ns) noexcept {
  if (period_ns == 0) {
    if (r.perf_fd >= 0) (void)::close(r.perf_fd);
    r.perf_fd = -1;
    r.perf_armed = false;
    return true;
  }
  if (r.perf_fd < 0) {
    r.perf_fd = open_task_clock(r.tid, g_signo.load(std::memory_order_relaxed));
    if (r.perf_fd < 0) return false;
    r.prev_sig_fd.store(r.sig_fd.load(std::memory_order_relaxed), std::memory_order_relaxed);
    r.sig_fd.store(r.perf_fd, std::memory_order_relaxed);
  }
  uint64_t p = period_ns;
  r.perf_ns.store(period_ns, std::memory_order_relaxed);
  if (::ioctl(r.perf_fd, PERF_EVENT_IOC_PERIOD, &p) != 0 || ::ioctl(r.perf_fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
    return false;
  }
  r.perf_armed = true;
  return true;
}

// The POSIX CPU-clock timer at `period_ns` (0: disarmed).
bool arm_posix(Ring& r, uint64_t period_ns) noexcept {
  if (period_ns == 0 && !r.posix_armed) return true;
  itimerspec it{};
  it.it_interval.tv_sec = static_cast<time_t>(period_ns / 1'000'000'000);
  it.it_interval.tv_nsec = static_cast<long>(period_ns % 1'000'000'000);
  it.it_value = it.it_interval;
  if (period_ns != 0) r.posix_ns.store(period_ns, std::memory_order_relaxed);
  if (timer_settime(r.timer, 0, &it, nullptr) != 0) return false;
  r.posix_armed = period_ns != 0;
  return true;
}

// Arms `r` for the current mode (under g_mu): off while sampling is off;
// precise mode: the perf event at the armed period, where the thread has
// one; otherwise the POSIX timer at the armed period (the base period, or
// the precise one for a thread without a perf event); a thread whose POSIX
// timer could not be created uses its perf event throughout. The source
// not used is disarmed first (no sample is taken twice).
bool arm(Ring& r) noexcept {
  const uint64_t ns = g_active.load(std::memory_order_relaxed) ? g_armed_ns.load(std::memory_order_relaxed) : 0;
  const bool perf = r.perf_ok && ns != 0 && (g_precise.load(std::memory_order_relaxed) || !r.has_posix);
  bool ok = true;
  if (perf) {
    if (r.has_posix) ok = arm_posix(r, 0);
    if (!arm_perf(r, ns)) {  // could not (re)open it now (fd limit): the POSIX timer at this period instead
      (void)arm_perf(r, 0);
      ok = r.has_posix && arm_posix(r, ns);
    }
  } else {
    ok = arm_perf(r, 0);
    if (r.has_posix) ok = arm_posix(r, ns) && ok;
  }
  r.armed = r.posix_armed || r.perf_armed;
  return ok;
}

// Thread `tid`'s precise CPU-time sampler, a perf event (Coz's choice):
// the software task clock, which counts the thread's CPU time and overflows
// from an hrtimer, so a sample comes every period of CPU time. The POSIX
// CPU-clock timer (the base mode's source) is checked only at the scheduler
// tick (4 ms here): one sample then stands for ~4 periods, and its delay
// (periods x period x s) would reach the other threads in lumps larger than
// a short branch's slack; hence the perf event during line experiments.
// But its hrtimer costs CPU at every expiry and at every context switch of
// the thread while enabled (docs/perf/history/),
// so it is open only then. Created disabled; `signo` to thread `tid` at each
// overflow (O_ASYNC, F_SETSIG, F_SETOWN_EX: the signal carries si_fd, which
// classify checks). -1 if perf events are not
// allowed (e.g. perf_event_paranoid 3, a seccomp filter): the POSIX timer
// then serves both modes.
int open_task_clock(int tid, int signo) noexcept {
  perf_event_attr pe{};
  pe.size = sizeof(pe);
  pe.type = PERF_TYPE_SOFTWARE;
  pe.config = PERF_COUNT_SW_TASK_CLOCK;
  pe.sample_period = 1'000'000'000;  // set at arm()
  pe.disabled = 1;
  pe.exclude_kernel = 1;  // what perf_event_paranoid 2 allows; time in the kernel is not the program's lines
  pe.exclude_hv = 1;
  pe.wakeup_events = 1;
  // pid = tid: a thread of this process, opened from any of its threads
  // (the controller's, at an experiment's start).
  const int fd = static_cast<int>(::syscall(SYS_perf_event_open, &pe, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) return -1;
  f_owner_ex owner{F_OWNER_TID, tid};
  if (::fcntl(fd, F_SETFL, O_ASYNC) != 0 || ::fcntl(fd, F_SETSIG, signo) != 0 ||
      ::fcntl(fd, F_SETOWN_EX, &owner) != 0) {
    (void)::close(fd);
    return -1;
  }
  return fd;
}

// (Re)creates `r`'s POSIX CPU-clock timer to signal `signo` to its thread
// (SIGEV_THREAD_ID, si_value tagged: classify), deleting the one it had.
// Under g_mu; from any thread of the process (the kernel accepts any thread
// of the same process as the target). Sets has_posix.
void make_posix(Ring& r, int signo) noexcept {
  if (r.has_posix) (void)timer_delete(r.timer);
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = signo;
  sev.sigev_value.sival_ptr = tag_value(r.tid);
  sev._sigev_un._tid = r.tid;  // sigev_notify_thread_id (glibc names it only with _GNU_SOURCE in C)
  // The CPU clock of thread r.tid (the kernel's MAKE_THREAD_CPUCLOCK(tid,
  // CPUCLOCK_SCHED), as pthread_getcpuclockid builds it): not
  // CLOCK_THREAD_CPUTIME_ID, which is the calling thread's.
  const auto clock = static_cast<clockid_t>((~static_cast<unsigned>(r.tid) << 3) | 2u | 4u);
  r.has_posix = timer_create(clock, &sev, &r.timer) == 0;
  r.timer_signo = signo;
  r.posix_armed = false;
}

}  // namespace

namespace detail {
bool set_armed_period(std::chrono::nanoseconds period) noexcept {
  std::lock_guard lk(g_mu);
  if (!g_active.load(std::memory_order_relaxed)) return false;
  const bool precise = period.count() > 0;
  uint64_t ns = precise ? static_cast<uint64_t>(period.count()) : g_period_ns.load(std::memory_order_relaxed);
  ns = std::max<uint64_t>(ns, 10'000);  // start_sampling's floor
  if (ns == g_armed_ns.load(std::memory_order_relaxed) && precise == g_precise.load(std::memory_order_relaxed)) {
    return true;
  }
  g_armed_ns.store(ns, std::memory_order_relaxed);
  g_precise.store(precise, std::memory_order_relaxed);
  bool ok = true;
  if (g_rings == nullptr) return ok;
  for (Ring* r : *g_rings) {
    if (r->has_timer && !r->exited) ok = arm(*r) && ok;
  }
  return ok;
}

uint64_t armed_period_ns() noexcept { return g_armed_ns.load(std::memory_order_relaxed); }
}  // namespace detail

}  // namespace coact::causal
