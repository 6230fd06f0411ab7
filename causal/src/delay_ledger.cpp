// The delay ledger: G (process-global atomic), L (thread_local), pay / credit.
//
// Why relaxed is enough everywhere here (the store-buffer argument):
// G is a monotonic counter that publishes no other data. The properties we
// need are (a) no lost additions — every update is an atomic RMW
// (fetch_add), so concurrent add_delay calls sum exactly whatever the order;
// (b) a thread's own reads of G never go backwards past a value it already
// used — read-read / write-read coherence of a single atomic object gives
// that under any memory order, hence the owning thread sees L <= G;
// (c) a woken thread sees the waker's payments — the wake itself (futex,
// mutex, run-token CAS in the runtime) is the synchronisation that orders
// them; if credit_resume() nevertheless reads an older G, the thread owes
// the difference and pays it at its next pay point, which is conservative.
// L is thread_local and touched only by its own thread: a plain integer.
#include <coact/causal/delay_ledger.hpp>
#include <coact/causal/testing.hpp>

#include <time.h>

#include <algorithm>
#include <chrono>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define COACT_CPU_RELAX() _mm_pause()
#else
#define COACT_CPU_RELAX() ((void)0)
#endif

#include <coact/calibrate/tsc.hpp>

namespace coact::causal {
namespace detail {

// G, in cycles. Writers: add_delay (any thread, fetch_add relaxed),
// inject_delay_cycles_for_test (fetch_add relaxed). Readers: every ledger
// function (relaxed load), timer code stamping delay_stamp. Relaxed suffices:
// see the file comment — a counter, exact under RMW, coherent per thread.
// constinit: zero-initialised before any dynamic initialiser can run.
constinit std::atomic<uint64_t> g_global_delay{0};

namespace {

constexpr int64_t kMinMarginNs = 10'000;   // never spin less than 10 µs after a sleep
constexpr int64_t kMaxMarginNs = 250'000;  // nor more than 250 µs
constexpr int64_t kMinSleepNs = 10'000;    // a sleep shorter than this is not worth the syscall

// Per-thread ledger state. Written and read only by its own thread: no atomics.
struct ThreadLedger {
  uint64_t local_cycles = 0;  // L
  bool registered = false;
  // nanosleep lateness model (ns), as TCP's RTO estimator (RFC 6298): an
  // EWMA of the mean (alpha 1/8) and of the mean absolute deviation (1/4).
  // pay_debt sleeps until deadline - margin, margin = mean + 4 * dev (RFC 6298 K = 4) clamped
  // to kMinMarginNs..kMaxMarginNs, and spins the rest. Initial values: the
  // lateness measured on a 2-core KVM guest (~80 µs, 50 µs of it timer slack).
  int64_t late_mean_ns = 80'000;
  int64_t late_dev_ns = 20'000;

