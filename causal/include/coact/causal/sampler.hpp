// coact/causal/sampler.hpp: per-thread CPU-time sampling for sampled-line
// regions (docs/DESIGN.md "Causal profiling", "Region": sampled lines).
//
// What: every registered thread (runtime workers register at start; program
// threads call register_sampled_thread()) owns two samplers of its own CPU
// time, each firing the sampling signal at that thread (the "sampling
// signal" below: a real-time signal by default, SIGPROF on request; see
// "The sampling signal"):
//   * a POSIX timer on the thread's CPU clock (timer_create(
//     CLOCK_THREAD_CPUTIME_ID) with SIGEV_THREAD_ID) — the base mode, every
//     `period` of CPU time (default 1 ms, as Coz). The kernel checks it only
//     at its tick (4 ms on the machines measured), so a sample stands for
//     1 + its overrun periods; it needs no hrtimer, which makes it cheap;
//   * a task-clock perf event (perf_event_open PERF_COUNT_SW_TASK_CLOCK,
//     user time, O_ASYNC / F_SETSIG / F_SETOWN_EX to the thread; an hrtimer
//     overflows it every period, as Coz's sampler) — the precise mode,
//     armed only while detail::set_armed_period asks for it (line regions:
//     while an experiment selects a line, at the experiment period), the
//     POSIX timer disarmed meanwhile. Each sample comes on time, at a cost
//     of an hrtimer expiry per period and more per context switch.
// Where perf events are not allowed (perf_event_paranoid 3, a seccomp
// filter), the POSIX timer serves both modes (at the precise period in the
// precise mode); where the POSIX timer cannot be created, the perf event
// serves both. Each sample records the source that signalled and the period
// that source was armed at (RawSample::source, period_ns); sampler_stats()
// counts samples by source. The signal handler copies the interrupted
// registers and the top kSampleStack bytes of the thread's stack, the region
// the thread was running (region.hpp: innermost handler frame, else innermost
// scope), the timer overrun count and the thread id into the thread's ring,
// and calls the sample hook if one is set. Nothing else: no allocation, no
// lock, no unwinding, no symbolization. The draining thread unwinds the copy
// (symbolizer.hpp: libdwfl's unwinder over the copied stack, as `perf record
// --call-graph dwarf` does) and symbolizes it.
//
// The sampling signal (start_sampling's `signo`, COACT_CAUSAL_SAMPLE_SIGNAL):
// by default a real-time signal, chosen when sampling first starts: the
// highest of SIGRTMAX down to SIGRTMIN whose disposition is SIG_DFL (no
// handler: nobody in the process uses it; libraries that take one usually
// count up from SIGRTMIN), kept for the process's later starts. Why not
// SIGPROF: a program's own profiler (gperftools, a language runtime's,
// setitimer(ITIMER_PROF)) expects SIGPROF and installs its handler on it, so
// the two would take each other's signals; a real-time signal is queued
// (one delivery per timer expiry or perf overflow, with its siginfo intact)
// and no profiler expects it. "prof" selects SIGPROF, "rtmin+N" a fixed one.
// Only signals from coact's own sources are samples: a POSIX timer's
// (SI_TIMER) whose si_value carries coact's tag, a perf event's (POLL_*)
// whose si_fd is the thread's event, one raised by detail::raise_sample
// (SI_QUEUE, the tag, this process's pid). Any other delivery of the signal
// (the program's setitimer(ITIMER_PROF), kill(), its own timer) is not
// counted and goes to the disposition the signal had when coact installed
// its handler: that handler is called with the same arguments (sa_sigaction
// with SA_SIGINFO, else sa_handler; under its sa_mask); SIG_IGN and SIG_DFL
// drop it (counted in SamplerStats::foreign_signals: coact's handler keeps
// a stray signal from terminating the program). A handler already there at
// start is said once on stderr (SamplerStats::foreign_handler); a handler
// that replaces coact's while sampling runs is detected by the drainer and
// sampler_stats (sigaction read-back), said once on stderr
// (SamplerStats::handler_replaced): coact's samples then go to that handler.
//
// Why not unwind in the handler (libunwind's unw_init_local2 with
// UNW_INIT_SIGNAL_FRAME): Debian's libunwind 1.6 takes pthread mutexes inside
// unw_step — its global register-state cache (UNW_CACHE_PER_THREAD falls back
// to it: the package is built without --enable-per-thread-cache) and, with
// UNW_CACHE_NONE, its mempool allocator under dwarf_search_unwind_table.
// sampler_test's interposed pthread_mutex_lock caught both.
//
// Threads: register / unregister on the thread concerned; start / stop /
// drain / stats from any thread (one internal mutex, never taken by the
// handler). A thread's ring has one producer (its signal handler) and one
// consumer (drain_samples, under the mutex).
// Blocking: start / stop / drain / register take the sampler mutex.
// Ordering: a sample is published by a release store of the ring's head,
// read by drain with acquire.
// Lifetime: a thread that exits unregisters from its thread_local destructor
// (its timer is deleted, its ring kept until drained, then reused). After
// fork() the child's sampler is off and stays off (timers are not inherited;
// pthread_atfork child handler), listed as such by stats().
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace coact::causal {

/// Frames kept per unwound sample: the interrupted PC plus up to 7 return addresses.
inline constexpr uint32_t kSampleFrames = 8;
/// Bytes of stack copied per sample (from the interrupted stack pointer up,
/// bounded by the thread's stack end): enough for the frames that decide a
/// sample's line in the programs measured; deeper frames are cut off.
inline constexpr uint32_t kSampleStack = 2048;
/// Samples a thread's ring holds before the drainer reads them (older ones
/// are kept; newer ones are dropped and counted). 512 x ~2.2 KiB per thread,
/// touched only as used.
inline constexpr uint32_t kSampleRing = 512;
/// DWARF registers copied (x86-64: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip).
inline constexpr uint32_t kSampleRegs = 17;

/// What raised a sample's signal (RawSample::source).
enum class SampleSource : uint32_t {
  cpu_timer = 0,   ///< The POSIX CPU-clock timer (si_code SI_TIMER): the base mode.
  perf_event = 1,  ///< The task-clock perf event (si_code POLL_*): the precise mode.
  other = 2,       ///< Raised by detail::raise_sample (tests, benchmarks): weighed at the armed period.
};

/// One sample, as the handler wrote it.
struct RawSample {
  uint64_t regs[kSampleRegs];  ///< DWARF numbering; regs[16] is the interrupted PC, regs[7] the stack pointer.
  uint32_t stack_len;          ///< Valid bytes of stack (copied from regs[7] up).
  uint32_t region;             ///< Region running on the thread (kNoRegion if none or no sweep).
  uint32_t overrun;            ///< Timer expirations merged into this signal (si_overrun).
  int32_t tid;                 ///< Thread id (gettid).
  uint32_t epoch;              ///< Experiment epoch (region.hpp current_selection) when taken.
  uint64_t injected;  ///< Delay (cycles) the handler injected for this sample (detail::set_sample_target); 0: none.
  uint64_t
      period_ns;  ///< The period the signalling source was armed at (detail::set_armed_period): one of (1 + overrun) periods this sample stands for.
  uint32_t source;  ///< SampleSource that signalled (from si_code).
  alignas(8) unsigned char stack[kSampleStack];
  uint64_t pc() const noexcept { return regs[16]; }
};

/// A sample after unwinding (Symbolizer::unwind).
struct Sample {
  uint64_t pc[kSampleFrames];  ///< pc[0]: interrupted PC; pc[i>0]: return addresses.
  uint32_t depth = 0;          ///< Valid entries of pc (>= 1).
  uint32_t region = 0;         ///< As RawSample::region.
  uint32_t overrun = 0;
  int32_t tid = 0;
};

/// A thread of the process that is not sampled (stats()).
struct UnsampledThread {
  int tid;
  std::string name;  ///< /proc/self/task/TID/comm
};

struct SamplerStats {
  bool active = false;               ///< Between start_sampling and stop_sampling.
  bool disabled_after_fork = false;  ///< This process is a fork() child of a sampling parent.
  uint64_t period_ns = 0;            ///< The base period (start_sampling).
  uint64_t armed_period_ns = 0;      ///< The period the samplers are armed at now.
  bool precise = false;              ///< The precise mode is on (detail::set_armed_period with a period).
  uint64_t samples = 0;              ///< Written by handlers into rings.
  uint64_t samples_cpu_timer = 0;    ///< Of `samples`: signalled by the POSIX CPU-clock timer.
  uint64_t samples_perf_event = 0;   ///< Of `samples`: signalled by the perf event.
  uint64_t samples_other = 0;        ///< Of `samples`: raised by detail::raise_sample.
  uint64_t threads_perf_event =
      0;  ///< Threads ever registered with a perf event (0: the precise mode falls back to the POSIX timer).
  uint64_t threads_cpu_timer = 0;          ///< Threads ever registered with a POSIX CPU-clock timer.
  uint64_t dropped = 0;                    ///< Lost to full rings.
  uint64_t threads_registered = 0;         ///< Ever registered.
  uint64_t threads_live = 0;               ///< Registered and not exited.
  uint64_t threads_exited = 0;             ///< Registered, then exited (their rings drained).
  std::vector<UnsampledThread> unsampled;  ///< Live threads never registered (e.g. created before the runtime).
  int signal = 0;                          ///< The sampling signal of the current (or last) start; 0: never started.
  std::string signal_name;       ///< sample_signal_name(signal): "SIGPROF", "SIGRTMIN+30"; "" if never started.
  bool foreign_handler = false;  ///< `signal` had a handler of the program's when coact installed its own (chained to).
  bool handler_replaced = false;  ///< coact's handler of `signal` was found replaced while sampling ran.
  uint64_t foreign_signals = 0;  ///< Deliveries of a sampling signal not from coact's sources (handed on, not counted).
};

/// COACT_CAUSAL_SAMPLE_SIGNAL's values: "rt" -> 0 (start_sampling picks a
/// free real-time signal), "prof" -> SIGPROF, "rtmin+N" -> SIGRTMIN + N
/// (N in 0..SIGRTMAX-SIGRTMIN). Case-insensitive. -1: none of these.
/// Any thread.
int parse_sample_signal(std::string_view text) noexcept;

/// "SIGPROF", "SIGRTMIN+N", else "signal N". Any thread.
std::string sample_signal_name(int signo);

/// Starts sampling every registered thread (and each thread that registers
/// later) every `period` of its CPU time: installs the handler of the
/// sampling signal `signo` (0: a free real-time signal, header comment;
/// else SIGPROF or one of SIGRTMIN..SIGRTMAX) and arms the timers. A handler
/// the program has on that signal is chained to (header comment) and said
/// once on stderr. Preconditions: period >= 10 µs. A second call while
/// active changes nothing and returns false. Returns true when started.
/// Errors: std::invalid_argument (period, signo), std::system_error
/// (sigaction; no free real-time signal).
/// Any thread; takes the sampler mutex. In a fork() child of a sampling
/// process: returns false (sampling stays off there).
bool start_sampling(std::chrono::nanoseconds period = std::chrono::milliseconds(1), int signo = 0);

/// Disarms every timer. The sampling signal's handler stays installed (a signal queued
/// before the disarm must not meet the default disposition, which would
/// terminate the process) and ignores signals while sampling is off. Rings
/// keep their samples for drain_samples. Any thread; idempotent.
void stop_sampling() noexcept;

/// True between start_sampling and stop_sampling. Any thread.
bool sampling_active() noexcept;

/// The sampling signal of the current (or last) start; 0 if never started. Any thread.
int sample_signal() noexcept;

/// The period of the current (or last) sampling, nanoseconds; 0 if never started.
uint64_t sampling_period_ns() noexcept;

/// Registers the calling thread: creates its CPU-time sampler (armed at once
/// if sampling is active) and its ring. Idempotent. Runtime workers call it
/// at start; program threads that should be sampled call it themselves.
/// A thread that keeps the sampling signal blocked must not register: a
/// real-time signal is queued per sample (the perf event's), and would pile
/// up in the kernel until the thread unblocks it.
/// Unregistering happens by itself when the thread exits. Any thread;
/// takes the sampler mutex; never throws (failures are counted as
/// unsampled: the thread is listed by stats()).
void register_sampled_thread() noexcept;

/// Deletes the calling thread's timer now (its ring keeps what was taken).
/// No-op if not registered. Called by the thread_local destructor at exit.
void unregister_sampled_thread() noexcept;

/// Hands every sample written since the last drain, thread by thread, to `fn`
/// (called under the sampler mutex: fn must not call sampler functions).
/// Returns the number handed. Any thread.
uint64_t drain_samples(const std::function<void(const RawSample&)>& fn);

/// As drain_samples; the value `fn` returns for a sample is added to the
/// sampling thread's credit (cycles it must not owe: delay injected on its
/// behalf for its own sample), which that thread takes with
/// detail::take_sample_credit at its next pay point. Each sample's credit is
/// added as soon as `fn` returns for it (so `fn` adds the delay to G first,
/// then the thread's credit follows at once, not at the end of the batch).
uint64_t drain_samples_with_credit(const std::function<uint64_t(const RawSample&)>& fn);

/// Counters and the list of live threads that are not sampled. Any thread.
SamplerStats sampler_stats();

namespace detail {
/// True while the calling thread is inside the sampling signal handler
/// (tests: a malloc/lock interposer asserts it is never true). Async-signal-safe.
bool in_sample_handler() noexcept;
/// Sends the sampling signal to the calling thread as a sample of coact's
/// own (SampleSource::other; SI_QUEUE with coact's tag), as a timer would:
/// tests and benchmarks take samples at chosen points with it. Returns false
/// if sampling never started or the signal could not be sent. Calling thread.
bool raise_sample() noexcept;
/// Function the handler calls after writing a sample, with the sample
/// (line regions install one). Must be async-signal-safe. Null: none.
using SampleHook = void (*)(const RawSample&) noexcept;
void set_sample_hook(SampleHook hook) noexcept;
/// Takes (and zeroes) the calling thread's credit (drain_samples_with_credit,
/// and the handler's own injections: set_sample_target). Called by the
/// pay-point hook before it reads the thread's debt, and discarded by the
/// resume hook (L = G covers it). Calling thread.
uint64_t take_sample_credit() noexcept;

/// Address ranges of a sample target at most (more are left to the drainer).
inline constexpr uint32_t kSampleTargetRanges = 64;

/// Publishes the selected line for the signal handler (line_region.cpp, at
/// begin_experiment): from now on, a sample taken while the selection is
/// (`epoch`, `region`) whose interrupted PC lies in one of `ranges`
/// ([lo, hi), at most kSampleTargetRanges; later ones are ignored), whose
/// period (RawSample::period_ns) is `period_ns` (the one `delay_per_period`
/// was computed for; a sample of another period is left to the drainer) and —
/// unless `context` is kNoRegion — whose thread runs region `context`,
/// injects (1 + overrun) x `delay_per_period` cycles at once, in the handler:
/// G += x (add_global_delay) and the sampled thread's credit += x (taken at
/// its next pay point), and records x in RawSample::injected so that the
/// drainer does not inject it again. Such a sample's first in-scope frame is
/// frame 0, so the drainer would attribute it to the same line; samples that
/// reach the line only through deeper frames are still injected by the
/// drainer. Why in the handler: the drainer runs every few milliseconds, and
/// a batch of delay injected at once is paid at once by whichever threads run
/// at that moment — an off-path branch that owes many samples' delay in one
/// payment outlasts its slack and delays the critical path (issue: line rows
/// under-predicted by a third to two thirds). Any thread; lock-free (a
/// seqlock; one writer at a time: the caller serialises).
void set_sample_target(uint32_t epoch, uint32_t region, uint32_t context, uint64_t delay_per_period, uint64_t period_ns,
                       const std::pair<uint64_t, uint64_t>* ranges, size_t n) noexcept;
/// Switches every registered thread's sampling (and threads that register
/// later) to the precise mode at `period` (> 0: the perf event where the
/// thread has one, its POSIX timer disarmed; else the POSIX timer at
/// `period`), or back to the base mode (0 or less: the POSIX timer at the
/// period start_sampling was given, the perf event disabled). Line regions
/// use the precise mode while an experiment selects a line (line_region.hpp
/// says why). Each sample records its source's period (RawSample::
/// period_ns), so a signal queued by one source and delivered after a switch
/// keeps its weight. Periods below 10 µs are raised to 10 µs. A perf event's
/// new period applies from its next overflow on older kernels: the first
/// sample after a change may stand for the old period but is weighted with
/// the new one (one sample per thread per change); the CPU time since a
/// disarmed source's last sample is not sampled (up to one period per
/// thread per switch). Returns false if sampling is off or a source could
/// not be (dis)armed. Any thread (timer_settime and the perf ioctls act on
/// another thread's sampler); takes the sampler mutex (never from the
/// signal handler).
bool set_armed_period(std::chrono::nanoseconds period) noexcept;
/// The period the samplers are armed at now, ns (0 before start_sampling). Any thread.
uint64_t armed_period_ns() noexcept;
/// No sample target (handler injects nothing). Any thread; lock-free.
void clear_sample_target() noexcept;
}  // namespace detail

}  // namespace coact::causal
