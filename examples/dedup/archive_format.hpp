// dedup/archive_format.hpp: the .cdar archive format (version 1) written by
// the dedup pipeline (pipeline.hpp) and read by extract/verify (extract.hpp).
//
// Provides: the format constants, the in-memory records (FileRecord,
// ChunkRecord), and the little-endian encoders/decoders every reader and
// writer of the format shares, so there is one definition of the layout.
// Threads: plain values and pure functions; any thread.
// Errors: decoders throw dedup_error naming what was malformed; callers add
// the archive's path.
//
// Layout. Integers are little-endian, fixed width; offsets are from the start
// of the file. The metadata trails the chunk data because the Writer streams
// compressed chunks as they arrive and learns the tables only at the end of a
// pass (the zip / PARSEC-dedup arrangement); the footer at a fixed distance
// from the end points back at it.
//
//   Header (16 bytes, offset 0)
//     magic[8]      "CDAR\r\n\x1a\n"  (PNG-style: catches text-mode and
//                                      truncated transfers)
//     version u32   1
//     flags   u32   bit 0 (kFlagSha1Fingerprints): the chunk fingerprints
//                   are SHA-1 (20 bytes, zero-padded to 32; written by
//                   `coact-dedup archive --fingerprint sha1`), else SHA-256;
//                   other bits reserved (readers reject them)
//   Chunk data (offset 16): the stored bytes of every unique chunk, back to
//     back, in chunk-id order. Chunk ids are assigned in stream order (the
//     first occurrence of each content), so the data section is
//     deterministic for a given input tree whatever the worker count.
//   Metadata (offset meta_offset, meta_size bytes)
//     chunk params   u32 min, u32 avg, u32 max (informational: what the
//                    archive was chunked with; extract does not need them)
//     file count     u64, then per entry, in walk order (a directory precedes
//                    its contents; siblings sorted by name, bytewise):
//       type        u8    1 regular, 2 directory, 3 symlink
//       mode        u32   permission bits (st_mode & 07777)
//       mtime_ns    i64   modification time, ns since the epoch
//       size        u64   regular: content bytes; symlink: target length; dir: 0
//       chunk_count u64   regular: entries in its chunk list; others: 0
//       path_len    u32, path bytes: relative to the archived directory,
//                   '/'-separated, no leading '/', no "", "." or ".." part
//       symlink only: `size` bytes of link target (stored verbatim)
//     chunk count    u64, then per unique chunk (id = index):
//       offset      u64   where its stored bytes start (inside chunk data)
//       stored_size u32   bytes stored
//       raw_size    u32   bytes after decoding (1..max chunk size)
//       method      u8    0 stored raw (zstd did not shrink it), 1 zstd frame
//       fingerprint [32]  SHA-256 of the raw bytes (SHA-1, zero-padded, with
//                         header flag bit 0)
//     chunk lists    for each regular file in file-table order, chunk_count
//                    u32 chunk ids; the raw sizes of a file's chunks sum to
//                    its `size`.
//   Footer (56 bytes, at end - 56)
//     meta_offset u64
//     meta_size   u64   meta_offset + meta_size == file size - 56
//     end magic[8] "CDAREND\0"
//     checksum[32]  SHA-256 of every byte of the file before it
//
// Modes are restored, owners are not (extract runs unprivileged). Symlinks
// are archived as links (never followed); hard links are archived as
// separate regular files (dedup stores their content once). Sockets, FIFOs
// and device nodes are skipped with a warning.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace coact::dedup {

/// Every failure the dedup library reports: bad input, unreadable or corrupt
/// archive, I/O errors. The message names the file concerned.
class dedup_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::array<uint8_t, 8> kMagic = {'C', 'D', 'A', 'R', '\r', '\n', 0x1a, '\n'};
inline constexpr std::array<uint8_t, 8> kEndMagic = {'C', 'D', 'A', 'R', 'E', 'N', 'D', 0};
inline constexpr uint32_t kVersion = 1;
/// Header flag: chunk fingerprints are SHA-1, zero-padded (see the layout).
inline constexpr uint32_t kFlagSha1Fingerprints = 1;
inline constexpr uint32_t kKnownFlags = kFlagSha1Fingerprints;
inline constexpr uint64_t kHeaderBytes = 16;
inline constexpr uint64_t kFooterBytes = 56;
inline constexpr uint64_t kChecksumBytes = 32;

/// Digest of a chunk: SHA-256, or SHA-1 zero-padded (fingerprint.hpp computes both).
using Fingerprint = std::array<uint8_t, 32>;

enum class EntryType : uint8_t { regular = 1, directory = 2, symlink = 3 };
enum class ChunkMethod : uint8_t { raw = 0, zstd = 1 };

