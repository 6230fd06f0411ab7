// coact/causal/progress.hpp: progress points — COACT_PROGRESS, COACT_BEGIN /
// COACT_END, and handler-completion points.
//
// Provides: the progress points of a causal profile (Coz, Curtsinger & Berger,
// SOSP 2015, §2 "progress points"; libcoz/progress_point.h):
//   * throughput: COACT_PROGRESS("name") counts visits; an experiment records
//     the visits made during it (Coz "throughput-point delta");
//   * latency: COACT_BEGIN("name") counts arrivals, COACT_END("name")
//     departures; an experiment records arrivals and departures during it and
//     the number in flight at its end, arrivals_total − departures_total (Coz
//     "latency-point difference"; by Little's law latency = in-flight /
//     arrival rate, SOSP 2015 §3.3);
//   * handler completion: a throughput point named after a handler region that
//     counts every completed run of that handler, with no code change
//     (region.hpp, set_completion_handlers; the controller's
//     Options::progress_handlers). No hook visits it: its visits() are the
//     region's own visit counts while attached (region_table.cpp), so a handler
//     run pays nothing for it.
// A name is one point of one kind: using one name both with COACT_PROGRESS and
// with COACT_BEGIN/END aborts with a message naming it.
//
// Cost (Coz counts always, and so do we): every visit of a COACT_PROGRESS /
// COACT_BEGIN / COACT_END point is one relaxed
// fetch_add on the point's counter, whether or not a sweep runs; the
// experiment reads deltas. The macro's function-local static adds one
// guard-byte load (an acquire load: a plain mov on x86-64) after the first
// hit. Arrivals and departures live on different cache lines. Counters are not
// sharded per thread: a point hit by many threads at once contends on one
// cache line (measure before sharding).
//
// Threads: any thread. Registration (first hit of a name) takes a mutex and
// allocates; the function-local static makes it happen exactly once per call
// site even when many threads reach it at once ([stmt.dcl]/4).
// Memory ordering: counters are relaxed (pure counters; an experiment's delta
// may miss a visit racing with its start or end, which Coz tolerates too).
// Points are published by the registry mutex and by the static's guard.
// Lifetime: points are never freed (pointers stay valid for the process,
// including static destruction and exiting threads).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <coact/causal/hooks.hpp>  // COACT_CAUSAL_ENABLED

namespace coact::causal {

enum class ProgressKind : uint8_t { throughput, latency };

class ProgressPoint;
namespace detail {
/// The completed runs counted for handler-completion point `p`: the visits
/// of the handler regions attached to it (region_table.cpp, set_completion_handlers)
/// since they were attached. Any thread but a signal handler; takes the
/// region registry's mutex.
uint64_t handler_completion_visits(const ProgressPoint* p) noexcept;
}  // namespace detail

/// "throughput" / "latency".
std::string_view to_string(ProgressKind kind) noexcept;

class ProgressPoint {
 public:
  ProgressPoint(std::string name, ProgressKind kind, bool handler_completion)
      : name_(std::move(name)), kind_(kind), handler_completion_(handler_completion) {}
  ProgressPoint(const ProgressPoint&) = delete;
  ProgressPoint& operator=(const ProgressPoint&) = delete;

  const std::string& name() const noexcept { return name_; }
  ProgressKind kind() const noexcept { return kind_; }
  /// True for a point created by set_completion_handlers (a handler region's name).
  bool handler_completion() const noexcept { return handler_completion_; }

  /// Throughput visit. Any thread; one relaxed fetch_add.
  void visit() noexcept { count_.fetch_add(1, std::memory_order_relaxed); }
  /// Latency arrival (COACT_BEGIN). Any thread; one relaxed fetch_add.
  void arrive() noexcept { count_.fetch_add(1, std::memory_order_relaxed); }
  /// Latency departure (COACT_END). Any thread; one relaxed fetch_add.
  void depart() noexcept { departures_.fetch_add(1, std::memory_order_relaxed); }

  /// Throughput visits, or latency arrivals, since the process started. A
  /// handler-completion point is not visited by the handler hooks: its
  /// visits are its regions' completed runs while attached
  /// (detail::handler_completion_visits). Any thread; for a
  /// handler-completion point not a signal handler (it takes the region
  /// registry's mutex and sums the threads' counter blocks).
  uint64_t visits() const noexcept {
    const uint64_t n = count_.load(std::memory_order_relaxed);
    return handler_completion_ ? n + detail::handler_completion_visits(this) : n;
  }
  uint64_t arrivals() const noexcept { return count_.load(std::memory_order_relaxed); }
  uint64_t departures() const noexcept { return departures_.load(std::memory_order_relaxed); }

 private:
  const std::string name_;
  const ProgressKind kind_;
  const bool handler_completion_;
  // Visits (throughput) or arrivals (latency). Written by any visiting thread
  // (relaxed fetch_add), read by the controller (relaxed load): a counter.
  alignas(64) std::atomic<uint64_t> count_{0};
  // Departures (latency). Same protocol; its own cache line so BEGIN and END
  // threads do not share one.
  alignas(64) std::atomic<uint64_t> departures_{0};
};

/// The declared progress point `name` of `kind`, registered on first use.
/// Any thread; takes the registry mutex. Aborts with a message if `name` is
/// already a point of the other kind (a programming error). Throws
/// std::bad_alloc only if allocation fails.
ProgressPoint* progress_point(std::string_view name, ProgressKind kind);

/// The handler-completion point named `region_name` (a throughput point,
/// handler_completion() true). Any thread; takes the registry mutex.
ProgressPoint* handler_completion_point(std::string_view region_name);

/// All points registered so far, in registration order. Any thread.
std::vector<ProgressPoint*> progress_points();

}  // namespace coact::causal

#if COACT_CAUSAL_ENABLED
#define COACT_CAUSAL_PROGRESS_(name, kind, op)                                        \
  do {                                                                                \
    static ::coact::causal::ProgressPoint* const coact_progress_point_ =              \
        ::coact::causal::progress_point((name), ::coact::causal::ProgressKind::kind); \
    coact_progress_point_->op();                                                      \
  } while (0)
/// One visit of the throughput point "name".
#define COACT_PROGRESS(name) COACT_CAUSAL_PROGRESS_(name, throughput, visit)
/// An arrival at the latency point "name" (a request starts).
#define COACT_BEGIN(name) COACT_CAUSAL_PROGRESS_(name, latency, arrive)
/// A departure from the latency point "name" (a request ends).
#define COACT_END(name) COACT_CAUSAL_PROGRESS_(name, latency, depart)
#else
#define COACT_PROGRESS(name) \
  do {                       \
  } while (0)
#define COACT_BEGIN(name) \
  do {                    \
  } while (0)
#define COACT_END(name) \
  do {                  \
  } while (0)
#endif
