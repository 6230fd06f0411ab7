// dedup/reader.cpp: the Reader actor: the depth-first walk of the input
// directory (by path, or fast_reader's walk relative to each open directory)
// and the reading of regular files in blocks, paced by the in-flight credit
// the Writer returns. Its handlers run on the Runtime's workers, one at a
// time (pipeline.hpp has the stage diagram, the credit argument and the
// end-of-pass steps).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "dedup/pass_context.hpp"
#include "dedup/pipeline.hpp"

namespace coact::dedup {

namespace {
constexpr size_t kBlockBytes = 256 * 1024;  // Reader read size
constexpr int kPumpBlocks = 4;              // blocks read per Pump handler
constexpr int kPumpEntries = 256;           // walk entries per Pump handler

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}
}  // namespace

// ---- Reader -----------------------------------------------------------------

Reader::Reader(std::shared_ptr<PassContext> ctx) : ctx_(std::move(ctx)) {}

Reader::~Reader() {
  close_file();
  while (!stack_.empty()) pop_frame();
}

void Reader::pop_frame() {
  if (stack_.back().fd >= 0) ::close(stack_.back().fd);
  stack_.pop_back();
}

void Reader::close_file() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Reader::on(const Start& s) {
  chunker_ = s.chunker;
  writer_ = s.writer;
  Frame root;
  if (!(ctx_->opt.fast_reader ? list_dir_at(AT_FDCWD, ctx_->root.string(), "", root) : list_dir("", root))) {
    ctx_->fail(runtime(), "input directory '" + ctx_->root.string() + "' cannot be listed: " + errno_text(errno));
    stop();
    return;
  }
  stack_.push_back(std::move(root));
  schedule_pump();
}

namespace {
// Fills `out` with the entries of `d` but "." and "..", sorted bytewise
// (char_traits<char> compares as unsigned), and closes `d`. False with errno
// set if reading failed.
template <class Frame>  // Reader::Frame (private to Reader; deduced here)
bool read_names(DIR* d, const std::string& rel, Frame& out) {
  out.rel = rel;
  out.names.clear();
  out.next = 0;
  errno = 0;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    out.names.emplace_back(e->d_name);
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0) {
    errno = err;
    return false;
  }
  std::sort(out.names.begin(), out.names.end());
  return true;
}
}  // namespace

bool Reader::list_dir(const std::string& rel, Frame& out) {
  const std::filesystem::path dir = rel.empty() ? ctx_->root : ctx_->root / rel;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  return read_names(d, rel, out);
}

// fast_reader: lists directory `name` under the open directory `parent_fd`
// (or a path for AT_FDCWD) and keeps it open in out.fd, so that its entries
// are looked up by one path component (fstatat/openat/readlinkat).
bool Reader::list_dir_at(int parent_fd, const std::string& name, const std::string& rel, Frame& out) {
  const int fd = ::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  const int list_fd = ::dup(fd);  // closedir closes the one fdopendir took
  DIR* d = list_fd >= 0 ? ::fdopendir(list_fd) : nullptr;
  if (!d) {
    const int err = errno;
    if (list_fd >= 0) ::close(list_fd);
    ::close(fd);
    errno = err;
    return false;
  }
  if (!read_names(d, rel, out)) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return false;
  }
  out.fd = fd;
  return true;
}

void Reader::schedule_pump() {
  if (pump_pending_ || done_) return;
  pump_pending_ = true;
  self().send(Pump{});
}

