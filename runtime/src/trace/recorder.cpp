// runtime/src/trace/recorder.cpp: Ring and Session (recorder.hpp).
#include "recorder.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <type_traits>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <coact/causal/region.hpp>

#include "../detail/sync.hpp"

namespace coact::detail::trace {

Ring::Ring(uint16_t index, uint32_t capacity) : index_(index), cap_(capacity) {
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
    if (window_cv_.wait_until(lk, at(info_.window_start_ns + info_.window_duration_ns),
                              [&] { return window_stop_; })) {
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

bool Session::write(const std::string& path) {
  std::lock_guard lk(write_mu_);
  std::vector<Event> all;
  for (const auto& r : rings_) {
    std::vector<Event> v = r->snapshot();
    all.insert(all.end(), v.begin(), v.end());
  }
  std::string doc;
  try {
    doc = to_json(all, info_, boot_ns_, dropped(), uint32_t(rings_.size()));
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "coact: trace: cannot build the trace for '%s': %s\n", path.c_str(), ex.what());
    return false;
  }
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      std::fprintf(stderr, "coact: trace: COACT_TRACE_OUTPUT=%s: cannot write '%s': %s\n", path.c_str(), tmp.c_str(),
                   std::strerror(errno));
      return false;
    }
    out.write(doc.data(), std::streamsize(doc.size()));
    out.flush();
    if (!out) {
      std::fprintf(stderr, "coact: trace: COACT_TRACE_OUTPUT=%s: write failed\n", path.c_str());
      ::unlink(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "coact: trace: COACT_TRACE_OUTPUT=%s: cannot rename '%s': %s\n", path.c_str(), tmp.c_str(),
                 std::strerror(errno));
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace coact::detail::trace
