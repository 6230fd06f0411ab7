// The cycle clock: invariant-TSC detection, tsc_hz measurement and the
// process-wide resolution order (env pin > calibration file > measurement),
// with CLOCK_MONOTONIC as the fallback cycle source.
#include <coact/calibrate/tsc.hpp>
#include <coact/options.hpp>

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>

#if COACT_HAVE_RDTSC
#include <cpuid.h>
#endif

#include <fmt/core.h>

#include <coact/calibrate/calibration_file.hpp>

namespace coact::calibrate {
namespace {

constexpr uint64_t kNsPerSec = 1'000'000'000;

// 128-bit intermediates (GCC/Clang extension; __extension__ keeps -Wpedantic quiet).
__extension__ typedef unsigned __int128 u128;

struct Cpuid {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// Executes CPUID (leaf, subleaf 0); nullopt when the leaf is above the
// maximum its range (basic / extended / hypervisor) reports.
std::optional<Cpuid> cpuid(uint32_t leaf) {
#if COACT_HAVE_RDTSC
  Cpuid r;
  if (leaf >= 0x40000000u && leaf < 0x80000000u) {
    // Hypervisor range: only meaningful when CPUID.1:ECX[31] ("hypervisor present") is set.
    __cpuid_count(1, 0, r.eax, r.ebx, r.ecx, r.edx);
    if ((r.ecx & (1u << 31)) == 0) return std::nullopt;
    __cpuid_count(0x40000000u, 0, r.eax, r.ebx, r.ecx, r.edx);
    if (r.eax < leaf) return std::nullopt;
  } else {
    const uint32_t max = __get_cpuid_max(leaf & 0x80000000u, nullptr);
    if (max == 0 || max < leaf) return std::nullopt;
  }
  __cpuid_count(leaf, 0, r.eax, r.ebx, r.ecx, r.edx);
  return r;
#else
  (void)leaf;
  return std::nullopt;
#endif
}

// A (TSC, CLOCK_MONOTONIC) pair: the TSC read sits between two clock reads,
// so `bracket_ns` bounds how far apart the two samples can be.
struct ClockPair {
  uint64_t tsc = 0;
  uint64_t ns = 0;          // midpoint of the two clock reads
  uint64_t bracket_ns = 0;  // width of the clock_gettime .. clock_gettime bracket
};

ClockPair read_pair() {
  // Tightest of 8 brackets; a bracket wider than 20 µs means the thread was
  // preempted or interrupted inside it, so take further batches (<= 50 tries).
  constexpr uint64_t kGoodBracketNs = 20'000;
  ClockPair best{0, 0, std::numeric_limits<uint64_t>::max()};
  for (int tries = 0; tries < 50; ++tries) {
    const uint64_t a = detail::monotonic_ns();
    const uint64_t t = read_tsc_fenced();
    const uint64_t b = detail::monotonic_ns();
    if (b - a < best.bracket_ns) best = {t, a + (b - a) / 2, b - a};
    if (tries >= 7 && best.bracket_ns <= kGoodBracketNs) break;
  }
  return best;
}

uint64_t pin_or_zero() { return options::process().integer("COACT_TSC_HZ").value_or(0); }

struct ClockState {
  uint64_t hz = 0;
  TscHzSource source = TscHzSource::measured;
};

ClockState resolve_clock() {
  const uint64_t pin = pin_or_zero();  // resolved (validated) once per process
  if (!detail::tsc_is_source()) {
    if (pin != 0) {
      std::fprintf(stderr,
                   "coact: warning: COACT_TSC_HZ=%llu ignored: no invariant TSC, the cycle clock is "
                   "CLOCK_MONOTONIC nanoseconds (tsc_hz = 1000000000)\n",
                   static_cast<unsigned long long>(pin));
    }
    return {kNsPerSec, TscHzSource::monotonic};
  }
  if (pin != 0) return {pin, TscHzSource::env_pin};

  if (auto c = load_calibration()) {
    if (c->invariant_tsc && c->cpu_model == current_cpu_model()) {
      // Sanity check against a short measurement: a stale file (another host
      // behind the same model string, a changed VM TSC scaling) must not
      // silently skew every conversion. 5 ms: error < 1e-4, well inside 1%.
      const TscMeasurement quick = measure_tsc_hz(1, std::chrono::milliseconds(5));
      const double rel =
          std::abs(static_cast<double>(quick.tsc_hz) - static_cast<double>(c->tsc_hz)) / static_cast<double>(c->tsc_hz);
      if (rel <= 0.01) return {c->tsc_hz, TscHzSource::calibration_file};
      std::fprintf(stderr,
                   "coact: warning: calibration file tsc_hz=%llu disagrees with a 5 ms measurement (%llu) by "
                   "%.2f%%; measuring instead (rerun coact-calibrate to refresh the file)\n",
                   static_cast<unsigned long long>(c->tsc_hz), static_cast<unsigned long long>(quick.tsc_hz),
                   rel * 100.0);
    }
  }
  return {measure_tsc_hz().tsc_hz, TscHzSource::measured};
}

const ClockState& clock_state() {
  // Function-local static: initialised once, thread-safely (a throw leaves it
  // uninitialised and the next call retries). Readers after the guard see the
  // fully built value (C++ [stmt.dcl]/4).
  static const ClockState state = resolve_clock();
  return state;
}

}  // namespace

InvariantTscReport probe_invariant_tsc() {
  InvariantTscReport r;
  if (auto leaf = cpuid(0x80000007u)) r.cpuid_invariant = (leaf->edx & (1u << 8)) != 0;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    r.cpuinfo_readable = true;
    std::istringstream words(line.substr(line.find(':') == std::string::npos ? 0 : line.find(':') + 1));
    std::string w;
    while (words >> w) {
      if (w == "constant_tsc") r.cpuinfo_constant_tsc = true;
      if (w == "nonstop_tsc") r.cpuinfo_nonstop_tsc = true;
    }
    break;  // the first CPU's flags; the kernel requires them uniform
  }
  r.invariant = r.cpuid_invariant && (!r.cpuinfo_readable || (r.cpuinfo_constant_tsc && r.cpuinfo_nonstop_tsc));
  return r;
}

bool has_invariant_tsc() {
  static const bool invariant = [] {
    const InvariantTscReport r = probe_invariant_tsc();
    if (r.cpuinfo_readable && r.cpuid_invariant != (r.cpuinfo_constant_tsc && r.cpuinfo_nonstop_tsc)) {
      std::fprintf(stderr,
                   "coact: warning: CPUID says invariant TSC %s but /proc/cpuinfo has constant_tsc=%s "
                   "nonstop_tsc=%s; treating the TSC as %s\n",
                   r.cpuid_invariant ? "yes" : "no", r.cpuinfo_constant_tsc ? "yes" : "no",
                   r.cpuinfo_nonstop_tsc ? "yes" : "no", r.invariant ? "invariant" : "not invariant");
    }
    return r.invariant;
  }();
  return invariant;
}

TscMeasurement measure_tsc_hz(int rounds, std::chrono::nanoseconds round_interval) {
  if (rounds < 1) throw std::invalid_argument("measure_tsc_hz: rounds must be >= 1");
  if (round_interval < std::chrono::milliseconds(1)) {
    throw std::invalid_argument("measure_tsc_hz: round_interval must be >= 1 ms");
  }
  std::vector<uint64_t> hz;
  hz.reserve(static_cast<size_t>(rounds));
  uint64_t worst_bracket = 0;
  for (int i = 0; i < rounds; ++i) {
    const ClockPair p0 = read_pair();
    const auto total = round_interval.count();
    timespec req{static_cast<time_t>(total / 1'000'000'000), static_cast<long>(total % 1'000'000'000)};
    while (::clock_nanosleep(CLOCK_MONOTONIC, 0, &req, &req) != 0) {
      // EINTR: continue with the remaining time (the endpoints are what count).
    }
    const ClockPair p1 = read_pair();
    worst_bracket = std::max({worst_bracket, p0.bracket_ns, p1.bracket_ns});
    const uint64_t dns = p1.ns - p0.ns;
    const u128 dt = p1.tsc - p0.tsc;
    hz.push_back(dns == 0 ? 0 : static_cast<uint64_t>((dt * kNsPerSec + dns / 2) / dns));
  }
  std::vector<uint64_t> sorted = hz;
  std::sort(sorted.begin(), sorted.end());
  TscMeasurement m;
  m.tsc_hz = sorted[sorted.size() / 2];
  m.min_round_hz = sorted.front();
  m.max_round_hz = sorted.back();
  m.rounds = rounds;
  m.round_interval = round_interval;
  m.worst_bracket = std::chrono::nanoseconds(worst_bracket);
  m.bracket_error_bound = 2.0 * static_cast<double>(worst_bracket) / static_cast<double>(round_interval.count());
  return m;
}

std::optional<CpuidTscHz> cpuid_tsc_hz() {
  // Leaf 0x15: TSC = crystal (ECX) * EBX / EAX. Many parts (and most VMs)
  // answer zeros; then it is "not available" rather than a guess from a
  // model table.
  if (auto l = cpuid(0x15u); l && l->eax != 0 && l->ebx != 0 && l->ecx != 0) {
    const u128 hz = static_cast<u128>(l->ecx) * l->ebx / l->eax;
    return CpuidTscHz{static_cast<uint64_t>(hz), "cpuid 0x15"};
  }
  // Hypervisor timing leaf (VMware / KVM "tsc_khz" leaf): EAX = TSC kHz.
  if (auto l = cpuid(0x40000010u); l && l->eax != 0) {
    return CpuidTscHz{static_cast<uint64_t>(l->eax) * 1000u, "cpuid 0x40000010"};
  }
  return std::nullopt;
}

std::string_view to_string(TscHzSource source) noexcept {
  switch (source) {
    case TscHzSource::env_pin:
      return "COACT_TSC_HZ";
    case TscHzSource::calibration_file:
      return "calibration file";
    case TscHzSource::measured:
      return "measured";
    case TscHzSource::monotonic:
      return "CLOCK_MONOTONIC (no invariant TSC)";
  }
  return "?";
}

uint64_t tsc_hz() { return clock_state().hz; }

TscHzSource tsc_hz_source() { return clock_state().source; }

namespace detail {

bool choose_tsc_source() noexcept {
  if (has_invariant_tsc()) return true;
  std::fprintf(stderr,
               "coact: warning: no invariant TSC on this CPU; using CLOCK_MONOTONIC nanoseconds as the cycle "
               "clock (tsc_hz = 1000000000). Timings stay correct; clock reads cost more.\n");
  return false;
}

uint64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * kNsPerSec + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace detail

std::chrono::nanoseconds cycles_to_duration(uint64_t cycles, uint64_t hz) noexcept {
  const u128 ns = (static_cast<u128>(cycles) * kNsPerSec + hz / 2) / hz;
  constexpr auto kMax = static_cast<u128>(std::numeric_limits<std::chrono::nanoseconds::rep>::max());
  return std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(ns > kMax ? kMax : ns));
}

uint64_t duration_to_cycles(std::chrono::nanoseconds d, uint64_t hz) noexcept {
  if (d.count() <= 0) return 0;
  const u128 c = (static_cast<u128>(d.count()) * hz + kNsPerSec / 2) / kNsPerSec;
  constexpr auto kMax = static_cast<u128>(std::numeric_limits<uint64_t>::max());
  return static_cast<uint64_t>(c > kMax ? kMax : c);
}

std::chrono::nanoseconds cycles_to_duration(uint64_t cycles) { return cycles_to_duration(cycles, tsc_hz()); }

uint64_t duration_to_cycles(std::chrono::nanoseconds d) { return duration_to_cycles(d, tsc_hz()); }

}  // namespace coact::calibrate
