// profile.coz and JSON-lines writers (coact/causal/profile_writer.hpp).
#include <coact/causal/profile_writer.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace coact::causal {

namespace {
// A record's text: invalid UTF-8 in a name is replaced, never thrown.
std::string dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}
}  // namespace

std::string format_speedup(uint32_t speedup_pct) {
  if (speedup_pct > 100) speedup_pct = 100;
  return fmt::format("{}.{:02}", speedup_pct / 100, speedup_pct % 100);
}

std::string coz_field(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

std::string format_coz_startup(uint64_t time_ns) { return fmt::format("startup\ttime={}\n", time_ns); }

std::string format_coz_experiment(const ExperimentRecord& e) {
  std::string out = fmt::format("experiment\tselected={}\tspeedup={}\tduration={}\tselected-samples={}\n",
                                coz_field(e.region), format_speedup(e.speedup_pct), e.effective_ns, e.visits);
  for (const auto& t : e.throughput) {
    out += fmt::format("throughput-point\tname={}\tdelta={}\n", coz_field(t.name), t.delta);
  }
  for (const auto& l : e.latency) {
    out += fmt::format("latency-point\tname={}\tarrivals={}\tdepartures={}\tdifference={}\n", coz_field(l.name),
                       l.arrivals, l.departures, l.difference);
  }
  return out;
}

std::string format_coz_runtime(uint64_t runtime_ns, const std::vector<RegionCount>& samples) {
  std::string out = fmt::format("runtime\ttime={}\n", runtime_ns);
  for (const auto& s : samples) {
    if (s.count > 0) out += fmt::format("samples\tlocation={}\tcount={}\n", coz_field(s.name), s.count);
  }
  return out;
}

std::string format_json_experiment(const ExperimentRecord& e) {
  using ojson = nlohmann::ordered_json;
  ojson progress = ojson::object(), latency = ojson::object();
  for (const auto& t : e.throughput) progress[t.name] = t.delta;
  for (const auto& l : e.latency) {
    const ojson obj = {{"arrivals", l.arrivals}, {"departures", l.departures}, {"difference", l.difference}};
    progress[l.name] = obj;
    latency[l.name] = obj;
  }
  ojson j = {{"type", "experiment"},
             {"index", e.index},
             {"region", e.region},
             {"speedup", static_cast<double>(std::min<uint32_t>(e.speedup_pct, 100)) / 100.0},
             {"duration_ns", e.duration_ns},
             {"delay_ns", e.delay_ns},
             {"effective_ns", e.effective_ns},
             {"visits", e.visits},
             {"region_ns", e.region_ns},
             {"progress", std::move(progress)},
             {"latency", std::move(latency)}};
  if (!e.handlers.empty()) {
    // In the given order (the controller's: most time first) while the
    // object stays within kHandlersBudget bytes, so that an experiment line
    // still fits in a page (its group is then written atomically with
    // respect to a kill, ProfileWriter); the rest are counted.
    ojson handlers = ojson::object();
    size_t size = std::string_view(",\"handlers\":{}").size();
    size_t kept = 0;
    for (const RegionTime& h : e.handlers) {
      ojson item = {{"visits", h.visits}, {"ns", h.ns}};
      const size_t item_size = dump(ojson(h.name)).size() + 1 + dump(item).size() + (kept == 0 ? 0 : 1);
      if (size + item_size > kHandlersBudget) break;
      handlers[h.name] = std::move(item);
      size += item_size;
      ++kept;
    }
    j["handlers"] = std::move(handlers);
    if (kept < e.handlers.size()) j["handlers_omitted"] = e.handlers.size() - kept;
  }
  std::string out = dump(j);
  out.insert(out.size() - 1, e.origin_json);  // before the closing brace
  out += '\n';
  return out;
}

namespace {
// Opens `path` for appending and returns the fd and the file's size. A last
// line without its newline (a group larger than a page cut by a kill, see the
// header) is truncated away so the next record does not glue onto it.
int open_append(const std::string& path, uint64_t& size) {
  size = 0;
  if (path.empty()) return -1;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::system_error(errno, std::generic_category(), "coact causal: cannot open profile output '" + path + "'");
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    off_t end = st.st_size;
    char c = 0;
    if (::pread(fd, &c, 1, end - 1) == 1 && c != '\n') {
      char buf[4096];
      off_t keep = 0;
      for (off_t pos = end; pos > 0 && keep == 0;) {
        const off_t from = pos > off_t(sizeof buf) ? pos - off_t(sizeof buf) : 0;
        const ssize_t n = ::pread(fd, buf, static_cast<size_t>(pos - from), from);
        if (n <= 0) break;
        for (ssize_t i = n; i-- > 0;) {
          if (buf[i] == '\n') {
            keep = from + i + 1;
            break;
          }
        }
        pos = from;
      }
      if (::ftruncate(fd, keep) == 0) {
        std::fprintf(stderr, "coact causal: '%s' ended in a partial record (%lld bytes, a killed run); removed it\n",
                     path.c_str(), static_cast<long long>(end - keep));
        end = keep;
      }
    }
    size = static_cast<uint64_t>(end);
  }
  return fd;
}
}  // namespace

