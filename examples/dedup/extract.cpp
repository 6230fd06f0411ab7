// dedup/extract.cpp: ArchiveReader, extract() and verify() (extract.hpp).
#include "dedup/extract.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <unordered_set>

#include "dedup/chunker.hpp"
#include "dedup/fingerprint.hpp"

namespace coact::dedup {
namespace {

constexpr uint32_t kMaxChunkBytes = 16u * 1024 * 1024;  // ChunkParams::validate()'s bound
constexpr mode_t kRestoredModeBits = 01777;             // permissions + sticky; no setuid/setgid

std::string errno_text(int e) { return std::strerror(e); }

std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

void write_all(int fd, const uint8_t* p, size_t n, const std::filesystem::path& what) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) throw dedup_error("write error on " + quoted(what) + ": " + errno_text(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

struct timespec ts_from_ns(int64_t ns) {
  struct timespec t {};
  t.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  t.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  if (t.tv_nsec < 0) {
    t.tv_nsec += 1'000'000'000;
    t.tv_sec -= 1;
  }
  return t;
}

}  // namespace

// ---- ArchiveReader ------------------------------------------------------------

std::string ArchiveReader::where() const { return "archive " + quoted(path_); }

void ArchiveReader::pread_all(void* buf, size_t n, uint64_t off) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    const ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw dedup_error(where() + ": read error: " + errno_text(errno));
    if (r == 0) throw dedup_error(where() + " is truncated (changed while being read?)");
    p += r;
    n -= static_cast<size_t>(r);
    off += static_cast<uint64_t>(r);
  }
}

ArchiveReader::ArchiveReader(const std::filesystem::path& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw dedup_error("cannot open archive " + quoted(path) + ": " + errno_text(errno));
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw dedup_error(where() + ": " + errno_text(errno));
    if (!S_ISREG(st.st_mode)) throw dedup_error(where() + " is not a regular file");
    size_ = static_cast<uint64_t>(st.st_size);

    uint8_t hdr[kHeaderBytes] = {};
    const size_t hdr_n = static_cast<size_t>(std::min<uint64_t>(size_, kHeaderBytes));
    pread_all(hdr, hdr_n, 0);
    if (hdr_n < kMagic.size() || std::memcmp(hdr, kMagic.data(), kMagic.size()) != 0)
      throw dedup_error(quoted(path) + " is not a coact-dedup archive (bad magic)");
    if (size_ < kHeaderBytes + kFooterBytes)
      throw dedup_error(where() + " is truncated (" + std::to_string(size_) + " bytes)");
    ByteSource h(std::span<const uint8_t>(hdr + kMagic.size(), kHeaderBytes - kMagic.size()), "header");
    const uint32_t version = h.u32();
    const uint32_t flags = h.u32();
    if (version != kVersion)
      throw dedup_error(where() + " has format version " + std::to_string(version) + "; this coact-dedup reads version " +
                        std::to_string(kVersion));
    if ((flags & ~kKnownFlags) != 0) throw dedup_error(where() + " has unknown header flags " + std::to_string(flags));
    sha1_fingerprints_ = (flags & kFlagSha1Fingerprints) != 0;

    uint8_t foot[kFooterBytes];
    pread_all(foot, sizeof foot, size_ - kFooterBytes);
    ByteSource f(std::span<const uint8_t>(foot, sizeof foot), "footer");
    const uint64_t meta_offset = f.u64();
    const uint64_t meta_size = f.u64();
    auto end_magic = f.bytes(kEndMagic.size());
    if (std::memcmp(end_magic.data(), kEndMagic.data(), kEndMagic.size()) != 0)
      throw dedup_error(where() + " is truncated or corrupt (no end-of-archive marker)");
    auto stored_sum = f.bytes(kChecksumBytes);

    // Whole-file checksum before trusting any offset in it.
    Sha256Stream sum;
    std::vector<uint8_t> buf(1 << 20);
    for (uint64_t off = 0, end = size_ - kChecksumBytes; off < end;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - off));
      pread_all(buf.data(), n, off);
      sum.update(buf.data(), n);
      off += n;
    }
    const Fingerprint computed = sum.finish();
    if (std::memcmp(computed.data(), stored_sum.data(), kChecksumBytes) != 0) {
      Fingerprint stored{};
      std::memcpy(stored.data(), stored_sum.data(), kChecksumBytes);
      throw dedup_error(where() + " is corrupt: checksum mismatch (stored " + to_hex(stored) + ", computed " +
                        to_hex(computed) + ")");
    }

    if (meta_offset < kHeaderBytes || meta_offset > size_ - kFooterBytes ||
        meta_size != size_ - kFooterBytes - meta_offset)
      throw dedup_error(where() + " is corrupt: metadata location out of range");
    std::vector<uint8_t> meta(static_cast<size_t>(meta_size));
    pread_all(meta.data(), meta.size(), meta_offset);
    try {
      meta_ = decode_metadata(meta, meta_offset, kMaxChunkBytes);
    } catch (const dedup_error& e) {
      throw dedup_error(where() + " is corrupt: " + e.what());
    }
    dctx_ = ZSTD_createDCtx();
    if (!dctx_) throw dedup_error("zstd: cannot create a decompression context");
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

