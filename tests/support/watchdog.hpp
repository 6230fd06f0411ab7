// tests/support/watchdog.hpp: a watchdog that turns a hang into a failure.
// Watchdog wd(seconds, "what"): if not destroyed within `seconds`, prints
// what was being waited for and aborts the test process (CTest reports the
// failure), instead of letting CI hang. Thread: construct and destroy on the
// test's thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>
#include <thread>

#include <coact/runtime/tuning.hpp>

namespace coact::test {

class Watchdog {
 public:
  Watchdog(double seconds, std::string what) : what_(std::move(what)) {
    t_ = std::thread([this, seconds] {
      std::unique_lock lk(mu_);
      if (!cv_.wait_for(lk, std::chrono::duration<double>(seconds), [&] { return done_; })) {
        std::fprintf(stderr, "WATCHDOG: '%s' did not finish within %.1f s: stall (lost wakeup?)\n",
                     what_.c_str(), seconds);
        std::fflush(stderr);
        std::abort();
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard lk(mu_);
      done_ = true;
    }
    cv_.notify_all();
    t_.join();
  }

 private:
  std::string what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread t_;
};

/// Scale factor for stress sizes: ThreadSanitizer builds run ~1/50 of the work.
#if defined(COACT_TSAN)
inline constexpr double kStressScale = 0.02;
#else
inline constexpr double kStressScale = 1.0;
#endif

/// Tuning for a test with `workers` workers and otherwise defaults; only
/// COACT_BURST from the environment (if set) applies, so a suite runs with
/// burst dispatch on and off (tests/CMakeLists.txt registers the runtime
/// suites a second time with COACT_BURST=on). Throws tuning_error on a
/// malformed value.
inline SchedulerTuning tuning_for(uint32_t workers) {
  SchedulerTuning t;
  t.workers = workers;
  if (const char* b = std::getenv("COACT_BURST")) {
    TuningSources s;
    s.env = std::vector<std::string>{std::string("COACT_BURST=") + b};
    t.burst = resolve_tuning(s).burst;
  }
  return t;
}

}  // namespace coact::test
