// runtime/src/trace/export.cpp: the recorded events as a Chrome trace-event
// JSON document ("Trace Event Format", the JSON Object Format that
// chrome://tracing, Perfetto's UI and trace_processor read), written with
// nlohmann-json.
//
// Layout: pid 1 is the runtime; tid i+1 is worker i, tid workers+1 every
// other thread (roots: mail sent from outside the pool). Per traced mail:
// the recipient's handler slice (ph X, named like the causal region,
// "Type::on(Msg)"), carrying the five timestamps and the four spans in its
// args, and a flow arrow (ph s at the send, in the sender's flush slice;
// ph f with bp "e" at the handler's start). Parks are "parked" slices with
// "park" / "wake" instants, timer fires and burst recruitment instants, and
// the causal controller's selection a counter track ("causal experiment":
// speedup_pct, region). otherData holds the session (rate, burst, workers,
// events, dropped). Timestamps: microseconds since the runtime booted.
#include <cxxabi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <queue>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include <coact/causal/region.hpp>
#include <coact/runtime/message_kind.hpp>

#include "recorder.hpp"

namespace coact::detail::trace {
namespace {

using nlohmann::json;

std::string type_name(const void* ti) {
  if (ti == nullptr) return "?";
  return demangle(*static_cast<const std::type_info*>(ti));
}

const char* timer_reason(uint32_t r) {
  switch (r) {
    case 0: return "sleep";  // TimerReason (detail/timer_heap.hpp)
    case 1: return "wait_timeout";
    case 2: return "send";
    default: return "?";
  }
}

std::string pid_text(uint64_t a) { return std::to_string(a >> 32) + "." + std::to_string(a & 0xffffffffu); }

}  // namespace

std::string to_json(const std::vector<Event>& recorded, const SessionInfo& info, uint64_t boot_ns, uint64_t dropped,
                    uint32_t rings) {
  // Mail ids: send and handler events carry the mail's key (hooks.hpp
  // mail_key: the envelope's address and trace tag). An envelope is reused
  // only after its mail was consumed, so a handler's send is the latest send
  // of the same key at or before its t_received. Each send gets its ordinal
  // as the mail id; a handler whose send was dropped (full ring) gets 0.
  std::vector<Event> events = recorded;
  {
    std::unordered_map<uint64_t, std::vector<std::pair<uint64_t, size_t>>> by_key;  // (t_sent, index)
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i].type == EventType::send && events[i].id != 0) by_key[events[i].id].emplace_back(events[i].t1, i);
    }
    for (auto& [key, v] : by_key) std::sort(v.begin(), v.end());
    for (Event& e : events) {
      if (e.type != EventType::handler || e.id == 0) continue;
      auto it = by_key.find(e.id);
      e.id = 0;
      if (it == by_key.end()) continue;
      auto at = std::upper_bound(it->second.begin(), it->second.end(), std::make_pair(e.t1, SIZE_MAX));
      if (at != it->second.begin()) e.id = std::prev(at)->second + 1;
    }
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i].type == EventType::send && events[i].id != 0) events[i].id = i + 1;
    }
  }
  std::map<std::pair<const void*, uint32_t>, std::string> names;
  auto region = [&](const void* ti, uint32_t kind) -> const std::string& {
    auto [it, fresh] = names.try_emplace({ti, kind});
    if (fresh) it->second = type_name(ti) + "::on(" + kind_name(kind) + ")";
    return it->second;
  };
  auto us = [&](uint64_t t) { return t >= boot_ns ? double(t - boot_ns) / 1000.0 : -double(boot_ns - t) / 1000.0; };
  auto tid = [&](uint16_t ring) { return int(ring) + 1; };

  std::unordered_map<uint64_t, const Event*> sends;
  std::unordered_map<uint64_t, const Event*> handled;
  for (const Event& e : events) {
    if (e.type == EventType::send) sends.emplace(e.id, &e);
    if (e.type == EventType::handler && e.id != 0) handled.emplace(e.id, &e);
  }
  // Enqueue depth at deposit: per recipient, traced mail sent before this one
  // (t_sent, then send order) and not yet received at this one's t_sent.
  std::unordered_map<uint64_t, uint32_t> depth;
  {
    std::unordered_map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> by_recipient;  // (sent, id)
    for (auto& [id, s] : sends) {
      if (handled.count(id)) by_recipient[s->a].emplace_back(s->t1, id);
    }
    for (auto& [who, v] : by_recipient) {
      std::sort(v.begin(), v.end());
      std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> pending;  // t_received
      for (auto& [sent, id] : v) {
        while (!pending.empty() && pending.top() <= sent) pending.pop();
        depth[id] = uint32_t(pending.size());
        pending.push(handled[id]->t1);
      }
    }
  }

  json ev = json::array();
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0}, {"args", {{"name", "coact runtime"}}}});
  for (uint32_t r = 0; r < rings; ++r) {
    const bool worker = r < info.workers;
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", int(r) + 1},
                  {"args", {{"name", worker ? "worker " + std::to_string(r) : std::string("other threads (roots)")}}}});
    ev.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", int(r) + 1},
                  {"args", {{"sort_index", int(r)}}}});
  }
  uint64_t flows = 0;
  for (const Event& e : events) {
    switch (e.type) {
      case EventType::handler: {
        json args = {{"actor", pid_text(e.a)}};
        if (e.flags & 1) args["resume"] = true;
        const Event* s = nullptr;
        if (e.id != 0) {
          args["mail"] = e.id;
          if (auto it = sends.find(e.id); it != sends.end()) s = it->second;
        }
        if (s != nullptr) {
          const uint64_t enq = std::max(e.t0, s->t1);
          args["from"] = s->type_info == nullptr ? std::string("root") : region(s->type_info, s->kind2);
          args["t_construct_start"] = us(s->t0);
          args["t_sent"] = us(s->t1);
          args["t_enqueue"] = us(enq);
          args["t_received"] = us(e.t1);
          args["t_finished"] = us(e.t2);
          args["construct_us"] = double(s->t1 - s->t0) / 1000.0;
          args["queued_us"] = double(enq - s->t1) / 1000.0;
          args["drain_us"] = double(e.t1 >= enq ? e.t1 - enq : 0) / 1000.0;
          args["handler_us"] = double(e.t2 - e.t1) / 1000.0;
          args["depth"] = depth[e.id];
          const int from_tid = tid(s->ring);
          ev.push_back({{"name", "mail"}, {"cat", "mail"}, {"ph", "s"}, {"id", e.id}, {"pid", 1},
                        {"tid", from_tid}, {"ts", us(s->t1)}});
          ev.push_back({{"name", "mail"}, {"cat", "mail"}, {"ph", "f"}, {"bp", "e"}, {"id", e.id}, {"pid", 1},
                        {"tid", tid(e.ring)}, {"ts", us(e.t1)}});
          ++flows;
        } else {
          args["t_received"] = us(e.t1);
          args["t_finished"] = us(e.t2);
          args["handler_us"] = double(e.t2 - e.t1) / 1000.0;
        }
        ev.push_back({{"name", region(e.type_info, e.kind)}, {"cat", "handler"}, {"ph", "X"}, {"pid", 1},
                      {"tid", tid(e.ring)}, {"ts", us(e.t1)}, {"dur", double(e.t2 - e.t1) / 1000.0},
                      {"args", std::move(args)}});
        break;
      }
      case EventType::flush:
        ev.push_back({{"name", "flush"}, {"cat", "send"}, {"ph", "X"}, {"pid", 1}, {"tid", tid(e.ring)},
                      {"ts", us(e.t1)}, {"dur", double(e.t2 - e.t1) / 1000.0},
                      {"args",
                       {{"from", e.type_info == nullptr ? std::string("?") : region(e.type_info, e.kind)},
                        {"actor", pid_text(e.a)},
                        {"mails", e.count},
                        {"construct_us", double(e.t1 - e.t0) / 1000.0}}}});
        break;
      case EventType::send:
        if (e.t2 != 0) {  // a root send (or a send outside a handler): its own slice
          ev.push_back({{"name", "send"}, {"cat", "send"}, {"ph", "X"}, {"pid", 1}, {"tid", tid(e.ring)},
                        {"ts", us(e.t1)}, {"dur", double(e.t2 - e.t1) / 1000.0},
                        {"args", {{"to", pid_text(e.a)}, {"message", kind_name(e.kind)}}}});
        }
        break;
      case EventType::park:
        ev.push_back({{"name", "parked"}, {"cat", "idle"}, {"ph", "X"}, {"pid", 1}, {"tid", tid(e.ring)},
                      {"ts", us(e.t0)}, {"dur", double(e.t1 - e.t0) / 1000.0},
                      {"args", {{"timed_out", (e.flags & 1) != 0}, {"timekeeper", (e.flags & 2) != 0}}}});
        ev.push_back({{"name", "park"}, {"cat", "idle"}, {"ph", "i"}, {"s", "t"}, {"pid", 1}, {"tid", tid(e.ring)},
                      {"ts", us(e.t0)}});
        ev.push_back({{"name", "wake"}, {"cat", "idle"}, {"ph", "i"}, {"s", "t"}, {"pid", 1}, {"tid", tid(e.ring)},
                      {"ts", us(e.t1)}, {"args", {{"timed_out", (e.flags & 1) != 0}}}});
        break;
      case EventType::timer:
        ev.push_back({{"name", std::string("timer fire (") + timer_reason(e.kind) + ")"}, {"cat", "timer"},
                      {"ph", "i"}, {"s", "t"}, {"pid", 1}, {"tid", tid(e.ring)}, {"ts", us(e.t0)},
                      {"args", {{"late_us", e.t0 >= e.t1 ? double(e.t0 - e.t1) / 1000.0 : 0.0}}}});
        break;
      case EventType::recruit:
        ev.push_back({{"name", "recruit"}, {"cat", "burst"}, {"ph", "i"}, {"s", "t"}, {"pid", 1}, {"tid", tid(e.ring)},
                      {"ts", us(e.t0)},
                      {"args",
                       {{"from", e.type_info == nullptr ? std::string("?") : region(e.type_info, e.kind)},
                        {"groups", e.kind2},
                        {"recruited", e.count},
                        {"gate", (e.flags & 1) ? "width" : "cost"}}}});
        break;
      case EventType::experiment: {
        const std::string name = e.id == 0 ? std::string("(none)") : causal::region_name(uint32_t(e.id));
        ev.push_back({{"name", "causal experiment"}, {"cat", "causal"}, {"ph", "C"}, {"pid", 1}, {"ts", us(e.t0)},
                      {"args", {{"speedup_pct", e.count}, {"region", e.id}}}});
        ev.push_back({{"name", e.id == 0 ? std::string("experiment end") : "experiment: " + name},
                      {"cat", "causal"}, {"ph", "i"}, {"s", "g"}, {"pid", 1}, {"tid", 0}, {"ts", us(e.t0)},
                      {"args", {{"region", name}, {"speedup_pct", e.count}}}});
        break;
      }
    }
  }
  json doc = {{"traceEvents", std::move(ev)},
              {"displayTimeUnit", "ns"},
              {"otherData",
               {{"coact_trace", 1},
                {"rate", info.rate},
                {"burst", info.burst},
                {"workers", info.workers},
                {"events", events.size()},
                {"dropped", dropped},
                {"flows", flows}}}};
  return doc.dump();
}

}  // namespace coact::detail::trace
