// tools/coact-trace/summary.hpp: span statistics of a coact trace (Chrome
// trace-event JSON written by the runtime, runtime/src/trace/export.cpp).
//
// Spans per traced mail (docs/traces.md):
//   construct = t_sent - t_construct_start  (producer time after its first send)
//   queued    = t_enqueue - t_sent          (the scheduler's share)
//   drain     = t_received - t_enqueue      (serialization inside the job)
//   handler   = t_finished - t_received
// plus `depth`: traced mail to the same recipient sent before and not yet
// received at this one's t_sent. Percentiles: nearest rank. Pure functions;
// errors: std::runtime_error with a one-line message naming the file.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace coact::trace_tool {

inline constexpr std::array<const char*, 5> kSpans{"construct", "queued", "drain", "handler", "depth"};

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
};

struct KindRow {
  std::string region;  ///< recipient handler region, "Type::on(Msg)"
  uint64_t mails = 0;
  std::array<Percentiles, 5> spans{};  ///< in kSpans order; µs (depth: mails)
};

struct RecruitRow {
  std::string region;  ///< producer handler region
  uint64_t decisions = 0, width_gate = 0, recruited_flushes = 0, siblings = 0;
};

struct Summary {
  std::vector<KindRow> kinds;  ///< by mails, descending
  std::vector<RecruitRow> recruit;
  uint64_t events = 0, dropped = 0, mails = 0, untraced_handlers = 0, parks = 0, timer_fires = 0;
  double rate = 0;
  bool burst = false;
};

/// Nearest-rank percentiles of `v` (sorted in place). Empty: all 0.
Percentiles percentiles(std::vector<double>& v);
/// Summary of a parsed trace document. Errors: std::runtime_error (not a
/// coact trace: no traceEvents array).
Summary summarize(const nlohmann::json& doc);
std::string to_text(const Summary& s);
nlohmann::json to_json(const Summary& s);

}  // namespace coact::trace_tool
