// tuning.cpp: the scheduler's view of the resolved options
// (coact/runtime/tuning.hpp); the parsing itself is calibrate/src/options.cpp.
#include <coact/runtime/tuning.hpp>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace coact {
namespace {

uint32_t u32(const options::Values& v, const char* key) { return static_cast<uint32_t>(*v.integer(key)); }

// COACT_TRACE: off/on (the boolean spellings) or a fraction in (0, 1].
double trace_rate(const options::Values& v) {
  const options::Entry& e = v.entry("COACT_TRACE");
  const std::string& s = v.text("COACT_TRACE");
  std::string low;
  for (char ch : s) low += char(std::tolower(static_cast<unsigned char>(ch)));
  if (low.empty() || low == "off" || low == "0" || low == "false" || low == "no") return 0;
  if (low == "on" || low == "1" || low == "true" || low == "yes") return 1;
  char* end = nullptr;
  errno = 0;
  const double r = std::strtod(s.c_str(), &end);
  const bool digits = s.find_first_not_of("0123456789.eE-+") == std::string::npos;
  if (digits && end != nullptr && *end == '\0' && errno == 0 && r > 0 && r <= 1) return r;
  std::string where = std::string(options::to_string(e.source));
  if (!e.origin.empty()) where += " " + e.origin;
  throw options::option_error("COACT_TRACE=" + s + " (" + where +
                              "): expected off, on, or the fraction of mail traced, 0 < r <= 1 (e.g. 0.01)");
}

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
  t.trace = trace_rate(v);
  t.trace_output = v.text("COACT_TRACE_OUTPUT");
  t.trace_buffer = u32(v, "COACT_TRACE_BUFFER");
  t.trace_start_ms = static_cast<uint64_t>(*v.integer("COACT_TRACE_START_MS"));
  t.trace_duration_ms = static_cast<uint64_t>(*v.integer("COACT_TRACE_DURATION_MS"));
  t.trace_export_deadline_ms = static_cast<uint64_t>(*v.integer("COACT_TRACE_EXPORT_DEADLINE_MS"));
  t.mailbox_stats = v.boolean("COACT_MAILBOX_STATS");
  t.mailbox_bound = u32(v, "COACT_MAILBOX_BOUND");
  t.blocking_threads = u32(v, "COACT_BLOCKING_THREADS");
  t.blocking_queue = u32(v, "COACT_BLOCKING_QUEUE");
  return t;
}

SchedulerTuning resolve_tuning() { return tuning_from(options::process()); }

SchedulerTuning resolve_tuning(const TuningSources& sources) { return tuning_from(options::resolve(sources)); }

}  // namespace coact
