// causal/src/sampler.cpp: per-thread CPU-time sampling (coact/causal/sampler.hpp).
//
// Layout: one Ring per registered thread (single producer: the thread's
// sampling-signal handler; single consumer: drain_samples under g_mu). The handler
// finds its ring through a constinit thread_local pointer (static TLS of the
// executable: no allocation, no __tls_get_addr on first use), so a thread
// that never registered — or has unregistered — ignores the signal.
//
// Handler protocol (async-signal-safe: atomics, copies, reads of the
// thread's own region stack; no malloc, no lock, no unwinding):
//  1. save errno; t_in_handler = true (signal fence);
//  1b. if the signal is not from coact's sources (classify): count it in
//      g_foreign, hand it to the previous disposition (chain); done;
//  2. if sampling is off or this thread has no ring: done;
//  3. if the ring is full (head - tail >= kSampleRing): dropped += 1; done;
//  4. write buf[head % kSampleRing]: the interrupted registers (ucontext),
//     the stack from the interrupted SP up to kSampleStack bytes, never past
//     the thread's stack end (recorded at registration), region, overrun,
//     tid, the source that signalled (classify) and the period that source
//     was armed at (detail::set_armed_period), a count per source;
//     if its PC is on the published sample target (the selected line), its
//     delay: G += x and this ring's credit += x (two relaxed RMWs);
//  5. the sample hook, if set, sees the sample;
//  6. head += 1 (release); t_in_handler = false; restore errno.
//
// The handler stays installed once installed: a signal queued just before
// stop_sampling disarmed a timer must not meet the default disposition
// (which terminates the process). While inactive it returns at step 2 (and
// still hands foreign signals on at 1b). Each signal coact ever sampled with
// keeps its handler (tests start with different signals in one process).
//
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

