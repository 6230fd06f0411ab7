// options.cpp: the declaration table of every COACT_* key and its resolution
// (coact/options.hpp).
//
// Resolution, in order (each step overrides the previous one's values):
//   1. Every key at its declared default.
//   2. The config file: Sources::config_path, else the last --coact-config in
//      the arguments, else COACT_CONFIG. Parsed as TOML; each table is a
//      subsystem's group ([scheduler], [calibrate], [causal]).
//   3. The environment: every COACT_* key (COACT_BENCH_* excepted: the
//      benchmark scripts' own variables, never passed to programs).
//   4. The --coact-* arguments, in order.
//   5. Sources::given: a tool's own flags for declared keys (coact-profile
//      run's, generated from causal/src/option_fields.cpp).
// Every value is validated where it is read, so a bad value anywhere is an
// error even when a higher-precedence source overrides it.
//
// argv is parsed by hand, not with CLI11: the user's own arguments must stay
// untouched (including positional ones after an unknown option), both
// "--k=v" and "--k v" are accepted, and the messages name key, value, source
// and range in one line; CLI11's allow_extras and validators fight all three.

#include <coact/options.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <toml++/toml.h>

extern "C" char** environ;  // POSIX; declared by <unistd.h> only under _GNU_SOURCE.

static_assert(TOML_EXCEPTIONS, "options.cpp expects toml++ to report parse errors as exceptions");

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
    Key{"COACT_CAUSAL_BUFFERED_BASELINE"sv, "causal"sv, "buffered_baseline"sv, Type::boolean, ""sv, 0, 1, false,
        "false"sv, ""sv,
        "a sweep at fixed speedup 0 buffers handlers' sends to the pay point, as every sweep that can inject delay "
        "does, so it is a baseline for fixed-speedup runs in other processes (coact-profile validate's real rows)"sv},
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
        "the longest an idle worker spins before parking (adaptive: it spins while spins find work); 0 also turns off the timekeeper's early wake"sv},
    Key{"COACT_PEER_STEAL"sv, "scheduler"sv, "peer_steal"sv, Type::boolean, ""sv, 0, 1, false, "false"sv, ""sv,
        "steal from siblings' deque tails (off: owner-only deques)"sv},
    Key{"COACT_BATCH_MAX_MAILS"sv, "scheduler"sv, "batch_max_mails"sv, Type::integer, ""sv, 1, 1'000'000, false, "64"sv,
        ""sv, "BatchBudget: mails per drain cycle"sv},
    Key{"COACT_BATCH_MAX_US"sv, "scheduler"sv, "batch_max_us"sv, Type::integer, "us"sv, 1, 10'000'000, false, "200"sv,
        ""sv, "BatchBudget: time per drain cycle"sv},
    Key{"COACT_CLOCK_CHECK_STRIDE"sv, "scheduler"sv, "clock_check_stride"sv, Type::integer, ""sv, 1, 4096, false, "8"sv,
        ""sv, "BatchBudget reads the clock every Nth dispatch"sv},
    Key{"COACT_LOCAL_TIME_BUDGET_US"sv, "scheduler"sv, "local_time_budget_us"sv, Type::integer, "us"sv, 0, 1'000'000,
        true, "auto"sv, ""sv, "keep-local valve; 0 disables it; auto: 6x the hand-off cost, clamped 6..60 us"sv},
    Key{"COACT_LOCAL_STICKY_MAX"sv, "scheduler"sv, "local_sticky_max"sv, Type::integer, ""sv, 1, 1'000'000, false,
        "256"sv, ""sv, "own-deque length before spilling to the injector"sv},
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
constexpr std::size_t kKeyCount = kKeys.size();

