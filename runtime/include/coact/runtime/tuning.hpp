// coact/runtime/tuning.hpp: SchedulerTuning, the scheduler's knobs, resolved once at boot.
//
// Provides: the SchedulerTuning struct (every knob of seed 000 "The scheduler"
// under a COACT_ name with the seed's default) and resolve_tuning(), which
// applies the precedence argv > environment (COACT_*) > TOML config file >
// default.
// Threads: resolve_tuning() may be called from any thread; it reads the process
// environment (environ) and the file system and does not block otherwise.
// Errors: a malformed or out-of-range value throws coact::tuning_error whose
// message names the key, the value and the accepted range; an unknown COACT_
// key in the environment (or an unknown key in the file's [scheduler] table) is
// a warning on stderr (std::cerr), never a silent default.
// Lifetime: a resolved SchedulerTuning is a plain value; the runtime copies it
// at boot and never re-reads the environment.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace coact {

/// Thrown by resolve_tuning() for a bad knob value or an unreadable config file.
class tuning_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The scheduler's knobs. Defaults are seed 000's ("Wakeup and fairness").
struct SchedulerTuning {
  /// COACT_WORKERS: pool worker threads; 0 = the CPUs this process may run on
  /// (see effective_workers()). Range 0..1024.
  uint32_t workers = 0;
  /// COACT_SPIN_WINDOW_USEC: how long an idle worker spins before parking (µs). 0..1000000.
  uint32_t spin_window_usec = 50;
  /// COACT_PEER_STEAL: steal from siblings' deque tails (bool, default off: owner-only).
  bool peer_steal = false;
  /// COACT_BATCH_MAX_MAILS: BatchBudget mail cap per drain cycle. 1..1000000.
  uint32_t batch_max_mails = 64;
  /// COACT_BATCH_MAX_USEC: BatchBudget time cap per drain cycle (µs). 1..10000000.
  uint32_t batch_max_usec = 200;
  /// COACT_CLOCK_CHECK_STRIDE: BatchBudget reads the clock every Nth dispatch. 1..4096.
  uint32_t clock_check_stride = 8;
  /// COACT_LOCAL_TIME_BUDGET_US: keep-local valve pinned (µs); 0 disables the valve;
  /// unset = adaptive (6x the calibrated hand-off cost, clamped 6..60 µs). 0..1000000,
  /// or the word "auto" (any source) to ask for adaptive over a lower-precedence pin.
  std::optional<uint32_t> local_time_budget_us;
  /// COACT_HANDOFF_COST_NS: pins the cross-worker hand-off cost (ns); unset = calibrated.
  /// 1..100000000, or "auto" (as above) for calibrated.
  std::optional<uint64_t> handoff_cost_ns;
  /// COACT_LOCAL_STICKY_MAX: own-deque length backstop before spilling. 1..1000000.
  uint32_t local_sticky_max = 256;
  /// COACT_LOCAL_CHAIN_BACKSTOP: every Nth consecutive own-deque pop probes the injector. 1..1000000.
  uint32_t local_chain_backstop = 64;
  /// COACT_BURST_RECRUIT_MIN: width gate for burst recruitment. 1..4096.
  uint32_t burst_recruit_min = 9;
  /// COACT_BURST_RECRUIT_MAX: cap on siblings recruited per burst. 0..4096.
  uint32_t burst_recruit_max = 32;

  /// Workers after resolving 0 to the number of CPUs in this thread's affinity
  /// mask (sched_getaffinity; equals the online cores unless taskset/cpuset
  /// restricts the process), falling back to sysconf(_SC_NPROCESSORS_ONLN).
  /// Result is in 1..1024. Any thread; does not block; never throws.
  uint32_t effective_workers() const;

  /// Field-wise equality (tests, "did the tuning change" checks).
  bool operator==(const SchedulerTuning&) const = default;
};

/// Where resolve_tuning() reads from. Defaults: the real process environment,
/// no argv, and the file named by COACT_CONFIG (if set).
struct TuningSources {
  /// Command-line arguments (argv[1..]); recognised: --coact-<knob>=VALUE or
  /// --coact-<knob> VALUE, knob spelled in lower case with '-' (e.g.
  /// --coact-spin-window-usec=20), plus --coact-config=PATH. A boolean knob
  /// given bare (--coact-peer-steal, followed by nothing or by an argument
  /// starting with '-') means true. Parsing stops at "--". Other arguments are
  /// ignored; an unrecognised --coact-* option warns on stderr.
  std::vector<std::string> args;
  /// Environment entries "KEY=VALUE" (entries without '=' are skipped; a
  /// repeated key: the last wins); empty optional = read the real environment.
  std::optional<std::vector<std::string>> env;
  /// TOML config path; empty = --coact-config=PATH from args, else COACT_CONFIG
  /// from the environment (if set and non-empty), else no file.
  std::string config_path;
};

/// Resolves the tuning with precedence argv > environment > config file > default.
/// Every source is validated, even where a higher one overrides the value.
/// Integers are decimal digits only (no sign, no spaces, whole string);
/// booleans are 1/0/true/false/yes/no/on/off, case-insensitive.
/// Thread: any; reading the real environment races with a concurrent setenv().
/// Throws tuning_error naming key, value, source and accepted range on a bad
/// value, or naming the path on an unreadable/malformed file or a wrong TOML type.
/// Unknown COACT_* keys (other than those owned by other parts of coact) warn on
/// std::cerr, one line per key.
SchedulerTuning resolve_tuning(const TuningSources& sources = {});

/// Convenience: resolve from a program's argc/argv (argv[0] skipped) and the real environment.
SchedulerTuning resolve_tuning(int argc, const char* const* argv);

}  // namespace coact