namespace coact::causal {

namespace {

struct Ring {
  int tid = 0;
  uint64_t stack_lo = 0;  // the thread's stack [lo, hi), from pthread_getattr_np
  uint64_t stack_hi = 0;
  timer_t timer{};      // the POSIX CPU-clock timer, when has_posix
  int timer_signo = 0;  // guarded by g_mu: the signal `timer` was created with
  int perf_fd = -1;     // guarded by g_mu: the task-clock perf event while it is open (precise mode)
  // The thread's last two perf event fds (written under g_mu when one is
  // opened, before it is enabled; read by the handler: a perf signal is
  // coact's when its si_fd is one of them; the previous one covers a signal
  // queued by an event closed since).
  std::atomic<int> sig_fd{-1};
  std::atomic<int> prev_sig_fd{-1};
  bool perf_ok = false;      // guarded by g_mu: a perf event could be opened for the thread at registration
  bool has_posix = false;    // guarded by g_mu
  bool has_timer = false;    // guarded by g_mu: has_posix || perf_ok
  bool exited = false;       // guarded by g_mu
  bool armed = false;        // guarded by g_mu: some source armed
  bool posix_armed = false;  // guarded by g_mu
  bool perf_armed = false;   // guarded by g_mu
  // The period each source was last armed at (written under g_mu before the
  // source is armed; read by the handler on the ring's thread: a sample's
  // period is that of the source that signalled, so a signal still queued
  // from the other source after a switch keeps its own weight).
  std::atomic<uint64_t> posix_ns{0};
  std::atomic<uint64_t> perf_ns{0};
  std::atomic<uint64_t> by_source[3]{};  // samples written, by SampleSource (producer: the handler)
  // Producer: the handler (head, dropped); consumer: drain (tail).
  std::atomic<uint64_t> head{0};
  std::atomic<uint64_t> tail{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> credit{0};  // drain_samples_with_credit adds, the thread takes
  RawSample buf[kSampleRing];
};

std::mutex g_mu;                        // registry, timers, draining
std::vector<Ring*>* g_rings = nullptr;  // guarded by g_mu; leaked (threads may outlive statics)
uint64_t g_registered = 0;              // guarded by g_mu
uint64_t g_exited = 0;                  // guarded by g_mu
uint64_t g_registered_perf = 0;         // guarded by g_mu: registered with a perf event
uint64_t g_registered_posix = 0;        // guarded by g_mu: registered with a POSIX CPU-clock timer
uint64_t g_retired_samples = 0;         // guarded by g_mu: samples of freed rings
uint64_t g_retired_dropped = 0;         // guarded by g_mu
bool g_handler_installed = false;       // guarded by g_mu
bool g_atfork_installed = false;        // guarded by g_mu
// Read by the handler (relaxed: a stale value costs one sample taken or not).
std::atomic<bool> g_active{false};
std::atomic<bool> g_forked_child{false};
std::atomic<uint64_t> g_period_ns{0};
// The period the timers are armed at now: g_period_ns, or the faster one of
// an experiment on a line region (detail::set_armed_period). Written under
// g_mu, read by the handler (the period a sample stands for) and register.
std::atomic<uint64_t> g_armed_ns{0};
// Precise mode (detail::set_armed_period with a period > 0: an experiment on
// a line): threads with a perf event sample with it, the POSIX timer
// disarmed. Otherwise (the base mode) the POSIX CPU-clock timer samples and
// the perf event is disabled. Written under g_mu.
std::atomic<bool> g_precise{false};
uint64_t g_retired_by_source[3] = {};  // guarded by g_mu: by_source of freed rings
std::atomic<detail::SampleHook> g_hook{nullptr};

// The sampling signal (sampler.hpp "The sampling signal"). g_signo: the
// current (or last) start's, written under g_mu. g_auto_signo: the real-time
// signal chosen for start_sampling(signo 0), kept for later starts (guarded
// by g_mu). Per signal (guarded by g_mu): coact's handler is installed;
// a program's handler was there then. g_replaced: check_handler_locked
// found coact's handler replaced since this start (said once on stderr).
std::atomic<int> g_signo{0};
int g_auto_signo = 0;
bool g_installed[_NSIG] = {};
bool g_had_foreign[_NSIG] = {};
bool g_replaced = false;
// Deliveries not from coact's sources (producer: any thread's handler).
std::atomic<uint64_t> g_foreign{0};

// The disposition each signal had when coact installed its handler (chain's
// target): written under g_mu before coact's handler is installed (again
// at a later start if the program had replaced it meanwhile), read by the
// handler. Atomics, so a handler that reads while a later start rewrites
// it sees a field torn between two dispositions at worst, never a data race.
struct ChainTarget {
  std::atomic<uintptr_t> fn{0};  // sa_sigaction / sa_handler, as an integer (SIG_DFL 0, SIG_IGN 1)
  std::atomic<int> flags{0};
  std::atomic<uint64_t> mask[sizeof(sigset_t) / 8]{};
};
ChainTarget g_chain[_NSIG];
constinit thread_local bool t_chaining = false;  // chain() runs on this thread: a target that chains back is cut

void set_chain_target(int sig, const struct sigaction& old) noexcept {
  ChainTarget& c = g_chain[sig];
  uint64_t words[sizeof(sigset_t) / 8];
  std::memcpy(words, &old.sa_mask, sizeof(words));
  for (size_t i = 0; i < sizeof(sigset_t) / 8; ++i) c.mask[i].store(words[i], std::memory_order_relaxed);
  c.flags.store(old.sa_flags, std::memory_order_relaxed);
  c.fn.store((old.sa_flags & SA_SIGINFO) != 0 ? reinterpret_cast<uintptr_t>(old.sa_sigaction)
                                              : reinterpret_cast<uintptr_t>(old.sa_handler),
             std::memory_order_release);
}

// si_value of coact's own signals: kTag in the high 32 bits, the target
// thread's tid in the low ones (a program's timer or sigqueue carries its
// own value; matching all 32 tag bits by chance is not a concern).
constexpr uint64_t kTag = 0xc0ac7516;
void* tag_value(int tid) noexcept {
  return reinterpret_cast<void*>(static_cast<uintptr_t>((kTag << 32) | static_cast<uint32_t>(tid)));
}
bool tagged(const siginfo_t& info) noexcept {
  return (reinterpret_cast<uintptr_t>(info.si_value.sival_ptr) >> 32) == kTag;
}

// Which of coact's sources sent this signal (a SampleSource), or -1: not
// coact's. POSIX timer: SI_TIMER with the tag, for this thread (a timer
// belongs to this process, and coact's signals only its own thread). Perf event: a POLL_* code with si_fd one of
// the thread's events (the program's setitimer(ITIMER_PROF) is SI_KERNEL, a
// positive code too: the fd tells them apart). raise_sample: SI_QUEUE, the
// tag, from this process. Async-signal-safe.
int classify(const siginfo_t* info, const Ring* r) noexcept {
  if (info == nullptr) return -1;
  const int code = info->si_code;
  if (code == SI_TIMER) {
    const bool mine = tagged(*info) &&
                      (r == nullptr || static_cast<uint32_t>(reinterpret_cast<uintptr_t>(info->si_value.sival_ptr)) ==
                                           static_cast<uint32_t>(r->tid));
    return mine ? static_cast<int>(SampleSource::cpu_timer) : -1;
  }
  if (code == SI_QUEUE) {
    return tagged(*info) && info->si_pid == ::getpid() ? static_cast<int>(SampleSource::other) : -1;
  }
  if (code >= POLL_IN && code <= POLL_HUP && r != nullptr && info->si_fd >= 0 &&
      (info->si_fd == r->sig_fd.load(std::memory_order_relaxed) ||
       info->si_fd == r->prev_sig_fd.load(std::memory_order_relaxed))) {
    return static_cast<int>(SampleSource::perf_event);
  }
  return -1;
}

// Hands a foreign delivery of `sig` to the disposition it had before coact's
// handler (sampler.hpp: SIG_IGN and SIG_DFL drop it). The old handler runs
// with its own sa_mask added to the mask (as the kernel would have). A
// target that chains back to coact's handler (a program that replaced it
// and calls what it replaced, then was replaced in turn at a later start)
// ends at the second visit on the thread (t_chaining). Called by the handler
// only; async-signal-safe (pthread_sigmask is).
void chain(int sig, siginfo_t* info, void* ucontext) noexcept {
  if (sig <= 0 || sig >= _NSIG || t_chaining) return;
  const ChainTarget& c = g_chain[sig];
  const uintptr_t fn = c.fn.load(std::memory_order_acquire);
  const int flags = c.flags.load(std::memory_order_relaxed);
  if ((flags & SA_SIGINFO) == 0 &&
      (fn == reinterpret_cast<uintptr_t>(SIG_DFL) || fn == reinterpret_cast<uintptr_t>(SIG_IGN))) {
    return;
  }
  if (fn == 0) return;
  uint64_t words[sizeof(sigset_t) / 8];
  for (size_t i = 0; i < sizeof(sigset_t) / 8; ++i) words[i] = c.mask[i].load(std::memory_order_relaxed);
  sigset_t mask;
  std::memcpy(&mask, words, sizeof(mask));
  sigset_t prev;
  const bool masked = sigisemptyset(&mask) == 0 && pthread_sigmask(SIG_BLOCK, &mask, &prev) == 0;
  t_chaining = true;
  if ((flags & SA_SIGINFO) != 0) {
    reinterpret_cast<void (*)(int, siginfo_t*, void*)>(fn)(sig, info, ucontext);
  } else {
    reinterpret_cast<void (*)(int)>(fn)(sig);
  }
  t_chaining = false;
  if (masked) (void)pthread_sigmask(SIG_SETMASK, &prev, nullptr);
}

// The selected line for in-handler injection (detail::set_sample_target).
// A seqlock without fences (TSan does not model them): the writer (one at a
// time) makes seq odd, stores the fields with release, makes seq even with
// release; the handler reads seq (acquire), the fields (acquire: the second
// read of seq cannot move above them, and a field read from a newer write
// makes that write's odd seq visible to it), seq again, and uses the fields
// only if seq was even and unchanged. Every field is an atomic, so a torn
// read is a discarded read, never a data race.
struct Target {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> epoch{0};
  std::atomic<uint32_t> region{kNoRegion};
  std::atomic<uint32_t> context{kNoRegion};
  std::atomic<uint32_t> n{0};
  std::atomic<uint64_t> per_period{0};
  std::atomic<uint64_t> period_ns{0};
  std::atomic<uint64_t> lo[detail::kSampleTargetRanges]{};
  std::atomic<uint64_t> hi[detail::kSampleTargetRanges]{};
};
constinit Target g_target;

// The delay to inject in the handler for sample `s` (taken at selection
// `sel`), 0 if it is not on the published target. Async-signal-safe.
uint64_t target_delay(const RawSample& s, const Selection& sel) noexcept {
  if (sel.region == kNoRegion || sel.speedup_pct == 0) return 0;
  const uint32_t q0 = g_target.seq.load(std::memory_order_acquire);
  if ((q0 & 1) != 0) return 0;
  const uint32_t epoch = g_target.epoch.load(std::memory_order_acquire);
  const uint32_t region = g_target.region.load(std::memory_order_acquire);
  const uint32_t context = g_target.context.load(std::memory_order_acquire);
  const uint64_t per_period = g_target.per_period.load(std::memory_order_acquire);
  const uint64_t target_ns = g_target.period_ns.load(std::memory_order_acquire);
  const uint32_t n = std::min(g_target.n.load(std::memory_order_acquire), detail::kSampleTargetRanges);
  bool hit = false;
  // A sample of another period (a POSIX timer's signal queued before the
  // switch to the perf event) is left to the drainer, which weighs it by its
  // own period.
  if (epoch == sel.epoch && region == sel.region && (context == kNoRegion || context == s.region) &&
      s.period_ns == target_ns) {
    const uint64_t pc = s.pc();
    for (uint32_t i = 0; i < n && !hit; ++i) {
      hit = pc >= g_target.lo[i].load(std::memory_order_acquire) && pc < g_target.hi[i].load(std::memory_order_acquire);
    }
  }
  if (g_target.seq.load(std::memory_order_relaxed) != q0 || !hit) return 0;
  return (1 + uint64_t{s.overrun}) * per_period;
}

constinit thread_local Ring* t_ring = nullptr;
constinit thread_local bool t_in_handler = false;

// Unregisters the thread at exit (its destructor runs before the thread's
// static TLS is freed).
struct ThreadExit {
  bool registered = false;
  ~ThreadExit() {
    if (registered) unregister_sampled_thread();
  }
};
thread_local ThreadExit t_exit;

int current_tid() noexcept { return static_cast<int>(::syscall(SYS_gettid)); }

std::vector<Ring*>& rings() {
  if (g_rings == nullptr) g_rings = new std::vector<Ring*>;
  return *g_rings;
}

void on_sample_signal(int sig, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  Ring* r = t_ring;
  const int source = classify(info, r);
  if (source < 0) {  // not coact's: the program's (or nobody's), never a sample
    g_foreign.fetch_add(1, std::memory_order_relaxed);
    chain(sig, info, ucontext);
    errno = saved_errno;
    return;
  }
  t_in_handler = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (r != nullptr && g_active.load(std::memory_order_relaxed)) {
    const uint64_t h = r->head.load(std::memory_order_relaxed);
    if (h - r->tail.load(std::memory_order_acquire) >= kSampleRing) {
      r->dropped.store(r->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    } else {
      RawSample& s = r->buf[h % kSampleRing];
      const auto* g = static_cast<const ucontext_t*>(ucontext)->uc_mcontext.gregs;
      static constexpr int kRegs[kSampleRegs] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                                 REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                                 REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
      for (uint32_t i = 0; i < kSampleRegs; ++i) s.regs[i] = static_cast<uint64_t>(g[kRegs[i]]);
      const uint64_t sp = s.regs[7];
      s.stack_len = 0;
      if (sp >= r->stack_lo && sp < r->stack_hi) {
        s.stack_len = static_cast<uint32_t>(std::min<uint64_t>(kSampleStack, r->stack_hi - sp));
        const auto* from = reinterpret_cast<const uint64_t*>(sp);
        auto* to = reinterpret_cast<uint64_t*>(s.stack);
        for (uint32_t w = 0; w < s.stack_len / 8; ++w) to[w] = from[w];
        s.stack_len &= ~7u;
      }
      s.region = detail::sampled_region();
      // si_overrun is a POSIX timer's field (a perf event's signal carries
      // si_band / si_fd there, and never merges periods: it fires per period).
      s.overrun = source == static_cast<int>(SampleSource::cpu_timer) && info->si_overrun > 0
                      ? static_cast<uint32_t>(info->si_overrun)
                      : 0;
      s.tid = r->tid;
      // The period of the source that signalled (classify); raise_sample's
      // samples are weighed at the current mode's period.
      s.source = static_cast<uint32_t>(source);
      if (source == static_cast<int>(SampleSource::cpu_timer)) {
        s.period_ns = r->posix_ns.load(std::memory_order_relaxed);
      } else if (source == static_cast<int>(SampleSource::perf_event)) {
        s.period_ns = r->perf_ns.load(std::memory_order_relaxed);
      } else {
        s.period_ns = g_armed_ns.load(std::memory_order_relaxed);
      }
      auto& count = r->by_source[s.source];
      count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      const Selection sel = current_selection();
      s.epoch = sel.epoch;
      // A sample on the selected line: its delay goes into G now, and its
      // credit to this thread (sampler.hpp set_sample_target: why).
      s.injected = target_delay(s, sel);
      if (s.injected != 0) {
        add_global_delay(s.injected);
        r->credit.fetch_add(s.injected, std::memory_order_relaxed);
      }
      if (detail::SampleHook hook = g_hook.load(std::memory_order_acquire)) hook(s);
      r->head.store(h + 1, std::memory_order_release);
    }
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_in_handler = false;
  errno = saved_errno;
}

void atfork_prepare() { g_mu.lock(); }
void atfork_parent() { g_mu.unlock(); }
void atfork_child() {
  // Timers are not inherited by the child; the parent's rings are not ours.
  g_active.store(false, std::memory_order_relaxed);
  if (g_period_ns.load(std::memory_order_relaxed) != 0) g_forked_child.store(true, std::memory_order_relaxed);
  if (g_rings != nullptr) {
    for (Ring* r : *g_rings) {
      if (r->perf_fd >= 0) (void)::close(r->perf_fd);  // the child's copy; the parent's event stays
      r->perf_fd = -1;
      r->perf_ok = false;
      r->has_timer = r->has_posix = r->armed = r->posix_armed = r->perf_armed = false;
    }
  }
  g_mu.unlock();
}

int open_task_clock(int tid, int signo) noexcept;

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

// The real-time signal for start_sampling(signo 0) (sampler.hpp "The
// sampling signal"): the one chosen before, else the highest whose
// disposition is SIG_DFL. 0: none free. Under g_mu.
int pick_realtime_signal() noexcept {
  if (g_auto_signo != 0) return g_auto_signo;
  for (int sig = SIGRTMAX; sig >= SIGRTMIN; --sig) {
    struct sigaction cur {};
    if (g_installed[sig] || sigaction(sig, nullptr, &cur) != 0) continue;
    if ((cur.sa_flags & SA_SIGINFO) == 0 && cur.sa_handler == SIG_DFL) return g_auto_signo = sig;
  }
  return 0;
}

// True if coact's handler is the one installed for `sig` (sigaction read-back).
bool handler_is_ours(int sig) noexcept {
  struct sigaction cur {};
  if (sigaction(sig, nullptr, &cur) != 0) return true;  // cannot tell: not reported
  return (cur.sa_flags & SA_SIGINFO) != 0 && cur.sa_sigaction == on_sample_signal;
}

// While sampling runs: records (g_replaced) and says once on stderr that
// coact's handler of the sampling signal was replaced. Under g_mu; called
// by drain_samples_with_credit (the drainer's every wake) and sampler_stats.
void check_handler_locked() noexcept {
  const int sig = g_signo.load(std::memory_order_relaxed);
  if (g_replaced || sig == 0 || !g_active.load(std::memory_order_relaxed) || handler_is_ours(sig)) return;
  g_replaced = true;
  const std::string name = sample_signal_name(sig);
  std::fprintf(stderr,
               "coact sampler: the handler of %s was replaced while sampling ran (by the program or a library): "
               "coact's samples now go to that handler and sampled lines lose them; set "
               "COACT_CAUSAL_SAMPLE_SIGNAL to a signal the program does not use (default: rt)\n",
               name.c_str());
}

// Samples written into `r` so far, excluding drops.
uint64_t written(const Ring& r) { return r.head.load(std::memory_order_acquire); }

}  // namespace

bool start_sampling(std::chrono::nanoseconds period, int signo) {
  if (period < std::chrono::microseconds(10)) {
    throw std::invalid_argument("sampling period " + std::to_string(period.count()) +
                                " ns: expected at least 10000 ns (10 us)");
  }
  if (signo != 0 && signo != SIGPROF && (signo < SIGRTMIN || signo > SIGRTMAX)) {
    throw std::invalid_argument("sampling signal " + std::to_string(signo) +
                                ": expected SIGPROF or one of SIGRTMIN..SIGRTMAX (" + std::to_string(SIGRTMIN) + ".." +
                                std::to_string(SIGRTMAX) + ")");
  }
  std::lock_guard lk(g_mu);
  if (g_forked_child.load(std::memory_order_relaxed)) return false;
  if (g_active.load(std::memory_order_relaxed)) return false;
  if (!g_atfork_installed) {
    if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child) != 0) {
      throw std::system_error(errno, std::generic_category(), "sampler: pthread_atfork");
    }
    g_atfork_installed = true;
  }
  const int sig = signo != 0 ? signo : pick_realtime_signal();
  if (sig == 0) {
    throw std::system_error(EBUSY, std::generic_category(),
                            "sampler: every real-time signal has a handler; set COACT_CAUSAL_SAMPLE_SIGNAL "
                            "(prof, or rtmin+N) to one the program does not need");
  }
  // Installed the first time, and again when the program replaced coact's
  // handler since (its handler becomes the chain target).
  if (!g_installed[sig] || !handler_is_ours(sig)) {
    // The disposition before coact's is kept for chain() and published
    // before coact's handler can run.
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) {
      throw std::system_error(errno, std::generic_category(), "sampler: sigaction(" + sample_signal_name(sig) + ")");
    }
    set_chain_target(sig, old);
    g_had_foreign[sig] = (old.sa_flags & SA_SIGINFO) != 0 ? old.sa_sigaction != nullptr
                                                          : old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN;
    struct sigaction sa {};
    sa.sa_sigaction = on_sample_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, nullptr) != 0) {
      throw std::system_error(errno, std::generic_category(), "sampler: sigaction(" + sample_signal_name(sig) + ")");
    }
    g_installed[sig] = true;
    g_handler_installed = true;
    if (g_had_foreign[sig]) {
      std::fprintf(stderr,
                   "coact sampler: %s already has a handler (the program's or a library's); coact samples with it "
                   "and hands that handler every %s that is not from coact's timers (its signals are not counted "
                   "as samples)\n",
                   sample_signal_name(sig).c_str(), sample_signal_name(sig).c_str());
    }
  }
  g_signo.store(sig, std::memory_order_relaxed);
  g_replaced = false;
  // Timers created (at registration, or by an earlier start) with another
  // signal are created anew with this one.
  for (Ring* r : rings()) {
    if (!r->exited && r->has_posix && r->timer_signo != sig) {
      make_posix(*r, sig);
      r->has_timer = r->has_posix || r->perf_ok;
    }
  }
  const auto ns = static_cast<uint64_t>(period.count());
  g_period_ns.store(ns, std::memory_order_relaxed);
  g_armed_ns.store(ns, std::memory_order_relaxed);
  g_precise.store(false, std::memory_order_relaxed);
  g_active.store(true, std::memory_order_relaxed);
  for (Ring* r : rings()) {
    if (r->has_timer && !r->exited) (void)arm(*r);
  }
  return true;
}

