// bench/common/bench_support.hpp: what every whole-program benchmark shares
// (bench/peers, bench/timers; coact and CAF programs alike).
//
// Provides:
//   - bench_clock / now_ns(): the one clock the programs time with.
//   - Command lines (CLI11): add_run_options() (--workers, --watchdog-s, which
//     every program takes), add_uint_option() with decimal_in() (integer
//     options), and parse_or_exit() (the programs' exit codes: bad usage 2,
//     --help 0).
//   - The result line: json_line (nlohmann::ordered_json, so members print in
//     the order they were added, which scripts/bench.sh's progress log relies
//     on), rounded() and print_json_line().
//   - wrong_result(): a failed self-check, exit 1.
//   - watchdog: a hang is reported with the runtime's counters, exit 3.
// Threads: everything but the watchdog runs on the main thread, before the
// runtime starts or after it finished; the watchdog's report function runs on
// its own thread. Nothing here blocks except watchdog::disarm() (joins).
// Errors: the exit statuses above (std::exit, or std::_Exit for a hang, since
// the runtime's threads are stuck and no destructor may run).
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

namespace coact::bench {

using bench_clock = std::chrono::steady_clock;

/// Nanoseconds on bench_clock since its epoch (stored in atomics by actors).
inline int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(bench_clock::now().time_since_epoch())
      .count();
}

// ---- command line ---------------------------------------------------------------

/// A CLI11 transform for an unsigned integer option: accepts decimal digits
/// only, with a value in lo..hi, and hands CLI11 the canonical spelling.
/// (CLI11 2.1 converts with strtoull base 0: "010" would be octal 8, "0x10"
/// hex, "-5" would wrap and an overflow would saturate; the programs have
/// always read plain decimal and rejected the rest.)
inline CLI::Validator decimal_in(uint64_t lo, uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        uint64_t v = 0;
        const char* const last = s.data() + s.size();
        const auto [end, ec] = std::from_chars(s.data(), last, v);
        if (s.empty() || ec != std::errc{} || end != last || v < lo || v > hi)
          return fmt::format("must be a decimal integer in {}..{}", lo, hi);
        s = std::to_string(v);
        return {};
      },
      fmt::format("in {}..{}", lo, hi));
}

/// Adds an unsigned integer option `name` (decimal, lo..hi) stored in `var`;
/// its default (var's value now) shows in --help.
template <class T>
CLI::Option* add_uint_option(CLI::App& app, const std::string& name, T& var, uint64_t lo, uint64_t hi,
                             const std::string& description) {
  return app.add_option(name, var, description)->capture_default_str()->transform(decimal_in(lo, hi));
}

/// Makes a repeated option's last value win (as the programs' hand-written
/// parsers did; CLI11 would refuse it) for the options added after this
/// call, and adds the options every program takes: --workers W (1..1024)
/// and --watchdog-s S (0..86400, 0 = no watchdog). Call first.
inline void add_run_options(CLI::App& app, uint32_t& workers, uint32_t& watchdog_s) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_uint_option(app, "--workers", workers, 1, 1024, "worker threads");
  add_uint_option(app, "--watchdog-s", watchdog_s, 0, 86400,
                  "declare a hang (exit 3) after this many seconds; 0 = never");
}

/// Parses argv with `app` (its options, checks and final callback, where
/// rules across options throw CLI::ValidationError). Bad usage: CLI11's
/// message on stderr, exit 2 (not CLI11's own codes, 105 and up; the scripts
/// and ctest read 2 as bad usage). --help: the help on stdout, exit 0.
inline void parse_or_exit(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    std::exit(rc == 0 ? 0 : 2);
  }
}

// ---- the result line --------------------------------------------------------------

/// One run's result: a JSON object whose members print in insertion order.
using json_line = nlohmann::ordered_json;

/// The double that printf("%.<places>f", x) spells: a figure stored with
/// rounded(x, 1) parses (json.loads) to exactly the value the programs
/// printed before they printed through nlohmann::json. NaN and infinities
/// pass through (nlohmann::json prints them as null).
inline double rounded(double x, int places) {
  const std::string s = fmt::format("{:.{}f}", x, places);
  double v = 0;
  if (std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc{}) return x;
  return v;
}

/// Prints `line` compactly on stdout as one line and flushes it.
inline void print_json_line(const json_line& line) {
  fmt::print("{}\n", line.dump());
  std::fflush(stdout);
}

/// A wrong (or inconsistent) result: "<run>: WRONG RESULT: <what>" on stderr, exit 1.
[[noreturn]] inline void wrong_result(std::string_view run, std::string_view what) {
  fmt::print(stderr, "{}: WRONG RESULT: {}\n", run, what);
  std::exit(1);
}

// ---- hang detection ---------------------------------------------------------------

/// Declares a hang: if disarm() was not called within `limit` of
/// construction, prints "<run>: HUNG after <limit>s: <report()>" on stderr
/// (report() names the runtime's counters) and exits with status 3
/// (std::_Exit: the runtime's threads are stuck, so no destructors run).
/// A zero limit arms nothing. Armed by the main thread before the run,
/// disarmed by it after (or by the destructor); report() runs on the
/// watchdog's thread while the run is (supposedly) still going.
class watchdog {
 public:
  watchdog(std::chrono::seconds limit, std::string run, std::function<std::string()> report)
      : limit_(limit), run_(std::move(run)), report_(std::move(report)) {
    if (limit_.count() == 0) return;
    thread_ = std::thread([this] {
      std::unique_lock<std::mutex> lk(mu_);
      if (cv_.wait_for(lk, limit_, [this] { return done_; })) return;
      fmt::print(stderr, "{}: HUNG after {}s: {}\n", run_, limit_.count(), report_ ? report_() : std::string());
      std::fflush(stderr);
      std::_Exit(3);
    });
  }
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;
  ~watchdog() { disarm(); }

  /// Main thread: the run finished; stops and joins the watchdog's thread.
  void disarm() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  const std::chrono::seconds limit_;
  const std::string run_;
  std::function<std::string()> report_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;  ///< guarded by mu_
  std::thread thread_;
};

}  // namespace coact::bench
