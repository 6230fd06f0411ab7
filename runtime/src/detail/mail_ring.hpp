// runtime/src/detail/mail_ring.hpp: MailRing, the outbound byte ring that a
// handler's sends are written into in place (the burst lifecycle's steps 1
// and 7, burst.hpp).
//
// One producer, many consumers, no loss, reclaiming:
//  - The producer is the worker thread running handlers (the ring belongs to
//    the worker, and is the outbound ring of whichever actor runs on it; see
//    "Why per worker" below). It alone calls alloc / abandon / seal /
//    reclaim and owns the cursors and every free byte.
//  - A region is the envelopes one handler invocation wrote: a RingRegion
//    header (coact/runtime/detail/mailbox.hpp) followed by the envelopes,
//    contiguous, 16-byte aligned. The first send of an invocation opens a
//    region (reclaiming first); later sends append in place; the flush at the
//    handler boundary seals it: lock = number of mails, before any of them is
//    handed to a consumer (the hand-off itself - a burst group, an inbox -
//    orders that store before the consumer's release).
//  - Consumers (any worker, or the thread that drops mail) call
//    release_region once per mail (RAII: TypedEnvelope::finish destroys the
//    envelope in place, then releases; a burst drainer holds its releases of
//    one region back and gives them back together, mailbox.hpp
//    RegionReleaseBatch). They never touch the cursors.
//  - Reclaim (at the next open) advances `front_` past the oldest regions
//    whose lock it reads as 0 with acquire, in ring order; it stops at the
//    first live one. So no byte of a region is rewritten before every reader
//    released it: a payload a running (or suspended coroutine) handler
//    borrows is never overwritten.
//  - Wrap: a region never straddles the end. When the tail [write_, cap) is
//    too short, a skip filler (filler = 1, lock = 0) is laid over it and the
//    region starts at 0. A region that outgrows the free space mid-handler is
//    sealed early (its mails keep their region) and a new region opens.
//  - Full: alloc returns nullptr and the caller falls back to an owned heap
//    envelope (small_alloc): the producer never blocks and never waits for
//    readers. An envelope larger than the ring always falls back.
//
// Why per worker, not per actor. One 64 KiB ring per actor would not do: a
// spawn tree (skynet: 10^6 actors, each sending once) would then hold up to
// 64 GiB of rings, or allocate and free one per actor. A worker is also a
// single producer (one handler at a time), so the ring is per worker: memory
// is workers x ring size, and the bytes stay in the producing core's cache.
// The cost: a region held for long (a coroutine handler suspended on a ring
// envelope) stops reclamation of the regions behind it on that worker, whose
// later sends then take the heap fallback until it is released.
//
// Threads: producer methods on the owning worker only; release_region from
// any thread. Lifetime: the ring must outlive every region reference; the
// scheduler destroys workers (and rings) only after every actor stopped and
// its mail was dropped.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include <coact/runtime/detail/mailbox.hpp>

namespace coact::detail {

class MailRing {
 public:
  static constexpr size_t kAlign = 16;
  static constexpr size_t kHeader = sizeof(RingRegion);
  static_assert(kHeader % kAlign == 0);

  /// A ring of `bytes` (rounded up to kAlign); 0 = no ring (every alloc fails).
  explicit MailRing(size_t bytes) : cap_(round_up(bytes)) {
    if (cap_ != 0) {
      buf_ = static_cast<unsigned char*>(::operator new(cap_, std::align_val_t(kAlign)));
    }
  }
  MailRing(const MailRing&) = delete;
  MailRing& operator=(const MailRing&) = delete;
  ~MailRing() {
    if (buf_ == nullptr) return;
    cur_ = nullptr;
    reclaim();
    // A region still referenced (mail that raced an actor's stop and sits in
    // the inbox of a cell the user keeps alive past the runtime) must not be
    // freed under its reader: the buffer is then left allocated (a bounded,
    // rare leak, instead of a use after free).
    if (used_ == 0) ::operator delete(buf_, std::align_val_t(kAlign));
  }

  static constexpr size_t round_up(size_t n) noexcept { return (n + kAlign - 1) & ~(kAlign - 1); }

  /// Producer: `bytes` of kAlign-aligned memory in the open region (opening
  /// one if none is), *region = that region; nullptr if there is no room
  /// (the caller falls back to the heap). The mail counts toward the
  /// region's lock at seal unless abandon() is called for it.
  void* alloc(size_t bytes, RingRegion** region) noexcept {
    const size_t n = round_up(bytes);
    if (n == 0 || n + kHeader > cap_) return nullptr;
    if (cur_ != nullptr && !extends(n)) seal();  // sealed early; a new region follows
    if (cur_ == nullptr && !open(n)) return nullptr;
    void* p = buf_ + write_;
    advance(n);
    cur_->total += uint32_t(n);
    ++cur_->mails;
    *region = cur_;
    return p;
  }