// Old spellings: an error that names the new key (environment spelling; the
// flag and TOML spellings are derived).
struct Renamed {
  std::string_view old_name;
  std::string_view new_name;
};
constexpr std::array kRenamed{
    Renamed{"COACT_SPIN_WINDOW_USEC"sv, "COACT_SPIN_WINDOW_US"sv},
    Renamed{"COACT_BATCH_MAX_USEC"sv, "COACT_BATCH_MAX_US"sv},
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

std::array<std::atomic<bool>, kKeyCount> g_read{};

std::size_t index_of(const Key* k) { return static_cast<std::size_t>(k - kKeys.data()); }

// ---- spelling helpers ---------------------------------------------------------------

std::string flag_of(std::string_view env_name) {
  std::string flag = "--coact-";
  for (char c : env_name.substr(6)) {
    flag += (c == '_') ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return flag;
}

// --coact-foo-bar -> COACT_FOO_BAR
std::string env_of_flag(std::string_view flag) {
  std::string out = "COACT_";
  for (char c : flag.substr(8))
    out += (c == '-') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string quoted(std::string_view v) {
  std::string out = "'";
  for (unsigned char c : v) {
    if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '\'';
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

enum class Spelling { env, flag, file };

std::string spelled(const Key& k, Spelling s) {
  switch (s) {
    case Spelling::env:
      return std::string(k.name);
    case Spelling::flag:
      return flag_of(k.name);
    case Spelling::file:
      return fmt::format("{}.{}", k.group, k.field);
  }
  return std::string(k.name);
}

// "unknown key X (from S); did you mean Y? ..." or the rename message.
[[noreturn]] void throw_unknown(std::string_view as_env, std::string_view written, Spelling s,
                                std::string_view source) {
  for (const Renamed& r : kRenamed) {
    if (r.old_name == as_env) {
      const Key* k = find(r.new_name);
      throw option_error(fmt::format("{} ({}) was renamed: use {}", written, source, spelled(*k, s)));
    }
  }
  const Key* best = nullptr;
  std::size_t best_d = 4;  // suggest only near misses
  for (const Key& k : kKeys) {
    if (s == Spelling::file && k.field.empty()) continue;
    const std::size_t d = edit_distance(as_env, k.name);
    if (d < best_d) {
      best_d = d;
      best = &k;
    }
  }
  throw option_error(fmt::format("unknown key {} ({}){} (--coact-help lists every key)", written, source,
                                 best ? fmt::format("; did you mean {}?", spelled(*best, s)) : std::string()));
}

// ---- values ----------------------------------------------------------------------------

[[noreturn]] void throw_bad(const Key& k, std::string_view written, std::string_view value_repr,
                            std::string_view source, std::string_view why) {
  throw option_error(fmt::format("{}={} ({}): expected {}{}{}", written, value_repr, source, k.accepted(),
                                 why.empty() ? "" : " ", why));
}

std::vector<std::string> split_list(std::string_view value) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= value.size()) {
    std::size_t comma = value.find(',', pos);
    if (comma == std::string_view::npos) comma = value.size();
    std::string_view item = value.substr(pos, comma - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    pos = comma + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + v[i];
  return out;
}

bool choice_ok(const Key& k, std::string_view text) {
  if (k.choices.empty()) return true;
  std::string_view rest = k.choices;
  while (!rest.empty()) {
    const auto bar = rest.find('|');
    if (rest.substr(0, bar) == text) return true;
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return false;
}

// Validates a textual value (environment or command line) and returns its
// canonical text.
std::string parse_text(const Key& k, std::string_view written, std::string_view text, std::string_view source) {
  const std::string repr = quoted(text);
  switch (k.type) {
    case Type::boolean:
      for (auto w : {"1"sv, "true"sv, "yes"sv, "on"sv}) {
        if (iequals(text, w)) return "true";
      }
      for (auto w : {"0"sv, "false"sv, "no"sv, "off"sv}) {
        if (iequals(text, w)) return "false";
      }
      throw_bad(k, written, repr, source, "");
    case Type::text:
      if (!choice_ok(k, text)) throw_bad(k, written, repr, source, "");
      return std::string(text);
    case Type::list:
      return join(split_list(text));
    case Type::integer:
      break;
  }
  if (k.accepts_auto && iequals(text, "auto"sv)) return "auto";
  if (text.empty()) throw_bad(k, written, repr, source, "(empty)");
  const auto digits = [](std::string_view t) {
    return std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (text.front() == '-' && text.size() > 1 && digits(text.substr(1)))
    throw_bad(k, written, repr, source, "(negative)");
  if (!digits(text)) throw_bad(k, written, repr, source, "(not a decimal number)");
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n, 10);
  if (ec == std::errc::result_out_of_range || (ec == std::errc{} && n > k.max)) {
    throw_bad(k, written, repr, source, "(too large)");
  }
  if (ec != std::errc{} || end != text.data() + text.size())
    throw_bad(k, written, repr, source, "(not a decimal number)");
  if (n < k.min) throw_bad(k, written, repr, source, "(too small)");
  return std::to_string(n);
}

const char* toml_type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::none:
      return "nothing";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
  }
  return "an unknown type";
}

std::string toml_repr(const toml::node& n) {
  if (n.is_table()) return "{...}";
  if (n.is_array()) return "[...]";
  std::ostringstream os;
  n.visit([&](const auto& x) { os << x; });
  return os.str();
}

std::string parse_toml(const Key& k, const toml::node& node, std::string_view path) {
  const std::string written = spelled(k, Spelling::file);
  const std::string source = fmt::format("from config file '{}'", path);
  const auto wrong_type = [&](std::string_view want) {
    return option_error(fmt::format("{} = {} ({}): wrong TOML type: expected {}, got {}", written, toml_repr(node),
                                    source, want, toml_type_name(node.type())));
  };
  const std::string kv = fmt::format("{} = {}", written, toml_repr(node));
  switch (k.type) {
    case Type::boolean:
      if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
      throw wrong_type("a TOML boolean (true/false)");
    case Type::text:
      if (const auto* s = node.as_string()) return parse_text(k, written, s->get(), source);
      throw wrong_type("a TOML string");
    case Type::list:
      if (const auto* s = node.as_string()) return join(split_list(s->get()));
      if (const auto* a = node.as_array()) {
        std::vector<std::string> items;
        for (const auto& e : *a) {
          const auto* s = e.as_string();
          if (s == nullptr) throw wrong_type("an array of strings");
          for (auto& x : split_list(s->get())) items.push_back(std::move(x));
        }
        return join(items);
      }
      throw wrong_type("an array of strings or a comma-separated string");
    case Type::integer:
      break;
  }
  if (const auto* s = node.as_string(); s && k.accepts_auto && iequals(s->get(), "auto"sv)) return "auto";
  const auto* i = node.as_integer();
  if (i == nullptr) {
    throw wrong_type(
        fmt::format("a TOML integer in {}..{}{}", k.min, k.max, k.accepts_auto ? " or the string \"auto\"" : ""));
  }
  const int64_t n = i->get();
  if (n < 0) throw option_error(fmt::format("{} ({}): expected {} (negative)", kv, source, k.accepted()));
  if (static_cast<uint64_t>(n) > k.max)
    throw option_error(fmt::format("{} ({}): expected {} (too large)", kv, source, k.accepted()));
  if (static_cast<uint64_t>(n) < k.min)
    throw option_error(fmt::format("{} ({}): expected {} (too small)", kv, source, k.accepted()));
  return std::to_string(n);
}

// POSIX read() rather than ifstream so a directory reports EISDIR and a pipe works.
// `named_by` is the key that named the file ("COACT_CONFIG", "--coact-config")
// or "" for Sources::config_path.
std::string read_whole_file(const std::string& path, std::string_view named_by) {
  auto fail = [&](int err) {
    if (named_by.empty())
      return option_error(fmt::format("config file '{}': cannot read: {}", path, std::strerror(err)));
    return option_error(fmt::format("{}={}: cannot read the config file: {} (expected a readable TOML file)", named_by,
                                    quoted(path), std::strerror(err)));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw fail(errno);
  std::string data;
  char buf[8192];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got > 0) {
      data.append(buf, static_cast<std::size_t>(got));
    } else if (got == 0) {
      break;
    } else if (errno != EINTR) {
      const int err = errno;
      ::close(fd);
      throw fail(err);
    }
  }
  ::close(fd);
  return data;
}

Entry& entry_of(std::vector<Entry>& entries, const Key* k) { return entries[index_of(k)]; }

void set(std::vector<Entry>& entries, const Key* k, std::string text, Source src, std::string origin) {
  Entry& e = entry_of(entries, k);
  e.text = std::move(text);
  e.source = src;
  e.origin = std::move(origin);
}

void apply_config_file(std::vector<Entry>& entries, const std::string& path, std::string_view named_by) {
  const std::string text = read_whole_file(path, named_by);
  toml::table doc;
  try {
    doc = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw option_error(
        fmt::format("config file '{}': line {}, column {}: {}", path, where.line, where.column, e.description()));
  }
  for (const auto& [tkey, tnode] : doc) {
    const std::string_view group = tkey.str();
    const bool known = group != "options"sv && std::find(kGroups.begin(), kGroups.end(), group) != kGroups.end();
    if (!known) {
      throw option_error(
          fmt::format("config file '{}': unknown table [{}] (expected [scheduler], [calibrate] or "
                      "[causal])",
                      path, group));
    }
    const toml::table* table = tnode.as_table();
    if (table == nullptr) {
      throw option_error(fmt::format("{} = {} (from config file '{}'): wrong TOML type: expected a table [{}], got {}",
                                     group, toml_repr(tnode), path, group, toml_type_name(tnode.type())));
    }
    for (const auto& [key, node] : *table) {
      const std::string_view field = key.str();
      const auto it = std::find_if(kKeys.begin(), kKeys.end(), [&](const Key& k) {
        return k.group == group && !k.field.empty() && k.field == field;
      });
      const std::string source = fmt::format("from config file '{}'", path);
      if (it == kKeys.end()) {
        // Moved to another table, or renamed: COACT_ + upper(field) names it.
        std::string as_env = "COACT_";
        for (char c : field) as_env += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        if (group == "causal"sv) as_env = "COACT_CAUSAL_" + as_env.substr(6);
        if (const Key* k = find(as_env); k && !k->field.empty()) {
          throw option_error(fmt::format("{}.{} ({}) belongs in table [{}]: use {}", group, field, source, k->group,
                                         spelled(*k, Spelling::file)));
        }
        throw_unknown(as_env, fmt::format("{}.{}", group, field), Spelling::file, source);
      }
      set(entries, &*it, parse_toml(*it, node, path), Source::config_file, path);
    }
  }
}

std::vector<std::pair<std::string, std::string>> environment_of(const Sources& s) {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](std::string_view entry) {
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) return;
    out.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  };
  if (s.env) {
    for (const auto& e : *s.env) add(e);
  } else if (environ != nullptr) {
    for (char** e = environ; *e != nullptr; ++e) add(*e);
  }
  return out;
}

bool is_ours(std::string_view env_key) {
  return env_key.starts_with("COACT_"sv) && !env_key.starts_with("COACT_BENCH_"sv);
}

// One --coact-* argument: its position(s) in args and its value.
struct FlagArg {
  std::string name;                  // "--coact-workers"
  std::optional<std::string> value;  // nullopt: missing
  std::size_t first = 0;             // index in args
  std::size_t count = 1;             // 1, or 2 for "--k v"
};

// Finds the --coact-* arguments (in order), stopping at "--". An unknown
// --coact-x does not consume the next argument (we cannot know its arity).
std::vector<FlagArg> coact_flags(const std::vector<std::string>& args) {
  std::vector<FlagArg> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (!a.starts_with("--coact-")) continue;
    FlagArg f;
    f.first = i;
    if (const auto eq = a.find('='); eq != std::string::npos) {
      f.name = a.substr(0, eq);
      f.value = a.substr(eq + 1);
      out.push_back(std::move(f));
      continue;
    }
    f.name = a;
    if (a == "--coact-help") {
      out.push_back(std::move(f));
      continue;
    }
    const Key* k = find(env_of_flag(a));
    if (k == nullptr) {
      out.push_back(std::move(f));
      continue;
    }
    const bool has_next = i + 1 < args.size();
    if (k->type == Type::boolean && (!has_next || args[i + 1].starts_with("-"))) {
      f.value = "true";
    } else if (has_next) {
      f.value = args[++i];
      f.count = 2;
    }
    out.push_back(std::move(f));
  }
  return out;
}

