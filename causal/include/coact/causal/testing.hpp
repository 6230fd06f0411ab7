// coact/causal/testing.hpp: hooks for tests of the causal profiler and of the
// runtime's causal paths; a program never needs them.
//
// Provides: inject_delay_cycles_for_test (drive the delay ledger without a
// sweep), test_ledger_mutex (serialise tests that read ledger deltas),
// detail::region_depth (the calling thread's region stack depth), and
// detail::fast_frame / sample_next_handler_run (which handler-run path a
// run takes).
// Threads: any. Blocking: test_ledger_mutex() is a mutex the caller locks.
// Lifetime: process-wide, like the ledger.
#pragma once

#include <cstdint>
#include <mutex>

namespace coact::causal {

/// G += cycles without touching the caller's L, so every registered thread
/// (the caller included) owes `cycles` (delay_ledger.hpp). Calls
/// calibrate::tsc_hz() first so later conversions never stall a scheduler
/// loop. Any thread. Errors: as tsc_hz().
void inject_delay_cycles_for_test(uint64_t cycles);

/// The mutex every delta-sensitive ledger test holds: the ledger is
/// process-global, so such tests must not interleave. A function-local static.
std::mutex& test_ledger_mutex();

namespace detail {
/// Depth of the calling thread's region stack (region.hpp), an open fast
/// handler frame (handler_fast_path.hpp) included. Never blocks.
uint32_t region_depth() noexcept;

/// How the calling thread's open handler run is kept: none (no run, or an
/// ordinary region-stack frame), a fast untimed frame, or a sampled fast
/// frame (region_stack.cpp). Never blocks.
enum class FastFrame { none, untimed, sampled };
FastFrame fast_frame() noexcept;

/// Makes the calling thread's next run of the handler (actor_type, kind) a
/// sampled one that stands for itself only (weight 1), if the thread has run
/// that handler before (its cache entry is filled); else does nothing.
/// Calling thread only; never blocks.
void sample_next_handler_run(const void* actor_type, uint32_t kind) noexcept;
}  // namespace detail

}  // namespace coact::causal
