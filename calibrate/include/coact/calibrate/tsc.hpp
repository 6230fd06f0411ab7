// coact/calibrate/tsc.hpp: the cycle clock — TSC reads, tsc_hz and cycle <-> duration.
//
// Provides: read_tsc() / read_tsc_fenced() (raw rdtsc), has_invariant_tsc(),
// measure_tsc_hz() (TSC against CLOCK_MONOTONIC over a wall interval),
// cpuid_tsc_hz() (what the CPU or hypervisor reports, for comparison only),
// and the process-wide clock: now_cycles(), tsc_hz(), cycles_to_duration(),
// duration_to_cycles(). Design: docs/DESIGN.md "Calibration" (tsc_hz
// converts ledger cycles to wall time for delay_stamp deadline shifts).
//
// The process-wide cycle source is chosen once: the TSC when the CPU has an
// invariant TSC, otherwise CLOCK_MONOTONIC nanoseconds posing as "cycles" with
// tsc_hz() == 1e9 (a one-time warning goes to stderr). Either way
// now_cycles() and tsc_hz() agree, so conversions are never wrong; only the
// cost of a read differs (~8 ns rdtsc vs ~20 ns vDSO clock_gettime).
//
// Threads: every function may be called from any thread. tsc_hz() initialises
// lazily and thread-safely (function-local static): the first call may block
// for up to ~70 ms (a measurement) or ~6 ms (a calibration-file sanity check);
// later calls are a guarded load. Callers on a latency-sensitive path (the
// causal controller, a scheduler loop) call tsc_hz() once up front.
// Memory ordering: the process-wide values are published by C++ static
// initialisation (happens-before every reader that passes the guard).
// Lifetime: the values are fixed for the life of the process.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define COACT_HAVE_RDTSC 1
#else
#define COACT_HAVE_RDTSC 0
#endif

