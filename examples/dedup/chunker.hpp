// dedup/chunker.hpp: content-defined chunking with FastCDC.
//
// Provides: ChunkParams (min/avg/max chunk sizes, default 2 KiB / 8 KiB /
// 64 KiB) and fastcdc_cut(), which finds the first cut point in a buffer.
// Algorithm: FastCDC, W. Xia et al., "FastCDC: a Fast and Efficient
// Content-Defined Chunking Approach for Data Deduplication", USENIX ATC 2016,
// Algorithm 1: a Gear rolling hash (fp = (fp << 1) + Gear[byte]) with
// cut-point skipping (no cut before `min`) and normalized chunking level 2 (a
// harder mask, log2(avg)+2 bits, before `avg` and an easier one, log2(avg)-2
// bits, after it), forced cut at `max`. For avg = 8 KiB the masks are the
// paper's MaskS = 0x0003590703530000 and MaskL = 0x0000d90003530000.
//
// Differences from the paper's listing, both so that a cut does not depend on
// how the stream was split into buffers: the paper shrinks NormalSize when
// the buffer is shorter than it; we do not, and we report when a buffer ran
// out before a cut was found (CutResult::hash_cut == false) so the caller can
// wait for more bytes. A cut at position i depends only on the bytes from
// the chunk start through i.
// Threads: pure functions over caller memory; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace coact::dedup {

/// Chunk size bounds in bytes. Preconditions (checked by validate()):
/// 64 <= min < avg < max <= 16 MiB, avg a power of two.
struct ChunkParams {
  uint32_t min_bytes = 2 * 1024;
  uint32_t avg_bytes = 8 * 1024;
  uint32_t max_bytes = 64 * 1024;
  /// Throws dedup_error naming the violated bound.
  void validate() const;
};

/// Where fastcdc_cut() stopped.
struct CutResult {
  size_t length;  ///< bytes in the chunk that starts at data[0]
  bool hash_cut;  ///< true: content-defined cut (or forced at max_bytes);
                  ///< false: the buffer ended first (length == data.size() < max)
};

/// Finds the first chunk boundary of `data`, which starts at a chunk
/// boundary. Returns {data.size(), false} if data.size() <= min_bytes, or if
/// no cut point occurs before the buffer ends and data.size() < max_bytes;
/// then the caller either has the end of the stream (the rest is the last
/// chunk) or must append more bytes and call again. Otherwise the returned
/// length is in [min_bytes + 1, max_bytes]. Thread: any.
CutResult fastcdc_cut(std::span<const uint8_t> data, const ChunkParams& params) noexcept;

/// fastcdc_cut() with the Gear loop unrolled eight bytes per iteration (one
/// 8-byte load, one branch per eight positions): the same result for every
/// input (the cut of `coact-dedup archive --fast-chunker`). Thread: any.
CutResult fastcdc_cut_unrolled(std::span<const uint8_t> data, const ChunkParams& params) noexcept;

/// Splits a whole buffer (a complete stream) into chunk lengths. Every
/// length but the last is in [min_bytes + 1, max_bytes]; the last is in
/// [1, max_bytes]; empty input gives no chunks. Thread: any.
std::vector<size_t> chunk_lengths(std::span<const uint8_t> data, const ChunkParams& params);

/// The 256-entry Gear table (64-bit values from splitmix64, seed
/// 0x636f61637464646), exposed for tests.
const uint64_t* gear_table() noexcept;

}  // namespace coact::dedup