struct ProcessState {
  std::mutex mu;
  std::optional<Values> values;  // guarded by mu
};
ProcessState& process_state() {
  static ProcessState* s = new ProcessState;  // leaked: read from atexit handlers
  return *s;
}

const Entry& checked(const std::vector<Entry>& entries, std::string_view name, std::initializer_list<Type> types) {
  const Key* k = find(name);
  if (k == nullptr) throw std::logic_error(fmt::format("coact options: {} is not a declared key", name));
  if (std::find(types.begin(), types.end(), k->type) == types.end()) {
    throw std::logic_error(fmt::format("coact options: {} read with the wrong type", name));
  }
  g_read[index_of(k)].store(true, std::memory_order_relaxed);
  return entries[index_of(k)];
}

}  // namespace

// ---- Key ---------------------------------------------------------------------------------

std::string Key::flag() const { return flag_of(name); }

std::string Key::accepted() const {
  switch (type) {
    case Type::boolean:
      return "a boolean (1/0/true/false/yes/no/on/off)";
    case Type::list:
      return "a comma-separated list";
    case Type::text:
      if (!choices.empty()) {
        std::string c(choices);
        std::replace(c.begin(), c.end(), '|', '/');
        return fmt::format("one of {}", c);
      }
      return "a string";
    case Type::integer:
      break;
  }
  return fmt::format("an integer in {}..{}{}{}", min, max, unit.empty() ? "" : fmt::format(" ({})", unit),
                     accepts_auto ? " or 'auto'" : "");
}

