// tools/coact-trace/summary.cpp: span statistics (summary.hpp).
#include "summary.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace coact::trace_tool {

Percentiles percentiles(std::vector<double>& v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) {
    size_t k = size_t(std::ceil(q * double(v.size())));
    if (k == 0) k = 1;
    return v[std::min(k, v.size()) - 1];
  };
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  p.max = v.back();
  return p;
}

Summary summarize(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    throw std::runtime_error("not a trace-event JSON object (expected {\"traceEvents\": [...]})");
  }
  Summary s;
  if (doc.contains("otherData") && doc["otherData"].is_object()) {
    const auto& o = doc["otherData"];
    s.events = o.value("events", uint64_t(0));
    s.dropped = o.value("dropped", uint64_t(0));
    s.rate = o.value("rate", 0.0);
    s.burst = o.value("burst", false);
  }
  std::map<std::string, std::array<std::vector<double>, 5>> by_kind;
  std::map<std::string, RecruitRow> recruit;
  for (const auto& e : doc["traceEvents"]) {
    if (!e.is_object()) continue;
    const std::string ph = e.value("ph", "");
    const std::string cat = e.value("cat", "");
    const std::string name = e.value("name", "");
    if (ph == "X" && cat == "handler") {
      const auto& a = e.contains("args") ? e["args"] : nlohmann::json::object();
      if (!a.contains("t_sent")) {
        ++s.untraced_handlers;
        continue;
      }
      auto& v = by_kind[name];
      v[0].push_back(a.value("construct_us", 0.0));
      v[1].push_back(a.value("queued_us", 0.0));
      v[2].push_back(a.value("drain_us", 0.0));
      v[3].push_back(a.value("handler_us", 0.0));
      v[4].push_back(a.value("depth", 0.0));
      ++s.mails;
    } else if (ph == "i" && name == "recruit") {
      const auto& a = e["args"];
      auto& r = recruit[a.value("from", "?")];
      r.region = a.value("from", "?");
      ++r.decisions;
      if (a.value("gate", "") == "width") ++r.width_gate;
      const uint64_t k = a.value("recruited", uint64_t(0));
      if (k > 0) ++r.recruited_flushes;
      r.siblings += k;
    } else if (ph == "i" && name == "park") {
      ++s.parks;
    } else if (ph == "i" && name.rfind("timer fire", 0) == 0) {
      ++s.timer_fires;
    }
  }
  for (auto& [name, v] : by_kind) {
    KindRow row;
    row.region = name;
    row.mails = v[0].size();
    for (size_t i = 0; i < v.size(); ++i) row.spans[i] = percentiles(v[i]);
    s.kinds.push_back(std::move(row));
  }
  std::sort(s.kinds.begin(), s.kinds.end(), [](const KindRow& a, const KindRow& b) {
    return a.mails != b.mails ? a.mails > b.mails : a.region < b.region;
  });
  for (auto& [name, r] : recruit) s.recruit.push_back(r);
  return s;
}

std::string to_text(const Summary& s) {
  std::string out =
      fmt::format("{} traced mails ({} events, {} dropped; rate {}, burst {}); {} parks, {} timer fires\n", s.mails,
                  s.events, s.dropped, s.rate, s.burst ? "on" : "off", s.parks, s.timer_fires);
  out += "spans in us, p50 / p90 / p99 (depth: mails ahead at deposit)\n";
  out += fmt::format("{:>8}  {:>26}  {:>26}  {:>26}  {:>26}  {:>14}  {}\n", "mails", "construct", "queued", "drain",
                     "handler", "depth", "recipient handler");
  for (const KindRow& r : s.kinds) {
    auto cell = [](const Percentiles& p) { return fmt::format("{:.1f} / {:.1f} / {:.1f}", p.p50, p.p90, p.p99); };
    out += fmt::format("{:>8}  {:>26}  {:>26}  {:>26}  {:>26}  {:>14}  {}\n", r.mails, cell(r.spans[0]),
                       cell(r.spans[1]), cell(r.spans[2]), cell(r.spans[3]),
                       fmt::format("{:.0f}/{:.0f}/{:.0f}", r.spans[4].p50, r.spans[4].p90, r.spans[4].p99), r.region);
  }
  if (!s.recruit.empty()) {
    out +=
        "burst recruitment per producer handler: decisions, by the width gate (untrusted cost), flushes that "
        "recruited, siblings\n";
    for (const RecruitRow& r : s.recruit) {
      out += fmt::format("{:>8} {:>8} {:>8} {:>8}  {}\n", r.decisions, r.width_gate, r.recruited_flushes, r.siblings,
                         r.region);
    }
  }
  return out;
}

nlohmann::json to_json(const Summary& s) {
  nlohmann::json kinds = nlohmann::json::array();
  for (const KindRow& r : s.kinds) {
    nlohmann::json row = {{"region", r.region}, {"mails", r.mails}};
    for (size_t i = 0; i < kSpans.size(); ++i) {
      const Percentiles& p = r.spans[i];
      row[std::string(kSpans[i]) + (i < 4 ? "_us" : "")] = {
          {"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"max", p.max}};
    }
    kinds.push_back(row);
  }
  nlohmann::json rec = nlohmann::json::array();
  for (const RecruitRow& r : s.recruit) {
    rec.push_back({{"region", r.region},
                   {"decisions", r.decisions},
                   {"width_gate", r.width_gate},
                   {"recruited_flushes", r.recruited_flushes},
                   {"siblings", r.siblings}});
  }
  return {{"mails", s.mails},
          {"events", s.events},
          {"dropped", s.dropped},
          {"rate", s.rate},
          {"burst", s.burst},
          {"parks", s.parks},
          {"timer_fires", s.timer_fires},
          {"untraced_handlers", s.untraced_handlers},
          {"kinds", kinds},
          {"recruit", rec}};
}

}  // namespace coact::trace_tool
