// runtime/src/cpu_headroom.cpp: CpuHeadroom (detail/cpu_headroom.hpp): the
// machine's runnable-thread count from /proc/loadavg against its online CPUs.
#include "detail/cpu_headroom.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

namespace coact::detail {

CpuHeadroom::CpuHeadroom(const char* path, int64_t cpus) noexcept {
  const long n = cpus > 0 ? cpus : ::sysconf(_SC_NPROCESSORS_ONLN);
  cpus_ = n > 0 ? n : 1;
  fd_ = ::open(path, O_RDONLY | O_CLOEXEC);
  char buf[128];
  const ssize_t got = fd_ >= 0 ? ::pread(fd_, buf, sizeof buf, 0) : -1;
  if (fd_ >= 0 && (got <= 0 || parse_runnable(std::string_view(buf, size_t(got))) < 0)) {
    ::close(fd_);  // unreadable or unparsable here: no headroom checks at all
    fd_ = -1;
  }
}

CpuHeadroom::~CpuHeadroom() {
  if (fd_ >= 0) ::close(fd_);
}

int64_t CpuHeadroom::parse_runnable(std::string_view s) noexcept {
  // Three load averages, then "runnable/total".
  size_t pos = 0;
  for (int field = 0; field < 3; ++field) {
    pos = s.find(' ', pos);
    if (pos == std::string_view::npos) return -1;
    ++pos;
  }
  int64_t runnable = -1;
  const char* first = s.data() + pos;
  const char* last = s.data() + s.size();
  const auto [end, ec] = std::from_chars(first, last, runnable);
  if (ec != std::errc() || end == first || end == last || *end != '/' || runnable < 0) return -1;
  return runnable;
}

void CpuHeadroom::sample(uint64_t now_ns, int64_t on_cpu_now) noexcept {
  sampled_at_ns_.store(now_ns, std::memory_order_relaxed);  // first: a racing caller skips its read
  char buf[128];
  // pread from offset 0: procfs makes the line afresh for every read from
  // the start, and pread leaves the shared descriptor's offset alone.
  const ssize_t n = ::pread(fd_, buf, sizeof buf, 0);
  const int64_t runnable = n > 0 ? parse_runnable(std::string_view(buf, size_t(n))) : -1;
  if (runnable < 0) return;
  const int64_t others = std::max<int64_t>(runnable - on_cpu_now, 0);
  others_x256_.store(next_average_x256(others_x256_.load(std::memory_order_relaxed), others),
                     std::memory_order_relaxed);
}

}  // namespace coact::detail
