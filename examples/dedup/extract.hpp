// dedup/extract.hpp: reading .cdar archives: open + integrity check
// (ArchiveReader), extract into a directory, verify every chunk.
//
// Threads: single-threaded, blocking file I/O on the caller's thread (no
// actors: extraction is I/O bound and ordered). An ArchiveReader belongs to
// one thread at a time.
// Errors: dedup_error whose message names the archive (and the entry, for
// entry errors): cannot open, bad magic, unsupported version, truncated,
// checksum mismatch, malformed metadata, unsafe path, chunk that fails to
// decode. Extraction validates every path before it creates anything.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "dedup/archive_format.hpp"

struct ZSTD_DCtx_s;

namespace coact::dedup {

/// An open, checksum-verified, parsed archive.
class ArchiveReader {
 public:
  /// Opens `path`, checks magic, version and footer, verifies the trailing
  /// SHA-256 over the whole file, and parses the metadata. Throws
  /// dedup_error naming `path`.
  explicit ArchiveReader(const std::filesystem::path& path);
  ~ArchiveReader();
  ArchiveReader(const ArchiveReader&) = delete;
  ArchiveReader& operator=(const ArchiveReader&) = delete;

  const Metadata& metadata() const noexcept { return meta_; }
  uint64_t file_bytes() const noexcept { return size_; }
  const std::filesystem::path& path() const noexcept { return path_; }
  /// True when the header says the chunk fingerprints are SHA-1 (zero-padded;
  /// archive_format.hpp), false for SHA-256.
  bool sha1_fingerprints() const noexcept { return sha1_fingerprints_; }

  /// Decodes chunk `id` (< metadata().chunks.size()) into `out` (resized to
  /// its raw size). Throws dedup_error on a read error or a frame that does
  /// not decode to exactly raw_size bytes.
  void read_chunk(uint32_t id, std::vector<uint8_t>& out);

 private:
  std::string where() const;
  void pread_all(void* buf, size_t n, uint64_t off);

  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  bool sha1_fingerprints_ = false;
  Metadata meta_;
  ZSTD_DCtx_s* dctx_ = nullptr;
  std::vector<uint8_t> stored_;
};

/// Throws dedup_error unless `rel` is a safe relative path to create under
/// a destination directory: non-empty, not absolute, no "", "." or ".."
/// component, no NUL byte.
void check_entry_path(std::string_view rel);

struct ExtractStats {
  uint64_t files = 0;
  uint64_t directories = 0;
  uint64_t symlinks = 0;
  uint64_t bytes = 0;
  double seconds = 0;
};

/// Restores every entry of `archive` under `dest` (created if missing):
/// directories, regular files (contents, permission bits, mtimes) and
/// symlinks (targets verbatim). Steps: 1. open and verify the archive;
/// 2. check every path (check_entry_path), reject duplicates and entries
/// under an archived symlink, before creating anything; 3. directories and
/// files in archive order (files opened O_NOFOLLOW); 4. symlinks; 5.
/// directory modes and mtimes, deepest first (so a read-only directory does
/// not block its own contents). Setuid/setgid bits are not restored; owners
/// are not restored. Existing regular files at a path are overwritten.
ExtractStats extract(const std::filesystem::path& archive, const std::filesystem::path& dest);

struct VerifyStats {
  uint64_t entries = 0;
  uint64_t chunks = 0;
  uint64_t raw_bytes = 0;     ///< bytes of all files
  uint64_t unique_bytes = 0;  ///< raw bytes of unique chunks
  uint64_t archive_bytes = 0;
  double seconds = 0;
};

/// Verifies `archive`: checksum, metadata consistency, and that every chunk
/// decodes to its raw size and fingerprint (SHA-256, or SHA-1 when the
/// header says so). Throws dedup_error on the first failure.
VerifyStats verify(const std::filesystem::path& archive);

}  // namespace coact::dedup
