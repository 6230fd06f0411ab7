// causal/src/sampler.cpp: per-thread CPU-time sampling (coact/causal/sampler.hpp):
// starting and stopping it, registering threads, draining their rings (the
// consumer side) and the counters. The signal handler is in
// sample_signal.cpp, the timers in sample_timers.cpp; the state they share in
// detail/sampler_state.hpp (one unit: causal/CMakeLists.txt).
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
uint64_t take_sample_credit() noexcept {
  Ring* r = t_ring;
  if (r == nullptr || r->credit.load(std::memory_order_relaxed) == 0) return 0;
  return r->credit.exchange(0, std::memory_order_relaxed);
}
}  // namespace detail

}  // namespace coact::causal
