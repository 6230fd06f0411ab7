// coact/causal/delay_ledger.hpp: the delay ledger — global injected delay G,
// per-thread local counts L, debt = G - L, paying and crediting.
//
// Provides: the ledger of virtual speedup (Coz, Curtsinger & Berger, SOSP
// 2015, §3.2 "virtual speedup"; docs/DESIGN.md "Causal profiling",
// "Delay ledger"). A region virtually sped up by s that ran Δ cycles on thread
// t calls add_delay(s·Δ): G += s·Δ and L_t += s·Δ, so every *other* thread
// owes s·Δ. Threads pay at pay points (pay_debt) by waiting; a parked thread
// woken by one that has paid is forgiven (credit_resume). Timer deadlines are
// shifted by G's growth since their delay_stamp, converted with
// coact::calibrate::cycles_to_duration; a virtual timer's stamp is its arming
// thread's L during a sweep (hooks.hpp timer_stamp_cycles), so a timer armed
// by a thread that owes D fires D later, plus what is injected meanwhile.
//
// Units: TSC cycles of coact::calibrate::now_cycles() (nanoseconds on the
// CLOCK_MONOTONIC fallback; tsc_hz() converts either way).
//
// Threads: every function may be called from any thread and acts on the
// calling thread's L. A thread registers implicitly on its first ledger call
// that finds G != 0, at L = G (a thread does not owe delay injected before it
// joined). Calls while G == 0 do not register (they are a single relaxed
// load), so a thread that exists *before* delay is injected and must owe it
// from then on calls register_thread() at start; runtime workers do.
//
// Blocking: pay_debt() blocks for the debt (spins / sleeps); nothing else blocks.
//
// Fast path: while no delay was ever injected (G == 0), global_delay_cycles,
// debt_cycles, pay_debt and credit_resume are one relaxed load of G and a
// branch, inlined; no thread-local access.
//
// Memory ordering: G is a pure counter — no other memory is published through
// it — so relaxed operations suffice (see the comment on detail::g_global_delay
// in the .cpp). Read-after-write coherence of a single atomic guarantees a
// thread never reads a G older than one it has already used for its own L,
// hence L <= G as read by the owning thread, and debt never underflows (the
// subtraction saturates anyway). A woken thread's credit_resume() may read a
// G slightly older than its waker's; then it owes the difference and pays it
// at its next pay point (conservative, never lost).
//
// pay_debt() accuracy (overshoot = cycles actually waited − cycles owed) is
// measured by the [ledger][measure] test, 1000 payments per debt size; a
// debt within the sleep margin is spun, a larger one slept and then spun.
//
// Under-pay: never (it waits until now_cycles() >= entry + debt).
// Overshoot bound: while the paying thread keeps its CPU, the spin-loop
// granularity (~50 ns, one pause + one clock read) plus, on the sleep path,
// the sleep's lateness beyond the margin. Below the spin threshold the wait
// is a TSC spin; above it, nanosleep covers all but an adaptive margin (mean
// + 4 deviations of this thread's observed sleep lateness, 10..250 µs, as
// TCP's RTO estimator, RFC 6298) that is spun out. Larger overshoots are
// scheduler events — a sleep that wakes later than the margin, or a spin
// preempted for a time slice (the 4/8/12 ms tails are multiples of the 4 ms
// tick) — which pay_debt cannot bound; they are rare on an idle machine. The
// tests assert, per debt size over 20 payments, median < 1 ms and 85th
// percentile < 10 ms.
//
// Lifetime: G lives for the process; L lives for its thread.
#pragma once

#include <atomic>
#include <cstdint>

#include <coact/causal/linkage.hpp>

