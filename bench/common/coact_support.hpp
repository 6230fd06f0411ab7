// bench/common/coact_support.hpp: the coact setup the coact benchmark
// programs share (coact-peers, coact-timers).
//
// Provides coact_setup: a Runtime whose tuning is resolve_tuning() (the
// options the program's main installed with coact::options::init(argc, argv),
// which takes --coact-* arguments out of argv before the benchmark parses its
// own) with `workers` forced to the program's --workers, and a check that the
// runtime runs exactly that many workers.
// Threads: main thread only. Construction boots the runtime's workers;
// destruction is the Runtime's. Errors: a bad COACT_* setting (including the
// sweep's, found at boot) prints "<prog>: error: <what>" on stderr and exits 2.
#pragma once

#include <coact/runtime/runtime.hpp>
#include <fmt/core.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace coact::bench {

struct coact_setup {
  coact_setup(const char* prog, uint32_t workers) try : rt(tuning(prog, workers)) {
  } catch (const coact::options::option_error& e) {
    coact::options::exit_with(prog, e);
  }
  coact_setup(const coact_setup&) = delete;
  coact_setup& operator=(const coact_setup&) = delete;

  /// True if the runtime runs `workers` workers; else says so on stderr
  /// (naming `prog`) and returns false (the program then exits 1).
  bool has_workers(const char* prog, uint32_t workers) const {
    if (rt.workers() == workers) return true;
    fmt::print(stderr, "{}: asked for {} workers, the runtime has {}\n", prog, workers, rt.workers());
    return false;
  }

  coact::Runtime rt;

 private:
  static coact::SchedulerTuning tuning(const char* prog, uint32_t workers) {
    coact::SchedulerTuning t;
    try {
      t = coact::resolve_tuning();
    } catch (const coact::options::option_error& e) {
      coact::options::exit_with(prog, e);
    }
    t.workers = workers;
    return t;
  }
};

}  // namespace coact::bench
