// kv/store.hpp: one shard's keys and values, and the command table, of the kv
// example.
//
// Provides: Store (a string-to-string map with per-key expiry deadlines and
// Redis's GET/SET/DEL/INCR/EXPIRE semantics), key_hash() and shard_of() (which
// shard owns a key), and the command table the server's dispatch uses:
// Command, command_of(), command_name(), arity_error(),
// unknown_command_error(), parse_set_options() and append_config_reply().
// Time is passed in as `now` by the caller, so tests control the clock.
// Expiry: a key whose deadline is <= now is absent. Expired keys are erased
// lazily by any call that looks them up, and in bulk by expire_due(), which
// the owner calls from a timer set to next_deadline().
// Threads: Store is single-threaded (one actor owns each shard); it never
// blocks. The free functions are pure; any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "kv/resp.hpp"

namespace coact::kv {

/// Result of Store::incr(): the new value, or an error reply message (static
/// storage) when `value` is empty.
struct IncrResult {
  std::optional<int64_t> value;
  std::string_view error;
};

inline constexpr std::string_view kNotIntegerError = "ERR value is not an integer or out of range";
inline constexpr std::string_view kOverflowError = "ERR increment or decrement would overflow";

class Store {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  Store() = default;
  // The deadline index points into the map's nodes: copying would alias them.
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  Store(Store&&) = default;
  Store& operator=(Store&&) = default;

  /// The value of `key`, or nullopt if absent or expired (an expired key is
  /// erased). The view is valid until the next non-const call.
  std::optional<std::string_view> get(std::string_view key, TimePoint now);

  /// Sets `key` to `value` and clears any expiry, as Redis's plain SET does.
  void set(std::string_view key, std::string_view value, TimePoint now);

  /// Erases `key`; true if it existed and had not expired.
  bool del(std::string_view key, TimePoint now);

  /// True if `key` exists and has not expired.
  bool exists(std::string_view key, TimePoint now);

  /// Adds `delta` to the integer value of `key` (Redis INCRBY): a missing key
  /// counts as 0; the value must satisfy parse_int64() (else
  /// kNotIntegerError) and the sum must fit in int64_t (else kOverflowError).
  /// On error the key is unchanged. Keeps the key's expiry.
  IncrResult incr_by(std::string_view key, int64_t delta, TimePoint now);
  /// incr_by(key, 1, now), Redis INCR.
  IncrResult incr(std::string_view key, TimePoint now) { return incr_by(key, 1, now); }

  /// Gives `key` the deadline now + ttl (Redis EXPIRE); true if the key
  /// exists. A ttl <= 0 erases the key instead (true if it existed), as Redis
  /// does. A deadline past the clock's range saturates to TimePoint::max(),
  /// which never passes.
  bool expire(std::string_view key, std::chrono::seconds ttl, TimePoint now);
  /// As expire(), in milliseconds (Redis PEXPIRE, and SET's EX/PX options).
  bool pexpire(std::string_view key, std::chrono::milliseconds ttl, TimePoint now);

  /// Erases up to `max_keys` keys whose deadline is <= now, earliest first;
  /// returns how many it erased. Cost: O(k log n) for k erased keys.
  size_t expire_due(TimePoint now, size_t max_keys = std::numeric_limits<size_t>::max());

  /// The earliest deadline of any key, or nullopt if no key has one. O(1).
  /// The key may already be gone lazily; its deadline is then no longer here.
  std::optional<TimePoint> next_deadline() const;

  /// Keys held, counting expired keys not yet erased.
  size_t size() const { return map_.size(); }

 private:
  /// Deadlines, earliest first, each naming its key (a pointer to the map
  /// node's key, which stays put while the node lives).
  using Deadlines = std::multimap<TimePoint, const std::string*>;

  struct Entry {
    std::string value;
    /// When the key expires; nullopt for never.
    std::optional<TimePoint> deadline;
    /// deadline's node in deadlines_; meaningful only while deadline is set.
    Deadlines::iterator deadline_pos{};
  };

  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };
  using Map = std::unordered_map<std::string, Entry, KeyHash, std::equal_to<>>;

  /// The live entry of `key`, erasing it first if expired; map_.end() if none.
  Map::iterator find_live(std::string_view key, TimePoint now);
  /// Gives a live `key` the `deadline`, or erases it when `deadline` is
  /// nullopt; true if the key was live.
  bool apply_expiry(std::string_view key, std::optional<TimePoint> deadline, TimePoint now);
  void erase(Map::iterator it);
  void clear_deadline(Entry& entry);
  void set_deadline(Map::iterator it, TimePoint deadline);

  Map map_;
  Deadlines deadlines_;
};

/// FNV-1a, 64-bit (Fowler, Noll, Vo; offset basis 0xcbf29ce484222325, prime
/// 0x100000001b3). Stable across runs and builds, unlike std::hash.
uint64_t key_hash(std::string_view key);

/// The shard in [0, shards) that owns `key`. Precondition: shards > 0.
size_t shard_of(std::string_view key, size_t shards);

/// Commands the kv server knows. `unknown` is any other name.
enum class Command { ping, echo, get, set, del, mget, incr, expire, exists, config, unknown };

/// The command named `name`, compared ASCII case-insensitively.
Command command_of(std::string_view name);

/// The command's name in lower case, as Redis's error messages spell it
/// ("unknown" for Command::unknown).
std::string_view command_name(Command command);

/// Redis's "ERR wrong number of arguments for 'get' command" when `argc` (the
/// request's args.size(), the name included) is not what `command` takes:
/// PING 1-2, ECHO 2, GET 2, SET >= 3 (options checked by parse_set_options()),
/// DEL >= 2, MGET >= 2, INCR 2, EXPIRE 3, EXISTS >= 2, CONFIG >= 2. nullopt if
/// it fits, and always for Command::unknown.
std::optional<std::string> arity_error(Command command, size_t argc);

/// Redis's "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
/// (name and argument list each cut at 128 bytes). Precondition:
/// !req.args.empty().
std::string unknown_command_error(const Request& req);

/// SET's options after key and value.
struct SetOptions {
  /// EX seconds or PX milliseconds, as milliseconds; nullopt for none.
  std::optional<std::chrono::milliseconds> ttl;
};

/// Parses args[3...] of a SET request: accepts `EX seconds` and
/// `PX milliseconds` (case-insensitive, a positive integer). Returns the
/// error reply message ("ERR syntax error", kNotIntegerError, "ERR invalid
/// expire time in 'set' command") or nullopt and fills `out`.
/// Precondition: req.args.size() >= 3.
std::optional<std::string> parse_set_options(const Request& req, SetOptions& out);

/// Appends the reply to a CONFIG request: `CONFIG GET save` and `CONFIG GET
/// appendonly` answer what a server that never persists says ("" and "no",
/// which redis-benchmark reads before a run), any other name an empty array;
/// other subcommands and arities answer Redis's error.
void append_config_reply(std::string& out, const Request& req);

}  // namespace coact::kv