namespace coact::calibrate {

/// Raw time-stamp counter. Not ordered against surrounding loads/stores: fine
/// for timestamps and deadlines, not for timing a short code sequence (use
/// read_tsc_fenced()). Any thread, never blocks. Meaningful as time only when
/// has_invariant_tsc(); the process clock is now_cycles().
inline uint64_t read_tsc() noexcept {
#if COACT_HAVE_RDTSC
  return __rdtsc();
#else
  return 0;  // no TSC: has_invariant_tsc() is false and now_cycles() never calls this
#endif
}

/// lfence; rdtsc; lfence: the read is not reordered with earlier or later
/// instructions (Intel SDM vol. 2B, RDTSC: "If software requires RDTSC to be
/// executed only after all previous instructions have executed ... LFENCE").
/// Use for measurements; costs ~20-40 cycles more than read_tsc().
inline uint64_t read_tsc_fenced() noexcept {
#if COACT_HAVE_RDTSC
  _mm_lfence();
  const uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
#else
  return 0;
#endif
}

/// How has_invariant_tsc() decided; both views, for the CLI's report.
struct InvariantTscReport {
  bool cpuid_invariant = false;       ///< CPUID 0x80000007 EDX bit 8 ("Invariant TSC").
  bool cpuinfo_readable = false;      ///< /proc/cpuinfo could be read and had a flags line.
  bool cpuinfo_constant_tsc = false;  ///< flags contain constant_tsc.
  bool cpuinfo_nonstop_tsc = false;   ///< flags contain nonstop_tsc.
  /// The verdict: the CPUID bit, cross-checked with the kernel's flags when
  /// they are readable (both constant_tsc and nonstop_tsc must be present).
  bool invariant = false;
};

/// Probes CPUID and /proc/cpuinfo (uncached). Any thread; reads a procfs file.
InvariantTscReport probe_invariant_tsc();

/// Cached probe_invariant_tsc().invariant. Any thread; first call reads procfs.
/// A disagreement between CPUID and the kernel flags is warned about once on stderr.
bool has_invariant_tsc();

/// One measurement of the TSC rate against CLOCK_MONOTONIC.
struct TscMeasurement {
  uint64_t tsc_hz = 0;                         ///< Median of the rounds.
  uint64_t min_round_hz = 0;                   ///< Smallest round (spread = max - min).
  uint64_t max_round_hz = 0;                   ///< Largest round.
  int rounds = 0;                              ///< Rounds measured.
  std::chrono::nanoseconds round_interval{0};  ///< Wall interval per round.
  /// Worst endpoint uncertainty seen: the width of the clock_gettime..rdtsc..clock_gettime
  /// bracket that pairs a TSC value with a CLOCK_MONOTONIC value.
  std::chrono::nanoseconds worst_bracket{0};
  /// Relative error bound of the median from the brackets alone:
  /// 2 * worst_bracket / round_interval (NTP slew of CLOCK_MONOTONIC, at most
  /// 500 ppm and usually < 50 ppm, comes on top; it is what timers see too).
  double bracket_error_bound = 0.0;
};

/// Measures the TSC rate: `rounds` rounds, each pairs (TSC, CLOCK_MONOTONIC)
/// at both ends of a `round_interval` sleep and divides; the median round
/// wins. Each endpoint is the tightest of 8 brackets clock_gettime / rdtsc /
/// clock_gettime, so a preemption at an endpoint is detected and retried (up to 50
/// tries) rather than averaged in. Bound: the per-round error is at most
/// 2 * bracket / interval, i.e. with the typical ~50 ns bracket and 20 ms
/// rounds < 5 ppm, plus the NTP slew of CLOCK_MONOTONIC (< 500 ppm by
/// kernel contract). The median of 3 rounds discards one round disturbed by
/// a frequency event. Defaults: 3 rounds of 20 ms (~60 ms wall).
/// Preconditions: rounds >= 1, round_interval >= 1 ms; the TSC is the one to
/// measure (meaningful only with an invariant TSC). Any thread; blocks (sleeps).
/// Errors: std::invalid_argument for bad arguments.
TscMeasurement measure_tsc_hz(int rounds = 3, std::chrono::nanoseconds round_interval = std::chrono::milliseconds(20));

/// What the CPU or hypervisor reports about the TSC rate, without measuring.
struct CpuidTscHz {
  uint64_t tsc_hz = 0;
  /// "cpuid 0x15" (crystal clock * EBX/EAX, Intel SDM vol. 3B 18.7.3) or
  /// "cpuid 0x40000010" (KVM/VMware timing leaf, EAX in kHz).
  std::string source;
};

/// CPUID leaf 0x15 where it answers (ECX, EAX, EBX all non-zero), else the
/// hypervisor timing leaf 0x40000010 when a hypervisor advertises it, else
/// nullopt. For reporting beside measure_tsc_hz(); never used as tsc_hz().
/// Any thread; never blocks.
std::optional<CpuidTscHz> cpuid_tsc_hz();

/// Accepted range of COACT_TSC_HZ and of a calibration file's tsc_hz.
inline constexpr uint64_t kMinTscHz = 1'000'000;        // 1 MHz
inline constexpr uint64_t kMaxTscHz = 100'000'000'000;  // 100 GHz

/// Where tsc_hz() got its value.
enum class TscHzSource {
  env_pin,           ///< COACT_TSC_HZ (any source of coact/options.hpp).
  calibration_file,  ///< load_calibration() (checked against a 5 ms measurement).
  measured,          ///< measure_tsc_hz() at first use.
  monotonic,         ///< no invariant TSC: now_cycles() is CLOCK_MONOTONIC ns, tsc_hz == 1e9.
};

/// Name of a source for messages ("COACT_TSC_HZ", "calibration file", ...).
std::string_view to_string(TscHzSource source) noexcept;

/// The process-wide cycles-per-second of now_cycles(), decided once:
///  1. no invariant TSC: 1e9 (now_cycles() is CLOCK_MONOTONIC ns; a set
///     COACT_TSC_HZ is ignored, with a warning);
///  2. COACT_TSC_HZ unless it is "auto" (options::process(); validated there);
///  3. the calibration file (calibration_file.hpp) if it is valid, was written
///     with an invariant TSC on the same cpu_model, and agrees within 1% with
///     a 5 ms measurement (else a warning and step 4);
///  4. measure_tsc_hz() with its defaults.
/// Any thread; the first call may block (see the header comment).
/// Errors: options::option_error for a bad COACT_* key (from the first
/// options::process(); thrown again on every call, since initialisation did
/// not complete).
uint64_t tsc_hz();

/// Source of tsc_hz() (initialises it like tsc_hz()).
TscHzSource tsc_hz_source();

namespace detail {
/// Chooses the cycle source once (warns on stderr if it is CLOCK_MONOTONIC).
bool choose_tsc_source() noexcept;
/// CLOCK_MONOTONIC in nanoseconds (vDSO clock_gettime).
uint64_t monotonic_ns() noexcept;
/// True iff now_cycles() reads the TSC. A guarded static: after the first
/// call, one load and a predictable branch.
inline bool tsc_is_source() noexcept {
  static const bool tsc = choose_tsc_source();
  return tsc;
}
}  // namespace detail

/// The process cycle clock: read_tsc() with an invariant TSC, else
/// CLOCK_MONOTONIC nanoseconds. Its rate is tsc_hz(). Any thread; never blocks.
inline uint64_t now_cycles() noexcept { return detail::tsc_is_source() ? read_tsc() : detail::monotonic_ns(); }

/// cycles * 1e9 / hz rounded to nearest, in 128-bit arithmetic (no overflow);
/// saturates at nanoseconds::max(). Precondition: hz > 0. Pure; any thread.
std::chrono::nanoseconds cycles_to_duration(uint64_t cycles, uint64_t hz) noexcept;

/// d * hz / 1e9 rounded to nearest, in 128-bit arithmetic; a negative d
/// gives 0; saturates at UINT64_MAX. Precondition: hz > 0. Pure; any thread.
uint64_t duration_to_cycles(std::chrono::nanoseconds d, uint64_t hz) noexcept;

/// cycles_to_duration(cycles, tsc_hz()). Any thread; may block on first use of tsc_hz().
std::chrono::nanoseconds cycles_to_duration(uint64_t cycles);

/// duration_to_cycles(d, tsc_hz()). Any thread; may block on first use of tsc_hz().
uint64_t duration_to_cycles(std::chrono::nanoseconds d);

}  // namespace coact::calibrate
