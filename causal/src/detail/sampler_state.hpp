// Shared state of the sampler's files (coact/causal/sampler.hpp): the
// per-thread rings, the registry and mode globals under g_mu, the chain
// targets, the published sample target, and the thread-locals the signal
// handler reads. Included only by sample_signal.cpp, sample_timers.cpp and
// sampler.cpp, which compile as ONE unit (causal/CMakeLists.txt, unity
// group "sampler"): its anonymous-namespace definitions exist once, in that
// unit, as they did in one file.
//
// Layout: one Ring per registered thread (single producer: the thread's
// sampling-signal handler; single consumer: drain_samples under g_mu). The
// handler finds its ring through a constinit thread_local pointer (static
// TLS of the executable: no allocation, no __tls_get_addr on first use), so
// a thread that never registered — or has unregistered — ignores the signal.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include <coact/causal/region.hpp>
#include <coact/causal/sampler.hpp>

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

// Samples written into `r` so far, excluding drops.
uint64_t written(const Ring& r) { return r.head.load(std::memory_order_acquire); }

// Defined by one sampler file for another (sample_signal.cpp,
// sample_timers.cpp); declared here so the unit's file order does not matter.
void on_sample_signal(int sig, siginfo_t* info, void* ucontext);
void set_chain_target(int sig, const struct sigaction& old) noexcept;
int pick_realtime_signal() noexcept;
void check_handler_locked() noexcept;
bool arm(Ring& r) noexcept;
int open_task_clock(int tid, int signo) noexcept;
void make_posix(Ring& r, int signo) noexcept;

}  // namespace
}  // namespace coact::causal
