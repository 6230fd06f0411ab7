// options.cpp: the resolved values of the COACT_* keys (coact/options.hpp):
// Key's spellings, Values' typed reads and listing, the process-wide values
// (process, install, exit_with), unread_keys and the generated Markdown
// table. The declarations are in options_table.cpp, resolution from the
// sources in options_sources.cpp.

#include <coact/options.hpp>

#include <algorithm>
#include <charconv>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "options_internal.hpp"

namespace coact::options {
namespace {

using detail::flag_of;
using detail::index_of;
using detail::split_list;

// One flag per declared key, in keys() order (unread_keys): set by every
// typed read. Leaked: read from atexit handlers.
std::atomic<bool>* read_flags() {
  static std::atomic<bool>* flags = new std::atomic<bool>[keys().size()] {};
  return flags;
}

struct ProcessState {
  std::mutex mu;
  std::optional<Values> values;  // guarded by mu
};
ProcessState& process_state() {
  static ProcessState* s = new ProcessState;  // leaked: read from atexit handlers
  return *s;
}

const Entry& checked(const std::vector<Entry>& entries, std::string_view name, std::initializer_list<Type> types) {
  const Key* k = find(name);
  if (k == nullptr) throw std::logic_error(fmt::format("coact options: {} is not a declared key", name));
  if (std::find(types.begin(), types.end(), k->type) == types.end()) {
    throw std::logic_error(fmt::format("coact options: {} read with the wrong type", name));
  }
  detail::mark_read(k);
  return entries[index_of(k)];
}

}  // namespace

namespace detail {

void mark_read(const Key* k) { read_flags()[index_of(k)].store(true, std::memory_order_relaxed); }

std::string flag_of(std::string_view env_name) {
  std::string flag = "--coact-";
  for (char c : env_name.substr(6)) {
    flag += (c == '_') ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return flag;
}

}  // namespace detail

// ---- Key ---------------------------------------------------------------------------------

std::string Key::flag() const { return flag_of(name); }

std::string Key::accepted() const {
  switch (type) {
    case Type::boolean:
      return "a boolean (1/0/true/false/yes/no/on/off)";
    case Type::list:
      return "a comma-separated list";
    case Type::text:
      if (!choices.empty()) {
        std::string c(choices);
        std::replace(c.begin(), c.end(), '|', '/');
        return fmt::format("one of {}", c);
      }
      return "a string";
    case Type::integer:
      break;
  }
  return fmt::format("an integer in {}..{}{}{}", min, max, unit.empty() ? "" : fmt::format(" ({})", unit),
                     accepts_auto ? " or 'auto'" : "");
}

std::string_view to_string(Source s) noexcept {
  switch (s) {
    case Source::default_value:
      return "default";
    case Source::config_file:
      return "config file";
    case Source::environment:
      return "environment";
    case Source::command_line:
      return "command line";
  }
  return "?";
}

// ---- Values -------------------------------------------------------------------------------

std::optional<uint64_t> Values::integer(std::string_view name) const {
  const Entry& e = checked(entries_, name, {Type::integer});
  if (e.text.empty() || e.text == "auto") return std::nullopt;
  uint64_t n = 0;
  std::from_chars(e.text.data(), e.text.data() + e.text.size(), n, 10);  // validated when resolved
  return n;
}

bool Values::boolean(std::string_view name) const { return checked(entries_, name, {Type::boolean}).text == "true"; }

const std::string& Values::text(std::string_view name) const { return checked(entries_, name, {Type::text}).text; }

std::vector<std::string> Values::list(std::string_view name) const {
  return split_list(checked(entries_, name, {Type::list}).text);
}

bool Values::is_set(std::string_view name) const {
  return checked(entries_, name, {Type::integer, Type::boolean, Type::text, Type::list}).source !=
         Source::default_value;
}

const Entry& Values::entry(std::string_view name) const {
  return checked(entries_, name, {Type::integer, Type::boolean, Type::text, Type::list});
}

std::string Values::listing() const {
  std::string out;
  std::string_view group;
  for (const Entry& e : entries_) {
    const Key& k = *e.key;
    if (k.group != group) {
      group = k.group;
      out += fmt::format("[{}]\n", group);
    }
    const std::string where = e.origin.empty() || e.source == Source::default_value
                                  ? std::string(to_string(e.source))
                                  : fmt::format("{} {}", to_string(e.source), e.origin);
    out += fmt::format("  {}={}  ({}; {}) {}\n", k.name, e.text, where, k.accepted(), k.doc);
  }
  return out;
}

Values defaults() {
  Values v;
  v.entries_.reserve(keys().size());
  for (const Key& k : keys()) v.entries_.push_back(Entry{&k, std::string(k.default_value), Source::default_value, ""});
  return v;
}

Values process() {
  ProcessState& s = process_state();
  std::lock_guard lk(s.mu);
  if (!s.values) s.values = resolve();
  return *s.values;
}

void install(Values v) {
  ProcessState& s = process_state();
  std::lock_guard lk(s.mu);
  s.values = std::move(v);
}

void exit_with(const char* argv0, const option_error& e) {
  std::string prog = argv0 != nullptr && *argv0 != '\0' ? argv0 : "coact";
  if (const auto slash = prog.rfind('/'); slash != std::string::npos) prog = prog.substr(slash + 1);
  std::fflush(stdout);
  std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), e.what());
  std::exit(2);
}

std::vector<std::string> unread_keys() {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < keys().size(); ++i) {
    if (!read_flags()[i].load(std::memory_order_relaxed)) out.emplace_back(keys()[i].name);
  }
  return out;
}

std::string markdown_table() {
  std::string out = "| Key | Default | Accepted | Read by | Meaning |\n|---|---|---|---|---|\n";
  for (const Key& k : keys()) {
    std::string def(k.default_value);
    if (def.empty()) def = "(empty)";
    std::string accepted = k.accepted();
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", k.name, def, accepted, k.group, k.doc);
  }
  return out;
}

}  // namespace coact::options
