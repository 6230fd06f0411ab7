// tuning.cpp: the scheduler's view of the resolved options
// (coact/runtime/tuning.hpp); the parsing itself is calibrate/src/options.cpp.
#include <coact/runtime/tuning.hpp>

#include <sched.h>
#include <unistd.h>

#include <algorithm>

namespace coact {
namespace {

uint32_t u32(const options::Values& v, const char* key) { return static_cast<uint32_t>(*v.integer(key)); }

}  // namespace

uint32_t SchedulerTuning::effective_workers() const {
  if (workers != 0) return std::min<uint32_t>(workers, 1024);
  long n = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n <= 0) n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<uint32_t>(std::clamp<long>(n, 1, 1024));
}

SchedulerTuning tuning_from(const options::Values& v) {
  SchedulerTuning t;
  t.workers = u32(v, "COACT_WORKERS");
  t.spin_window_us = u32(v, "COACT_SPIN_WINDOW_US");
  t.peer_steal = v.boolean("COACT_PEER_STEAL");
  t.batch_max_mails = u32(v, "COACT_BATCH_MAX_MAILS");
  t.batch_max_us = u32(v, "COACT_BATCH_MAX_US");
  t.clock_check_stride = u32(v, "COACT_CLOCK_CHECK_STRIDE");
  if (auto b = v.integer("COACT_LOCAL_TIME_BUDGET_US")) t.local_time_budget_us = static_cast<uint32_t>(*b);
  t.handoff_cost_ns = v.integer("COACT_HANDOFF_COST_NS");
  t.local_sticky_max = u32(v, "COACT_LOCAL_STICKY_MAX");
  t.local_chain_backstop = u32(v, "COACT_LOCAL_CHAIN_BACKSTOP");
  t.burst = v.boolean("COACT_BURST");
  t.burst_ring_bytes = u32(v, "COACT_BURST_RING_BYTES");
  t.burst_recruit_min = u32(v, "COACT_BURST_RECRUIT_MIN");
  t.burst_recruit_max = u32(v, "COACT_BURST_RECRUIT_MAX");
  return t;
}

SchedulerTuning resolve_tuning() { return tuning_from(options::process()); }

SchedulerTuning resolve_tuning(const TuningSources& sources) { return tuning_from(options::resolve(sources)); }

}  // namespace coact