void stop_sampling() noexcept {
  std::lock_guard lk(g_mu);
  check_handler_locked();  // a replacement since the drainer's last wake is still reported
  g_active.store(false, std::memory_order_relaxed);
  if (g_rings == nullptr) return;
  for (Ring* r : *g_rings) {
    if (r->has_timer && r->armed) (void)arm(*r);
  }
}

bool sampling_active() noexcept { return g_active.load(std::memory_order_relaxed); }

int sample_signal() noexcept { return g_signo.load(std::memory_order_relaxed); }

int parse_sample_signal(std::string_view text) noexcept {
  auto lower = [](std::string_view t, std::string_view want) {
    if (t.size() != want.size()) return false;
    for (size_t i = 0; i < t.size(); ++i) {
      const char c = (t[i] >= 'A' && t[i] <= 'Z') ? static_cast<char>(t[i] - 'A' + 'a') : t[i];
      if (c != want[i]) return false;
    }
    return true;
  };
  if (lower(text, "rt")) return 0;
  if (lower(text, "prof")) return SIGPROF;
  if (text.size() <= 6 || !lower(text.substr(0, 6), "rtmin+")) return -1;
  int n = 0;
  for (const char c : text.substr(6)) {
    if (c < '0' || c > '9' || n > 1000) return -1;
    n = n * 10 + (c - '0');
  }
  return n <= SIGRTMAX - SIGRTMIN ? SIGRTMIN + n : -1;
}

