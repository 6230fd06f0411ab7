// coact-calibrate: measures this machine (tsc_hz, hand-off cost, wake
// break-even), prints a table or JSON, warns about conditions that skew the
// numbers, and writes the calibration file read by coact programs at boot.
//
// Steps:
//  1. Resolve the COACT_* options (coact/options.hpp: a bad one is one line
//     and exit 2; --coact-* arguments are taken out of argv), then parse our
//     own (CLI11: a bad option is one line naming it, and exit 2).
//     --print-config lists every key with its value and source and exits.
//  2. Probe invariant TSC (CPUID + /proc/cpuinfo); measure tsc_hz against
//     CLOCK_MONOTONIC (or 1e9 on the CLOCK_MONOTONIC fallback); read CPUID's view.
//  3. Probe the futex hand-off cost; derive the wake break-even.
//  4. Collect skew warnings (governor, TSC, clocksource, cores vs --workers,
//     env pins that will override the file).
//  5. Print; write the file atomically unless --no-write.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <coact/calibrate/calibration_file.hpp>
#include <coact/calibrate/handoff.hpp>
#include <coact/calibrate/tsc.hpp>
#include <coact/options.hpp>

namespace {

using namespace coact::calibrate;

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  if (in && std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    return line;
  }
  return {};
}

