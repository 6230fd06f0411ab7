// coact-dedup: a content-defined dedup archiver on the coact actor runtime.
//
//   coact-dedup archive [DIR] [-o OUT.cdar] [--level N] [--compressors N]
//                       [--fingerprinters N] [--workers N] [--passes N]
//                       [--seconds S] [--inflight-mb N] [--fingerprint sha1]
//                       [--fast-chunker] [--fast-index] [--fast-reader]
//                       [--fast-writer] [--alternate] [--summary-json FILE]
//   coact-dedup extract OUT.cdar [-C DESTDIR]
//   coact-dedup verify OUT.cdar
//
// DIR defaults to /usr/share/doc (on every Debian machine). Repeated passes
// (--passes, --seconds) re-archive the same input into the same output, for
// causal-profiling sweeps; SIGINT/SIGTERM end the run after the current pass
// (a second signal kills). Runtime knobs come from --coact-* arguments,
// COACT_* / COACT_CONFIG as for every coact program (coact::options::init
// takes the --coact-* arguments out of argv before CLI11 parses the rest);
// --workers overrides COACT_WORKERS. --fingerprint sha1 and --fast-* are
// really-faster variants of one stage each (pipeline.hpp, ArchiveOptions),
// what `coact-profile validate` compares the profiler's predictions with.
// --alternate runs them against the baseline in one process: the passes
// after the first alternate A B B A A B B A ... (A: the baseline code, B: the
// variants given), and --summary-json reports each arm's passes and, under
// a causal sweep, each handler's visits and time in each arm
// (examples/common/alternation.hpp).
// Exit status: 0 success, 1 error (message on stderr naming the input),
// 2 for a bad COACT_* option, CLI11's codes for other usage errors.
#include <zstd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <coact/runtime/runtime.hpp>

#include "common/alternation.hpp"

#include "dedup/extract.hpp"
#include "dedup/pipeline.hpp"

namespace {

std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_signal(int) { g_interrupted.store(true, std::memory_order_relaxed); }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESETHAND;  // a second signal takes the default action
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

namespace dd = coact::dedup;

// Copies the stage options a variant changes (the zstd level and the
// really-faster variants) from `from` into `o`.
void set_stages(dd::ArchiveOptions& o, const dd::ArchiveOptions& from) {
  o.level = from.level;
  o.fingerprint = from.fingerprint;
  o.fast_chunker = from.fast_chunker;
  o.fast_index = from.fast_index;
  o.fast_reader = from.fast_reader;
  o.fast_writer = from.fast_writer;
}

// Whether `o`'s stage options differ from the baseline code's.
bool has_variant(const dd::ArchiveOptions& o) {
  const dd::ArchiveOptions b;
  return b.level != o.level || b.fingerprint != o.fingerprint || b.fast_chunker != o.fast_chunker ||
         b.fast_index != o.fast_index || b.fast_reader != o.fast_reader || b.fast_writer != o.fast_writer;
}

// --summary-json: the run's figures as one JSON object in `path` (replaced),
// with --alternate's arms under "alternate". Throws std::runtime_error
// naming the path if it cannot be written.
void write_summary_json(const std::string& path, const dd::ArchiveStats& s, unsigned workers,
                        const coact::examples::Alternation* alternation) {
  nlohmann::json j = {{"passes", s.passes},
                            {"total_seconds", s.total_seconds},
                            {"later_pass_seconds", s.later_pass_seconds()},
                            {"last_pass_seconds", s.last.seconds},
                            {"chunks_per_pass", s.last.chunks},
                            {"bytes_per_pass", s.last.bytes_in},
                            {"unique_chunks", s.last.unique_chunks},
                            {"archive_bytes", s.last.archive_bytes},
                            {"workers", workers}};
  if (alternation) j["alternate"] = alternation->to_json("pass", s.last.chunks);
  std::ofstream out(path, std::ios::trunc);
  out << j.dump() << "\n";
  out.flush();
  if (!out) throw std::runtime_error("cannot write --summary-json '" + path + "'");
}

}  // namespace