std::string sample_signal_name(int signo) {
  if (signo == SIGPROF) return "SIGPROF";
  if (signo >= SIGRTMIN && signo <= SIGRTMAX) return "SIGRTMIN+" + std::to_string(signo - SIGRTMIN);
  return "signal " + std::to_string(signo);
}

uint64_t sampling_period_ns() noexcept { return g_period_ns.load(std::memory_order_relaxed); }

void register_sampled_thread() noexcept {
  if (t_ring != nullptr) return;
  try {
    auto* r = new Ring;
    r->tid = current_tid();
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        r->stack_lo = reinterpret_cast<uint64_t>(addr);
        r->stack_hi = r->stack_lo + size;
      }
      pthread_attr_destroy(&attr);
    }
    std::lock_guard lk(g_mu);
    // Both sources where allowed: the POSIX timer outside line experiments,
    // the perf event during them (set_armed_period).
    if (!g_forked_child.load(std::memory_order_relaxed)) {
      // Probed here (opened and closed): arm() opens it for the precise mode.
      const int fd = open_task_clock(r->tid, SIGPROF);
      r->perf_ok = fd >= 0;
      if (fd >= 0) (void)::close(fd);
      // With the current sampling signal; before the first start, with
      // SIGPROF as a placeholder (never armed: start_sampling creates it
      // anew with the signal it installs).
      const int sig = g_signo.load(std::memory_order_relaxed);
      make_posix(*r, sig != 0 ? sig : SIGPROF);
    }
    r->has_timer = r->has_posix || r->perf_ok;
    if (!r->has_timer) {  // listed as unsampled by stats()
      delete r;
      return;
    }
    rings().push_back(r);
    ++g_registered;
    g_registered_perf += r->perf_ok ? 1 : 0;
    g_registered_posix += r->has_posix ? 1 : 0;
    t_exit.registered = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_ring = r;
    if (g_active.load(std::memory_order_relaxed)) (void)arm(*r);
  } catch (...) {
    // allocation failed: the thread stays unsampled (listed by stats())
  }
}