std::string fmt_ns(std::chrono::nanoseconds d) {
  const auto ns = d.count();
  if (ns >= 1'000'000) return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
  if (ns >= 10'000) return fmt::format("{:.1f} us", static_cast<double>(ns) / 1e3);
  if (ns >= 1'000) return fmt::format("{:.2f} us", static_cast<double>(ns) / 1e3);
  return fmt::format("{} ns", ns);
}

std::string fmt_hz(uint64_t hz) { return fmt::format("{} Hz ({:.3f} GHz)", hz, static_cast<double>(hz) / 1e9); }

}  // namespace

int main(int argc, char** argv) {
  const coact::options::Values values = coact::options::init(argc, argv);
  CLI::App app{
      "coact-calibrate: measure TSC rate, futex hand-off cost and wake break-even, and write the "
      "per-machine calibration file"};
  std::string output;
  bool no_write = false;
  bool json_out = false;
  uint32_t workers = online_cores();
  uint32_t round_trips = 2000;
  auto* out_opt = app.add_option("-o,--output", output,
                                 "calibration file to write (default: $COACT_CALIBRATION_FILE, else "
                                 "$XDG_CACHE_HOME/coact/calibration.json, else ~/.cache/coact/calibration.json)");
  app.add_flag("--no-write", no_write, "measure and print only; do not write the calibration file")->excludes(out_opt);
  app.add_flag("--json", json_out, "print the results as JSON instead of a table");
  app.add_option("--workers", workers, "worker threads the program will run (warn when cores are fewer)")
      ->check(CLI::Range(1u, 1024u));
  app.add_option("--round-trips", round_trips, "hand-off probe round trips (after 200 warm-up)")
      ->check(CLI::Range(10u, 1'000'000u));
  bool print_config = false;
  bool markdown = false;
  app.add_flag("--print-config", print_config,
               "print every COACT_* key with its resolved value and source (default, config file, environment, "
               "command line) and exit");
  app.add_flag("--markdown", markdown, "with --print-config: print the declaration table as Markdown instead");
  app.set_version_flag("--version", "coact-calibrate " COACT_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "coact-calibrate: %s (see coact-calibrate --help)\n", e.what());
    return 2;
  }
  if (print_config) {
    std::fputs(markdown ? coact::options::markdown_table().c_str() : values.listing().c_str(), stdout);
    return 0;
  }

  try {
    // 2. TSC.
    const InvariantTscReport inv = probe_invariant_tsc();
    const bool invariant = has_invariant_tsc();
    TscMeasurement m;
    uint64_t hz = 1'000'000'000;
    if (invariant) {
      m = measure_tsc_hz();
      hz = m.tsc_hz;
    }
    const std::optional<CpuidTscHz> cpuid = cpuid_tsc_hz();

    // 3. Hand-off.
    const HandoffProbeResult h = probe_handoff_cost({round_trips, 200});
    const auto handoff = std::max(h.median, std::chrono::nanoseconds(1));
    const auto break_even = wake_break_even(handoff);
    const uint32_t cores = online_cores();

    // 4. Skew warnings.
    std::vector<std::string> warnings;
    const std::string governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    if (!governor.empty() && governor != "performance") {
      warnings.push_back(
          fmt::format("frequency scaling governor is '{}', not 'performance': hand-off costs "
                      "vary with the clock ramp",
                      governor));
    }
    if (!invariant) {
      warnings.push_back(
          "no invariant TSC: the cycle clock falls back to CLOCK_MONOTONIC nanoseconds (tsc_hz = 1e9); "
          "clock reads cost more");
    }
    const std::string clocksource = read_first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    if (invariant && !clocksource.empty() && clocksource != "tsc") {
      warnings.push_back(
          fmt::format("kernel clocksource is '{}', not 'tsc': the kernel may distrust this TSC", clocksource));
    }
    if (cores < workers) {
      warnings.push_back(
          fmt::format("{} online cores but --workers {}: workers will share cores and hand-offs "
                      "become context switches",
                      cores, workers));
    }
    if (cores < 2) warnings.push_back("one core: the hand-off probe measures context switches, not cross-core wakes");
    if (invariant && cpuid) {
      const double rel =
          std::abs(static_cast<double>(cpuid->tsc_hz) - static_cast<double>(hz)) / static_cast<double>(hz);
      if (rel > 0.001) {
        warnings.push_back(fmt::format("measured tsc_hz differs from {} by {:.3f}%", cpuid->source, rel * 100));
      }
    }
    if (invariant && m.rounds > 0 && m.min_round_hz > 0 &&
        static_cast<double>(m.max_round_hz - m.min_round_hz) / static_cast<double>(m.tsc_hz) > 0.001) {
      warnings.push_back("tsc_hz rounds disagree by more than 0.1%: the machine was busy; rerun when idle");
    }
    if (values.integer("COACT_TSC_HZ")) {
      warnings.push_back("COACT_TSC_HZ is set: programs use it instead of the file's tsc_hz");
    }
    if (values.integer("COACT_HANDOFF_COST_NS")) {
      warnings.push_back("COACT_HANDOFF_COST_NS is set: programs use it instead of the file's handoff_cost_ns");
    }

    Calibration c;
    c.tsc_hz = hz;
    c.invariant_tsc = invariant;
    c.handoff_cost_ns = static_cast<uint64_t>(handoff.count());
    c.wake_break_even_ns = static_cast<uint64_t>(break_even.count());
    c.cores = cores;
    c.cpu_model = current_cpu_model();
    c.measured_at = iso8601_utc_now();

    for (const auto& w : warnings) std::fprintf(stderr, "coact-calibrate: warning: %s\n", w.c_str());

    // 5. Print and write.
    if (json_out) {
      nlohmann::ordered_json j = nlohmann::ordered_json::parse(to_json(c));
      j["tsc_hz_cpuid"] = cpuid ? nlohmann::ordered_json(cpuid->tsc_hz) : nlohmann::ordered_json(nullptr);
      j["tsc_hz_cpuid_source"] = cpuid ? nlohmann::ordered_json(cpuid->source) : nlohmann::ordered_json(nullptr);
      j["tsc_measurement_error_bound"] = m.bracket_error_bound;
      j["handoff_cost_p10_ns"] = h.p10.count();
      j["handoff_cost_p90_ns"] = h.p90.count();
      j["handoff_samples"] = h.samples;
      j["warnings"] = warnings;
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      const auto row = [](const char* k, const std::string& v) { std::printf("  %-26s %s\n", k, v.c_str()); };
      std::printf("coact-calibrate: %s, %u cores\n", c.cpu_model.c_str(), cores);
      row("invariant TSC",
          fmt::format("{} (cpuid {}, cpuinfo constant_tsc {} nonstop_tsc {})", invariant ? "yes" : "no",
                      inv.cpuid_invariant ? "yes" : "no", inv.cpuinfo_constant_tsc ? "yes" : "no",
                      inv.cpuinfo_nonstop_tsc ? "yes" : "no"));
      if (invariant) {
        row("tsc_hz measured",
            fmt::format("{}  [{} rounds x {}, spread {} Hz, bound {:.1e}]", fmt_hz(hz), m.rounds,
                        fmt_ns(m.round_interval), m.max_round_hz - m.min_round_hz, m.bracket_error_bound));
      } else {
        row("tsc_hz", "1000000000 (CLOCK_MONOTONIC ns fallback)");
      }
      row("tsc_hz CPUID", cpuid ? fmt::format("{}  [{}]", fmt_hz(cpuid->tsc_hz), cpuid->source)
                                : std::string("not reported (leaf 0x15 zero, no hypervisor timing leaf)"));
      row("hand-off cost (one-way)", fmt::format("median {}  p10 {}  p90 {}  [{} samples]", fmt_ns(h.median),
                                                 fmt_ns(h.p10), fmt_ns(h.p90), h.samples));
      row("wake break-even", fmt::format("{}  (2 x hand-off)", fmt_ns(break_even)));
      row("cores", fmt::format("{} online (--workers {})", cores, workers));
      if (!governor.empty()) row("cpufreq governor", governor);
    }

    if (!no_write) {
      const std::filesystem::path path = output.empty() ? default_calibration_path() : std::filesystem::path(output);
      if (path.empty()) {
        std::fprintf(stderr,
                     "coact-calibrate: error: no calibration path: set --output, COACT_CALIBRATION_FILE, "
                     "XDG_CACHE_HOME or HOME\n");
        return 1;
      }
      save_calibration(c, path);
      std::fprintf(json_out ? stderr : stdout, "%swrote %s\n", json_out ? "coact-calibrate: " : "", path.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coact-calibrate: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
