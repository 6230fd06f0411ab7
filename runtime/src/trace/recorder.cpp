// runtime/src/trace/recorder.cpp: Ring and Session (recorder.hpp).
#include "recorder.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <type_traits>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <coact/causal/region.hpp>
#include <coact/options.hpp>

#include "../detail/sync.hpp"

namespace coact::detail::trace {

Ring::Ring(uint16_t index, uint32_t capacity) : index_(index), cap_(capacity) {
  static_assert(sizeof(Slot) == kSlotBytes);
  void* p = ::mmap(nullptr, sizeof(Slot) * size_t(cap_), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    cap_ = 0;
    return;
  }
  slots_ = static_cast<Slot*>(p);
  for (uint32_t i = 0; i < cap_; ++i) ::new (&slots_[i]) Slot();
}

Ring::~Ring() {
  static_assert(std::is_trivially_destructible_v<Slot>);
  if (slots_ != nullptr) ::munmap(slots_, sizeof(Slot) * size_t(cap_));
}

std::vector<Event> Ring::snapshot() const {
  const uint64_t n = std::min<uint64_t>(next_.load(std::memory_order_acquire), cap_);
  std::vector<Event> out;
  out.reserve(size_t(n));
  for (uint64_t i = 0; i < n; ++i) {
    // acquire: pairs with the writer's release; a slot still being written is skipped.
    if (slots_[i].ready.load(std::memory_order_acquire) != 0) out.push_back(slots_[i].ev);
  }
  return out;
}

Session::Session(SessionInfo info, uint32_t capacity, std::string output)
    : info_(info), output_(std::move(output)), boot_ns_(sync::now_ns()), all_(info.rate >= 1) {
  // The file is written at the end of the run (or the window): a path that
  // cannot be written is a bad option, said at boot, not after the run.
  if (!output_.empty()) {
    const std::string probe = output_ + ".partial";
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      throw options::option_error("COACT_TRACE_OUTPUT=" + output_ + ": cannot write '" + probe +
                                  "': " + std::strerror(errno) + " (expected a writable file path)");
    }
    ::close(fd);
    ::unlink(probe.c_str());
  }
  // threshold_: P(xorshift state < threshold) = rate.
  const double t = std::ldexp(info.rate, 64);
  threshold_ = t >= 18446744073709551615.0 ? UINT64_MAX : uint64_t(t);
  for (uint32_t i = 0; i <= info.workers; ++i) rings_.push_back(std::make_unique<Ring>(uint16_t(i), capacity));
  register_session(this);
}

Session::~Session() {
  stop_window();
  unregister_session(this);
}

void Session::start(std::function<void(bool)> gate) {
  gate_ = std::move(gate);
  if (info_.window_start_ns == 0 && info_.window_duration_ns == 0) {
    recording_.store(true, std::memory_order_relaxed);
    gate_(true);
    return;
  }
  window_thread_ = std::thread([this] {
    using clock = std::chrono::steady_clock;  // sync::now_ns's clock
    const auto at = [&](uint64_t ns) { return clock::time_point(std::chrono::nanoseconds(boot_ns_ + ns)); };
    std::unique_lock lk(window_mu_);
    if (window_cv_.wait_until(lk, at(info_.window_start_ns), [&] { return window_stop_; })) return;
    recording_.store(true, std::memory_order_relaxed);
    gate_(true);
    if (info_.window_duration_ns == 0) return;  // until shutdown
    if (window_cv_.wait_until(lk, at(info_.window_start_ns + info_.window_duration_ns), [&] { return window_stop_; })) {
      return;  // shutdown inside the window: the shutdown write has it
    }
    gate_(false);
    recording_.store(false, std::memory_order_relaxed);
    lk.unlock();
    if (write_output()) window_written_.store(true, std::memory_order_release);
  });
}

void Session::stop_window() {
  {
    std::lock_guard lk(window_mu_);
    window_stop_ = true;
  }
  window_cv_.notify_all();
  if (window_thread_.joinable()) window_thread_.join();
}