  int64_t sleep_margin_ns() const noexcept {
    return std::clamp<int64_t>(late_mean_ns + 4 * late_dev_ns, kMinMarginNs, kMaxMarginNs);
  }
  void observe_lateness(int64_t late_ns) noexcept {
    const int64_t err = late_ns - late_mean_ns;
    late_mean_ns += err / 8;
    late_dev_ns += ((err < 0 ? -err : err) - late_dev_ns) / 4;
  }
};

// constinit: constant-initialised TLS, so access needs no init guard.
constinit thread_local ThreadLedger t_ledger{};

// Returns this thread's ledger, registering it at L = g if it is new.
ThreadLedger& ledger(uint64_t g) noexcept {
  ThreadLedger& t = t_ledger;
  if (!t.registered) {
    t.registered = true;
    t.local_cycles = g;
  }
  return t;
}

void spin_until(uint64_t deadline_cycles) noexcept {
  while (calibrate::now_cycles() < deadline_cycles) COACT_CPU_RELAX();
}

// Waits until now_cycles() >= deadline (start = the entry read of now_cycles()).
void wait_until(ThreadLedger& t, uint64_t hz, uint64_t start, uint64_t deadline) {
  const uint64_t spin_threshold = calibrate::duration_to_cycles(std::chrono::nanoseconds(kPaySpinThresholdNs), hz);
  uint64_t now = start;
  while (now < deadline && deadline - now >= spin_threshold) {
    const int64_t remaining_ns = calibrate::cycles_to_duration(deadline - now, hz).count();
    const int64_t sleep_ns = remaining_ns - t.sleep_margin_ns();
    if (sleep_ns < kMinSleepNs) break;
    timespec req{static_cast<time_t>(sleep_ns / 1'000'000'000), static_cast<long>(sleep_ns % 1'000'000'000)};
    ::nanosleep(&req, nullptr);  // EINTR: fine, the loop re-reads the clock
    const uint64_t after = calibrate::now_cycles();
    // Lateness of this sleep (how much longer than asked it took): refine the margin.
    const int64_t slept_ns = calibrate::cycles_to_duration(after - now, hz).count();
    // Clamped to 1 ms so one descheduling does not wreck the model.
    t.observe_lateness(std::clamp<int64_t>(slept_ns - sleep_ns, 0, 1'000'000));
    now = after;
  }
  if (now < deadline) spin_until(deadline);
}

}  // namespace

void reset_ledger_in_forked_child() noexcept {
  g_global_delay.store(0, std::memory_order_relaxed);
  t_ledger = ThreadLedger{};
}

uint64_t debt_cycles_slow() noexcept {
  const uint64_t g = g_global_delay.load(std::memory_order_relaxed);
  const ThreadLedger& t = ledger(g);
  return g > t.local_cycles ? g - t.local_cycles : 0;
}

uint64_t pay_debt_slow() {
  const uint64_t g = g_global_delay.load(std::memory_order_relaxed);
  ThreadLedger& t = ledger(g);
  if (g <= t.local_cycles) return 0;
  const uint64_t owed = g - t.local_cycles;
  const uint64_t hz = calibrate::tsc_hz();  // before the clock starts: a first-use calibration is not payment
  const uint64_t start = calibrate::now_cycles();
  wait_until(t, hz, start, start + owed);
  t.local_cycles += owed;  // pay what was owed at entry; later additions are paid next time
  return owed;
}

void credit_resume_slow() noexcept {
  const uint64_t g = g_global_delay.load(std::memory_order_relaxed);
  ThreadLedger& t = ledger(g);
  t.local_cycles = std::max(t.local_cycles, g);
}

}  // namespace detail

uint64_t local_delay_cycles() noexcept {
  const uint64_t g = detail::g_global_delay.load(std::memory_order_relaxed);
  if (g == 0 && !detail::t_ledger.registered) return 0;
  return detail::ledger(g).local_cycles;
}

void add_global_delay(uint64_t cycles) noexcept {
  if (cycles != 0) detail::g_global_delay.fetch_add(cycles, std::memory_order_relaxed);
}

void credit_local(uint64_t cycles) noexcept {
  const uint64_t g = detail::g_global_delay.load(std::memory_order_relaxed);
  detail::ThreadLedger& t = detail::ledger(g);
  t.local_cycles = std::max(t.local_cycles, std::min(g, t.local_cycles + cycles));
}

void wait_until_cycles(uint64_t deadline_cycles) noexcept {
  const uint64_t now = calibrate::now_cycles();
  if (now >= deadline_cycles) return;
  detail::wait_until(detail::ledger(detail::g_global_delay.load(std::memory_order_relaxed)), calibrate::tsc_hz(), now,
                     deadline_cycles);
}

void register_thread() noexcept { detail::ledger(detail::g_global_delay.load(std::memory_order_relaxed)); }

void add_delay(uint64_t cycles) noexcept {
  if (cycles == 0) return;
  // Register before adding so a new thread's L starts at the pre-add G and
  // then covers its own addition: the thread owes nothing for its own region.
  detail::ThreadLedger& t = detail::ledger(detail::g_global_delay.load(std::memory_order_relaxed));
  detail::g_global_delay.fetch_add(cycles, std::memory_order_relaxed);
  t.local_cycles += cycles;
}

void inject_delay_cycles_for_test(uint64_t cycles) {
  (void)calibrate::tsc_hz();  // calibrate eagerly: conversions must never stall a pay point
  detail::g_global_delay.fetch_add(cycles, std::memory_order_relaxed);
}

std::mutex& test_ledger_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace coact::causal