std::string_view to_string(Source s) noexcept {
  switch (s) {
    case Source::default_value:
      return "default";
    case Source::config_file:
      return "config file";
    case Source::environment:
      return "environment";
    case Source::command_line:
      return "command line";
  }
  return "?";
}

std::span<const Key> keys() noexcept { return kKeys; }

const Key* find(std::string_view name) noexcept {
  const auto it = std::find_if(kKeys.begin(), kKeys.end(), [&](const Key& k) { return k.name == name; });
  return it == kKeys.end() ? nullptr : &*it;
}

// ---- Values -------------------------------------------------------------------------------

std::optional<uint64_t> Values::integer(std::string_view name) const {
  const Entry& e = checked(entries_, name, {Type::integer});
  if (e.text.empty() || e.text == "auto") return std::nullopt;
  uint64_t n = 0;
  std::from_chars(e.text.data(), e.text.data() + e.text.size(), n, 10);  // validated when resolved
  return n;
}

bool Values::boolean(std::string_view name) const { return checked(entries_, name, {Type::boolean}).text == "true"; }

const std::string& Values::text(std::string_view name) const { return checked(entries_, name, {Type::text}).text; }

std::vector<std::string> Values::list(std::string_view name) const {
  return split_list(checked(entries_, name, {Type::list}).text);
}

