// coact-profile: causal profiling of coact programs.
//
//   coact-profile run [options] -- PROGRAM ARGS...   (run.cpp)
//   coact-profile validate [--json] [options]        (validate.cpp)
//
// This file only parses the command line (CLI11) and dispatches. An unknown
// option gets a did-you-mean from the command's own options (CLI11 has none),
// and a program given without the `--` before it gets the corrected command.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <coact/causal/option_fields.hpp>
#include <coact/options.hpp>

#include "tool.hpp"

namespace {

namespace ca = coact::causal;
using namespace coact::profile_tool;

// Levenshtein distance (two rows), for the did-you-mean.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// The options of `cmd` (long and short names with their dashes) closest to
// `word`: those it is a prefix of, else those within edit distance 2.
std::vector<std::string> suggestions(const CLI::App* cmd, std::string word) {
  const auto eq = word.find('=');
  if (eq != std::string::npos) word.resize(eq);
  std::vector<std::string> names;
  for (const CLI::Option* opt : cmd->get_options()) {
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  }
  std::vector<std::string> out;
  for (const auto& n : names) {
    if (word.size() >= 3 && n.starts_with(word)) out.push_back(n);
  }
  if (!out.empty()) return out;
  size_t best = 3;
  for (const auto& n : names) {
    const size_t d = edit_distance(word, n);
    if (d < best) {
      best = d;
      out.clear();
    }
    if (d == best) out.push_back(n);
  }
  return out;
}

// --line-experiment-period-us (run and validate): CPU microseconds between
// samples while an experiment selects a line, 0 (the sample period / 8) or
// 10..1000000, as decimal digits only (no sign, exponent or blank). Returns
// the value, or nullopt for anything else; kLinePeriodExpected says what is
// expected, for the caller's error message.
constexpr const char* kLinePeriodExpected =
    "expected 0 (the sample period / 8) or an integer in 10..1000000 (microseconds of CPU time)";
std::optional<uint64_t> parse_line_experiment_period_us(const std::string& t) {
  const bool digits = !t.empty() && t.size() <= 7 && t.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) return std::nullopt;
  const uint64_t us = std::stoull(t);
  if (us != 0 && (us < 10 || us > 1'000'000)) return std::nullopt;
  return us;
}