uint64_t Session::dropped() const noexcept {
  uint64_t d = 0;
  for (const auto& r : rings_) d += r->dropped();
  return d;
}

void Session::poll_experiment(Ring& r, uint64_t now_ns) noexcept {
  const causal::Selection sel = causal::current_selection();
  const uint64_t key = ((uint64_t(sel.epoch) << 32) | sel.region) + 1;
  uint64_t seen = selection_.load(std::memory_order_relaxed);
  if (seen == key) return;
  if (seen == 0 && sel.region == causal::kNoRegion) {  // no sweep ran yet: nothing to show
    selection_.compare_exchange_strong(seen, key, std::memory_order_relaxed);
    return;
  }
  if (!selection_.compare_exchange_strong(seen, key, std::memory_order_relaxed)) return;
  Event e{};
  e.type = EventType::experiment;
  e.t0 = now_ns;
  e.id = sel.region;
  e.count = sel.region == causal::kNoRegion ? 0 : sel.speedup_pct;
  r.append(e);
}

bool Session::write_output(bool signalled, uint64_t since_ns) {
  if (output_.empty()) return true;
  const uint64_t deadline = signalled && info_.export_deadline_ns != 0 ? since_ns + info_.export_deadline_ns : 0;
  return write(output_, deadline);
}

bool Session::write(const std::string& path, uint64_t deadline_at_ns) {
  std::lock_guard lk(write_mu_);
  // One fixed name, so a reader (or a test) finds what a killed write left.
  const std::string tmp = path + ".partial";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "coact: trace: COACT_TRACE_OUTPUT=%s: cannot write '%s': %s\n", path.c_str(), tmp.c_str(),
                 std::strerror(errno));
    return false;
  }
  std::vector<const Ring*> rings;
  for (const auto& r : rings_) rings.push_back(r.get());
  ExportResult res;
  try {
    res = export_json(fd, rings, info_, boot_ns_, dropped(), deadline_at_ns);
  } catch (const std::exception& ex) {  // std::bad_alloc of the index
    std::fprintf(stderr, "coact: trace: cannot write the trace to '%s': %s\n", tmp.c_str(), ex.what());
    ::close(fd);
    ::unlink(tmp.c_str());
    return false;
  }
  const int werr = errno;
  if (::close(fd) != 0 && res.ok) res.ok = false;
  if (!res.ok) {
    std::fprintf(stderr, "coact: trace: COACT_TRACE_OUTPUT=%s: write failed: %s\n", path.c_str(), std::strerror(werr));
    ::unlink(tmp.c_str());
    return false;
  }
  if (res.cut != 0) {
    std::fprintf(stderr,
                 "coact: trace: COACT_TRACE_EXPORT_DEADLINE_MS=%llu passed: %llu of %llu recorded events not written "
                 "to '%s' (otherData.export_cut)\n",
                 static_cast<unsigned long long>(info_.export_deadline_ns / 1'000'000),
                 static_cast<unsigned long long>(res.cut), static_cast<unsigned long long>(res.recorded), path.c_str());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "coact: trace: COACT_TRACE_OUTPUT=%s: cannot rename '%s': %s\n", path.c_str(), tmp.c_str(),
                 std::strerror(errno));
    ::unlink(tmp.c_str());
    return false;
  }
  // A full ring drops what comes after (the trace is then a prefix of the
  // run): say so, with the knobs that fix it, rather than leave a quiet gap.
  if (const uint64_t lost = dropped(); lost != 0) {
    std::fprintf(stderr,
                 "coact: trace: %llu events were dropped because a worker's ring was full (COACT_TRACE_BUFFER "
                 "events per worker; otherData.dropped in '%s'): raise COACT_TRACE_BUFFER, lower COACT_TRACE's "
                 "rate, or record a window (COACT_TRACE_START_MS, COACT_TRACE_DURATION_MS)\n",
                 static_cast<unsigned long long>(lost), path.c_str());
  }
  return true;
}

}  // namespace coact::detail::trace
