// causal/src/sample_signal.cpp: the sampling signal's handler and what it
// needs (coact/causal/sampler.hpp): telling coact's deliveries from the
// program's (classify), chaining foreign ones to the disposition coact
// replaced (chain), the in-handler delay of a sample on the selected line
// (target_delay and set_sample_target), choosing the signal and noticing
// that a program replaced coact's handler. Part of the sampler's unit
// (detail/sampler_state.hpp).
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

}  // namespace

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

void clear_sample_target() noexcept { set_sample_target(0, kNoRegion, kNoRegion, 0, 0, nullptr, 0); }
}  // namespace detail

}  // namespace coact::causal