int main(int argc, char** argv) {
  coact::options::init(argc, argv);  // --coact-* out of argv; a bad option: one line, exit 2
  CLI::App app{"coact-dedup: content-defined dedup archiver (FastCDC + SHA-256 + zstd) on coact actors"};
  app.require_subcommand(1);

  dd::ArchiveOptions opt;
  std::string input = opt.input.string(), output = opt.output.string();
  std::optional<uint32_t> workers;
  double seconds = 0;
  uint64_t inflight_mb = opt.inflight_bytes >> 20;
  bool quiet = false;
  auto* ar = app.add_subcommand("archive", "archive a directory tree into one .cdar file");
  ar->add_option("dir", input, "directory to archive")->capture_default_str();
  ar->add_option("-o,--output", output, "archive to write (via OUT.tmp, renamed at the end)")->capture_default_str();
  ar->add_option("-l,--level", opt.level, "zstd level")
      ->capture_default_str()
      ->check(CLI::Range(ZSTD_minCLevel(), ZSTD_maxCLevel()));
  ar->add_option("--compressors", opt.compressors, "Compressor actors")->capture_default_str()->check(CLI::Range(1, 256));
  ar->add_option("--fingerprinters", opt.fingerprinters, "Fingerprinter actors")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  ar->add_option("--workers", workers, "runtime worker threads (0 = CPUs; default COACT_WORKERS, else 0)")
      ->check(CLI::Range(0, 1024));
  auto* passes_opt = ar->add_option("--passes", opt.passes, "passes over DIR (0 = until --seconds or a signal)")
                         ->capture_default_str();
  ar->add_option("--seconds", seconds, "repeat passes until this many seconds passed (at least one pass)")
      ->check(CLI::NonNegativeNumber);
  ar->add_option("--inflight-mb", inflight_mb, "backpressure: file data in flight, MiB")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  ar->add_flag("-q,--quiet", quiet, "no summary");
  std::string summary_json;
  ar->add_option("--summary-json", summary_json,
                 "also write the summary as one JSON object to this file (passes, seconds per pass after the first, "
                 "chunks per pass, ...): what benchmarks and `coact-profile validate` read");
  std::string fingerprint = "sha256";
  ar->add_option("--fingerprint", fingerprint,
                 "chunk fingerprint: sha256, or sha1 (cheaper per chunk: a really-faster Fingerprinter; the archive's "
                 "fingerprints and header flag differ, the chunks, deduplication and stored data are the same; SHA-1 is "
                 "not collision resistant against crafted input)")
      ->capture_default_str()
      ->check(CLI::IsMember({"sha256", "sha1"}));
  ar->add_flag("--fast-chunker", opt.fast_chunker,
               "really-faster Chunker: unrolled FastCDC loop, no per-block erase (same chunks, same archive)");
  ar->add_flag("--fast-index", opt.fast_index,
               "really-faster Index: open-addressing fingerprint table, ring reorder window (same archive)");
  ar->add_flag("--fast-reader", opt.fast_reader,
               "really-faster Reader: lookups relative to open directories, no fstat after open, no fadvise for "
               "one-block files (same archive)");
  ar->add_flag("--fast-writer", opt.fast_writer,
               "really-faster Writer: ring reorder window, 8 MiB output buffer (same archive)");
  bool alternate = false;
  ar->add_flag("--alternate", alternate,
               "A/B in one run: the passes after the first alternate A B B A ... between the baseline code (A) and "
               "the stage variants given (B: --level, --fingerprint, --fast-*); --summary-json reports each arm");

  std::string archive_path, dest = ".";
  auto* ex = app.add_subcommand("extract", "restore a .cdar archive into a directory");
  ex->add_option("archive", archive_path, "archive to read")->required();
  ex->add_option("-C,--directory", dest, "destination directory (created if missing)")->capture_default_str();

  std::string verify_path;
  auto* ve = app.add_subcommand("verify", "check a .cdar archive: checksum, metadata, every chunk's fingerprint");
  ve->add_option("archive", verify_path, "archive to check")->required();

  CLI11_PARSE(app, argc, argv);

  try {
    if (*ar) {
      opt.input = input;
      opt.output = output;
      opt.inflight_bytes = inflight_mb << 20;
      opt.fingerprint = fingerprint == "sha1" ? dd::ArchiveOptions::FingerprintAlgo::sha1
                                              : dd::ArchiveOptions::FingerprintAlgo::sha256;
      opt.min_duration = std::chrono::duration<double>(seconds);
      if (seconds > 0 && passes_opt->count() == 0) opt.passes = 0;  // --seconds alone: time decides
      std::optional<coact::examples::Alternation> alternation;
      if (alternate) {
        if (!has_variant(opt)) {
          std::fprintf(stderr,
                       "coact-dedup: --alternate: expected a stage variant to alternate with the baseline (--level N "
                       "other than %d, --fingerprint sha1, --fast-chunker, --fast-index, --fast-reader or "
                       "--fast-writer)\n",
                       dd::ArchiveOptions{}.level);
          return 2;
        }
        alternation.emplace();
        // The passes after the first alternate A B B A ... (Alternation::arm_of).
        opt.configure_pass = [&, variant = opt](uint32_t pass, dd::ArchiveOptions& o) {
          set_stages(o, coact::examples::Alternation::arm_of(pass) == 1 ? variant : dd::ArchiveOptions{});
          alternation->begin(pass);
        };
        opt.pass_done = [&](uint32_t, const dd::PassStats& s) { alternation->end(s.seconds); };
      }
      install_signal_handlers();
      opt.keep_going = [] { return !g_interrupted.load(std::memory_order_relaxed); };
      coact::SchedulerTuning tuning = coact::resolve_tuning();
      if (workers) tuning.workers = *workers;
      coact::Runtime rt(tuning);
      const dd::ArchiveStats s = dd::archive(rt, opt);
      if (!quiet) {
        // Alternating, `opt` holds the variant's level; the baseline's passes ran the default.
        const int base_level = dd::ArchiveOptions{}.level;
        std::string level = std::to_string(opt.level);
        if (alternation && opt.level != base_level)
          level = std::to_string(base_level) + " and " + level + ", alternating";
        std::fprintf(stderr, "%s\n  runtime      %u workers, %u fingerprinters, %u compressors, zstd level %s\n",
                     dd::format_summary(opt, s).c_str(), rt.workers(), opt.fingerprinters, opt.compressors,
                     level.c_str());
      }
      if (!summary_json.empty())
        write_summary_json(summary_json, s, rt.workers(), alternation ? &*alternation : nullptr);
    } else if (*ex) {
      const dd::ExtractStats s = dd::extract(archive_path, dest);
      std::fprintf(stderr,
                   "coact-dedup: extracted '%s' -> '%s': %llu files, %llu directories, %llu symlinks, %.1f MB in %.2f s\n",
                   archive_path.c_str(), dest.c_str(), static_cast<unsigned long long>(s.files),
                   static_cast<unsigned long long>(s.directories), static_cast<unsigned long long>(s.symlinks),
                   double(s.bytes) / 1e6, s.seconds);
    } else if (*ve) {
      const dd::VerifyStats s = dd::verify(verify_path);
      std::fprintf(stderr,
                   "coact-dedup: '%s' OK: %llu entries, %llu unique chunks, %.1f MB of files, %.1f MB unique, "
                   "archive %.1f MB, checked in %.2f s\n",
                   verify_path.c_str(), static_cast<unsigned long long>(s.entries),
                   static_cast<unsigned long long>(s.chunks), double(s.raw_bytes) / 1e6, double(s.unique_bytes) / 1e6,
                   double(s.archive_bytes) / 1e6, s.seconds);
    }
  } catch (const dd::dedup_error& e) {
    std::fprintf(stderr, "coact-dedup: error: %s\n", e.what());
    return 1;
  } catch (const coact::options::option_error& e) {  // a bad COACT_CAUSAL_* combination at boot
    coact::options::exit_with(argv[0], e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coact-dedup: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