bool Values::is_set(std::string_view name) const {
  return checked(entries_, name, {Type::integer, Type::boolean, Type::text, Type::list}).source !=
         Source::default_value;
}

const Entry& Values::entry(std::string_view name) const {
  return checked(entries_, name, {Type::integer, Type::boolean, Type::text, Type::list});
}

std::string Values::listing() const {
  std::string out;
  std::string_view group;
  for (const Entry& e : entries_) {
    const Key& k = *e.key;
    if (k.group != group) {
      group = k.group;
      out += fmt::format("[{}]\n", group);
    }
    const std::string where = e.origin.empty() || e.source == Source::default_value
                                  ? std::string(to_string(e.source))
                                  : fmt::format("{} {}", to_string(e.source), e.origin);
    out += fmt::format("  {}={}  ({}; {}) {}\n", k.name, e.text, where, k.accepted(), k.doc);
  }
  return out;
}

Values defaults() {
  Values v;
  v.entries_.reserve(kKeyCount);
  for (const Key& k : kKeys) v.entries_.push_back(Entry{&k, std::string(k.default_value), Source::default_value, ""});
  return v;
}

Values resolve(const Sources& sources) {
  Values v = defaults();
  const auto env = environment_of(sources);
  const auto flags = coact_flags(sources.args);

  // Step 2: the config file.
  std::string path = sources.config_path;
  Source path_source = Source::command_line;
  std::string path_origin = "--coact-config";
  if (path.empty()) {
    for (const auto& f : flags) {
      if (f.name != "--coact-config") continue;
      if (!f.value || f.value->empty()) {
        throw option_error(
            fmt::format("--coact-config={} (from command line): expected a file path", quoted(f.value.value_or(""))));
      }
      path = *f.value;  // the last one wins
    }
  }
  if (path.empty()) {
    for (const auto& [key, value] : env) {
      if (key == "COACT_CONFIG") {
        path = value;  // empty = no file
        path_source = Source::environment;
        path_origin = "COACT_CONFIG";
      }
    }
  }
  g_read[index_of(find("COACT_CONFIG"))].store(true, std::memory_order_relaxed);
  if (!path.empty()) {
    set(v.entries_, find("COACT_CONFIG"), path, path_source, path_origin);
    apply_config_file(v.entries_, path, sources.config_path.empty() ? std::string_view(path_origin) : "");
  }

  // Step 3: the environment.
  for (const auto& [key, value] : env) {
    if (!is_ours(key) || key == "COACT_CONFIG") continue;
    const Key* k = find(key);
    if (k == nullptr) throw_unknown(key, key, Spelling::env, "from environment");
    if (value.empty() && k->type != Type::text && k->type != Type::list) {
      set(v.entries_, k, std::string(k->default_value), Source::default_value, "");  // empty = unset
      continue;
    }
    set(v.entries_, k, parse_text(*k, key, value, "from environment"), Source::environment, key);
  }

  // Step 4: the command line.
  for (const auto& f : flags) {
    if (f.name == "--coact-config" || f.name == "--coact-help") continue;
    const std::string as_env = env_of_flag(f.name);
    const Key* k = find(as_env);
    if (k == nullptr) throw_unknown(as_env, f.name, Spelling::flag, "from command line");
    if (!f.value) {
      throw option_error(fmt::format("{} (from command line): missing value; expected {}", f.name, k->accepted()));
    }
    set(v.entries_, k, parse_text(*k, f.name, *f.value, "from command line"), Source::command_line, f.name);
  }

  // Step 5: a tool's own command line (Sources::given).
  for (const Sources::Given& g : sources.given) {
    const Key* k = find(g.key);
    if (k == nullptr) throw std::logic_error(fmt::format("coact options: {} is not a declared key", g.key));
    set(v.entries_, k, parse_text(*k, g.written, g.value, "from command line"), Source::command_line, g.written);
  }
  return v;
}

