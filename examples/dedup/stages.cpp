// dedup/stages.cpp: the Chunker, Fingerprinter and Compressor actors, the
// stages that turn each message into the next stage's: FastCDC cuts
// (chunker.hpp) numbered in stream order, the fingerprint of a chunk
// (fingerprint.hpp), zstd compression of a new chunk. Their handlers run on
// the Runtime's workers, one at a time per actor (pipeline.hpp has the stage
// diagram and the end-of-pass steps).
#include <zstd.h>

#include <utility>

#include "dedup/pass_context.hpp"
#include "dedup/pipeline.hpp"

namespace coact::dedup {

// ---- Chunker ----------------------------------------------------------------

Chunker::Chunker(std::shared_ptr<PassContext> ctx, std::vector<ActorRef<Fingerprinter>> fps)
    : ctx_(std::move(ctx)), fps_(std::move(fps)) {}

void Chunker::on(Block& b) {
  if (ctx_->is_aborted()) return;
  if (ctx_->opt.fast_chunker) {
    on_block_fast(b);
    return;
  }
  if (!pending_.empty() && b.file != file_) {
    ctx_->fail(runtime(), "internal error: chunker got file " + std::to_string(b.file) + " before the end of file " +
                              std::to_string(file_));
    return;
  }
  file_ = b.file;
  if (pending_.empty())
    pending_ = std::move(b.data);
  else
    pending_.insert(pending_.end(), b.data.begin(), b.data.end());
  const std::span<const uint8_t> all(pending_);
  size_t pos = 0;
  while (pos < all.size()) {
    const std::span<const uint8_t> rest = all.subspan(pos);
    const CutResult r = fastcdc_cut(rest, ctx_->opt.chunking);
    if (!r.hash_cut && !b.last) break;  // the cut may lie in bytes not read yet
    const uint64_t seq = seq_++;
    fps_[seq % fps_.size()].send(
        RawChunk{seq, file_, std::vector<uint8_t>(rest.begin(), rest.begin() + static_cast<ptrdiff_t>(r.length))});
    pos += r.length;
  }
  if (pos == pending_.size())
    pending_.clear();
  else if (pos > 0)
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(pos));
}

// on(Block) for fast_chunker: the same chunks in the same order, cut by
// fastcdc_cut_unrolled; the bytes already cut are skipped by offset
// (pending_pos_) and dropped only when the next block arrives, instead of a
// front erase after every block.
void Chunker::on_block_fast(Block& b) {
  if (pending_pos_ < pending_.size() && b.file != file_) {
    ctx_->fail(runtime(), "internal error: chunker got file " + std::to_string(b.file) + " before the end of file " +
                              std::to_string(file_));
    return;
  }
  file_ = b.file;
  if (pending_pos_ == pending_.size()) {
    pending_ = std::move(b.data);
  } else {
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(pending_pos_));
    pending_.insert(pending_.end(), b.data.begin(), b.data.end());
  }
  pending_pos_ = 0;
  const std::span<const uint8_t> all(pending_);
  size_t pos = 0;
  while (pos < all.size()) {
    const std::span<const uint8_t> rest = all.subspan(pos);
    const CutResult r = fastcdc_cut_unrolled(rest, ctx_->opt.chunking);
    if (!r.hash_cut && !b.last) break;
    const uint64_t seq = seq_++;
    fps_[seq % fps_.size()].send(
        RawChunk{seq, file_, std::vector<uint8_t>(rest.begin(), rest.begin() + static_cast<ptrdiff_t>(r.length))});
    pos += r.length;
  }
  pending_pos_ = pos;
}

void Chunker::on(EndOfStream) {
  for (auto& f : fps_) f.send(EndOfStream{});
  stop();
}

// ---- Fingerprinter ----------------------------------------------------------

Fingerprinter::Fingerprinter(std::shared_ptr<PassContext> ctx, ActorRef<Index> index)
    : ctx_(std::move(ctx)), index_(std::move(index)) {
  if (ctx_->opt.fingerprint == ArchiveOptions::FingerprintAlgo::sha1) sha1_ = std::make_unique<Sha1Fingerprinter>();
}

void Fingerprinter::on(RawChunk& c) {
  if (ctx_->is_aborted()) return;
  const Fingerprint fp = sha1_ ? (*sha1_)(c.data) : sha256(c.data);
  index_.send(HashedChunk{c.seq, c.file, fp, std::move(c.data)});
}

void Fingerprinter::on(EndOfStream) {
  index_.send(EndOfStream{});
  stop();
}

// ---- Compressor -------------------------------------------------------------

Compressor::Compressor(std::shared_ptr<PassContext> ctx, ActorRef<Writer> writer)
    : ctx_(std::move(ctx)), writer_(std::move(writer)), cctx_(ZSTD_createCCtx()) {
  if (!cctx_) throw dedup_error("zstd: cannot create a compression context");
}

Compressor::~Compressor() { ZSTD_freeCCtx(cctx_); }

void Compressor::on(NewChunk& c) {
  if (ctx_->is_aborted()) return;
  const uint32_t raw = static_cast<uint32_t>(c.data.size());
  std::vector<uint8_t> out(ZSTD_compressBound(c.data.size()));
  const size_t n = ZSTD_compressCCtx(cctx_, out.data(), out.size(), c.data.data(), c.data.size(), ctx_->opt.level);
  if (ZSTD_isError(n)) {
    ctx_->fail(runtime(), std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
    return;
  }
  PackedChunk p{c.seq, c.file, c.id, raw, ChunkMethod::zstd, c.fp, {}};
  if (n >= raw) {
    p.method = ChunkMethod::raw;  // incompressible: store as is
    p.stored = std::move(c.data);
  } else {
    out.resize(n);
    out.shrink_to_fit();
    p.stored = std::move(out);
  }
  writer_.send(std::move(p));
}

void Compressor::on(EndOfStream) {
  writer_.send(EndOfStream{});
  stop();
}

}  // namespace coact::dedup
