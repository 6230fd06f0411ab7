// tools/coact-profile/run_report.cpp: what `coact-profile run` prints about
// the child's records (run_report.hpp), and with_flags (tool.hpp): the
// sweep's notes relayed with run's flag names, valid names and "did you
// mean" for a name that matches nothing, the ranking status, the
// per-region and profile-only summaries. Pure apart from printing on stderr.
#include "run_report.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <coact/causal/option_fields.hpp>

#include "tool.hpp"

namespace coact::profile_tool {

namespace {

using json = nlohmann::json;
namespace ca = coact::causal;

void list_names(const Records& r, const std::string& what) {
  if (!r.names) {
    std::fprintf(stderr, "  (the program wrote no list of names)\n");
    return;
  }
  const bool regions = what != "unknown_progress";
  const auto& list = (*r.names)[regions ? "regions" : "progress"];
  std::fprintf(stderr, "  valid %s names (%zu):\n", regions ? "region" : "progress point", list.size());
  for (const auto& n : list) {
    if (what == "unknown_handler" && n.value("kind", "") != "handler") continue;
    if (!regions && n.value("handler", false)) continue;
    std::fprintf(stderr, "    %s  [%s, %llu visits]\n", n.value("name", "?").c_str(), n.value("kind", "?").c_str(),
                 static_cast<unsigned long long>(n.value("visits", 0ULL)));
  }
}

// Edit distance between a and b, case-insensitive (Levenshtein, one row).
size_t edit_distance_nocase(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      const bool same =
          std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The valid name closest to the misspelt filter entry `entry` (a filter
// matches a substring, so each name is scored by its best window of the
// entry's length, +-1); "" when nothing is within a quarter of the entry's
// length (at least 1 edit). Names come from the profile's names record.
std::string closest_name(const Records& r, const std::string& what, const std::string& entry) {
  if (!r.names || entry.empty()) return {};
  const bool regions = what != "unknown_progress";
  const size_t limit = std::max<size_t>(1, entry.size() / 4);
  std::string best;
  size_t best_d = limit + 1;
  for (const auto& n : (*r.names)[regions ? "regions" : "progress"]) {
    if (what == "unknown_handler" && n.value("kind", "") != "handler") continue;
    if (!regions && n.value("handler", false)) continue;
    const std::string name = n.value("name", "");
    auto consider = [&](const std::string& window) {
      const size_t d = edit_distance_nocase(entry, window);
      if (d < best_d) {
        best_d = d;
        best = name;
      }
    };
    for (size_t len = entry.size() > 1 ? entry.size() - 1 : 1; len <= entry.size() + 1; ++len) {
      if (name.size() <= len) {
        consider(name);
        continue;
      }
      for (size_t at = 0; at + len <= name.size(); ++at) consider(name.substr(at, len));
    }
  }
  return best;
}

// "ns::Type::on(ns::Msg)" -> "Type::on(Msg)": a region's name without its
// namespaces, for the one-line status.
std::string short_name(const std::string& name) {
  std::string out;
  size_t i = 0;
  while (i < name.size()) {
    const size_t end = name.find_first_of("()<>, @", i);
    const std::string word = name.substr(i, end == std::string::npos ? std::string::npos : end - i);
    // Keep the last two components of a qualified name outside parentheses, the last inside.
    const bool inside = std::count(out.begin(), out.end(), '(') > std::count(out.begin(), out.end(), ')');
    size_t cut = word.rfind("::");
    if (cut != std::string::npos && !inside) {
      const size_t prev = word.rfind("::", cut == 0 ? 0 : cut - 1);
      cut = prev == std::string::npos || cut == 0 ? std::string::npos : prev;
    }
    out += cut == std::string::npos ? word : word.substr(cut + 2);
    if (end == std::string::npos) break;
    out += name[end];
    i = end + 1;
  }
  return out;
}

std::string pct(double v) { return fmt::format("{:+.1f}%", v * 100); }

}  // namespace

// Prints a warning or error record of the profile once per kind ("what"):
// the message, and for a filter entry that matches nothing the valid names
// and the closest one, the first time that kind is shown (a sweep warns
// "(so far)" while the program runs and errors at its end with the same list).
void print_note(const Records& r, const json& n, std::vector<std::string>& listed) {
  const std::string what = n.value("what", "");
  std::fprintf(stderr, "coact-profile: %s\n", with_flags(n.value("message", what)).c_str());
  if (!what.starts_with("unknown_")) return;
  const bool first = std::find(listed.begin(), listed.end(), what) == listed.end();
  if (first) {
    listed.push_back(what);
    list_names(r, what);
  }
  if (!n.contains("names") || !n["names"].is_array()) return;
  for (const auto& entry : n["names"]) {
    if (!entry.is_string()) continue;
    const std::string near = closest_name(r, what, entry.get<std::string>());
    if (!near.empty() && first) std::fprintf(stderr, "  did you mean '%s'?\n", near.c_str());
  }
}

// Whether an error record says a filter or fixed name matched nothing (a
// usage error: exit 2).
bool naming_error(const Records& r) {
  return std::any_of(r.errors.begin(), r.errors.end(),
                     [](const json& e) { return e.value("what", std::string()).starts_with("unknown_"); });
}

std::string per_region_text(const Records& r) {
  auto v = r.per_region;
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string s;
  for (const auto& [name, n] : v) s += fmt::format("\n    {:5}  {}", n, name);
  return s;
}

// --profile-only: the heaviest regions of the "profile" record (at most 12).
void print_profile(const nlohmann::json& p, const std::string& files) {
  const auto& regions = p.value("regions", nlohmann::json::array());
  std::string text;
  size_t shown = 0;
  for (const auto& r : regions) {
    if (shown++ == 12) break;
    text +=
        fmt::format("\n  {:>10.1f} ms  {:>9} {}  {} ({})", r.value("time_ns", 0.0) / 1e6,
                    r.value("visits", uint64_t{0}), r.value("kind", std::string()) == "line" ? "periods" : "visits ",
                    r.value("name", std::string()), r.value("kind", std::string()));
  }
  std::fprintf(stderr, "coact-profile: profile only (no experiments) of %.1f s, %zu region(s), kept in %s%s%s\n",
               p.value("runtime_ns", 0.0) / 1e9, regions.size(), files.c_str(),
               regions.empty() ? "" : "; heaviest (handlers and scopes: exclusive time; lines: sampled CPU time):",
               text.c_str());
}

// The ranking part of the status line and of the end report, from the last
// "estimates" record: regions ranked, the leader with its interval, settled.
std::string ranking_status(const Records& r, bool verbose) {
  if (!r.estimates) return {};
  const json& e = *r.estimates;
  const auto& points = e.value("points", json::array());
  if (points.empty()) return {};
  const json& p = points.front();
  size_t ranked = 0, total = 0;
  for (const auto& reg : p.value("regions", json::array())) {
    ++total;
    ranked += reg.value("ranked", false) ? 1 : 0;
  }
  std::string s = fmt::format("{}/{} regions ranked", ranked, total);
  if (p.contains("leader") && p["leader"].is_string()) {
    const std::string leader = p["leader"];
    for (const auto& reg : p.value("regions", json::array())) {
      if (reg.value("name", "") != leader) continue;
      const auto& ci = reg["ci"];
      s += fmt::format(", leader {} @{:g}% {}", verbose ? leader : short_name(leader), e.value("rank_at", 0.25) * 100,
                       pct(reg.value("key", 0.0)));
      if (ci.is_array() && ci.size() == 2 && ci[0].is_number()) {
        s += fmt::format(" [{}, {}]", pct(ci[0].get<double>()), pct(ci[1].get<double>()));
      }
    }
  }
  // The regions above the floor that wait for a rank: measured ones listed
  // above without one, and ones with no experiment yet (not in the list).
  const unsigned waiting = p.value("unranked_above_floor", 0u);
  const double floor = e.value("time_share_floor", 0.0);
  unsigned measured_waiting = 0;
  for (const auto& reg : p.value("regions", json::array())) {
    const double share = reg.value("time_share", 0.0);
    if (!reg.value("ranked", false) && share > 0 && share >= floor) ++measured_waiting;
  }
  const unsigned unmeasured = waiting > measured_waiting ? waiting - measured_waiting : 0;
  s += e.value("settled", false) ? ", settled"
       : waiting > 0 ? fmt::format(", not settled ({} region{} above the time-share floor not ranked yet{})", waiting,
                                   waiting == 1 ? "" : "s",
                                   unmeasured > 0 ? fmt::format(", {} of them not measured yet", unmeasured) : "")
                     : ", not settled";
  if (points.size() > 1) s += fmt::format(" (progress point {})", p.value("point", ""));
  return s;
}

std::string with_flags(std::string_view text) {
  std::vector<const ca::OptionField*> fields;
  for (const ca::OptionField& f : ca::option_fields()) fields.push_back(&f);
  // Longest first: COACT_CAUSAL_EXPERIMENTS is not COACT_CAUSAL_EXPERIMENT_MS's prefix, but keys may share one.
  std::sort(fields.begin(), fields.end(), [](auto* a, auto* b) { return a->key.size() > b->key.size(); });
  std::string out(text);
  for (const ca::OptionField* f : fields) {
    for (size_t at = out.find(f->key); at != std::string::npos; at = out.find(f->key, at)) {
      out.replace(at, f->key.size(), ca::flag_of(*f));
    }
  }
  return out;
}

}  // namespace coact::profile_tool