ArchiveReader::~ArchiveReader() {
  ZSTD_freeDCtx(dctx_);
  if (fd_ >= 0) ::close(fd_);
}

void ArchiveReader::read_chunk(uint32_t id, std::vector<uint8_t>& out) {
  const ChunkRecord& c = meta_.chunks.at(id);
  if (c.method == ChunkMethod::raw) {
    out.resize(c.raw_size);
    pread_all(out.data(), out.size(), c.offset);
    return;
  }
  stored_.resize(c.stored_size);
  pread_all(stored_.data(), stored_.size(), c.offset);
  out.resize(c.raw_size);
  const size_t n = ZSTD_decompressDCtx(dctx_, out.data(), out.size(), stored_.data(), stored_.size());
  if (ZSTD_isError(n))
    throw dedup_error(where() + ": chunk " + std::to_string(id) + " does not decode: " + ZSTD_getErrorName(n));
  if (n != c.raw_size)
    throw dedup_error(where() + ": chunk " + std::to_string(id) + " decodes to " + std::to_string(n) + " bytes, expected " +
                      std::to_string(c.raw_size));
}

// ---- extract ------------------------------------------------------------------

void check_entry_path(std::string_view rel) {
  if (rel.empty()) throw dedup_error("is empty");
  if (rel.find('\0') != std::string_view::npos) throw dedup_error("contains a NUL byte");
  if (rel.front() == '/') throw dedup_error("is absolute and would escape the destination directory");
  size_t start = 0;
  for (;;) {
    const size_t slash = rel.find('/', start);
    const std::string_view part = rel.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part == "..") throw dedup_error("has a '..' component and would escape the destination directory");
    if (part.empty() || part == ".") throw dedup_error("has an empty or '.' component");
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
}