// Advances the walk by one archived entry: a directory or symlink (its
// FileEntry sent) or a regular file (opened, FileEntry sent; an empty one is
// closed at once). Returns false when the walk is exhausted.
bool Reader::next_entry() {
  if (ctx_->opt.fast_reader) return next_entry_fast();
  while (!stack_.empty()) {
    Frame& f = stack_.back();
    if (f.next == f.names.size()) {
      pop_frame();
      continue;
    }
    std::string rel = f.rel.empty() ? f.names[f.next] : f.rel + "/" + f.names[f.next];
    ++f.next;
    const std::filesystem::path full = ctx_->root / rel;
    struct stat st {};
    if (::lstat(full.c_str(), &st) != 0) {
      ctx_->warn("skipping '" + full.string() + "': " + errno_text(errno));
      ++skipped_;
      continue;
    }
    FileEntry e;
    e.record.mode = static_cast<uint32_t>(st.st_mode & 07777);
    e.record.mtime_ns = mtime_ns(st);
    e.record.path = rel;
    if (S_ISDIR(st.st_mode)) {
      Frame sub;
      if (!list_dir(rel, sub)) {
        ctx_->warn("skipping directory '" + full.string() + "': " + errno_text(errno));
        ++skipped_;
        continue;
      }
      e.record.type = EntryType::directory;
      e.file = next_file_++;
      writer_.send(std::move(e));
      stack_.push_back(std::move(sub));  // invalidates f
      return true;
    }
    if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size > 0 ? st.st_size : 4096) + 1, '\0');
      const ssize_t n = ::readlink(full.c_str(), target.data(), target.size());
      if (n <= 0 || static_cast<size_t>(n) >= target.size() || n > 4096) {
        ctx_->warn("skipping symlink '" + full.string() + "': " + (n < 0 ? errno_text(errno) : "target changed or too long"));
        ++skipped_;
        continue;
      }
      target.resize(static_cast<size_t>(n));
      e.record.type = EntryType::symlink;
      e.record.size = target.size();
      e.record.link_target = std::move(target);
      e.file = next_file_++;
      writer_.send(std::move(e));
      return true;
    }
    if (!S_ISREG(st.st_mode)) {
      ctx_->warn("skipping special file '" + full.string() + "' (socket, FIFO or device)");
      ++skipped_;
      continue;
    }
    const int fd = ::open(full.c_str(), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    struct stat fst {};
    if (fd < 0 || ::fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode)) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      ctx_->warn("skipping unreadable file '" + full.string() + "': " + errno_text(err));
      ++skipped_;
      continue;
    }
    if (std::find(ctx_->skip_inodes.begin(), ctx_->skip_inodes.end(), std::pair{fst.st_dev, fst.st_ino}) !=
        ctx_->skip_inodes.end()) {
      ::close(fd);  // the archive we are writing (or its last pass): never archive it
      continue;
    }
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    e.record.type = EntryType::regular;
    e.record.mode = static_cast<uint32_t>(fst.st_mode & 07777);
    e.record.mtime_ns = mtime_ns(fst);
    e.file = next_file_++;
    cur_file_ = e.file;
    cur_size_ = static_cast<uint64_t>(fst.st_size);  // snapshot: bytes appended later are not read
    cur_read_ = 0;
    cur_path_ = full.string();
    cur_path_relative_ = false;
    writer_.send(std::move(e));
    if (cur_size_ > 0)
      fd_ = fd;
    else
      ::close(fd);  // empty: an entry with no chunks
    return true;
  }
  return false;
}

