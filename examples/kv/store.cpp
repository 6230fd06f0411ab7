// kv/store.cpp: the shard store and the command table, see store.hpp.
// Semantics follow Redis's t_string.c (INCR, SET options), expire.c and
// server.c (arity and unknown-command errors).
// Threads: Store single-threaded; free functions pure.
#include "kv/store.hpp"

#include <charconv>

namespace coact::kv {
namespace {

/// The deadline `ttl` after `now` (ttl > 0), saturating to TimePoint::max()
/// where the sum would leave the clock's range.
template <class Duration>
Store::TimePoint deadline_after(Store::TimePoint now, Duration ttl) {
  using TimePoint = Store::TimePoint;
  const auto headroom =
      now.time_since_epoch() < TimePoint::duration::zero() ? TimePoint::duration::max() : TimePoint::max() - now;
  // Floors, so any ttl below it converts to the clock's unit and adds safely.
  if (ttl >= std::chrono::duration_cast<Duration>(headroom)) return TimePoint::max();
  return now + std::chrono::duration_cast<TimePoint::duration>(ttl);
}

bool iequals(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

/// Name and arity of each command; max_args 0 means no upper bound.
struct CommandSpec {
  Command command;
  std::string_view name;
  size_t min_args;
  size_t max_args;
};

constexpr CommandSpec kCommands[] = {
    {Command::ping, "ping", 1, 2},     {Command::echo, "echo", 2, 2},     {Command::get, "get", 2, 2},
    {Command::set, "set", 3, 0},       {Command::del, "del", 2, 0},       {Command::mget, "mget", 2, 0},
    {Command::incr, "incr", 2, 2},     {Command::expire, "expire", 3, 3}, {Command::exists, "exists", 2, 0},
    {Command::config, "config", 2, 0},
};

const CommandSpec* spec_of(Command command) {
  for (const CommandSpec& spec : kCommands) {
    if (spec.command == command) return &spec;
  }
  return nullptr;
}

std::string wrong_arity(std::string_view name) {
  return "ERR wrong number of arguments for '" + std::string(name) + "' command";
}

/// Redis cuts user text it echoes in errors at this many bytes.
constexpr size_t kEchoBytes = 128;

}  // namespace

Store::Map::iterator Store::find_live(std::string_view key, TimePoint now) {
  auto it = map_.find(key);
  if (it != map_.end() && it->second.deadline && *it->second.deadline <= now) {
    erase(it);
    return map_.end();
  }
  return it;
}

void Store::erase(Map::iterator it) {
  clear_deadline(it->second);
  map_.erase(it);
}

void Store::clear_deadline(Entry& entry) {
  if (!entry.deadline) return;
  deadlines_.erase(entry.deadline_pos);
  entry.deadline.reset();
}

void Store::set_deadline(Map::iterator it, TimePoint deadline) {
  clear_deadline(it->second);
  it->second.deadline_pos = deadlines_.emplace(deadline, &it->first);
  it->second.deadline = deadline;
}

std::optional<std::string_view> Store::get(std::string_view key, TimePoint now) {
  const auto it = find_live(key, now);
  if (it == map_.end()) return std::nullopt;
  return std::string_view(it->second.value);
}

void Store::set(std::string_view key, std::string_view value, TimePoint /*now*/) {
  // An expired key is overwritten as it is: the new value has no deadline.
  const auto it = map_.find(key);
  if (it == map_.end()) {
    map_.emplace(std::string(key), Entry{std::string(value), std::nullopt, {}});
    return;
  }
  it->second.value.assign(value);
  clear_deadline(it->second);
}

bool Store::del(std::string_view key, TimePoint now) {
  const auto it = find_live(key, now);
  if (it == map_.end()) return false;
  erase(it);
  return true;
}

bool Store::exists(std::string_view key, TimePoint now) { return find_live(key, now) != map_.end(); }

IncrResult Store::incr_by(std::string_view key, int64_t delta, TimePoint now) {
  const auto it = find_live(key, now);
  int64_t current = 0;
  if (it != map_.end()) {
    const std::optional<int64_t> parsed = parse_int64(it->second.value);
    if (!parsed) return {std::nullopt, kNotIntegerError};
    current = *parsed;
  }
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  if ((delta > 0 && current > kMax - delta) || (delta < 0 && current < kMin - delta)) {
    return {std::nullopt, kOverflowError};
  }
  const int64_t next = current + delta;
  char digits[24];
  const auto result = std::to_chars(digits, digits + sizeof digits, next);
  const std::string_view text(digits, static_cast<size_t>(result.ptr - digits));
  if (it == map_.end()) {
    map_.emplace(std::string(key), Entry{std::string(text), std::nullopt, {}});
  } else {
    it->second.value.assign(text);
  }
  return {next, {}};
}

bool Store::apply_expiry(std::string_view key, std::optional<TimePoint> deadline, TimePoint now) {
  const auto it = find_live(key, now);
  if (it == map_.end()) return false;
  if (deadline) {
    set_deadline(it, *deadline);
  } else {
    erase(it);
  }
  return true;
}

bool Store::expire(std::string_view key, std::chrono::seconds ttl, TimePoint now) {
  return apply_expiry(key, ttl.count() > 0 ? std::optional(deadline_after(now, ttl)) : std::nullopt, now);
}

bool Store::pexpire(std::string_view key, std::chrono::milliseconds ttl, TimePoint now) {
  return apply_expiry(key, ttl.count() > 0 ? std::optional(deadline_after(now, ttl)) : std::nullopt, now);
}

size_t Store::expire_due(TimePoint now, size_t max_keys) {
  size_t erased = 0;
  while (erased < max_keys && !deadlines_.empty() && deadlines_.begin()->first <= now) {
    // Every node in deadlines_ names a key in map_ (erase() removes both).
    erase(map_.find(*deadlines_.begin()->second));
    ++erased;
  }
  return erased;
}

std::optional<Store::TimePoint> Store::next_deadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

uint64_t key_hash(std::string_view key) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : key) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

size_t shard_of(std::string_view key, size_t shards) { return static_cast<size_t>(key_hash(key) % shards); }

Command command_of(std::string_view name) {
  for (const CommandSpec& spec : kCommands) {
    if (iequals(name, spec.name)) return spec.command;
  }
  return Command::unknown;
}

std::string_view command_name(Command command) {
  const CommandSpec* spec = spec_of(command);
  return spec ? spec->name : std::string_view("unknown");
}

std::optional<std::string> arity_error(Command command, size_t argc) {
  const CommandSpec* spec = spec_of(command);
  if (!spec) return std::nullopt;
  if (argc < spec->min_args || (spec->max_args != 0 && argc > spec->max_args)) return wrong_arity(spec->name);
  return std::nullopt;
}

std::string unknown_command_error(const Request& req) {
  std::string args;
  for (size_t i = 1; i < req.args.size() && args.size() < kEchoBytes; ++i) {
    args += '\'';
    args.append(req.args[i], 0, kEchoBytes - args.size() + 1);
    args += "' ";
  }
  return "ERR unknown command '" + req.args.front().substr(0, kEchoBytes) + "', with args beginning with: " + args;
}

std::optional<std::string> parse_set_options(const Request& req, SetOptions& out) {
  out = SetOptions{};
  const auto& args = req.args;
  for (size_t i = 3; i < args.size(); i += 2) {
    const bool ex = iequals(args[i], "ex");
    if ((!ex && !iequals(args[i], "px")) || out.ttl || i + 1 == args.size()) return "ERR syntax error";
    const std::optional<int64_t> value = parse_int64(args[i + 1]);
    if (!value) return std::string(kNotIntegerError);
    constexpr int64_t kMaxSeconds = std::numeric_limits<int64_t>::max() / 1000;
    if (*value <= 0 || (ex && *value > kMaxSeconds)) return "ERR invalid expire time in 'set' command";
    out.ttl = std::chrono::milliseconds(ex ? *value * 1000 : *value);
  }
  return std::nullopt;
}

void append_config_reply(std::string& out, const Request& req) {
  if (req.args.size() < 2) {
    append_error(out, wrong_arity("config"));
  } else if (!iequals(req.args[1], "get")) {
    append_error(out, "ERR unknown subcommand '" + req.args[1].substr(0, kEchoBytes) + "'. Try CONFIG HELP.");
  } else if (req.args.size() < 3) {
    append_error(out, wrong_arity("config|get"));
  } else if (iequals(req.args[2], "save") || iequals(req.args[2], "appendonly")) {
    // What redis-benchmark reads before a run (it warns unless both come
    // back as name/value pairs): this server never persists.
    append_array_header(out, 2);
    append_bulk(out, iequals(req.args[2], "save") ? "save" : "appendonly");
    append_bulk(out, iequals(req.args[2], "save") ? "" : "no");
  } else {
    append_array_header(out, 0);
  }
}

}  // namespace coact::kv
