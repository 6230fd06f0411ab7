// coact-profile's internals shared by its commands (run.cpp, validate.cpp,
// main.cpp): the argument structs of each command, the child-process helpers
// and where the tool finds its companion programs. Single-threaded tool code:
// nothing here is thread-safe, and every function blocks only where it says so.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <coact/causal/controller.hpp>

namespace coact::profile_tool {

// `coact-profile run` (run.cpp).
struct RunArgs {
  causal::Options o;
  bool json_given = false;    // --json-output was given (else OUTPUT with .jsonl)
  bool append = false;        // --append: add to existing profiles instead of refusing
  bool quiet = false;         // no progress line
  bool stop_program = false;  // --stop-program: SIGTERM the program once the sweep has ended
  std::string shard_source;   // what set o.shard / o.shards: "--shard", "SLURM_ARRAY_TASK_ID", ...; "" = not sharded
  std::string trace;          // --trace FILE: the per-mail trace during the run ("" = none)
  std::string trace_window;   // --trace-window START+DURATION (seconds; "" = the whole run)
  std::vector<std::string> command;  // PROGRAM ARGS... (after `--`)
};
/// Parses --trace-window's "START+DURATION" (seconds, decimals allowed,
/// START >= 0, DURATION > 0) into milliseconds (rounded to the nearest ms,
/// at least 1). "" if fine, else the one-line complaint naming the value.
std::string parse_trace_window(const std::string& text, uint64_t& start_ms, uint64_t& duration_ms);
int run(RunArgs& a);
/// `text` with every COACT_CAUSAL_* key it names spelled as run's flag
/// ("16 x COACT_CAUSAL_EXPERIMENT_MS" -> "16 x --experiment-ms"): the keys'
/// help lines and the sweep's notes, as a user of run reads them. Pure.
std::string with_flags(std::string_view text);

// `coact-profile validate` (validate.cpp; its protocol is described there).
struct ValidateArgs {
  std::vector<std::string> workloads;
  std::vector<std::string> stages;  // only these stages' rows (--list keys; empty: all)
  double sweep_s = 60;
  double actual_s = 2;
  int chunks = 3;
  int64_t unit_us = 500;
  std::string known_answer;
  std::string dedup;
  std::string dedup_dir = "/usr/share/doc";
  int dedup_fast_level = 1;
  std::string dedup_region = "dedup::Compressor::on(coact::dedup::NewChunk)";
  double dedup_sweep_s = 60;
  // The real programs' rows: at least real_chunks rounds of (baseline,
  // variant, baseline) runs, then more (up to real_max_rounds) until the
  // standard error of their mean is at most real_se_pts points; the row's
  // sweep rounds likewise, on their own; seconds per run.
  int real_chunks = 5;
  int real_max_rounds = 15;
  double real_se_pts = 0.5;
  double real_run_s = 3;
  // Their prediction sweeps' experiment length. The windows alternate 0 and
  // s = r: a shorter window follows the machine's drifting speed more
  // closely, a longer one averages more of the program's phases (the
  // archiver's passes are a few hundred milliseconds).
  int64_t real_experiment_ms = 500;
  std::vector<std::string> dedup_stages;  // only these archiver rows (validate.cpp's dedup_variants; empty: all)
  bool no_dedup = false;
  bool no_known_answer = false;  // skip the known-answer workloads (steps 2-4, 6)
  std::string analytics;         // coact-analytics (default: the build tree, PATH)
  bool no_analytics = false;     // skip the analytics job's rows
  std::string kv;                // coact-kv (default: the build tree, PATH)
  bool no_kv = false;            // skip the service's rows (coact-kv under redis-benchmark)
  int retries = 2;
  double contended_factor = 1.15;
  std::string out_dir;
  std::string python = "/usr/bin/python3";  // runs coact_reports.estimate
  bool json_out = false;
  bool verbose = false;
  bool reanalyze = false;        // recompute the table from --out's files, run nothing
  bool with_coz = false;         // also run each row's line under Debian's `coz run --fixed-line`
  std::string coz = "coz";       // the coz command (PATH)
  std::string known_answer_coz;  // coact-known-answer-coz (default: beside coact-known-answer)
  double coz_s = 10;             // seconds of each Coz run
  // The line workloads' sweeps: CPU microseconds between samples while an
  // experiment selects a line (causal Options::line_experiment_period; 0:
  // the controller's default, the sample period / 8).
  int64_t line_experiment_period_us = 0;
};
int validate(ValidateArgs& a);

// ---- child processes and paths (tool.cpp) ---------------------------------------

struct ChildResult {
  int status = -1;  // waitpid status; -1 if the child could not be started
  std::string out;  // its stdout
};

// Runs `args` (args[0] found on PATH) with environment `env`, stdout captured,
// stderr appended to the file `log` (inherited when empty). Blocks until the
// child exits.
ChildResult run_child(const std::vector<std::string>& args, const std::vector<std::string>& env,
                      const std::string& log);
bool exited_ok(const ChildResult& r);

// This process's environment without COACT_CAUSAL and COACT_CAUSAL_* keys
// (each dropped key is named on stderr when `say_dropped`), plus `extra`.
std::vector<std::string> child_env(const std::vector<std::pair<std::string, std::string>>& extra,
                                   bool say_dropped = false);

// The directory of this executable (/proc/self/exe), "." if unknown.
std::string self_dir();
// True when this executable runs from a build tree (<build>/tools/coact-profile/),
// false when installed (<prefix>/bin).
bool in_build_tree();
// The source tree this build was configured from (COACT_SOURCE_DIR), when
// running from the build tree and that tree still exists; else empty.
std::string source_dir();
// `given` when not empty, else <build tree>/rel when this tool runs from a build
// tree, else <prefix>/bin/name next to this tool, else `name` on PATH; empty if none.
std::string find_program(const std::string& given, const std::string& rel, const std::string& name);
// The first executable `name` in a directory of PATH; empty if none.
std::string on_path(const std::string& name);
// The command that plots a profile where the user is: `coact-plot` when
// installed next to this tool or on PATH, else the source tree's reports/ tool.
std::string plot_command();

// "SIGSEGV (Segmentation fault)".
std::string signal_name(int sig);

}  // namespace coact::profile_tool