// next_entry() for fast_reader: the same entries, records and warnings in
// the same order, with each entry looked up relative to its open directory,
// no fstat after the open, and no fadvise for a file that one block reads
// whole.
bool Reader::next_entry_fast() {
  while (!stack_.empty()) {
    Frame& f = stack_.back();
    if (f.next == f.names.size()) {
      pop_frame();
      continue;
    }
    const std::string& name = f.names[f.next];
    std::string rel = f.rel.empty() ? name : f.rel + "/" + name;
    ++f.next;
    const int dfd = f.fd;
    auto full = [&] { return (ctx_->root / rel).string(); };
    struct stat st {};
    if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      ctx_->warn("skipping '" + full() + "': " + errno_text(errno));
      ++skipped_;
      continue;
    }
    FileEntry e;
    e.record.mode = static_cast<uint32_t>(st.st_mode & 07777);
    e.record.mtime_ns = mtime_ns(st);
    if (S_ISDIR(st.st_mode)) {
      Frame sub;
      if (!list_dir_at(dfd, name, rel, sub)) {
        ctx_->warn("skipping directory '" + full() + "': " + errno_text(errno));
        ++skipped_;
        continue;
      }
      e.record.path = rel;
      e.record.type = EntryType::directory;
      e.file = next_file_++;
      writer_.send(std::move(e));
      stack_.push_back(std::move(sub));  // invalidates f and name
      return true;
    }
    if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size > 0 ? st.st_size : 4096) + 1, '\0');
      const ssize_t n = ::readlinkat(dfd, name.c_str(), target.data(), target.size());
      if (n <= 0 || static_cast<size_t>(n) >= target.size() || n > 4096) {
        ctx_->warn("skipping symlink '" + full() + "': " + (n < 0 ? errno_text(errno) : "target changed or too long"));
        ++skipped_;
        continue;
      }
      target.resize(static_cast<size_t>(n));
      e.record.path = rel;
      e.record.type = EntryType::symlink;
      e.record.size = target.size();
      e.record.link_target = std::move(target);
      e.file = next_file_++;
      writer_.send(std::move(e));
      return true;
    }
    if (!S_ISREG(st.st_mode)) {
      ctx_->warn("skipping special file '" + full() + "' (socket, FIFO or device)");
      ++skipped_;
      continue;
    }
    // The identity, mode and size snapshot are fstatat's (no fstat after
    // the open; O_NOFOLLOW refuses a symlink swapped in since).
    const int fd = ::openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    const struct stat& fst = st;
    if (fd < 0) {
      const int err = errno;
      ctx_->warn("skipping unreadable file '" + full() + "': " + errno_text(err));
      ++skipped_;
      continue;
    }
    if (std::find(ctx_->skip_inodes.begin(), ctx_->skip_inodes.end(), std::pair{fst.st_dev, fst.st_ino}) !=
        ctx_->skip_inodes.end()) {
      ::close(fd);
      continue;
    }
    if (static_cast<uint64_t>(fst.st_size) > kBlockBytes) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    e.record.path = rel;
    e.record.type = EntryType::regular;
    e.record.mode = static_cast<uint32_t>(fst.st_mode & 07777);
    e.record.mtime_ns = mtime_ns(fst);
    e.file = next_file_++;
    cur_file_ = e.file;
    cur_size_ = static_cast<uint64_t>(fst.st_size);
    cur_read_ = 0;
    cur_path_ = rel;  // made a full path only for a warning (cur_path())
    cur_path_relative_ = true;
    writer_.send(std::move(e));
    if (cur_size_ > 0)
      fd_ = fd;
    else
      ::close(fd);
    return true;
  }
  return false;
}

std::string Reader::cur_path() const {
  return cur_path_relative_ ? (ctx_->root / cur_path_).string() : cur_path_;
}

// Reads the next block of the open file and sends it to the Chunker.
void Reader::read_block() {
  const size_t want = static_cast<size_t>(std::min<uint64_t>(kBlockBytes, cur_size_ - cur_read_));
  std::vector<uint8_t> buf(want);
  size_t got = 0;
  bool failed = false;
  while (got < want) {
    const ssize_t n = ::read(fd_, buf.data() + got, want - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ctx_->warn("read error in '" + cur_path() + "' at byte " + std::to_string(cur_read_ + got) + ": " +
                 errno_text(errno) + "; archived truncated");
      failed = true;
      break;
    }
    if (n == 0) {
      ctx_->warn("'" + cur_path() + "' shrank while being read; archived " + std::to_string(cur_read_ + got) +
                 " bytes");
      failed = true;
      break;
    }
    got += static_cast<size_t>(n);
  }
  buf.resize(got);
  cur_read_ += got;
  const bool last = failed || cur_read_ == cur_size_;
  if (last) close_file();
  // An empty final block is still sent if earlier blocks were: it tells the
  // Chunker to cut the file's tail.
  if (got > 0 || (last && cur_read_ > 0)) {
    inflight_ += got;
    chunker_.send(Block{cur_file_, last, std::move(buf)});
  }
}

void Reader::on(Pump) {
  pump_pending_ = false;
  if (done_) return;
  if (ctx_->is_aborted()) {
    close_file();
    stop();
    return;
  }
  int blocks = 0, entries = 0;
  while (inflight_ < ctx_->opt.inflight_bytes && blocks < kPumpBlocks && entries < kPumpEntries) {
    if (fd_ < 0) {
      if (!next_entry()) {
        finish();
        return;
      }
      ++entries;
      continue;
    }
    read_block();
    ++blocks;
  }
  if (inflight_ < ctx_->opt.inflight_bytes) schedule_pump();
}

void Reader::finish() {
  done_ = true;
  chunker_.send(EndOfStream{});
  writer_.send(FilesDone{next_file_, skipped_});
  if (inflight_ == 0) stop();
}

void Reader::on(const Credit& c) {
  inflight_ -= c.bytes;
  if (done_) {
    if (inflight_ == 0) stop();
  } else if (inflight_ < ctx_->opt.inflight_bytes) {
    schedule_pump();
  }
}

}  // namespace coact::dedup
