// options_table.cpp: the declaration table of every COACT_* key (one line
// per key, grouped by the subsystem that reads it), the old spellings, and
// the lookups over them (coact/options.hpp keys(), find();
// options_internal.hpp). Immutable data; any thread.

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>

#include "options_internal.hpp"

namespace coact::options {
namespace {

using namespace std::string_view_literals;

// ---- the table ----------------------------------------------------------------
// One line per key, grouped by the subsystem that reads it (the group is also
// its TOML table). Ranges and defaults here are the only ones: readers take
// the resolved value. Units: the key's suffix says it (_US, _NS, _MS, _S, _HZ).
constexpr uint64_t kMaxSeed = UINT64_MAX / 10;
constexpr std::array kKeys{
    // options: the mechanism itself.
    Key{"COACT_CONFIG"sv, "options"sv, ""sv, Type::text, ""sv, 0, 0, false, ""sv, ""sv,
        "TOML file with [scheduler], [calibrate] and [causal] tables (environment or --coact-config only)"sv},
    // calibrate: clocks and costs measured once per machine.
    Key{"COACT_TSC_HZ"sv, "calibrate"sv, "tsc_hz"sv, Type::integer, "Hz"sv, 1'000'000, 100'000'000'000, true, "auto"sv,
        ""sv, "pins the TSC frequency; auto: the calibration file, else a measurement"sv},
    Key{"COACT_HANDOFF_COST_NS"sv, "calibrate"sv, "handoff_cost_ns"sv, Type::integer, "ns"sv, 1, 100'000'000, true,
        "auto"sv, ""sv, "pins the cross-worker hand-off cost; auto: calibrated, then refined from live wakes"sv},
    Key{"COACT_CALIBRATION_FILE"sv, "calibrate"sv, "calibration_file"sv, Type::text, ""sv, 0, 0, false, ""sv, ""sv,
        "calibration results (coact-calibrate); empty: $XDG_CACHE_HOME/coact/calibration.json"sv},
    // causal: the profiling sweep (coact-profile run sets these).
    Key{"COACT_CAUSAL"sv, "causal"sv, "enable"sv, Type::boolean, ""sv, 0, 1, false, "false"sv, ""sv,
        "run a causal-profiling sweep in this process (coact-profile run sets it)"sv},
    Key{"COACT_CAUSAL_PROGRESS"sv, "causal"sv, "progress"sv, Type::list, ""sv, 0, 0, false, ""sv, ""sv,
        "progress points recorded: those whose name contains an entry; empty: all"sv},
    Key{"COACT_CAUSAL_PROGRESS_HANDLER"sv, "causal"sv, "progress_handler"sv, Type::list, ""sv, 0, 0, false, ""sv, ""sv,
        "handler regions whose completions count as throughput progress points"sv},
    Key{"COACT_CAUSAL_REGION_FILTER"sv, "causal"sv, "region_filter"sv, Type::list, ""sv, 0, 0, false, ""sv, ""sv,
        "only regions whose name contains an entry are sped up; empty: all"sv},
    Key{"COACT_CAUSAL_FIXED_REGION"sv, "causal"sv, "fixed_region"sv, Type::text, ""sv, 0, 0, false, ""sv, ""sv,
        "always speed up this region (exact name, else the only one containing it)"sv},
    Key{"COACT_CAUSAL_REGION_WEIGHT"sv, "causal"sv, "region_weight"sv, Type::text, ""sv, 0, 0, false, "evidence"sv,
        "evidence|time|uniform"sv,
        "how a region is drawn among those that ran: evidence (first COACT_CAUSAL_MIN_EXPERIMENTS for every region "
        "above COACT_CAUSAL_TIME_SHARE_FLOOR_PCT, then mostly the leader and its closest challenger), time "
        "(proportional to running time, as Coz) or uniform"sv},
    Key{"COACT_CAUSAL_MIN_EXPERIMENTS"sv, "causal"sv, "min_experiments"sv, Type::integer, ""sv, 2, 1000, false, "6"sv,
        ""sv, "non-zero-speedup experiments a region needs before it is ranked"sv},
    Key{"COACT_CAUSAL_TIME_SHARE_FLOOR_PCT"sv, "causal"sv, "time_share_floor_pct"sv, Type::integer, "%"sv, 0, 100,
        false, "2"sv, ""sv, "evidence draw: regions below this share of the regions' running time are drawn rarely"sv},
    Key{"COACT_CAUSAL_UNTIL_SETTLED"sv, "causal"sv, "until_settled"sv, Type::boolean, ""sv, 0, 1, false, "false"sv,
        ""sv,
        "end the sweep once the ranking has settled: every region above the floor ranked and the leader's 95% "
        "interval above every other's (COACT_CAUSAL_DURATION_S / COACT_CAUSAL_EXPERIMENTS still bound it)"sv},
    Key{"COACT_CAUSAL_SETTLE_WIDTH_PCT"sv, "causal"sv, "settle_width_pct"sv, Type::integer, "%"sv, 0, 100, false, "0"sv,
        ""sv, "also settled when every ranked region's 95% interval is narrower than this (points); 0: off"sv},
    Key{"COACT_CAUSAL_FIXED_SPEEDUP"sv, "causal"sv, "fixed_speedup"sv, Type::integer, "%"sv, 0, 100, true, "auto"sv,
        ""sv, "virtual speedup of every experiment; auto: Coz's draw"sv},
    Key{"COACT_CAUSAL_ALTERNATE_SPEEDUP"sv, "causal"sv, "alternate_speedup"sv, Type::integer, "%"sv, 0, 100, true,
        "auto"sv, ""sv,
        "with COACT_CAUSAL_FIXED_SPEEDUP: the experiments alternate between the two (A B B A ...); auto: off"sv},
    Key{"COACT_CAUSAL_EXPERIMENT_MS"sv, "causal"sv, "experiment_ms"sv, Type::integer, "ms"sv, 1, 3'600'000, false,
        "500"sv, ""sv, "initial experiment window (Coz ExperimentMinTime)"sv},
    Key{"COACT_CAUSAL_MAX_EXPERIMENT_MS"sv, "causal"sv, "max_experiment_ms"sv, Type::integer, "ms"sv, 0, 3'600'000,
        false, "0"sv, ""sv, "cap of the adaptive window; 0: 16 x COACT_CAUSAL_EXPERIMENT_MS"sv},
    Key{"COACT_CAUSAL_COOLDOWN_MS"sv, "causal"sv, "cooldown_ms"sv, Type::integer, "ms"sv, 0, 600'000, false, "10"sv,
        ""sv, "pause after each experiment (Coz ExperimentCoolOffTime)"sv},
    Key{"COACT_CAUSAL_DURATION_S"sv, "causal"sv, "duration_s"sv, Type::integer, "s"sv, 0, 31'536'000, false, "0"sv,
        ""sv, "stop starting experiments after this long; 0: no limit"sv},
    Key{"COACT_CAUSAL_EXPERIMENTS"sv, "causal"sv, "experiments"sv, Type::integer, ""sv, 0, 1'000'000'000, false, "0"sv,
        ""sv, "stop after this many written experiments; 0: no limit"sv},
    Key{"COACT_CAUSAL_MIN_DELTA"sv, "causal"sv, "min_delta"sv, Type::integer, ""sv, 1, 1'000'000'000, false, "5"sv,
        ""sv, "target visits per progress point per experiment (Coz ExperimentTargetDelta)"sv},
    Key{"COACT_CAUSAL_OUTPUT"sv, "causal"sv, "output"sv, Type::text, ""sv, 0, 0, false, "profile.coz"sv, ""sv,
        "profile.coz path (appended); empty: none"sv},
    Key{"COACT_CAUSAL_JSON_OUTPUT"sv, "causal"sv, "json_output"sv, Type::text, ""sv, 0, 0, false, ""sv, ""sv,
        "JSON-lines path (appended); unset: the .coz path with .jsonl; empty: none"sv},
    Key{"COACT_CAUSAL_SEED"sv, "causal"sv, "seed"sv, Type::integer, ""sv, 0, kMaxSeed, false, "0"sv, ""sv,
        "seed of the region and speedup draws; 0: from the clock"sv},
    Key{"COACT_CAUSAL_SHARD"sv, "causal"sv, "shard"sv, Type::text, ""sv, 0, 0, false, ""sv, ""sv,
        "K/N: this sweep is shard K (0-based) of N of one sharded sweep (its own seed; shard and host in its "
        "records); empty: not sharded"sv},
    Key{"COACT_CAUSAL_SAMPLING"sv, "causal"sv, "sampling"sv, Type::boolean, ""sv, 0, 1, false, "false"sv, ""sv,
        "sample CPU time on every worker so source lines become regions (file:line, Handler @ file:line)"sv},
    Key{"COACT_CAUSAL_SAMPLE_PERIOD_US"sv, "causal"sv, "sample_period_us"sv, Type::integer, "us"sv, 10, 1'000'000,
        false, "1000"sv, ""sv, "CPU time between samples (Coz: 1 ms)"sv},
    Key{"COACT_CAUSAL_LINE_EXPERIMENT_PERIOD_US"sv, "causal"sv, "line_experiment_period_us"sv, Type::integer, "us"sv, 0,
        1'000'000, false, "0"sv, ""sv,
        "CPU time between samples while an experiment selects a line (the perf event); 0: the sample period / 8; "
        "else at least 10"sv},
    Key{"COACT_CAUSAL_SAMPLE_SIGNAL"sv, "causal"sv, "sample_signal"sv, Type::text, ""sv, 0, 0, false, "rt"sv, ""sv,
        "the samples' signal: rt (a real-time signal no handler uses, picked at start), prof (SIGPROF), or rtmin+N; "
        "other deliveries of it go to the program's handler"sv},
    Key{"COACT_CAUSAL_PAYING_BASELINE"sv, "causal"sv, "paying_baseline"sv, Type::boolean, ""sv, 0, 1, false,
        "false"sv, ""sv,
        "a sweep at fixed speedup 0 pays at every pay point and before each send from a handler, as every sweep "
        "that can inject delay does, so it is a baseline for fixed-speedup runs in other processes"sv},
    Key{"COACT_CAUSAL_PROFILE_ONLY"sv, "causal"sv, "profile_only"sv, Type::boolean, ""sv, 0, 1, false, "false"sv, ""sv,
        "run no experiment: record where the time goes (regions' visits and time; sampled lines with "
        "COACT_CAUSAL_SAMPLING)"sv},
    Key{"COACT_CAUSAL_PRINT_NOTES"sv, "causal"sv, "print_notes"sv, Type::boolean, ""sv, 0, 1, false, "true"sv, ""sv,
        "also print the sweep's warning and error records on stderr ('coact causal: ...'); coact-profile run "
        "turns it off and prints them itself"sv},
    Key{"COACT_CAUSAL_SOURCE_SCOPE"sv, "causal"sv, "source_scope"sv, Type::list, ""sv, 0, 0, false, ""sv, ""sv,
        "source files whose lines can be regions: Coz patterns ('%' = any characters) on full paths; empty: the "
        "program's own sources"sv},
    // scheduler: the runtime's pool.
    Key{"COACT_WORKERS"sv, "scheduler"sv, "workers"sv, Type::integer, ""sv, 0, 1024, false, "0"sv, ""sv,
        "pool worker threads; 0: the CPUs this process may run on"sv},
    Key{"COACT_SPIN_WINDOW_US"sv, "scheduler"sv, "spin_window_us"sv, Type::integer, "us"sv, 0, 1'000'000, false, "50"sv,
        ""sv,
        "the longest an idle worker spins before parking (adaptive: it spins while spins find work, and not while other runnable threads fill the CPUs); 0 also turns off the timekeeper's early wake"sv},
    Key{"COACT_PEER_STEAL"sv, "scheduler"sv, "peer_steal"sv, Type::boolean, ""sv, 0, 1, false, "false"sv, ""sv,
        "steal from siblings' deque tails (off: owner-only deques)"sv},
    Key{"COACT_BATCH_MAX_MAILS"sv, "scheduler"sv, "batch_max_mails"sv, Type::integer, ""sv, 1, 1'000'000, false, "64"sv,
        ""sv, "BatchBudget: mails per drain cycle"sv},
    Key{"COACT_BATCH_MAX_US"sv, "scheduler"sv, "batch_max_us"sv, Type::integer, "us"sv, 1, 10'000'000, false, "200"sv,
        ""sv, "BatchBudget: time per drain cycle"sv},
    Key{"COACT_CLOCK_CHECK_STRIDE"sv, "scheduler"sv, "clock_check_stride"sv, Type::integer, ""sv, 1, 4096, false,
        "64"sv, ""sv, "BatchBudget reads the clock about every 2 us of handler time and at least every Nth dispatch"sv},
    Key{"COACT_LOCAL_TIME_BUDGET_US"sv, "scheduler"sv, "local_time_budget_us"sv, Type::integer, "us"sv, 0, 1'000'000,
        true, "auto"sv, ""sv,
        "keep-local valve (a backlog spills to an idle sibling after this long, if a CPU is free for it); 0 disables it; auto: 6x the hand-off cost, clamped 6..60 us"sv},
    Key{"COACT_LOCAL_STICKY_MAX"sv, "scheduler"sv, "local_sticky_max"sv, Type::integer, ""sv, 1, 1'000'000, false,
        "256"sv, ""sv, "own-deque length before spilling to the injector (when a sibling is idle)"sv},
    Key{"COACT_LOCAL_CHAIN_BACKSTOP"sv, "scheduler"sv, "local_chain_backstop"sv, Type::integer, ""sv, 1, 1'000'000,
        false, "64"sv, ""sv, "every Nth consecutive own-deque pop probes the injector"sv},
    Key{"COACT_BURST"sv, "scheduler"sv, "burst"sv, Type::boolean, ""sv, 0, 1, false, "false"sv, ""sv,
        "burst dispatch: a handler's sends routed as one unit grouped by recipient, run in place by seize"sv},
    Key{"COACT_BURST_RING_BYTES"sv, "scheduler"sv, "burst_ring_bytes"sv, Type::integer, "bytes"sv, 0, 1'073'741'824,
        false, "65536"sv, ""sv, "each worker's outbound MailRing (burst on); 0: heap envelopes only"sv},
    Key{"COACT_BURST_RECRUIT_MIN"sv, "scheduler"sv, "burst_recruit_min"sv, Type::integer, ""sv, 1, 4096, false, "9"sv,
        ""sv,
        "width gate: recipient groups a flush needs to recruit while a cost estimate is untrusted (under 4 "
        "samples); a narrower, cheap burst lets its producer send direct"sv},
    Key{"COACT_BURST_RECRUIT_MAX"sv, "scheduler"sv, "burst_recruit_max"sv, Type::integer, ""sv, 0, 4096, false, "32"sv,
        ""sv, "siblings recruited per flush at most (0: never recruit)"sv},
    Key{"COACT_TRACE"sv, "scheduler"sv, "trace"sv, Type::text, ""sv, 0, 0, false, "off"sv, ""sv,
        "per-mail trace: off, on (every mail) or the fraction of mail sampled, 0 < r <= 1 (e.g. 0.01)"sv},
    Key{"COACT_TRACE_OUTPUT"sv, "scheduler"sv, "trace_output"sv, Type::text, ""sv, 0, 0, false, "coact-trace.json"sv,
        ""sv, "trace file (Chrome trace-event JSON), written at shutdown, request_stop and SIGINT/SIGTERM"sv},
    Key{"COACT_TRACE_START_MS"sv, "scheduler"sv, "trace_start_ms"sv, Type::integer, "ms"sv, 0, 604'800'000, false,
        "0"sv, ""sv, "trace window: recording starts this long after the runtime booted (COACT_TRACE on)"sv},
    Key{"COACT_TRACE_DURATION_MS"sv, "scheduler"sv, "trace_duration_ms"sv, Type::integer, "ms"sv, 0, 604'800'000, false,
        "0"sv, ""sv,
        "trace window: recording stops this long after it started and the file is written then; 0: until shutdown"sv},
    Key{"COACT_TRACE_BUFFER"sv, "scheduler"sv, "trace_buffer"sv, Type::integer, "events"sv, 1024, 67'108'864, false,
        "131072"sv, ""sv,
        "trace events kept per thread (72 bytes each, allocated at boot); later events are dropped and counted"sv},
    Key{"COACT_TRACE_EXPORT_DEADLINE_MS"sv, "scheduler"sv, "trace_export_deadline_ms"sv, Type::integer, "ms"sv, 0,
        3'600'000, false, "2000"sv, ""sv,
        "time the trace file may take to write on SIGINT/SIGTERM; events not written by then are dropped and "
        "counted (0: no limit)"sv},
    Key{"COACT_MAILBOX_STATS"sv, "scheduler"sv, "mailbox_stats"sv, Type::boolean, ""sv, 0, 1, false, "false"sv, ""sv,
        "count each actor's mailbox depth and high-water mark (ActorRef::mailbox(), Runtime::mailboxes()): one more "
        "atomic increment per send; a COACT_MAILBOX_BOUND implies it"sv},
    Key{"COACT_MAILBOX_BOUND"sv, "scheduler"sv, "mailbox_bound"sv, Type::integer, "mails"sv, 0, 4'294'967'295, false,
        "0"sv, ""sv,
        "mails an actor may hold before a send from outside the pool is refused (send returns false, counted in "
        "mailbox_rejected); pool senders are never refused; 0: unbounded"sv},
    Key{"COACT_BLOCKING_THREADS"sv, "scheduler"sv, "blocking_threads"sv, Type::integer, "threads"sv, 1, 1024, false,
        "4"sv, ""sv,
        "threads of the blocking pool (co_await coact::blocking(f)), started on demand (docs/blocking.md)"sv},
    Key{"COACT_BLOCKING_QUEUE"sv, "scheduler"sv, "blocking_queue"sv, Type::integer, "calls"sv, 0, 1'000'000, false,
        "1024"sv, ""sv,
        "blocking calls that may wait for a pool thread; a call beyond it throws coact::blocking_pool_full"sv},
};

// Old spellings: an error that names the new key (environment spelling; the
// flag and TOML spellings are derived).
struct Renamed {
  std::string_view old_name;
  std::string_view new_name;
};
constexpr std::array kRenamed{
    Renamed{"COACT_SPIN_WINDOW_USEC"sv, "COACT_SPIN_WINDOW_US"sv},
    Renamed{"COACT_BATCH_MAX_USEC"sv, "COACT_BATCH_MAX_US"sv},
    Renamed{"COACT_CAUSAL_BUFFERED_BASELINE"sv, "COACT_CAUSAL_PAYING_BASELINE"sv},
};

constexpr std::array kGroups{"options"sv, "calibrate"sv, "causal"sv, "scheduler"sv};

constexpr bool table_is_consistent() {
  for (std::size_t i = 0; i < kKeys.size(); ++i) {
    const Key& k = kKeys[i];
    if (!k.name.starts_with("COACT_"sv)) return false;
    if (k.type == Type::integer && k.min > k.max) return false;
    if (k.accepts_auto && k.type != Type::integer) return false;
    if (std::find(kGroups.begin(), kGroups.end(), k.group) == kGroups.end()) return false;
    for (std::size_t j = 0; j < i; ++j) {
      if (kKeys[j].name == k.name) return false;
      if (!k.field.empty() && kKeys[j].group == k.group && kKeys[j].field == k.field) return false;
    }
  }
  return true;
}
static_assert(table_is_consistent(), "kKeys: a name or TOML field twice, a bad group, or min > max");

}  // namespace

std::span<const Key> keys() noexcept { return kKeys; }

const Key* find(std::string_view name) noexcept {
  const auto it = std::find_if(kKeys.begin(), kKeys.end(), [&](const Key& k) { return k.name == name; });
  return it == kKeys.end() ? nullptr : &*it;
}

namespace detail {

bool is_group(std::string_view group) { return std::find(kGroups.begin(), kGroups.end(), group) != kGroups.end(); }

const Key* renamed_to(std::string_view old_name) {
  for (const Renamed& r : kRenamed) {
    if (r.old_name == old_name) return find(r.new_name);
  }
  return nullptr;
}

std::size_t index_of(const Key* k) { return static_cast<std::size_t>(k - kKeys.data()); }

}  // namespace detail
}  // namespace coact::options
