// dedup/index.cpp: the Index actor: restores the Fingerprinters' chunks to
// seq order and maps each fingerprint to a chunk id (a node-based map, or
// fast_index's open-addressing table and seq window), sending a new chunk to
// its Compressor and a repeat to the Writer as a reference. Its handlers run
// on the Runtime's workers, one at a time (pipeline.hpp has the stage diagram
// and the end-of-pass steps).
#include <algorithm>
#include <utility>

#include "dedup/pass_context.hpp"
#include "dedup/pipeline.hpp"

namespace coact::dedup {

// ---- Index ------------------------------------------------------------------

Index::Index(std::shared_ptr<PassContext> ctx, std::vector<ActorRef<Compressor>> compressors, ActorRef<Writer> writer,
             uint32_t fingerprinters)
    : ctx_(std::move(ctx)), compressors_(std::move(compressors)), writer_(std::move(writer)),
      ends_needed_(fingerprinters) {}

void Index::on(HashedChunk& c) {
  if (ctx_->is_aborted()) return;
  if (ctx_->opt.fast_index) {
    on_fast(c);
    return;
  }
  const uint64_t seq = c.seq;
  if (seq != next_seq_) {
    reorder_.emplace(seq, std::move(c));
    return;
  }
  HashedChunk* cur = &c;
  HashedChunk held;
  for (;;) {
    auto [it, fresh] = ids_.try_emplace(cur->fp, static_cast<uint32_t>(ids_.size()));
    const uint32_t id = it->second;
    if (fresh) {
      compressors_[id % compressors_.size()].send(NewChunk{cur->seq, cur->file, id, cur->fp, std::move(cur->data)});
    } else {
      writer_.send(DupChunk{cur->seq, cur->file, id, static_cast<uint32_t>(cur->data.size())});
    }
    ++next_seq_;
    auto next = reorder_.find(next_seq_);
    if (next == reorder_.end()) break;
    held = std::move(next->second);
    reorder_.erase(next);
    cur = &held;
  }
}

// fast_index: the chunk with seq next_seq_, given its id (fresh: first seen).
void Index::assign(HashedChunk& c) {
  bool fresh = false;
  const uint32_t id = find_or_add_fast(c.fp, fresh);
  if (fresh) {
    compressors_[id % compressors_.size()].send(NewChunk{c.seq, c.file, id, c.fp, std::move(c.data)});
  } else {
    writer_.send(DupChunk{c.seq, c.file, id, static_cast<uint32_t>(c.data.size())});
  }
  ++next_seq_;
}

// The id of `fp` in the open-addressing table, adding the next id if it is
// new (fresh = true); ids follow first occurrence, as in on(HashedChunk).
uint32_t Index::find_or_add_fast(const Fingerprint& fp, bool& fresh) {
  constexpr uint32_t kNoId = UINT32_MAX;
  if (slots_.empty() || 2 * (static_cast<size_t>(unique_) + 1) > slots_.size()) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? size_t{1} << 16 : old.size() * 2, Slot{{}, kNoId});
    const size_t m = slots_.size() - 1;
    for (const Slot& o : old) {
      if (o.id == kNoId) continue;
      size_t i = FingerprintHash{}(o.fp) & m;
      while (slots_[i].id != kNoId) i = (i + 1) & m;
      slots_[i] = o;
    }
  }
  const size_t m = slots_.size() - 1;
  for (size_t i = FingerprintHash{}(fp) & m;; i = (i + 1) & m) {
    Slot& sl = slots_[i];
    if (sl.id == kNoId) {
      sl = Slot{fp, unique_};
      fresh = true;
      return unique_++;
    }
    if (sl.fp == fp) {
      fresh = false;
      return sl.id;
    }
  }
}

// on(HashedChunk) for fast_index: the same ids and messages in the same
// order; out-of-order chunks wait in a window indexed by seq - next_seq_
// instead of a node-based map.
void Index::on_fast(HashedChunk& c) {
  const uint64_t k = c.seq - next_seq_;
  if (k != 0) {
    if (k >= window_.size()) window_.resize(k + 1);
    window_[k] = std::move(c);
    return;
  }
  assign(c);
  if (!window_.empty()) window_.pop_front();  // slot 0 was c's (empty)
  while (!window_.empty() && window_.front()) {
    HashedChunk next = std::move(*window_.front());
    window_.pop_front();
    assign(next);
  }
}

void Index::on(EndOfStream) {
  if (--ends_needed_ > 0) return;
  const size_t waiting =
      reorder_.size() + static_cast<size_t>(std::count_if(window_.begin(), window_.end(), [](const auto& w) { return w.has_value(); }));
  if (waiting != 0 && !ctx_->is_aborted())
    ctx_->fail(runtime(), "internal error: index ended with " + std::to_string(waiting) + " chunks out of order");
  for (auto& c : compressors_) c.send(EndOfStream{});
  writer_.send(EndOfStream{});
  stop();
}

}  // namespace coact::dedup