void unregister_sampled_thread() noexcept {
  Ring* r = t_ring;
  if (r == nullptr) return;
  t_ring = nullptr;  // the handler ignores signals from now on
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::lock_guard lk(g_mu);
  if (r->perf_fd >= 0) (void)::close(r->perf_fd);
  if (r->has_posix) (void)timer_delete(r->timer);
  r->perf_fd = -1;
  r->perf_ok = false;
  r->has_timer = r->has_posix = r->armed = r->posix_armed = r->perf_armed = false;
  r->exited = true;
  ++g_exited;
}

uint64_t drain_samples(const std::function<void(const RawSample&)>& fn) {
  return drain_samples_with_credit([&](const RawSample& s) -> uint64_t {
    fn(s);
    return 0;
  });
}

uint64_t drain_samples_with_credit(const std::function<uint64_t(const RawSample&)>& fn) {
  std::lock_guard lk(g_mu);
  check_handler_locked();
  if (g_rings == nullptr) return 0;
  uint64_t n = 0;
  auto& rs = *g_rings;
  for (Ring* r : rs) {
    const uint64_t h = r->head.load(std::memory_order_acquire);
    uint64_t t = r->tail.load(std::memory_order_relaxed);
    for (; t < h; ++t, ++n) {
      // Credited sample by sample, right after fn put the sample's delay into
      // G (line_region.cpp process): the thread takes its credit at its next
      // pay point, and a thread that got there between G's growth and a credit
      // deferred to the end of its ring's batch (each sample before it unwound
      // for tens of µs; milliseconds when the drainer is descheduled) paid its
      // own virtual speedup, and the late credit was then lost (credit_local
      // clamps L at G). What remains is the instant between these two adds.
      const uint64_t credit = fn(r->buf[t % kSampleRing]);
      if (credit != 0 && !r->exited) r->credit.fetch_add(credit, std::memory_order_relaxed);
    }
    r->tail.store(t, std::memory_order_release);
  }
  // Free the drained rings of exited threads (no handler can run for them).
  std::erase_if(rs, [](Ring* r) {
    if (!r->exited) return false;
    g_retired_samples += written(*r);
    g_retired_dropped += r->dropped.load(std::memory_order_relaxed);
    for (int k = 0; k < 3; ++k) g_retired_by_source[k] += r->by_source[k].load(std::memory_order_relaxed);
    delete r;
    return true;
  });
  return n;
}

