// dedup/pipeline.cpp: the pass driver: archive() checks the options and
// the input, spawns and wires one pass's actors (reader.cpp, stages.cpp,
// index.cpp, writer.cpp), runs passes until a stop condition holds and
// renames each finished OUT.tmp to OUT; format_summary() (pipeline.hpp has
// the stage diagram, the credit argument and the end-of-pass steps).
#include "dedup/pipeline.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include <fmt/format.h>

#include "dedup/pass_context.hpp"

namespace coact::dedup {

// ---- driver -----------------------------------------------------------------

namespace {

constexpr uint64_t kMinInflight = 1 << 20;
constexpr size_t kOutBufferBytes = 1 << 20;
constexpr size_t kFastOutBufferBytes = 8 << 20;  // fast_writer: one write call per 8 MiB

void check_options(const ArchiveOptions& opt) {
  opt.chunking.validate();
  if (opt.level < ZSTD_minCLevel() || opt.level > ZSTD_maxCLevel())
    throw dedup_error(fmt::format("zstd level {} outside {}..{}", opt.level, ZSTD_minCLevel(), ZSTD_maxCLevel()));
  if (opt.compressors < 1 || opt.compressors > 256) throw dedup_error("compressors must be 1..256");
  if (opt.fingerprinters < 1 || opt.fingerprinters > 256) throw dedup_error("fingerprinters must be 1..256");
  if (opt.inflight_bytes < kMinInflight) throw dedup_error("in-flight budget must be at least 1 MiB");
}

void check_input(const std::filesystem::path& in) {
  struct stat st {};
  if (::stat(in.c_str(), &st) != 0)
    throw dedup_error("input directory '" + in.string() + "': " + errno_text(errno));
  if (!S_ISDIR(st.st_mode)) throw dedup_error("input '" + in.string() + "' is not a directory");
  DIR* d = ::opendir(in.c_str());
  if (!d) throw dedup_error("input directory '" + in.string() + "' cannot be listed: " + errno_text(errno));
  ::closedir(d);
}

void add_inode(std::vector<std::pair<dev_t, ino_t>>& v, const std::filesystem::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0) v.emplace_back(st.st_dev, st.st_ino);
}

}  // namespace

ArchiveStats archive(Runtime& rt, const ArchiveOptions& opt) {
  check_options(opt);
  check_input(opt.input);
  std::error_code dir_ec;
  if (std::filesystem::is_directory(opt.output, dir_ec))
    throw dedup_error("output '" + opt.output.string() + "' is a directory; name the archive file");
  const std::filesystem::path tmp = opt.output.string() + ".tmp";
  ArchiveStats total;
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    auto ctx = std::make_shared<PassContext>();
    ctx->opt = opt;
    if (opt.configure_pass) {
      opt.configure_pass(total.passes, ctx->opt);
      check_options(ctx->opt);
    }
    ctx->root = opt.input;
    ctx->tmp_path = tmp.string();
    std::FILE* out = std::fopen(tmp.c_str(), "wb");
    if (!out) throw dedup_error("cannot create '" + tmp.string() + "': " + errno_text(errno));
    std::setvbuf(out, nullptr, _IOFBF, ctx->opt.fast_writer ? kFastOutBufferBytes : kOutBufferBytes);
    add_inode(ctx->skip_inodes, tmp);
    add_inode(ctx->skip_inodes, opt.output);

    const auto p0 = std::chrono::steady_clock::now();
    // Spawn upstream-last so every actor is wired through its constructor;
    // the Reader, spawned first, learns its downstream in Start.
    auto reader = rt.spawn<Reader>(ctx);
    auto writer = rt.spawn<Writer>(ctx, reader, out, ctx->opt.compressors);
    std::vector<ActorRef<Compressor>> comps;
    for (uint32_t i = 0; i < ctx->opt.compressors; ++i) comps.push_back(rt.spawn<Compressor>(ctx, writer));
    auto index = rt.spawn<Index>(ctx, comps, writer, ctx->opt.fingerprinters);
    std::vector<ActorRef<Fingerprinter>> fps;
    for (uint32_t i = 0; i < ctx->opt.fingerprinters; ++i) fps.push_back(rt.spawn<Fingerprinter>(ctx, index));
    auto chunker = rt.spawn<Chunker>(ctx, fps);
    reader.send(Start{chunker, writer});
    rt.run();
    const auto p1 = std::chrono::steady_clock::now();

    std::string error;
    bool done;
    PassStats ps;
    {
      std::lock_guard lk(ctx->mu);
      error = ctx->error;
      done = ctx->done;
      ps = ctx->stats;
    }
    if (!error.empty() || !done) {
      ctx->aborted.store(true, std::memory_order_relaxed);  // remaining handlers drop their work
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      if (!error.empty()) throw dedup_error(error);
      if (total.passes == 0) throw dedup_error("stopped before the first pass over '" + opt.input.string() + "' completed");
      break;  // stop requested mid-pass: the previous pass's archive stands
    }
    std::error_code ec;
    std::filesystem::rename(tmp, opt.output, ec);
    if (ec) throw dedup_error("cannot rename '" + tmp.string() + "' to '" + opt.output.string() + "': " + ec.message());
    ps.seconds = std::chrono::duration<double>(p1 - p0).count();
    total.last = ps;
    if (total.passes > 0) total.later_seconds += ps.seconds;
    ++total.passes;
    total.total_seconds += ps.seconds;
    total.total_bytes_in += ps.bytes_in;
    if (opt.pass_done) opt.pass_done(total.passes - 1, ps);

    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Any condition that is set and met ends the run (see ArchiveOptions).
    if (opt.passes > 0 && total.passes >= opt.passes) break;
    if (opt.min_duration.count() > 0 && elapsed >= opt.min_duration.count()) break;
    if (opt.keep_going && !opt.keep_going()) break;
    if (rt.stop_requested()) break;
  }
  return total;
}

std::string format_summary(const ArchiveOptions& opt, const ArchiveStats& s) {
  const PassStats& p = s.last;
  const double mb = 1e6;
  std::string out = fmt::format("coact-dedup: archived '{}' -> '{}'\n", opt.input.string(), opt.output.string());
  out += fmt::format("  files        {} regular, {} directories, {} symlinks, {} skipped\n", p.files, p.directories,
                     p.symlinks, p.skipped);
  out += fmt::format("  bytes in     {:.1f} MB ({} bytes)\n", double(p.bytes_in) / mb, p.bytes_in);
  out += fmt::format("  chunks       {} cut, {} unique ({:.1f} MB unique)\n", p.chunks, p.unique_chunks,
                     double(p.unique_bytes) / mb);
  out += fmt::format("  dedup ratio  {:.2f}x\n", p.dedup_ratio());
  out += fmt::format("  compressed   {:.1f} MB chunk data, archive {:.1f} MB ({:.2f}x overall)\n",
                     double(p.stored_bytes) / mb, double(p.archive_bytes) / mb,
                     p.archive_bytes ? double(p.bytes_in) / double(p.archive_bytes) : 0.0);
  // The last pass and the mean of the passes after the first, to the
  // microsecond: benchmarks compare them at 1 % (0.3 s per pass here).
  out += fmt::format("  time         {} pass{}, {:.3f} s ({:.6f} s last pass", s.passes, s.passes == 1 ? "" : "es",
                     s.total_seconds, p.seconds);
  if (s.passes > 1) out += fmt::format("; {:.6f} s per pass after the first", s.later_pass_seconds());
  out += fmt::format("), {:.1f} MB/s", s.mb_per_s());
  return out;
}

}  // namespace coact::dedup