ExtractStats extract(const std::filesystem::path& archive, const std::filesystem::path& dest) {
  const auto t0 = std::chrono::steady_clock::now();
  ArchiveReader ar(archive);
  const Metadata& m = ar.metadata();
  const std::string where = "archive " + quoted(archive);

  // 2. Every path is checked before anything is created.
  std::unordered_set<std::string> seen, links;
  for (size_t i = 0; i < m.files.size(); ++i) {
    const FileRecord& f = m.files[i];
    try {
      check_entry_path(f.path);
    } catch (const dedup_error& e) {
      throw dedup_error(where + ": entry " + std::to_string(i) + " path '" + f.path + "' " + e.what() +
                        "; nothing was extracted");
    }
    if (!seen.insert(f.path).second)
      throw dedup_error(where + ": duplicate entry '" + f.path + "'; nothing was extracted");
    if (f.type == EntryType::symlink) links.insert(f.path);
  }
  if (!links.empty()) {
    for (const FileRecord& f : m.files) {
      for (size_t slash = f.path.find('/'); slash != std::string::npos; slash = f.path.find('/', slash + 1)) {
        const std::string prefix = f.path.substr(0, slash);
        if (links.count(prefix))
          throw dedup_error(where + ": entry '" + f.path + "' lies under the archived symlink '" + prefix +
                            "' and could be written outside the destination; nothing was extracted");
      }
    }
  }

  std::error_code ec;
  std::filesystem::create_directories(dest, ec);
  if (ec || !std::filesystem::is_directory(dest))
    throw dedup_error("cannot create destination directory " + quoted(dest) + ": " +
                      (ec ? ec.message() : std::string("not a directory")));

  ExtractStats st;
  std::vector<uint8_t> buf;
  // 3. Directories and regular files, in archive order.
  for (size_t i = 0; i < m.files.size(); ++i) {
    const FileRecord& f = m.files[i];
    const std::filesystem::path full = dest / f.path;
    if (f.type == EntryType::directory) {
      if (::mkdir(full.c_str(), 0700) != 0) {
        const int err = errno;
        struct stat s {};
        if (!(err == EEXIST && ::lstat(full.c_str(), &s) == 0 && S_ISDIR(s.st_mode)))
          throw dedup_error("cannot create directory " + quoted(full) + ": " + errno_text(err));
      }
      ++st.directories;
      continue;
    }
    if (f.type != EntryType::regular) continue;
    std::filesystem::create_directories(full.parent_path(), ec);
    if (ec) throw dedup_error("cannot create directory " + quoted(full.parent_path()) + ": " + ec.message());
    const int fd = ::open(full.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw dedup_error("cannot create " + quoted(full) + ": " + errno_text(errno));
    try {
      for (uint32_t id : m.chunk_lists[i]) {
        ar.read_chunk(id, buf);
        write_all(fd, buf.data(), buf.size(), full);
      }
      if (::fchmod(fd, static_cast<mode_t>(f.mode) & kRestoredModeBits & ~S_ISVTX) != 0)
        throw dedup_error("cannot set mode of " + quoted(full) + ": " + errno_text(errno));
      const struct timespec times[2] = {{0, UTIME_NOW}, ts_from_ns(f.mtime_ns)};
      ::futimens(fd, times);  // best effort, like tar
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) throw dedup_error("write error on " + quoted(full) + ": " + errno_text(errno));
    ++st.files;
    st.bytes += f.size;
  }
  // 4. Symlinks, after every file: nothing is ever written through one.
  for (const FileRecord& f : m.files) {
    if (f.type != EntryType::symlink) continue;
    const std::filesystem::path full = dest / f.path;
    std::filesystem::create_directories(full.parent_path(), ec);
    struct stat s {};
    if (::lstat(full.c_str(), &s) == 0) {
      if (!S_ISLNK(s.st_mode)) throw dedup_error("cannot create symlink " + quoted(full) + ": a file is in the way");
      ::unlink(full.c_str());
    }
    if (::symlink(f.link_target.c_str(), full.c_str()) != 0)
      throw dedup_error("cannot create symlink " + quoted(full) + ": " + errno_text(errno));
    const struct timespec times[2] = {{0, UTIME_NOW}, ts_from_ns(f.mtime_ns)};
    ::utimensat(AT_FDCWD, full.c_str(), times, AT_SYMLINK_NOFOLLOW);
    ++st.symlinks;
  }
  // 5. Directory modes and mtimes, deepest first (walk order puts a
  // directory before its contents, so reverse order is children first).
  for (auto it = m.files.rbegin(); it != m.files.rend(); ++it) {
    if (it->type != EntryType::directory) continue;
    const std::filesystem::path full = dest / it->path;
    if (::chmod(full.c_str(), static_cast<mode_t>(it->mode) & kRestoredModeBits) != 0)
      throw dedup_error("cannot set mode of " + quoted(full) + ": " + errno_text(errno));
    const struct timespec times[2] = {{0, UTIME_NOW}, ts_from_ns(it->mtime_ns)};
    ::utimensat(AT_FDCWD, full.c_str(), times, AT_SYMLINK_NOFOLLOW);
  }
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

// ---- verify -------------------------------------------------------------------

VerifyStats verify(const std::filesystem::path& archive) {
  const auto t0 = std::chrono::steady_clock::now();
  ArchiveReader ar(archive);
  const Metadata& m = ar.metadata();
  VerifyStats st;
  st.entries = m.files.size();
  st.chunks = m.chunks.size();
  st.archive_bytes = ar.file_bytes();
  std::vector<uint8_t> buf;
  for (uint32_t id = 0; id < m.chunks.size(); ++id) {
    ar.read_chunk(id, buf);
    const bool sha1 = ar.sha1_fingerprints();
    if ((sha1 ? sha1_fingerprint(buf) : sha256(buf)) != m.chunks[id].fingerprint)
      throw dedup_error("archive " + quoted(archive) + ": chunk " + std::to_string(id) + " does not match its " +
                        (sha1 ? "SHA-1" : "SHA-256") + " fingerprint");
    st.unique_bytes += buf.size();
  }
  for (const FileRecord& f : m.files)
    if (f.type == EntryType::regular) st.raw_bytes += f.size;
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace coact::dedup