SamplerStats sampler_stats() {
  SamplerStats st;
  std::set<int> live;
  {
    std::lock_guard lk(g_mu);
    check_handler_locked();
    st.active = g_active.load(std::memory_order_relaxed);
    st.signal = g_signo.load(std::memory_order_relaxed);
    if (st.signal != 0) st.signal_name = sample_signal_name(st.signal);
    st.foreign_handler = st.signal != 0 && g_had_foreign[st.signal];
    st.handler_replaced = g_replaced;
    st.foreign_signals = g_foreign.load(std::memory_order_relaxed);
    st.disabled_after_fork = g_forked_child.load(std::memory_order_relaxed);
    st.period_ns = g_period_ns.load(std::memory_order_relaxed);
    st.samples = g_retired_samples;
    st.dropped = g_retired_dropped;
    st.threads_registered = g_registered;
    st.threads_exited = g_exited;
    st.precise = g_precise.load(std::memory_order_relaxed);
    st.threads_perf_event = g_registered_perf;
    st.threads_cpu_timer = g_registered_posix;
    st.armed_period_ns = g_armed_ns.load(std::memory_order_relaxed);
    uint64_t by_source[3] = {g_retired_by_source[0], g_retired_by_source[1], g_retired_by_source[2]};
    if (g_rings != nullptr) {
      for (const Ring* r : *g_rings) {
        st.samples += written(*r);
        st.dropped += r->dropped.load(std::memory_order_relaxed);
        for (int k = 0; k < 3; ++k) by_source[k] += r->by_source[k].load(std::memory_order_relaxed);
        if (!r->exited && r->has_timer) live.insert(r->tid);
      }
    }
    st.samples_cpu_timer = by_source[0];
    st.samples_perf_event = by_source[1];
    st.samples_other = by_source[2];
  }
  st.threads_live = live.size();
  if (DIR* d = opendir("/proc/self/task")) {
    while (const dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const int tid = std::atoi(e->d_name);
      if (live.count(tid) != 0) continue;
      std::string name;
      std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
      std::getline(comm, name);
      st.unsampled.push_back(UnsampledThread{tid, name});
    }
    closedir(d);
  }
  std::sort(st.unsampled.begin(), st.unsampled.end(),
            [](const UnsampledThread& a, const UnsampledThread& b) { return a.tid < b.tid; });
  return st;
}

