// bench/common/caf_support.hpp: the CAF 0.17 setup the CAF benchmark
// programs share (caf-peers, caf-timers; Debian's libcaf-dev).
//
// Provides caf_setup: an actor system whose scheduler is capped at the
// program's --workers (scheduler.max-threads; every other setting is CAF's
// default), a check that CAF started exactly that many threads, and the
// watchdog's report (actors still running); and the atoms every program's
// actors use: start_atom (begin the run) and stop_atom (quit), the
// counterparts of the coact programs' start and stop messages.
// Threads: constructed and checked by the main thread; running_actors() may
// be called from any thread (the watchdog's). Construction starts CAF's
// threads; destruction waits for them (actor_system's destructor).
// Pitfall of 0.17: actor_system_config::set takes the INI name
// ("scheduler.max-threads"), and configuration files are only read by
// parse(), which we do not call.
#pragma once

#include <caf/all.hpp>
#include <fmt/core.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace coact::bench {

using start_atom = caf::atom_constant<caf::atom("start")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;

/// The config and the actor system built from it (the system keeps a
/// reference to its config, so both live here, config first).
struct caf_setup {
  explicit caf_setup(uint32_t workers)
      : sys{cfg.set("scheduler.max-threads", int64_t(workers))} {}
  caf_setup(const caf_setup&) = delete;
  caf_setup& operator=(const caf_setup&) = delete;

  /// True if CAF started `workers` scheduler threads; else says so on stderr
  /// (naming `prog`) and returns false (the program then exits 1).
  bool has_workers(const char* prog, uint32_t workers) {
    if (sys.scheduler().num_workers() == workers) return true;
    fmt::print(stderr, "{}: asked for {} scheduler threads, CAF started {}\n", prog, workers,
               sys.scheduler().num_workers());
    return false;
  }

  /// The watchdog's report.
  std::string running_actors() { return "running actors=" + std::to_string(sys.registry().running()); }

  caf::actor_system_config cfg;
  caf::actor_system sys;
};

}  // namespace coact::bench