/// One file-table entry.
struct FileRecord {
  EntryType type = EntryType::regular;
  uint32_t mode = 0644;
  int64_t mtime_ns = 0;
  uint64_t size = 0;         ///< regular: content bytes; symlink: target length
  uint64_t chunk_count = 0;  ///< regular only
  std::string path;          ///< relative, '/'-separated
  std::string link_target;   ///< symlink only
};

/// One chunk-table entry (index = chunk id).
struct ChunkRecord {
  uint64_t offset = 0;
  uint32_t stored_size = 0;
  uint32_t raw_size = 0;
  ChunkMethod method = ChunkMethod::zstd;
  Fingerprint fingerprint{};
};

/// Parsed metadata section.
struct Metadata {
  uint32_t chunk_min = 0, chunk_avg = 0, chunk_max = 0;
  std::vector<FileRecord> files;
  std::vector<ChunkRecord> chunks;
  /// chunk_lists[i] = chunk ids of files[i] (empty for non-regular entries).
  std::vector<std::vector<uint32_t>> chunk_lists;
};

/// The footer's fields other than the checksum.
struct Footer {
  uint64_t meta_offset = 0;
  uint64_t meta_size = 0;
};

// ---- little-endian encoding ---------------------------------------------

/// Appends fixed-width little-endian integers and byte strings to a buffer.
class ByteSink {
 public:
  explicit ByteSink(std::vector<uint8_t>& out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void i64(int64_t v) { le(static_cast<uint64_t>(v), 8); }
  void bytes(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }

 private:
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t>& out_;
};

/// Reads what ByteSink wrote, bounds-checked: reading past the end throws
/// dedup_error("... truncated ...") naming `what`.
class ByteSource {
 public:
  ByteSource(std::span<const uint8_t> in, const char* what) : in_(in), what_(what) {}
  uint8_t u8() { return need(1)[0]; }
  uint32_t u32() { return static_cast<uint32_t>(le(4)); }
  uint64_t u64() { return le(8); }
  int64_t i64() { return static_cast<int64_t>(le(8)); }
  std::span<const uint8_t> bytes(uint64_t n) { return need(n); }
  size_t remaining() const noexcept { return in_.size() - pos_; }