Values process() {
  ProcessState& s = process_state();
  std::lock_guard lk(s.mu);
  if (!s.values) s.values = resolve();
  return *s.values;
}

void install(Values v) {
  ProcessState& s = process_state();
  std::lock_guard lk(s.mu);
  s.values = std::move(v);
}

void exit_with(const char* argv0, const option_error& e) {
  std::string prog = argv0 != nullptr && *argv0 != '\0' ? argv0 : "coact";
  if (const auto slash = prog.rfind('/'); slash != std::string::npos) prog = prog.substr(slash + 1);
  std::fflush(stdout);
  std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), e.what());
  std::exit(2);
}

Values init(int& argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i] != nullptr ? argv[i] : "");
  const auto flags = coact_flags(args);
  bool help = false;
  std::vector<bool> drop(args.size(), false);
  for (const auto& f : flags) {
    if (f.name == "--coact-help") help = true;
    for (std::size_t j = 0; j < f.count; ++j) drop[f.first + j] = true;
  }
  Values v;
  try {
    Sources s;
    s.args = std::move(args);
    v = resolve(s);
  } catch (const option_error& e) {
    exit_with(argc > 0 ? argv[0] : nullptr, e);
  }
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (!drop[static_cast<std::size_t>(i - 1)]) argv[out++] = argv[i];
  }
  for (int i = out; i < argc; ++i) argv[i] = nullptr;
  argc = out;
  install(v);
  if (help) {
    std::fputs(v.listing().c_str(), stdout);
    std::fflush(stdout);
    std::exit(0);
  }
  return v;
}

std::vector<std::string> unread_keys() {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < kKeyCount; ++i) {
    if (!g_read[i].load(std::memory_order_relaxed)) out.emplace_back(kKeys[i].name);
  }
  return out;
}

std::string markdown_table() {
  std::string out = "| Key | Default | Accepted | Read by | Meaning |\n|---|---|---|---|---|\n";
  for (const Key& k : kKeys) {
    std::string def(k.default_value);
    if (def.empty()) def = "(empty)";
    std::string accepted = k.accepted();
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", k.name, def, accepted, k.group, k.doc);
  }
  return out;
}

}  // namespace coact::options
