// coact-analytics: a fan-out/fan-in log analytics job on coact actors
// (analytics.hpp): a Coordinator fans each job's batches of access-log lines
// out to Worker actors, which parse and aggregate them; it joins their
// partial aggregates and starts the next job, until --seconds have passed.
//
//   coact-analytics [--seconds S] [--lines N] [--batches N] [--actors N]
//                   [--workers N] [--fast-parse] [--alternate]
//                   [--summary-json FILE] [-q]
//
// Progress point "jobs" (one per joined job). Runtime knobs come from
// --coact-* arguments, COACT_* / COACT_CONFIG as for every coact program;
// --workers overrides COACT_WORKERS. --fast-parse is the really-faster
// Worker that `coact-profile validate` compares the profiler with;
// --alternate runs it against the baseline in one run (blocks of jobs,
// A B B A ...), and --summary-json reports each arm.
// Exit status: 0 success (a summary on stderr unless -q), 1 error, 2 for a
// bad COACT_* option, CLI11's codes for other usage errors.
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <coact/runtime/runtime.hpp>

#include "analytics/analytics.hpp"

int main(int argc, char** argv) {
  namespace an = coact::analytics;
  coact::options::init(argc, argv);  // --coact-* out of argv; a bad option: one line, exit 2
  CLI::App app{"coact-analytics: fan-out/fan-in access-log analytics on coact actors"};
  an::RunOptions opt;
  std::optional<uint32_t> workers;
  bool quiet = false;
  app.add_option("--seconds", opt.seconds, "run jobs until this many seconds passed (at least one job)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lines", opt.lines, "access-log lines per job")->capture_default_str()->check(CLI::Range(1, 1 << 24));
  app.add_option("--batches", opt.batches, "batches per job (fan-out width)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--actors", opt.workers, "Worker actors")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--workers", workers, "runtime worker threads (0 = CPUs; default COACT_WORKERS, else 0)")
      ->check(CLI::Range(0, 1024));
  app.add_flag("--fast-parse", opt.fast_parse,
               "really-faster Worker: string_view fields and std::from_chars instead of std::istringstream and "
               "std::stoull (the same aggregates)");
  app.add_flag("--alternate", opt.alternate,
               "A/B in one run: the jobs after the first block of " + std::to_string(an::kAlternateBlock) +
                   " alternate by blocks, A B B A ..., between the simple parser (A) and --fast-parse (B); needs "
                   "--fast-parse; --summary-json reports each arm");
  std::string summary_json;
  app.add_option("--summary-json", summary_json,
                 "also write the summary as one JSON object to this file (jobs, seconds, and --alternate's arms)");
  app.add_flag("-q,--quiet", quiet, "no summary");
  CLI11_PARSE(app, argc, argv);
  if (opt.alternate && !opt.fast_parse) {
    std::fprintf(stderr, "coact-analytics: --alternate: expected --fast-parse (the variant to alternate with)\n");
    return 2;
  }
  try {
    coact::SchedulerTuning tuning = coact::resolve_tuning();
    if (workers) tuning.workers = *workers;
    coact::Runtime rt(tuning);
    const an::RunStats s = an::run(rt, opt);
    if (!summary_json.empty()) {
      nlohmann::json j = {{"jobs", s.jobs}, {"seconds", s.seconds}, {"workers", rt.workers()}};
      if (opt.alternate) j["alternate"] = s.alternation.to_json("block of jobs", an::kAlternateBlock);
      std::ofstream out(summary_json, std::ios::trunc);
      out << j.dump() << "\n";
      out.flush();
      if (!out) {
        std::fprintf(stderr, "coact-analytics: error: cannot write --summary-json '%s'\n", summary_json.c_str());
        return 1;
      }
    }
    if (!quiet) {
      const an::Aggregate& a = s.last;
      std::fprintf(stderr,
                   "coact-analytics: %llu jobs in %.3f s (%.1f jobs/s), %llu lines per job (%llu malformed), "
                   "%zu endpoints, %.1f MB, 5xx %llu; %s parser, %u actors on %u workers\n",
                   static_cast<unsigned long long>(s.jobs), s.seconds, s.seconds > 0 ? double(s.jobs) / s.seconds : 0.0,
                   static_cast<unsigned long long>(a.lines), static_cast<unsigned long long>(a.malformed),
                   a.endpoints.size(), double(a.bytes) / 1e6, static_cast<unsigned long long>(a.status_class[5]),
                   opt.alternate ? "alternating" : opt.fast_parse ? "fast" : "simple", opt.workers, rt.workers());
    }
  } catch (const coact::options::option_error& e) {
    coact::options::exit_with(argv[0], e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coact-analytics: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