namespace detail {
bool in_sample_handler() noexcept { return t_in_handler; }

bool raise_sample() noexcept {
  const int sig = g_signo.load(std::memory_order_relaxed);
  if (sig == 0) return false;
  siginfo_t si{};
  si.si_signo = sig;
  si.si_code = SI_QUEUE;
  si.si_pid = ::getpid();
  si.si_uid = ::getuid();
  const int tid = current_tid();
  si.si_value.sival_ptr = tag_value(tid);
  // rt_tgsigqueueinfo to the calling thread: delivered before the syscall
  // returns to user space (unless the signal is blocked), as raise() does.
  return ::syscall(SYS_rt_tgsigqueueinfo, ::getpid(), tid, sig, &si) == 0;
}
void set_sample_hook(SampleHook hook) noexcept { g_hook.store(hook, std::memory_order_release); }
void set_sample_target(uint32_t epoch, uint32_t region, uint32_t context, uint64_t delay_per_period, uint64_t period_ns,
                       const std::pair<uint64_t, uint64_t>* ranges, size_t n) noexcept {
  const uint32_t q = g_target.seq.load(std::memory_order_relaxed);
  g_target.seq.store(q + 1, std::memory_order_relaxed);
  const uint32_t m = static_cast<uint32_t>(std::min<size_t>(n, kSampleTargetRanges));
  for (uint32_t i = 0; i < m; ++i) {
    g_target.lo[i].store(ranges[i].first, std::memory_order_release);
    g_target.hi[i].store(ranges[i].second, std::memory_order_release);
  }
  g_target.n.store(m, std::memory_order_release);
  g_target.epoch.store(epoch, std::memory_order_release);
  g_target.region.store(region, std::memory_order_release);
  g_target.context.store(context, std::memory_order_release);
  g_target.per_period.store(delay_per_period, std::memory_order_release);
  g_target.period_ns.store(period_ns, std::memory_order_release);
  g_target.seq.store(q + 2, std::memory_order_release);
}

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

void clear_sample_target() noexcept { set_sample_target(0, kNoRegion, kNoRegion, 0, 0, nullptr, 0); }

uint64_t take_sample_credit() noexcept {
  Ring* r = t_ring;
  if (r == nullptr || r->credit.load(std::memory_order_relaxed) == 0) return 0;
  return r->credit.exchange(0, std::memory_order_relaxed);
}
}  // namespace detail

}  // namespace coact::causal