  /// Producer: the last alloc'd envelope was never constructed; it does not
  /// count toward the region's lock (its bytes are reclaimed with the region).
  void abandon(RingRegion* r) noexcept { --r->mails; }

  /// Producer: true while a region is open (between the first alloc of a
  /// handler invocation and its seal).
  bool building() const noexcept { return cur_ != nullptr; }

  /// Producer: closes the open region: lock = its mail count. Must run
  /// before any of its mail is handed to another thread.
  void seal() noexcept {
    if (cur_ == nullptr) return;
    cur_->lock.store(cur_->mails, std::memory_order_release);
    cur_ = nullptr;
  }

  /// Producer: frees the oldest regions every reader released (in ring
  /// order, stopping at the first live one). Returns bytes freed.
  size_t reclaim() noexcept {
    size_t freed = 0;
    while (used_ > 0) {
      auto* h = header_at(front_);
      if (h == cur_) break;
      // acquire: pairs with every reader's release decrement.
      if (h->lock.load(std::memory_order_acquire) != 0) break;
      const size_t t = h->total;
      h->~RingRegion();
      front_ += t;
      if (front_ == cap_) front_ = 0;
      used_ -= t;
      freed += t;
    }
    if (used_ == 0 && cur_ == nullptr) front_ = write_ = 0;
    return freed;
  }

  // ---- diagnostics and tests (producer thread) ----
  size_t capacity() const noexcept { return cap_; }
  size_t used() const noexcept { return used_; }
  size_t front() const noexcept { return front_; }
  size_t write_offset() const noexcept { return write_; }
  uint64_t fillers() const noexcept { return fillers_; }
  const unsigned char* base() const noexcept { return buf_; }

 private:
  RingRegion* header_at(size_t off) noexcept { return std::launder(reinterpret_cast<RingRegion*>(buf_ + off)); }

  bool full() const noexcept { return used_ > 0 && write_ == front_; }

  // [write_, write_ + n) free and directly after the open region?
  bool extends(size_t n) const noexcept {
    if (reinterpret_cast<unsigned char*>(cur_) + cur_->total != buf_ + write_) return false;  // wrapped
    if (full()) return false;
    if (write_ >= front_) return write_ + n <= cap_;
    return write_ + n <= front_;
  }

  // Opens a region for a first mail of n bytes: reclaim, then place header +
  // mail contiguously at write_ or (laying a filler over the tail) at 0.
  bool open(size_t n) noexcept {
    // Releases this thread holds back (a drainer's batch: mailbox.hpp
    // RegionReleaseBatch) may be of this ring's regions: give them back first.
    if (RegionReleaseBatch* b = t_region_batch) b->flush();
    if (used_ != 0) reclaim();
    const size_t need = kHeader + n;
    if (used_ == 0) {  // empty (the common case of a chain): restart at 0, cache-hot
      front_ = write_ = 0;
      cur_ = ::new (buf_) RingRegion();
      cur_->total = uint32_t(kHeader);
      write_ = used_ = kHeader;
      return true;
    }
    if (full()) return false;
    if (write_ >= front_) {
      if (write_ + need > cap_) {
        // Wrap: the region must fit in [0, front_). used_ == 0 reset both to 0 above.
        if (need > front_) return false;
        auto* f = ::new (buf_ + write_) RingRegion();
        f->filler = 1;
        f->total = uint32_t(cap_ - write_);  // >= kHeader: offsets are kAlign multiples
        used_ += f->total;
        write_ = 0;
        ++fillers_;
      }
    } else if (write_ + need > front_) {
      return false;
    }
    cur_ = ::new (buf_ + write_) RingRegion();
    cur_->total = uint32_t(kHeader);
    advance(kHeader);
    return true;
  }

  void advance(size_t n) noexcept {
    write_ += n;
    used_ += n;
    if (write_ == cap_) write_ = 0;
  }

  unsigned char* buf_ = nullptr;
  size_t cap_;
  size_t front_ = 0;           // oldest live region (or == write_ when empty)
  size_t write_ = 0;           // next free byte
  size_t used_ = 0;            // bytes of live regions and fillers
  RingRegion* cur_ = nullptr;  // the open region
  uint64_t fillers_ = 0;
};

}  // namespace coact::detail
