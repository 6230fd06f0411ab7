// Hand-off cost probe (futex ping-pong), wake break-even, live EWMA estimate.
//
// The ping-pong protocol, per round trip (caller = A, helper = B):
//  1. A stamps t0, stores B's turn word = 1 (release) and FUTEX_WAKEs it.
//  2. B, parked in FUTEX_WAIT(turn_b, 0), returns (or never slept because it
//     saw 1 first), sees turn_b == 1 (acquire), resets it to 0.
//  3. B stores A's turn word = 1 (release) and FUTEX_WAKEs it, then parks on
//     turn_b again.
//  4. A, parked in FUTEX_WAIT(turn_a, 0), returns, sees 1, resets it, stamps
//     t1; one sample = (t1 - t0) / 2.
// A side may find its word already 1 at step 2/4 and not park at all (the
// partner answered before the waker's FUTEX_WAKE syscall returned); the
// sample is then still the time for control to cross and come back, which is
// what a scheduler hand-off costs on this machine.
// No lost wake-up: FUTEX_WAIT re-checks the word == 0 inside the kernel under
// the futex hash-bucket lock, so a store + WAKE that lands between our load
// and the syscall makes the WAIT return EAGAIN instead of sleeping.
#include <coact/calibrate/handoff.hpp>
#include <coact/options.hpp>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include <coact/calibrate/calibration_file.hpp>

namespace coact::calibrate {
namespace {

using std::chrono::nanoseconds;

// 128-bit intermediates (GCC/Clang extension; __extension__ keeps -Wpedantic quiet).
__extension__ typedef unsigned __int128 u128;

[[noreturn]] void futex_abort(const char* op, int err) {
  std::fprintf(stderr, "coact: fatal: futex %s failed in the hand-off probe: %s\n", op, std::strerror(err));
  std::abort();
}

// FUTEX_WAIT_PRIVATE while *word == 0; returns once it reads non-zero.
void park_until_set(uint32_t* word) {
  std::atomic_ref<uint32_t> w(*word);
  while (w.load(std::memory_order_acquire) == 0) {
    if (::syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 0u, nullptr, nullptr, 0) != 0) {
      const int err = errno;
      if (err != EAGAIN && err != EINTR) futex_abort("WAIT", err);
    }
  }
  w.store(0, std::memory_order_relaxed);  // only this thread waits on / resets its own word
}

// Sets *word = 1 (release: the sample stamp and the turn are visible to the
// woken side) and wakes its one waiter.
void set_and_wake(uint32_t* word) {
  std::atomic_ref<uint32_t>(*word).store(1, std::memory_order_release);
  if (::syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0) < 0) futex_abort("WAKE", errno);
}

// One side's turn word, on its own cache line. Accessed only through
// std::atomic_ref (and by the kernel in FUTEX_WAIT).
//  - Set to 1 by the *other* side (release store in set_and_wake): the
//    release/acquire pair orders the partner's earlier writes before the
//    owner's continuation (the probe publishes no data, but the reset below
//    relies on this chain).
//  - Read by the owner (acquire load in park_until_set) to see its turn.
//  - Reset to 0 by the owner (relaxed): no one else writes it until the owner
//    has set the partner's word (release) and the partner has acquired that,
//    so the next set of this word happens-after the reset.
struct alignas(64) TurnWord {
  uint32_t value = 0;
};

}  // namespace

HandoffProbeResult probe_handoff_cost(const HandoffProbeOptions& options) {
  if (options.round_trips == 0) throw std::invalid_argument("probe_handoff_cost: round_trips must be >= 1");
  const uint64_t total = uint64_t{options.round_trips} + options.warmup_round_trips;

  TurnWord turn_a;  // A parks on it; B sets it
  TurnWord turn_b;  // B parks on it; A sets it
  std::thread helper([&] {
    for (uint64_t i = 0; i < total; ++i) {
      park_until_set(&turn_b.value);
      set_and_wake(&turn_a.value);
    }
  });

  std::vector<nanoseconds> samples;
  samples.reserve(options.round_trips);
  for (uint64_t i = 0; i < total; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    set_and_wake(&turn_b.value);
    park_until_set(&turn_a.value);
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= options.warmup_round_trips) samples.push_back((t1 - t0) / 2);
  }
  helper.join();

  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  HandoffProbeResult r;
  r.samples = static_cast<uint32_t>(n);
  r.median = samples[n / 2];
  r.p10 = samples[n / 10];
  r.p90 = samples[std::min(n - 1, n * 9 / 10)];
  r.min = samples.front();
  r.max = samples.back();
  return r;
}

namespace {
constexpr int64_t kMaxSampleNs = 1'000'000'000;  // samples clamped to 0..1 s

uint64_t to_fixed(nanoseconds ns) noexcept {
  const int64_t v = std::clamp<int64_t>(ns.count(), 0, kMaxSampleNs);
  return static_cast<uint64_t>(v) << HandoffEstimate::kFracBits;
}
}  // namespace

HandoffEstimate::HandoffEstimate(nanoseconds initial, std::optional<nanoseconds> pin) noexcept
    : cost_fp_(to_fixed(pin ? *pin : initial)), pinned_(pin.has_value()) {}

void HandoffEstimate::observe(nanoseconds sample) noexcept {
  if (pinned_) return;
  // x' = x + (s - x) / 16 in signed fixed point; |s - x| < 2^38, no overflow.
  const int64_t s = static_cast<int64_t>(to_fixed(sample));
  uint64_t cur = cost_fp_.load(std::memory_order_relaxed);
  for (;;) {
    const int64_t x = static_cast<int64_t>(cur);
    const int64_t next = x + (s - x) / (int64_t{1} << kAlphaShift);
    if (cost_fp_.compare_exchange_weak(cur, static_cast<uint64_t>(next), std::memory_order_relaxed,
                                       std::memory_order_relaxed)) {
      return;
    }
  }
}

nanoseconds HandoffEstimate::cost() const noexcept {
  const uint64_t fp = cost_fp_.load(std::memory_order_relaxed);
  return nanoseconds(static_cast<int64_t>((fp + (uint64_t{1} << (kFracBits - 1))) >> kFracBits));
}

InitialHandoffCost initial_handoff_cost() {
  if (const auto pin = options::process().integer("COACT_HANDOFF_COST_NS")) {  // "auto": calibrate
    return {nanoseconds(static_cast<int64_t>(*pin)), HandoffCostSource::env_pin};
  }
  if (auto c = load_calibration(); c && c->cpu_model == current_cpu_model() && c->cores == online_cores()) {
    return {nanoseconds(static_cast<int64_t>(c->handoff_cost_ns)), HandoffCostSource::calibration_file};
  }
  return {probe_handoff_cost({500, 200}).median, HandoffCostSource::probed};
}

}  // namespace coact::calibrate