// The shard of `run`: --shard K/N, else a Slurm job array's task
// (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT),
// else a Kubernetes indexed Job's JOB_COMPLETION_INDEX of JOB_COMPLETION_COUNT
// (a variable the Job's manifest sets to its completions). Sets o.shard and
// o.shards (left 0/0 when none applies) and `source` (what gave them).
// Returns "" or the one-line complaint naming the flag or variable and value.
std::string resolve_shard(const std::string& flag, bool flag_given, coact::causal::Options& o, std::string& source) {
  auto env = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  auto number = [](const std::string& t) -> std::optional<uint64_t> {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return std::stoull(t);
  };
  const std::string expected = "K/N with 0 <= K < N <= 100000 (this shard, 0-based, and the number of shards)";
  if (flag_given) {
    if (!ca::parse_shard(flag, o.shard, o.shards)) return "--shard '" + flag + "': expected " + expected;
    source = "--shard";
    return {};
  }
  if (const auto id = env("SLURM_ARRAY_TASK_ID")) {
    const auto count = env("SLURM_ARRAY_TASK_COUNT");
    const auto min = env("SLURM_ARRAY_TASK_MIN");
    const auto k = number(*id), n = count ? number(*count) : std::nullopt, lo = min ? number(*min) : uint64_t{0};
    if (!k) return "SLURM_ARRAY_TASK_ID='" + *id + "': expected a task index (digits)";
    if (!n) {
      return (count ? "SLURM_ARRAY_TASK_COUNT='" + *count + "'" : std::string("SLURM_ARRAY_TASK_COUNT unset")) +
             " (with SLURM_ARRAY_TASK_ID='" + *id +
             "'): expected the array's task count (sbatch --array sets it), or pass --shard K/N";
    }
    if (!lo || *lo > *k)
      return "SLURM_ARRAY_TASK_MIN='" + min.value_or("") + "': expected a task index <= SLURM_ARRAY_TASK_ID";
    const std::string text = std::to_string(*k - *lo) + "/" + std::to_string(*n);
    if (!ca::parse_shard(text, o.shard, o.shards)) {
      return "SLURM_ARRAY_TASK_ID='" + *id + "' of SLURM_ARRAY_TASK_COUNT='" + *count + "' (from " +
             std::to_string(*lo) + "): shard " + text + " is not " + expected +
             "; submit a dense array (sbatch --array=0-N) or pass --shard K/N";
    }
    source = "SLURM_ARRAY_TASK_ID";
    return {};
  }
  if (const auto id = env("JOB_COMPLETION_INDEX")) {
    const auto count = env("JOB_COMPLETION_COUNT");
    if (!count) {
      return "JOB_COMPLETION_INDEX='" + *id +
             "' is set but JOB_COMPLETION_COUNT is not: set it to the Job's completions in its manifest (the shard "
             "count), or pass --shard K/N";
    }
    const std::string text = *id + "/" + *count;
    if (!ca::parse_shard(text, o.shard, o.shards)) {
      return "JOB_COMPLETION_INDEX='" + *id + "' of JOB_COMPLETION_COUNT='" + *count + "': expected " + expected;
    }
    source = "JOB_COMPLETION_INDEX";
  }
  return {};
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// One flag of the sweep's (a bound COACT_CAUSAL_* key) and what the command
// line gave it.
struct SweepFlag {
  const ca::OptionField* field = nullptr;
  CLI::Option* opt = nullptr;
  std::string text;                // integer and text keys
  std::vector<std::string> items;  // list keys (the flag is repeatable)
  bool on = false;                 // boolean keys (bare flags)
};

// What a sweep flag means for this tool beyond the key's own help line.
const std::map<std::string_view, std::string_view> kToolNotes{
    {"COACT_CAUSAL_OUTPUT", "; must not hold a profile unless --append"},
};

std::string type_name_of(const coact::options::Key& k) {
  switch (k.type) {
    case coact::options::Type::boolean:
      return "";
    case coact::options::Type::integer:
      return k.accepts_auto ? "INT|auto" : "INT";
    case coact::options::Type::list:
      return "TEXT";
    case coact::options::Type::text:
      return k.choices.empty() ? "TEXT" : std::string(k.choices);
  }
  return "TEXT";
}

// The sweep's Options from the flags given, resolved by the options core as
// the program's own COACT_CAUSAL_* keys would be (the same ranges, choices
// and checks between keys), each value named by its flag in errors. Throws
// coact::options::option_error.
ca::Options sweep_options(const std::deque<SweepFlag>& flags) {
  coact::options::Sources src;
  src.env.emplace();  // this tool's environment is the program's, not the sweep's
  src.given.push_back({"COACT_CAUSAL", "true", "run"});
  for (const SweepFlag& f : flags) {
    if (f.opt->count() == 0) continue;
    std::string value = f.text;
    if (f.field->declared().type == coact::options::Type::boolean) value = f.on ? "true" : "false";
    if (f.field->declared().type == coact::options::Type::list) value = join(f.items, ",");
    src.given.push_back({std::string(f.field->key), std::move(value), ca::flag_of(*f.field)});
  }
  return *ca::options_from(coact::options::resolve(src));
}

// Leftover arguments of a parsed command: for run, a program given without
// `--` (the corrected command line keeps every option typed before the
// program); otherwise an unknown option (with a did-you-mean). `head` is the
// command line before any `--` (subcommand included), `command` what followed
// it. Returns the exit status (2) after printing one explanation, or 0 if
// there is nothing left over.
int leftovers(const CLI::App* cmd, const std::vector<std::string>& rest, const std::vector<std::string>& head,
              const std::vector<std::string>& command) {
  if (rest.empty()) return 0;
  const std::string name = cmd->get_name().empty() ? "coact-profile" : "coact-profile " + cmd->get_name();
  if (cmd->get_name() == "run" && command.empty() && (rest.front().empty() || rest.front().front() != '-')) {
    // The program: the first leftover, not an option (with `--` already
    // given, a leftover is a typo's value instead). Everything the user typed
    // from it on (its own options included) belongs after `--`.
    const auto prog = rest.begin();
    {
      const auto at = std::find(head.begin(), head.end(), *prog);
      std::string fixed;
      for (auto it = head.begin(); it != head.end(); ++it) {
        if (it == at) fixed += " --";
        fixed += " " + *it;
      }
      if (at == head.end()) fixed += " --";
      for (const auto& c : command) fixed += " " + c;
      std::fprintf(stderr,
                   "coact-profile run: '%s' is not an option of coact-profile; the program to run and its arguments "
                   "come after `--`:\n  coact-profile%s\n",
                   prog->c_str(), fixed.c_str());
      return 2;
    }
  }
  for (const auto& r : rest) {
    if (r.size() > 1 && r.front() == '-') {
      const auto s = suggestions(cmd, r);
      std::fprintf(stderr, "%s: unknown option '%s'%s (see %s --help)\n", name.c_str(), r.c_str(),
                   s.empty() ? "" : (": did you mean " + join(s, " or ") + "?").c_str(), name.c_str());
      return 2;
    }
  }
  std::fprintf(stderr, "%s: unexpected argument '%s' (see %s --help)\n", name.c_str(), rest.front().c_str(),
               name.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Everything after the first "--" is the program and its arguments.
  std::vector<std::string> head;
  RunArgs a;
  bool after = false;
  for (int i = 1; i < argc; ++i) {
    if (!after && std::strcmp(argv[i], "--") == 0) {
      after = true;
    } else if (after) {
      a.command.emplace_back(argv[i]);
    } else {
      head.emplace_back(argv[i]);
    }
  }

  CLI::App app{"coact-profile: causal profiling of coact programs (Coz-style virtual speedup experiments)",
               "coact-profile"};  // named: parse() gets a vector, so CLI11 never sees argv[0] for its usage line
  app.set_version_flag("--version", "coact-profile " COACT_VERSION);
  app.require_subcommand(1);
  CLI::App* run_cmd =
      app.add_subcommand("run", "Run PROGRAM under a sweep: coact-profile run [options] -- PROGRAM ARGS...");
  // The sweep's flags, one per bound COACT_CAUSAL_* key (option_fields.hpp):
  // help, default and validation come from the key's declaration, and the
  // values are resolved by the options core after parsing (SweepFlag).
  std::deque<SweepFlag> sweep;  // stable addresses: CLI11 holds pointers into them
  for (const ca::OptionField& f : ca::option_fields()) {
    if (f.key == "COACT_CAUSAL_SHARD") continue;  // --shard below: it also reads Slurm's and Kubernetes' indexes
    if (f.key == "COACT_CAUSAL_PRINT_NOTES") continue;  // run prints the notes itself (run.cpp)
    SweepFlag& s = sweep.emplace_back();
    s.field = &f;
    const coact::options::Key& k = f.declared();
    std::string names = ca::flag_of(f);
    if (names == "--progress" || names == "--output") names = names.substr(1, 2) + "," + names;  // -p, -o
    std::string help = with_flags(k.doc);
    if (const auto it = kToolNotes.find(f.key); it != kToolNotes.end()) help += it->second;
    switch (k.type) {
      case coact::options::Type::boolean:
        s.opt = run_cmd->add_flag(names, s.on, help);
        break;
      case coact::options::Type::list:
        s.opt = run_cmd->add_option(names, s.items, help + " (repeatable)");
        break;
      default:
        s.opt = run_cmd->add_option(names, s.text, help);
        if (!k.default_value.empty()) s.opt->default_str(std::string(k.default_value));
        break;
    }
    s.opt->type_name(type_name_of(k));
  }
  auto flag = [&](const char* name) { return run_cmd->get_option(name); };
  flag("--experiments")->excludes(flag("--duration-s"));
  for (const char* other : {"--fixed-speedup", "--fixed-region", "--experiments", "--until-settled"})
    flag("--profile-only")->excludes(flag(other));
  for (const char* other : {"--fixed-speedup", "--fixed-region"}) flag("--until-settled")->excludes(flag(other));
  flag("--alternate-speedup")->needs(flag("--fixed-speedup"));
  std::string shard;
  run_cmd
      ->add_option("--shard", shard,
                   with_flags(coact::options::find("COACT_CAUSAL_SHARD")->doc) +
                       "; default output profile-shard-K-of-N.coz; default shard: a Slurm array task's "
                       "SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT, a Kubernetes indexed Job's "
                       "JOB_COMPLETION_INDEX / JOB_COMPLETION_COUNT, when set")
      ->type_name("K/N");
  run_cmd->add_flag("--append", a.append,
                    "Add this run's experiments to existing profile files (the plot then pools both runs)");
  run_cmd->add_flag("-q,--quiet", a.quiet, "No progress line on stderr");
  run_cmd->add_flag("--stop-program", a.stop_program,
                    "Send the program SIGTERM once the sweep has ended (its --duration-s, --experiments or "
                    "--until-settled), for programs that run until told to stop");
  auto* tr = run_cmd->add_option("--trace", a.trace,
                                 "Also record the per-mail trace (COACT_TRACE=on unless the environment sets a "
                                 "rate) into this Chrome trace-event JSON file");
  run_cmd
      ->add_option("--trace-window", a.trace_window,
                   "Record the trace only from START to START+DURATION seconds after the runtime booted "
                   "(e.g. 2+0.5); the file is written when the window closes")
      ->needs(tr);
  CLI::App* val_cmd = app.add_subcommand(
      "validate",
      "Compare predicted speedups with measured ones: the known-answer workloads (bench/causal) and the archiver "
      "(examples/dedup)");
  ValidateArgs v;
  val_cmd->add_option("-w,--workload", v.workloads, "Only this known-answer workload (repeatable; default: all)");
  val_cmd->add_option(
      "--stage", v.stages,
      "Only the rows of this stage (a key of coact-known-answer --list, e.g. A, a2, work@A; repeatable; "
      "default: all)");
  val_cmd->add_option("--sweep-s", v.sweep_s, "Sweep seconds per workload (split into --chunks)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  val_cmd->add_option("--actual-s", v.actual_s, "Seconds of each real (baseline or actually-faster) run")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  val_cmd->add_option("--chunks", v.chunks, "Sweep chunks interleaved with the real runs")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  val_cmd->add_option("--unit-us", v.unit_us, "Known-answer unit of stage cost, microseconds")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{10}, int64_t{1'000'000}));
  val_cmd->add_option("--known-answer", v.known_answer, "Path of coact-known-answer (default: the build tree, PATH)");
  val_cmd->add_option("--dedup", v.dedup, "Path of coact-dedup (default: the build tree, PATH)");
  val_cmd->add_option("--dedup-dir", v.dedup_dir, "Directory the archiver archives")->capture_default_str();
  val_cmd
      ->add_option("--dedup-fast-level", v.dedup_fast_level,
                   "The archiver's faster zstd level (the Compressor row's real change)")
      ->capture_default_str();
  val_cmd
      ->add_option("--dedup-region", v.dedup_region, "The Compressor row's region (what --dedup-fast-level speeds up)")
      ->capture_default_str();
  val_cmd->add_option("--dedup-stage", v.dedup_stages,
                      "Only this archiver row (repeatable; default all): Compressor (--level), Reader (--fast-reader), "
                      "Chunker (--fast-chunker), Fingerprinter (--fingerprint sha1), Index (--fast-index), Writer "
                      "(--fast-writer)");
  val_cmd
      ->add_option("--dedup-sweep-s", v.dedup_sweep_s,
                   "Sweep seconds per real-program row (each archiver stage, the analytics job)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  val_cmd
      ->add_option("--real-chunks", v.real_chunks,
                   "Real-program rows: the fewest rounds of baseline, variant, baseline runs (and of the row's "
                   "sweep); the measured speedup's 95% interval is over the rounds")
      ->capture_default_str()
      ->check(CLI::Range(2, 100));
  val_cmd
      ->add_option("--real-max-rounds", v.real_max_rounds,
                   "Real-program rows: the most rounds, each side (truth, sweep) run until its mean's standard error "
                   "is at most --real-se-pts (--real-chunks if that is larger)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000));
  val_cmd
      ->add_option("--real-se-pts", v.real_se_pts,
                   "Real-program rows: the standard error, in points, at which a side's rounds stop before "
                   "--real-max-rounds")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  val_cmd->add_option("--real-run-s", v.real_run_s, "Real-program rows: seconds of each baseline or variant run")
      ->capture_default_str()
      ->check(CLI::Range(0.5, 3600.0));
  val_cmd
      ->add_option("--real-experiment-ms", v.real_experiment_ms,
                   "Real-program rows: experiment window of their sweeps, milliseconds")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{600'000}));
  val_cmd->add_flag("--no-dedup", v.no_dedup, "Skip the archiver");
  val_cmd->add_flag(
      "--no-known-answer", v.no_known_answer,
      "Skip the known-answer workloads (only the real programs' rows: the archiver's, the analytics job's, the "
      "service's)");
  val_cmd->add_option("--analytics", v.analytics, "Path of coact-analytics (default: the build tree, PATH)");
  val_cmd->add_flag("--no-analytics", v.no_analytics, "Skip the analytics job (examples/analytics)");
  val_cmd->add_option("--kv", v.kv, "Path of coact-kv (default: the build tree, PATH)");
  val_cmd->add_flag("--no-kv", v.no_kv, "Skip the service (examples/kv: coact-kv under redis-benchmark load)");
  val_cmd->add_option("--retries", v.retries, "Redo a contended known-answer chunk up to this many times")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  val_cmd
      ->add_option("--contended-factor", v.contended_factor,
                   "A chunk whose baseline period exceeds this x the ideal is contended")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 100.0));
  val_cmd
      ->add_option("--line-experiment-period-us", v.line_experiment_period_us,
                   "The line workloads' sweeps: CPU microseconds between samples while an experiment selects a line "
                   "(0: the sample period / 8, as `run`)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& t) {
            return parse_line_experiment_period_us(t) ? std::string{} : "'" + t + "': " + kLinePeriodExpected;
          },
          "0 or 10..1000000"));
  val_cmd->add_option("--out", v.out_dir,
                      "Directory for the profiles and the children's log (default: a new /tmp dir)");
  val_cmd->add_flag("--json", v.json_out, "Print one JSON object instead of the table");
  val_cmd->add_option("--python", v.python, "Interpreter that runs the estimator (coact_reports.estimate; needs numpy)")
      ->capture_default_str();
  val_cmd->add_flag("--reanalyze", v.reanalyze,
                    "Recompute the known-answer rows from the profiles and results an earlier run left in --out");
  val_cmd->add_flag("-v,--verbose", v.verbose, "Progress on stderr also with --json");
  val_cmd->add_flag("--with-coz", v.with_coz,
                    "Also predict each known-answer row whose stage has a source line of its own with Coz (`coz run "
                    "--fixed-line FILE:LINE --fixed-speedup 0 / 100s`, on coact-known-answer-coz) and print Coz's "
                    "prediction and error beside coact's");
  val_cmd->add_option("--coz", v.coz, "The coz command (Debian's coz-profiler)")->capture_default_str();
  val_cmd->add_option("--known-answer-coz", v.known_answer_coz,
                      "Path of coact-known-answer-coz (default: beside coact-known-answer, the build tree, PATH)");
  val_cmd->add_option("--coz-s", v.coz_s, "Seconds of each Coz run (Coz's experiments last >= 0.5 s each)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));

  run_cmd->footer(
      "Examples:\n"
      "  coact-profile run -p requests -- ./server --port 8080\n"
      "  coact-profile run --progress-handler 'Sink::on' --experiments 200 -- ./pipeline in.dat\n"
      "Exit status: the program's status if it failed (128+N if killed by signal N); 1 if no progress point was\n"
      "reached, nothing was recorded, or the program exited before --duration-s / --experiments was reached (the\n"
      "profile is kept); 2 on a usage error (also: a --progress, --region-filter or --fixed-region name that\n"
      "matched nothing, an output that holds a profile without --append); 127 if PROGRAM cannot run.");

  app.allow_extras();
  run_cmd->allow_extras();
  val_cmd->allow_extras();
  if (!head.empty() && head.front().front() != '-' && head.front() != "run" && head.front() != "validate") {
    std::vector<std::string> s;
    for (const char* c : {"run", "validate"}) {
      if (std::string_view(c).starts_with(head.front()) || edit_distance(head.front(), c) <= 2) s.push_back(c);
    }
    std::fprintf(stderr, "coact-profile: unknown command '%s'%s (commands: run, validate; see coact-profile --help)\n",
                 head.front().c_str(), s.empty() ? "" : (": did you mean " + join(s, " or ") + "?").c_str());
    return 2;
  }
  try {
    std::vector<std::string> rev(head.rbegin(), head.rend());
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help: 0; any usage error: 2
  }
  for (const CLI::App* cmd : {static_cast<const CLI::App*>(&app), static_cast<const CLI::App*>(run_cmd),
                              static_cast<const CLI::App*>(val_cmd)}) {
    if (const int rc = leftovers(cmd, cmd->remaining(), head, a.command); rc != 0) return rc;
  }
  if (val_cmd->parsed()) {
    if (!a.command.empty()) {
      std::fprintf(stderr, "coact-profile: validate takes no program\n");
      return 2;
    }
    return validate(v);
  }
  if (a.command.empty()) {
    std::fprintf(stderr,
                 "coact-profile run: no program given; it comes after `--`:\n"
                 "  coact-profile run [options] -- PROGRAM ARGS...\n");
    return 2;
  }
  try {
    a.o = sweep_options(sweep);
  } catch (const coact::options::option_error& e) {
    std::fprintf(stderr, "coact-profile run: %s (see coact-profile run --help)\n", e.what());
    return 2;
  }
  ca::Options& o = a.o;
  if (const std::string bad = resolve_shard(shard, run_cmd->count("--shard") > 0, o, a.shard_source); !bad.empty()) {
    std::fprintf(stderr, "coact-profile run: %s\n", bad.c_str());
    return 2;
  }
  if (o.shards != 0 && run_cmd->count("--output") == 0) {
    o.output = fmt::format("profile-shard-{}-of-{}.coz", o.shard, o.shards);
  }
  a.json_given = run_cmd->count("--json-output") > 0;
  return run(a);
}