namespace coact::causal {

namespace detail {
// Process-global injected delay G (cycles). Defined in delay_ledger.cpp;
// declared here so the G == 0 fast paths inline to one relaxed load.
// Writers: add_delay, add_global_delay, inject_delay_cycles_for_test (testing.hpp)
// (relaxed fetch_add, any thread). Readers: every ledger function and timer delay_stamps (relaxed
// load, any thread). Relaxed suffices: G is a counter that publishes no other
// memory; RMWs make the sum exact and per-object coherence keeps each
// thread's reads monotonic (argument in full at the top of delay_ledger.cpp).
COACT_CAUSAL_LOCAL extern std::atomic<uint64_t> g_global_delay;

uint64_t debt_cycles_slow() noexcept;
uint64_t pay_debt_slow();
void credit_resume_slow() noexcept;
/// fork() child handler (hooks.cpp): G = 0 and the forking thread's L = 0.
void reset_ledger_in_forked_child() noexcept;
}  // namespace detail

/// Short debts (below this) are paid by a TSC spin; longer ones sleep for the
/// bulk (debt − margin, when that is at least 10 µs) and spin the rest. 50 µs: nanosleep on Linux wakes ~50-100 µs late
/// (50 µs default timer slack + wake-up latency), so sleeping shorter debts
/// cannot be accurate.
inline constexpr uint64_t kPaySpinThresholdNs = 50'000;

/// G: total delay injected so far (cycles, monotonic non-decreasing). Any
/// thread; one relaxed load. Timer entries stamp it as their delay_stamp.
inline uint64_t global_delay_cycles() noexcept { return detail::g_global_delay.load(std::memory_order_relaxed); }

/// L of the calling thread (registers it if G != 0 and it is new). Any thread.
uint64_t local_delay_cycles() noexcept;

/// Registers the calling thread now, at L = G, if not yet registered (a no-op
/// otherwise). Call at thread start on threads that must owe every delay
/// injected from then on. Any thread; never blocks.
void register_thread() noexcept;

/// G − L for the calling thread, saturating at 0. Any thread; never blocks.
/// G == 0 fast path: one relaxed load.
inline uint64_t debt_cycles() noexcept {
  if (detail::g_global_delay.load(std::memory_order_relaxed) == 0) return 0;
  return detail::debt_cycles_slow();
}

/// A region on this thread was virtually sped up by `cycles`: G += cycles and
/// L += cycles, so this thread owes nothing for it and every other thread owes
/// `cycles`. Any thread; never blocks; one relaxed RMW on G. Precondition: the
/// caller has called calibrate::tsc_hz() once before the sweep (so that the
/// first pay_debt never stalls on calibration); add_delay itself never
/// calibrates.
void add_delay(uint64_t cycles) noexcept;

/// Live accrual (live_accrual.cpp): `cycles` of virtual speedup of a region that is
/// still running on *another* thread, published into G by the caller on the
/// owner's behalf: G += cycles, the caller's L unchanged (the caller owes it
/// like every other thread; the owner takes it back with credit_local). Any
/// thread; never blocks; one relaxed RMW on G. Precondition: as add_delay.
void add_global_delay(uint64_t cycles) noexcept;

/// L += cycles for the calling thread, capped at G: delay that other threads
/// put into G on this thread's behalf (add_global_delay for its own running
/// region), which it must not owe. Any thread; never blocks.
void credit_local(uint64_t cycles) noexcept;

/// Waits until now_cycles() >= deadline_cycles: a TSC spin when less than
/// kPaySpinThresholdNs remains, else nanosleep for all but the calling
/// thread's adaptive margin and a spin for the rest (the wait pay_debt uses;
/// accuracy in the header comment). Returns at once for a past deadline.
/// Any thread; blocks. Precondition: calibrate::tsc_hz() was called before
/// (it is read, never calibrated, here).
void wait_until_cycles(uint64_t deadline_cycles) noexcept;

/// Pays the calling thread's debt as owed at entry (d = G − L read once):
/// waits until now_cycles() >= entry + d — a TSC spin when d is below
/// kPaySpinThresholdNs, else nanosleep for all but an adaptive margin and a
/// spin for the rest, re-reading the clock after every sleep — then L += d.
/// Delay added while paying is paid next time. Returns d (cycles credited;
/// 0 when nothing was owed). Any thread; blocks for ~d. Accuracy: the table
/// in the header comment (never under-pays). Errors: std::runtime_error only
/// from a first-use tsc_hz() with a bad COACT_TSC_HZ.
inline uint64_t pay_debt() {
  if (detail::g_global_delay.load(std::memory_order_relaxed) == 0) return 0;
  return detail::pay_debt_slow();
}

/// The calling thread was parked and has been woken by a thread that has paid
/// its debt: fast-forward L to G (the sleep paid for it). Any thread; never blocks.
inline void credit_resume() noexcept {
  if (detail::g_global_delay.load(std::memory_order_relaxed) == 0) return;
  detail::credit_resume_slow();
}

}  // namespace coact::causal
