// dedup/writer.cpp: the Writer actor: retires chunks in seq order (a map,
// or fast_writer's seq window) into OUT.tmp and the file table, returns the
// Reader's credit in batches, and at the end of a pass writes metadata,
// footer and checksum and hands the pass's stats to the driver. Its handlers
// run on the Runtime's workers, one at a time (pipeline.hpp has the stage
// diagram, the credit argument and the end-of-pass steps).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <utility>

#include <coact/causal/progress.hpp>

#include "dedup/pass_context.hpp"
#include "dedup/pipeline.hpp"

// Throughput progress point "chunks": one visit per chunk the Writer retires
// (writes or records as a reference), in seq order. One relaxed increment
// when no sweep runs (coact/causal/progress.hpp).
#define DEDUP_PROGRESS_CHUNK() COACT_PROGRESS("chunks")

namespace coact::dedup {

namespace {
constexpr uint64_t kCreditBatchBytes = 256 * 1024;  // Writer returns credit in batches this big
}  // namespace

// ---- Writer -----------------------------------------------------------------

Writer::Writer(std::shared_ptr<PassContext> ctx, ActorRef<Reader> reader, std::FILE* out, uint32_t compressors)
    : ctx_(std::move(ctx)), reader_(std::move(reader)), out_(out), ends_needed_(compressors + 1) {
  const auto hdr =
      encode_header(ctx_->opt.fingerprint == ArchiveOptions::FingerprintAlgo::sha1 ? kFlagSha1Fingerprints : 0);
  put(hdr.data(), hdr.size());
}

Writer::~Writer() {
  if (out_) std::fclose(out_);
}

void Writer::put(const void* p, size_t n) {
  if (!out_ || ctx_->is_aborted()) return;
  if (std::fwrite(p, 1, n, out_) != n) {
    ctx_->fail(runtime(), "write error on '" + ctx_->tmp_path + "': " + errno_text(errno));
    return;
  }
  sum_.update(p, n);
  pos_ += n;
}

void Writer::on(FileEntry& e) {
  if (meta_.files.size() <= e.file) {
    meta_.files.resize(e.file + 1);
    meta_.chunk_lists.resize(e.file + 1);
  }
  // Chunks of this file may have been retired already (they travel another
  // path): keep what they accumulated in size/chunk_count.
  FileRecord& r = meta_.files[e.file];
  const uint64_t size = r.size;
  e.record.size = e.record.type == EntryType::symlink ? e.record.link_target.size() : size;
  r = std::move(e.record);
}

void Writer::on(const FilesDone& d) {
  files_done_ = true;
  entries_expected_ = d.entries;
  skipped_ = d.skipped;
  maybe_finish();
}

void Writer::on(PackedChunk& c) {
  if (ctx_->is_aborted()) return;
  if (ctx_->opt.fast_writer)
    accept_fast(c.seq, Pending{false, c.file, c.id, c.raw_size, c.method, c.fp, std::move(c.stored)});
  else
    accept(c.seq, Pending{false, c.file, c.id, c.raw_size, c.method, c.fp, std::move(c.stored)});
}

void Writer::on(const DupChunk& d) {
  if (ctx_->is_aborted()) return;
  if (ctx_->opt.fast_writer)
    accept_fast(d.seq, Pending{true, d.file, d.id, d.raw_size, ChunkMethod::raw, {}, {}});
  else
    accept(d.seq, Pending{true, d.file, d.id, d.raw_size, ChunkMethod::raw, {}, {}});
}

// Retires chunks in seq order: a new chunk's bytes go to the data section
// (ids arrive in increasing order because the Index assigns them in seq
// order); both kinds extend their file's chunk list and return credit.
void Writer::accept(uint64_t seq, Pending p) {
  if (seq != next_seq_) {
    reorder_.emplace(seq, std::move(p));
    return;
  }
  Pending held;
  Pending* cur = &p;
  for (;;) {
    if (!cur->dup) {
      if (cur->id != meta_.chunks.size()) {
        ctx_->fail(runtime(), "internal error: chunk id " + std::to_string(cur->id) + " arrived, expected " +
                                  std::to_string(meta_.chunks.size()));
        return;
      }
      meta_.chunks.push_back(ChunkRecord{pos_, static_cast<uint32_t>(cur->stored.size()), cur->raw_size, cur->method,
                                         cur->fp});
      put(cur->stored.data(), cur->stored.size());
      stats_.unique_bytes += cur->raw_size;
      stats_.stored_bytes += cur->stored.size();
    }
    if (meta_.files.size() <= cur->file) {
      meta_.files.resize(cur->file + 1);
      meta_.chunk_lists.resize(cur->file + 1);
    }
    meta_.files[cur->file].size += cur->raw_size;
    meta_.chunk_lists[cur->file].push_back(cur->id);
    stats_.bytes_in += cur->raw_size;
    ++stats_.chunks;
    credit_ += cur->raw_size;
    DEDUP_PROGRESS_CHUNK();
    ++next_seq_;
    auto next = reorder_.find(next_seq_);
    if (next == reorder_.end()) break;
    held = std::move(next->second);
    reorder_.erase(next);
    cur = &held;
  }
  if (credit_ >= kCreditBatchBytes) {
    reader_.send(Credit{credit_});
    credit_ = 0;
  }
}

// accept() for fast_writer: the same chunks retired in the same order;
// out-of-order ones wait in a window indexed by seq - next_seq_ instead of a
// node-based map.
void Writer::accept_fast(uint64_t seq, Pending p) {
  const uint64_t k = seq - next_seq_;
  if (k != 0) {
    if (k >= window_.size()) window_.resize(k + 1);
    window_[k] = std::move(p);
    return;
  }
  retire(p);
  if (!window_.empty()) window_.pop_front();  // slot 0 was p's (empty)
  while (!ctx_->is_aborted() && !window_.empty() && window_.front()) {
    Pending next = std::move(*window_.front());
    window_.pop_front();
    retire(next);
  }
  if (credit_ >= kCreditBatchBytes) {
    reader_.send(Credit{credit_});
    credit_ = 0;
  }
}

// fast_writer: retires the chunk with seq next_seq_ (what accept's loop body does).
void Writer::retire(Pending& p) {
  if (!p.dup) {
    if (p.id != meta_.chunks.size()) {
      ctx_->fail(runtime(), "internal error: chunk id " + std::to_string(p.id) + " arrived, expected " +
                                std::to_string(meta_.chunks.size()));
      return;
    }
    meta_.chunks.push_back(ChunkRecord{pos_, static_cast<uint32_t>(p.stored.size()), p.raw_size, p.method, p.fp});
    put(p.stored.data(), p.stored.size());
    stats_.unique_bytes += p.raw_size;
    stats_.stored_bytes += p.stored.size();
  }
  if (meta_.files.size() <= p.file) {
    meta_.files.resize(p.file + 1);
    meta_.chunk_lists.resize(p.file + 1);
  }
  meta_.files[p.file].size += p.raw_size;
  meta_.chunk_lists[p.file].push_back(p.id);
  stats_.bytes_in += p.raw_size;
  ++stats_.chunks;
  credit_ += p.raw_size;
  DEDUP_PROGRESS_CHUNK();
  ++next_seq_;
}

void Writer::on(EndOfStream) {
  ++ends_;
  maybe_finish();
}

void Writer::maybe_finish() {
  if (ends_ < ends_needed_ || !files_done_) return;
  if (!ctx_->is_aborted()) {
    const size_t waiting = reorder_.size() + static_cast<size_t>(std::count_if(
                                                 window_.begin(), window_.end(), [](const auto& w) { return w.has_value(); }));
    if (waiting != 0)
      ctx_->fail(runtime(), "internal error: writer ended with " + std::to_string(waiting) + " chunks out of order");
    else if (meta_.files.size() != entries_expected_)
      ctx_->fail(runtime(), "internal error: writer has " + std::to_string(meta_.files.size()) + " entries, reader sent " +
                                std::to_string(entries_expected_));
    else
      finalize();
  }
  if (credit_ > 0) reader_.send(Credit{credit_});
  credit_ = 0;
  stop();
}

void Writer::finalize() {
  meta_.chunk_min = ctx_->opt.chunking.min_bytes;
  meta_.chunk_avg = ctx_->opt.chunking.avg_bytes;
  meta_.chunk_max = ctx_->opt.chunking.max_bytes;
  for (size_t i = 0; i < meta_.files.size(); ++i) {
    FileRecord& f = meta_.files[i];
    f.chunk_count = meta_.chunk_lists[i].size();
    switch (f.type) {
      case EntryType::regular: ++stats_.files; break;
      case EntryType::directory: ++stats_.directories; break;
      case EntryType::symlink: ++stats_.symlinks; break;
    }
  }
  const uint64_t meta_offset = pos_;
  const auto meta = encode_metadata(meta_);
  put(meta.data(), meta.size());
  const auto foot = encode_footer(Footer{meta_offset, meta.size()});
  put(foot.data(), foot.size());
  const Fingerprint sum = sum_.finish();
  put(sum.data(), sum.size());
  if (ctx_->is_aborted()) return;
  const bool flush_failed = std::fflush(out_) != 0 || std::ferror(out_);
  const int err = errno;
  const bool close_failed = std::fclose(out_) != 0;
  out_ = nullptr;
  if (flush_failed || close_failed) {
    ctx_->fail(runtime(), "write error on '" + ctx_->tmp_path + "': " + errno_text(flush_failed ? err : errno));
    return;
  }
  stats_.unique_chunks = meta_.chunks.size();
  stats_.archive_bytes = pos_;
  stats_.skipped = skipped_;
  std::lock_guard lk(ctx_->mu);
  ctx_->stats = stats_;
  ctx_->done = true;
}

}  // namespace coact::dedup
