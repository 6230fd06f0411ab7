// coact/calibrate/calibration_file.hpp: the per-machine calibration file.
//
// Provides: the Calibration record, its JSON form, the default path, a
// tolerant loader and an atomic writer. `coact-calibrate` writes the file;
// tsc_hz() and initial_handoff_cost() read it at boot (docs/DESIGN.md
// "Calibration": boot-probed, cached per machine).
//
// Schema (version 1), one JSON object; unknown keys are ignored on load so a
// later writer may add fields without bumping the schema:
//
//   {
//     "schema": 1,                    // integer, must be 1
//     "tsc_hz": 2793438000,           // integer Hz, 1e6..1e11 (1e9 when the
//                                     //   cycle source is CLOCK_MONOTONIC)
//     "invariant_tsc": true,          // bool: the TSC was the cycle source
//     "handoff_cost_ns": 9000,        // integer ns, 1..1e8: median one-way
//                                     //   futex park/unpark hand-off
//     "wake_break_even_ns": 18000,    // integer ns, 1..1e9 (rule: handoff.hpp)
//     "cores": 2,                     // integer >= 1: online cores when measured
//     "cpu_model": "Intel(R) ...",    // string: /proc/cpuinfo "model name"
//     "measured_at": "2024-05-01T12:00:00Z"  // string: ISO-8601 UTC
//   }
//
// Default path: $COACT_CALIBRATION_FILE if set and non-empty, else
// $XDG_CACHE_HOME/coact/calibration.json if XDG_CACHE_HOME is set and
// non-empty, else $HOME/.cache/coact/calibration.json (HOME from the
// environment, else the password database).
//
// Threads: all functions may be called from any thread; they do file IO and
// block on it. Concurrent save_calibration() calls to one path are safe
// (each writes its own temporary; the last rename wins); a concurrent
// load_calibration() sees either the old or the new file, never a torn one.
// Lifetime: Calibration is a plain value.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

namespace coact::calibrate {

/// Schema version written and accepted.
inline constexpr int kCalibrationSchema = 1;

/// One machine's calibration (the file boundary, hence raw integers with units
/// in the names).
struct Calibration {
  uint64_t tsc_hz = 0;
  bool invariant_tsc = false;
  uint64_t handoff_cost_ns = 0;
  uint64_t wake_break_even_ns = 0;
  uint32_t cores = 0;
  std::string cpu_model;
  std::string measured_at;

  friend bool operator==(const Calibration&, const Calibration&) = default;
};

/// The JSON text of `c` (schema above, pretty-printed, trailing newline). Pure.
std::string to_json(const Calibration& c);

/// Parses and validates JSON text. Errors: std::runtime_error whose message
/// names the offending key and why (missing, wrong type, out of range, wrong
/// schema) or the JSON parse error. Pure.
Calibration calibration_from_json(const std::string& text);

/// Default file path (see the header comment); empty when neither
/// COACT_CALIBRATION_FILE (options::process()), XDG_CACHE_HOME nor a home
/// directory is known. Errors: options::option_error (first options::process()).
std::filesystem::path default_calibration_path();

/// The same rule with COACT_CALIBRATION_FILE's value `configured` ("" =
/// unset) and an environment lookup `env(key)` for XDG_CACHE_HOME and HOME
/// (nullptr = unset); when both are unset, the password database's home
/// directory is used. For tests.
std::filesystem::path default_calibration_path(const std::string& configured,
                                               const std::function<const char*(const char*)>& env);

/// Loads `path`. A missing file returns nullopt silently; an unreadable or
/// malformed one writes "coact: warning: ignoring calibration file '<path>':
/// <problem>" (one line) to `warn` and returns nullopt. Never throws for
/// file content; blocks on file IO.
std::optional<Calibration> load_calibration(const std::filesystem::path& path, std::ostream& warn);

/// load_calibration(path, std::cerr), except that a warning already written
/// by this overload (same path, same problem) is not repeated in this process.
std::optional<Calibration> load_calibration(const std::filesystem::path& path);

/// load_calibration(default_calibration_path()), nullopt if that is empty.
std::optional<Calibration> load_calibration();

/// Writes `c` to `path` atomically: creates the parent directories, writes a
/// temporary "<dir>/.<name>.XXXXXX" (mkstemp, same directory so rename is
/// atomic), fsyncs it, renames it over `path`. On any failure the temporary
/// is removed and std::runtime_error names the path and the errno text.
/// The file is mode 0644.
void save_calibration(const Calibration& c, const std::filesystem::path& path);

/// "model name" from /proc/cpuinfo, or "unknown" when unreadable.
std::string current_cpu_model();

/// Online cores (sysconf(_SC_NPROCESSORS_ONLN), at least 1).
uint32_t online_cores();

/// Current UTC time as ISO-8601, e.g. "2024-05-01T12:00:00Z".
std::string iso8601_utc_now();

}  // namespace coact::calibrate
