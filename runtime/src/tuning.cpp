// tuning.cpp: the scheduler's view of the resolved options
// (coact/runtime/tuning.hpp): its option group, each key bound to its
// SchedulerTuning member; the keys are declared and parsed in
// calibrate/src/options_table.cpp.
#include <coact/runtime/tuning.hpp>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace coact {
namespace {

// COACT_TRACE: off/on (the boolean spellings) or a fraction in (0, 1].
void read_trace(SchedulerTuning& t, const options::Values& v, std::string_view key) {
  const options::Entry& e = v.entry(key);
  const std::string& s = v.text(key);
  std::string low;
  for (char ch : s) low += char(std::tolower(static_cast<unsigned char>(ch)));
  if (low.empty() || low == "off" || low == "0" || low == "false" || low == "no") {
    t.trace = 0;
    return;
  }
  if (low == "on" || low == "1" || low == "true" || low == "yes") {
    t.trace = 1;
    return;
  }
  char* end = nullptr;
  errno = 0;
  const double r = std::strtod(s.c_str(), &end);
  const bool digits = s.find_first_not_of("0123456789.eE-+") == std::string::npos;
  if (digits && end != nullptr && *end == '\0' && errno == 0 && r > 0 && r <= 1) {
    t.trace = r;
    return;
  }
  std::string where = std::string(options::to_string(e.source));
  if (!e.origin.empty()) where += " " + e.origin;
  throw options::option_error("COACT_TRACE=" + s + " (" + where +
                              "): expected off, on, or the fraction of mail traced, 0 < r <= 1 (e.g. 0.01)");
}
std::string trace_text(const SchedulerTuning& t) {
  if (t.trace == 0) return "off";
  if (t.trace == 1) return "on";
  return std::to_string(t.trace);
}

using options::bind;

// The scheduler's option group: every key of group "scheduler" and the
// calibrate key the scheduler reads (COACT_HANDOFF_COST_NS), each bound to
// its SchedulerTuning member (coact/options_binding.hpp).
constexpr std::array kTuning{
    bind<&SchedulerTuning::workers>("COACT_WORKERS"),
    bind<&SchedulerTuning::spin_window_us>("COACT_SPIN_WINDOW_US"),
    bind<&SchedulerTuning::peer_steal>("COACT_PEER_STEAL"),
    bind<&SchedulerTuning::batch_max_mails>("COACT_BATCH_MAX_MAILS"),
    bind<&SchedulerTuning::batch_max_us>("COACT_BATCH_MAX_US"),
    bind<&SchedulerTuning::clock_check_stride>("COACT_CLOCK_CHECK_STRIDE"),
    bind<&SchedulerTuning::local_time_budget_us>("COACT_LOCAL_TIME_BUDGET_US"),
    bind<&SchedulerTuning::handoff_cost_ns>("COACT_HANDOFF_COST_NS"),
    bind<&SchedulerTuning::local_sticky_max>("COACT_LOCAL_STICKY_MAX"),
    bind<&SchedulerTuning::local_chain_backstop>("COACT_LOCAL_CHAIN_BACKSTOP"),
    bind<&SchedulerTuning::burst>("COACT_BURST"),
    bind<&SchedulerTuning::burst_ring_bytes>("COACT_BURST_RING_BYTES"),
    bind<&SchedulerTuning::burst_recruit_min>("COACT_BURST_RECRUIT_MIN"),
    bind<&SchedulerTuning::burst_recruit_max>("COACT_BURST_RECRUIT_MAX"),
    options::Binding<SchedulerTuning>{"COACT_TRACE", &read_trace, &trace_text},
    bind<&SchedulerTuning::trace_output>("COACT_TRACE_OUTPUT"),
    bind<&SchedulerTuning::trace_buffer>("COACT_TRACE_BUFFER"),
    bind<&SchedulerTuning::trace_start_ms>("COACT_TRACE_START_MS"),
    bind<&SchedulerTuning::trace_duration_ms>("COACT_TRACE_DURATION_MS"),
    bind<&SchedulerTuning::trace_export_deadline_ms>("COACT_TRACE_EXPORT_DEADLINE_MS"),
    bind<&SchedulerTuning::mailbox_stats>("COACT_MAILBOX_STATS"),
    bind<&SchedulerTuning::mailbox_bound>("COACT_MAILBOX_BOUND"),
    bind<&SchedulerTuning::blocking_threads>("COACT_BLOCKING_THREADS"),
    bind<&SchedulerTuning::blocking_queue>("COACT_BLOCKING_QUEUE"),
};

}  // namespace

std::span<const options::Binding<SchedulerTuning>> tuning_fields() noexcept { return kTuning; }

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
  options::read_all(tuning_fields(), t, v);
  return t;
}

SchedulerTuning resolve_tuning() { return tuning_from(options::process()); }

SchedulerTuning resolve_tuning(const TuningSources& sources) { return tuning_from(options::resolve(sources)); }

}  // namespace coact
