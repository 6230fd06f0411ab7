// coact/runtime/tuning.hpp: SchedulerTuning, the scheduler's knobs as one value.
//
// Provides: the SchedulerTuning struct (every scheduler knob, docs/DESIGN.md "Runtime")
// and resolve_tuning(), its view of the options resolved by coact/options.hpp
// (every COACT_* key is declared, ranged, documented and resolved there, with
// one precedence: --coact-* argument > COACT_* environment > TOML file
// [scheduler] table > default; see that header for spellings and the
// unknown-key policy).
// Threads: resolve_tuning() may be called from any thread.
// Errors: tuning_error (= options::option_error) for a bad value, an unknown
// key or an unreadable config file; its message is one line naming the key,
// the value, its source and what is accepted.
// Lifetime: a SchedulerTuning is a plain value; the runtime copies it at boot.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <coact/options.hpp>
#include <coact/options_binding.hpp>

namespace coact {

/// A bad knob value, an unknown key or an unreadable config file.
using tuning_error = options::option_error;
/// Where resolve_tuning(const TuningSources&) reads from (argv, environment, file).
using TuningSources = options::Sources;

/// The scheduler's knobs. Defaults: docs/DESIGN.md ("Fairness levers");
/// ranges and doc lines are in the options table (coact-calibrate --print-config).
struct SchedulerTuning {
  uint32_t workers = 0;                          ///< COACT_WORKERS; 0 = effective_workers() decides
  uint32_t spin_window_us = 50;                  ///< COACT_SPIN_WINDOW_US
  bool peer_steal = false;                       ///< COACT_PEER_STEAL
  uint32_t batch_max_mails = 64;                 ///< COACT_BATCH_MAX_MAILS
  uint32_t batch_max_us = 200;                   ///< COACT_BATCH_MAX_US
  uint32_t clock_check_stride = 64;              ///< COACT_CLOCK_CHECK_STRIDE
  std::optional<uint32_t> local_time_budget_us;  ///< COACT_LOCAL_TIME_BUDGET_US; nullopt = adaptive ("auto")
  std::optional<uint64_t> handoff_cost_ns;       ///< COACT_HANDOFF_COST_NS; nullopt = calibrated ("auto")
  uint32_t local_sticky_max = 256;               ///< COACT_LOCAL_STICKY_MAX
  uint32_t local_chain_backstop = 64;            ///< COACT_LOCAL_CHAIN_BACKSTOP
  bool burst = false;                            ///< COACT_BURST (off: every send deposits and wakes on its own)
  uint32_t burst_ring_bytes = 65536;             ///< COACT_BURST_RING_BYTES; 0 = no ring
  uint32_t burst_recruit_min = 9;                ///< COACT_BURST_RECRUIT_MIN (width gate)
  uint32_t burst_recruit_max = 32;               ///< COACT_BURST_RECRUIT_MAX (0 = never recruit)
  /// COACT_TRACE: fraction of mail traced (docs/traces.md): 0 = off (no recording, no trace file), 1 = every mail, else a
  /// sample in (0, 1). While on, parks, wakes and timer fires are recorded too.
  double trace = 0;
  std::string trace_output = "coact-trace.json";  ///< COACT_TRACE_OUTPUT; "" = never written
  uint32_t trace_buffer = 131072;                 ///< COACT_TRACE_BUFFER: events kept per thread
  /// COACT_TRACE_START_MS / COACT_TRACE_DURATION_MS: the trace window, ms
  /// after boot; duration 0 = until shutdown. Recording is off outside it;
  /// the file is written when it closes (or at shutdown, whichever is first).
  uint64_t trace_start_ms = 0;
  uint64_t trace_duration_ms = 0;
  /// COACT_TRACE_EXPORT_DEADLINE_MS: how long the trace file written on SIGINT/SIGTERM may take (the signal's own
  /// disposition runs after it); the events not written by then are dropped and counted. 0 = no limit.
  uint64_t trace_export_deadline_ms = 2000;
  /// COACT_MAILBOX_STATS: count every actor's mailbox depth and high-water mark (docs/mailboxes.md).
  bool mailbox_stats = false;
  /// COACT_MAILBOX_BOUND: mails an actor may hold before sends from outside the pool are refused
  /// (docs/mailboxes.md); 0 = unbounded.
  uint32_t mailbox_bound = 0;
  /// COACT_BLOCKING_THREADS / COACT_BLOCKING_QUEUE: the blocking pool's threads and the calls that may wait
  /// for one (docs/blocking.md).
  uint32_t blocking_threads = 4;
  uint32_t blocking_queue = 1024;

  /// Workers after resolving 0 to the number of CPUs in this thread's affinity
  /// mask (sched_getaffinity; equals the online cores unless taskset/cpuset
  /// restricts the process), falling back to sysconf(_SC_NPROCESSORS_ONLN).
  /// Result is in 1..1024. Any thread; does not block; never throws.
  uint32_t effective_workers() const;

  /// Field-wise equality (tests, "did the tuning change" checks).
  bool operator==(const SchedulerTuning&) const = default;
};

/// The scheduler's view of resolved options. Pure; any thread.
SchedulerTuning tuning_from(const options::Values& values);

/// The scheduler's option group: each key it reads bound to its
/// SchedulerTuning member (tuning_from reads them in this order). Immutable.
std::span<const options::Binding<SchedulerTuning>> tuning_fields() noexcept;

/// tuning_from(options::process()): the process's options (installed by
/// Runtime(argc, argv) / options::init, else resolved once from the
/// environment and COACT_CONFIG). Errors: tuning_error. Any thread.
SchedulerTuning resolve_tuning();

/// tuning_from(options::resolve(sources)): from explicit sources, nothing
/// process-wide installed (tests, tools). Errors: tuning_error. Any thread.
SchedulerTuning resolve_tuning(const TuningSources& sources);

}  // namespace coact