 private:
  std::span<const uint8_t> need(uint64_t n) {
    if (n > remaining()) throw dedup_error(std::string(what_) + " is truncated");
    auto s = in_.subspan(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  uint64_t le(int n) {
    auto s = need(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(s[static_cast<size_t>(i)]) << (8 * i);
    return v;
  }
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
  const char* what_;
};

/// The 16-byte header; `flags` a combination of kKnownFlags.
inline std::vector<uint8_t> encode_header(uint32_t flags = 0) {
  std::vector<uint8_t> out;
  ByteSink s(out);
  s.bytes(kMagic.data(), kMagic.size());
  s.u32(kVersion);
  s.u32(flags);
  return out;
}

/// The metadata section. Precondition: chunk_lists.size() == files.size()
/// and each regular file's chunk_count == chunk_lists[i].size().
inline std::vector<uint8_t> encode_metadata(const Metadata& m) {
  std::vector<uint8_t> out;
  ByteSink s(out);
  s.u32(m.chunk_min);
  s.u32(m.chunk_avg);
  s.u32(m.chunk_max);
  s.u64(m.files.size());
  for (const FileRecord& f : m.files) {
    s.u8(static_cast<uint8_t>(f.type));
    s.u32(f.mode);
    s.i64(f.mtime_ns);
    s.u64(f.size);
    s.u64(f.chunk_count);
    s.u32(static_cast<uint32_t>(f.path.size()));
    s.bytes(f.path.data(), f.path.size());
    if (f.type == EntryType::symlink) s.bytes(f.link_target.data(), f.link_target.size());
  }
  s.u64(m.chunks.size());
  for (const ChunkRecord& c : m.chunks) {
    s.u64(c.offset);
    s.u32(c.stored_size);
    s.u32(c.raw_size);
    s.u8(static_cast<uint8_t>(c.method));
    s.bytes(c.fingerprint.data(), c.fingerprint.size());
  }
  for (size_t i = 0; i < m.files.size(); ++i)
    for (uint32_t id : m.chunk_lists[i]) s.u32(id);
  return out;
}

/// The footer without its trailing checksum (24 bytes); the checksum is the
/// SHA-256 of every byte written before it, including these.
inline std::vector<uint8_t> encode_footer(const Footer& f) {
  std::vector<uint8_t> out;
  ByteSink s(out);
  s.u64(f.meta_offset);
  s.u64(f.meta_size);
  s.bytes(kEndMagic.data(), kEndMagic.size());
  return out;
}

/// Parses and validates a metadata section: entry types, path and size
/// limits, chunk offsets inside [kHeaderBytes, data_end), chunk ids in range,
/// and per-file sizes equal to the sum of their chunks. Throws dedup_error
/// naming the first inconsistency. Does not judge whether paths are safe to
/// extract (extract.cpp does, before writing anything).
inline Metadata decode_metadata(std::span<const uint8_t> bytes, uint64_t data_end, uint32_t max_chunk_bytes) {
  ByteSource s(bytes, "metadata section");
  Metadata m;
  m.chunk_min = s.u32();
  m.chunk_avg = s.u32();
  m.chunk_max = s.u32();
  const uint64_t nfiles = s.u64();
  // Each entry takes at least 33 bytes: bound the count before reserving.
  if (nfiles > s.remaining() / 33) throw dedup_error("metadata: file count " + std::to_string(nfiles) + " exceeds the section");
  m.files.resize(static_cast<size_t>(nfiles));
  for (uint64_t i = 0; i < nfiles; ++i) {
    FileRecord& f = m.files[static_cast<size_t>(i)];
    const uint8_t t = s.u8();
    if (t < 1 || t > 3) throw dedup_error("metadata: entry " + std::to_string(i) + " has unknown type " + std::to_string(t));
    f.type = static_cast<EntryType>(t);
    f.mode = s.u32();
    if (f.mode > 07777) throw dedup_error("metadata: entry " + std::to_string(i) + " has invalid mode");
    f.mtime_ns = s.i64();
    f.size = s.u64();
    f.chunk_count = s.u64();
    const uint32_t plen = s.u32();
    if (plen == 0 || plen > 4096) throw dedup_error("metadata: entry " + std::to_string(i) + " has path length " + std::to_string(plen));
    auto p = s.bytes(plen);
    f.path.assign(reinterpret_cast<const char*>(p.data()), p.size());
    if (f.type == EntryType::symlink) {
      if (f.size == 0 || f.size > 4096) throw dedup_error("metadata: symlink '" + f.path + "' has target length " + std::to_string(f.size));
      auto t2 = s.bytes(f.size);
      f.link_target.assign(reinterpret_cast<const char*>(t2.data()), t2.size());
    }
    if (f.type != EntryType::regular && f.chunk_count != 0)
      throw dedup_error("metadata: non-regular entry '" + f.path + "' has chunks");
    if (f.type == EntryType::directory && f.size != 0)
      throw dedup_error("metadata: directory '" + f.path + "' has a size");
  }
  const uint64_t nchunks = s.u64();
  if (nchunks > s.remaining() / 49 || nchunks > UINT32_MAX) throw dedup_error("metadata: chunk count " + std::to_string(nchunks) + " exceeds the section");
  m.chunks.resize(static_cast<size_t>(nchunks));
  for (uint64_t i = 0; i < nchunks; ++i) {
    ChunkRecord& c = m.chunks[static_cast<size_t>(i)];
    c.offset = s.u64();
    c.stored_size = s.u32();
    c.raw_size = s.u32();
    const uint8_t method = s.u8();
    auto fp = s.bytes(32);
    std::memcpy(c.fingerprint.data(), fp.data(), 32);
    if (method > 1) throw dedup_error("metadata: chunk " + std::to_string(i) + " has unknown method " + std::to_string(method));
    c.method = static_cast<ChunkMethod>(method);
    if (c.raw_size == 0 || c.raw_size > max_chunk_bytes || c.stored_size == 0)
      throw dedup_error("metadata: chunk " + std::to_string(i) + " has invalid sizes");
    if (c.method == ChunkMethod::raw && c.stored_size != c.raw_size)
      throw dedup_error("metadata: raw chunk " + std::to_string(i) + " has stored size != raw size");
    if (c.offset < kHeaderBytes || c.offset > data_end || c.stored_size > data_end - c.offset)
      throw dedup_error("metadata: chunk " + std::to_string(i) + " lies outside the chunk data section");
  }
  m.chunk_lists.resize(m.files.size());
  for (size_t i = 0; i < m.files.size(); ++i) {
    const FileRecord& f = m.files[i];
    if (f.chunk_count > s.remaining() / 4) throw dedup_error("metadata: chunk list of '" + f.path + "' is truncated");
    auto& list = m.chunk_lists[i];
    list.resize(static_cast<size_t>(f.chunk_count));
    uint64_t total = 0;
    for (auto& id : list) {
      id = s.u32();
      if (id >= nchunks) throw dedup_error("metadata: '" + f.path + "' refers to chunk " + std::to_string(id) + " of " + std::to_string(nchunks));
      total += m.chunks[id].raw_size;
    }
    if (f.type == EntryType::regular && total != f.size)
      throw dedup_error("metadata: size of '" + f.path + "' (" + std::to_string(f.size) + ") != sum of its chunks (" + std::to_string(total) + ")");
  }
  if (s.remaining() != 0) throw dedup_error("metadata: " + std::to_string(s.remaining()) + " trailing bytes");
  return m;
}

}  // namespace coact::dedup