ProfileWriter::ProfileWriter(std::string coz_path, std::string json_path)
    : coz_path_(std::move(coz_path)), json_path_(std::move(json_path)) {
  const long page = ::sysconf(_SC_PAGESIZE);
  page_bytes_ = page > 0 ? static_cast<uint64_t>(page) : 4096;
  coz_fd_ = open_append(coz_path_, coz_offset_);
  try {
    json_fd_ = open_append(json_path_, json_offset_);
  } catch (...) {
    if (coz_fd_ >= 0) ::close(coz_fd_);
    throw;
  }
}

ProfileWriter::~ProfileWriter() {
  if (coz_fd_ >= 0) ::close(coz_fd_);
  if (json_fd_ >= 0) ::close(json_fd_);
}

void ProfileWriter::write_group(int fd, const std::string& path, uint64_t& offset, std::string_view group) {
  if (fd < 0) return;
  // Keep a group that fits in a page inside one page: the kernel copies a
  // write page by page and a fatal signal stops it between pages only.
  const bool json = fd == json_fd_;
  const uint64_t in_page = offset % page_bytes_;
  std::string buf;
  if (group.size() <= page_bytes_ && in_page + group.size() > page_bytes_) {
    const uint64_t gap = page_bytes_ - in_page;
    if (!json) {
      buf.assign(gap, '\n');  // blank lines: skipped by Coz's viewer and coact-plot
    } else if (gap >= kJsonPadRecord.size() + 1) {
      // One whole JSON line up to the boundary, so line-by-line readers see
      // only valid JSON: {"type":"pad"} + spaces + newline.
      buf.assign(kJsonPadRecord);
      buf.append(gap - kJsonPadRecord.size() - 1, ' ');
      buf.push_back('\n');
    }
    // else: a gap too small for a pad record, which our own writes never
    // leave (below); only a file an older writer padded can have one. The
    // group then crosses the boundary unprotected.
  }
  const uint64_t group_at = offset + buf.size();
  buf.append(group);
  if (json && !group.empty() && group.back() == '\n') {
    // Never leave a gap too small for a pad record: fill it with spaces
    // inside the group's last line (JSON allows trailing whitespace), when
    // the group then still ends inside the page it started in.
    const uint64_t end = (group_at + group.size()) % page_bytes_;
    const uint64_t rest = end == 0 ? 0 : page_bytes_ - end;
    if (rest > 0 && rest < kJsonPadRecord.size() + 1 && group_at % page_bytes_ + group.size() + rest <= page_bytes_) {
      buf.insert(buf.size() - 1, rest, ' ');
    }
  }
  std::string_view data(buf);
  // One write(2) for padding and group; the loop only continues after a short
  // write (a full disk, or a signal handler interrupting a large write).
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!warned_) {
        warned_ = true;
        std::fprintf(stderr, "coact causal: cannot write profile '%s': %s (records are being lost)\n", path.c_str(),
                     n < 0 ? std::strerror(errno) : "short write");
      }
      return;
    }
    offset += static_cast<uint64_t>(n);
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void ProfileWriter::startup(uint64_t time_ns, uint64_t tsc_hz, uint64_t seed, std::string_view options_json,
                            std::string_view origin_json) {
  write_group(coz_fd_, coz_path_, coz_offset_, format_coz_startup(time_ns));
  std::string line = dump({{"type", "startup"},
                           {"time_ns", time_ns},
                           {"tsc_hz", tsc_hz},
                           {"pid", static_cast<long>(::getpid())},
                           {"seed", seed},
                           {"options", options_json.empty() ? nlohmann::ordered_json::object()
                                                            : nlohmann::ordered_json::parse(options_json)}});
  line.insert(line.size() - 1, origin_json);  // before the closing brace
  line += '\n';
  write_group(json_fd_, json_path_, json_offset_, line);
}

void ProfileWriter::experiment(const ExperimentRecord& e) {
  write_group(coz_fd_, coz_path_, coz_offset_, format_coz_experiment(e));
  write_group(json_fd_, json_path_, json_offset_, format_json_experiment(e));
}

void ProfileWriter::runtime(uint64_t runtime_ns, const std::vector<RegionCount>& samples) {
  write_group(coz_fd_, coz_path_, coz_offset_, format_coz_runtime(runtime_ns, samples));
  write_group(json_fd_, json_path_, json_offset_, dump({{"type", "runtime"}, {"time_ns", runtime_ns}}) + "\n");
}

void ProfileWriter::json_line(std::string_view object) {
  std::string line(object);
  line.push_back('\n');
  write_group(json_fd_, json_path_, json_offset_, line);
}

}  // namespace coact::causal
