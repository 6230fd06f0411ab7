// tuning.cpp: resolve_tuning(), SchedulerTuning::effective_workers().
//
// Resolution, in order (each later step overrides the earlier one's values):
//   1. Start from the defaults in SchedulerTuning (seed 000).
//   2. Find the config file: TuningSources::config_path, else the last
//      --coact-config=PATH in args, else COACT_CONFIG in the environment. Read
//      it, parse it as TOML, apply its [scheduler] table (other tables belong to
//      other parts of coact and are ignored).
//   3. Apply the COACT_* environment keys; warn about unknown ones.
//   4. Apply the --coact-* arguments.
// Every value is validated where it is read, so a bad value anywhere is an
// error even when a higher-precedence source overrides it.
//
// argv is parsed by hand, not with CLI11: we must leave the user's own
// arguments alone (including positional ones that follow an unknown option),
// accept both "--k=v" and "--k v", and produce our own error messages that name
// key, value, source and range; CLI11's allow_extras and its validators would
// fight all three.

#include <coact/runtime/tuning.hpp>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string_view>
#include <system_error>

#include <fmt/format.h>
#include <toml++/toml.h>

extern "C" char** environ;  // POSIX; declared by <unistd.h> only under _GNU_SOURCE.

static_assert(TOML_EXCEPTIONS, "tuning.cpp expects toml++ to report parse errors as exceptions");

namespace coact {
namespace {

using namespace std::string_view_literals;

// COACT_* environment keys that belong to other parts of coact. They are not
// scheduler knobs, but they are not typos either, so resolve_tuning() must not
// warn about them. Add a key here when another component starts reading one.
//   is_prefix: the entry matches every key that starts with it.
struct other_key {
  std::string_view name;
  bool is_prefix;
};
constexpr std::array kOtherComponentKeys{
    other_key{"COACT_CONFIG"sv, false},            // the config file path (read here, step 2)
    other_key{"COACT_TSC_HZ"sv, false},            // calibrate: pins the TSC frequency
    other_key{"COACT_CALIBRATION_FILE"sv, false},  // calibrate: cached calibration results
    other_key{"COACT_TRACE"sv, false},             // per-mail trace rings / export
    other_key{"COACT_CAUSAL"sv, true},             // causal profiler: COACT_CAUSAL*
};

bool is_other_component_key(std::string_view key) {
  return std::any_of(kOtherComponentKeys.begin(), kOtherComponentKeys.end(), [&](const other_key& k) {
    return k.is_prefix ? key.starts_with(k.name) : key == k.name;
  });
}

enum class knob_kind {
  u32,      // uint32_t field
  opt_u32,  // std::optional<uint32_t> field; "auto" resets to nullopt
  opt_u64,  // std::optional<uint64_t> field; "auto" resets to nullopt
  boolean,  // bool field
};

// One scheduler knob: its spellings in each source, its accepted range and the
// field it lands in. Only the pointer matching `kind` is set.
struct knob_spec {
  std::string_view env_key;   // "COACT_SPIN_WINDOW_USEC"
  std::string_view file_key;  // "spin_window_usec" in [scheduler]; the flag is
                              // "--coact-" + file_key with '_' -> '-'
  knob_kind kind;
  uint64_t min;
  uint64_t max;
  uint32_t SchedulerTuning::*u32 = nullptr;
  std::optional<uint32_t> SchedulerTuning::*opt_u32 = nullptr;
  std::optional<uint64_t> SchedulerTuning::*opt_u64 = nullptr;
  bool SchedulerTuning::*boolean = nullptr;
};

using st = SchedulerTuning;
// Ranges are the ones documented in tuning.hpp; keep the two in step.
constexpr std::array kKnobs{
    knob_spec{"COACT_WORKERS"sv, "workers"sv, knob_kind::u32, 0, 1024, &st::workers},
    knob_spec{"COACT_SPIN_WINDOW_USEC"sv, "spin_window_usec"sv, knob_kind::u32, 0, 1000000,
              &st::spin_window_usec},
    knob_spec{"COACT_PEER_STEAL"sv, "peer_steal"sv, knob_kind::boolean, 0, 1, nullptr, nullptr, nullptr,
              &st::peer_steal},
    knob_spec{"COACT_BATCH_MAX_MAILS"sv, "batch_max_mails"sv, knob_kind::u32, 1, 1000000, &st::batch_max_mails},
    knob_spec{"COACT_BATCH_MAX_USEC"sv, "batch_max_usec"sv, knob_kind::u32, 1, 10000000, &st::batch_max_usec},
    knob_spec{"COACT_CLOCK_CHECK_STRIDE"sv, "clock_check_stride"sv, knob_kind::u32, 1, 4096,
              &st::clock_check_stride},
    knob_spec{"COACT_LOCAL_TIME_BUDGET_US"sv, "local_time_budget_us"sv, knob_kind::opt_u32, 0, 1000000, nullptr,
              &st::local_time_budget_us},
    knob_spec{"COACT_HANDOFF_COST_NS"sv, "handoff_cost_ns"sv, knob_kind::opt_u64, 1, 100000000, nullptr, nullptr,
              &st::handoff_cost_ns},
    knob_spec{"COACT_LOCAL_STICKY_MAX"sv, "local_sticky_max"sv, knob_kind::u32, 1, 1000000,
              &st::local_sticky_max},
    knob_spec{"COACT_LOCAL_CHAIN_BACKSTOP"sv, "local_chain_backstop"sv, knob_kind::u32, 1, 1000000,
              &st::local_chain_backstop},
    knob_spec{"COACT_BURST_RECRUIT_MIN"sv, "burst_recruit_min"sv, knob_kind::u32, 1, 4096,
              &st::burst_recruit_min},
    knob_spec{"COACT_BURST_RECRUIT_MAX"sv, "burst_recruit_max"sv, knob_kind::u32, 0, 4096,
              &st::burst_recruit_max},
};

// Compile-time check that every env key is "COACT_" + upper(file_key), so the
// three spellings of a knob cannot drift apart.
constexpr bool spellings_agree() {
  for (const auto& k : kKnobs) {
    if (!k.env_key.starts_with("COACT_"sv) || k.env_key.size() != 6 + k.file_key.size()) return false;
    for (std::size_t i = 0; i < k.file_key.size(); ++i) {
      char c = k.file_key[i];
      char up = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
      if (k.env_key[6 + i] != up) return false;
    }
  }
  return true;
}
static_assert(spellings_agree(), "kKnobs: env_key must be COACT_ + upper-case file_key");

std::string flag_of(const knob_spec& k) {
  std::string flag = "--coact-";
  for (char c : k.file_key) flag += (c == '_') ? '-' : c;
  return flag;
}

// "COACT_WORKERS, COACT_SPIN_WINDOW_USEC, ..." (or the file / flag spellings).
enum class spelling { env, file, flag };
std::string known_list(spelling s) {
  std::string out;
  for (const auto& k : kKnobs) {
    if (!out.empty()) out += ", ";
    switch (s) {
      case spelling::env: out += k.env_key; break;
      case spelling::file: out += k.file_key; break;
      case spelling::flag: out += flag_of(k); break;
    }
  }
  if (s == spelling::flag) out += ", --coact-config";
  return out;
}

// Quotes a user-supplied value for an error message: 'text', with control and
// non-ASCII bytes as \xNN so a stray newline cannot split the message.
std::string quoted(std::string_view v) {
  std::string out = "'";
  for (unsigned char c : v) {
    if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '\'';
  return out;
}

// What a knob was set to by one source; applied to the struct only after it
// validated.
struct knob_value {
  bool is_auto = false;  // "auto": optional knob back to nullopt
  uint64_t number = 0;   // integer knobs
  bool flag = false;     // boolean knobs
};

void apply(SchedulerTuning& t, const knob_spec& k, const knob_value& v) {
  switch (k.kind) {
    case knob_kind::u32: t.*k.u32 = static_cast<uint32_t>(v.number); break;
    case knob_kind::opt_u32:
      t.*k.opt_u32 = v.is_auto ? std::nullopt : std::optional<uint32_t>(static_cast<uint32_t>(v.number));
      break;
    case knob_kind::opt_u64: t.*k.opt_u64 = v.is_auto ? std::nullopt : std::optional<uint64_t>(v.number); break;
    case knob_kind::boolean: t.*k.boolean = v.flag; break;
  }
}

bool is_optional(const knob_spec& k) { return k.kind == knob_kind::opt_u32 || k.kind == knob_kind::opt_u64; }

// "an integer in 0..1000000" / "... or 'auto'" / "a boolean (...)".
std::string expectation(const knob_spec& k) {
  if (k.kind == knob_kind::boolean) return "a boolean (1/0/true/false/yes/no/on/off)";
  return fmt::format("an integer in {}..{}{}", k.min, k.max, is_optional(k) ? " or 'auto'" : "");
}

[[noreturn]] void throw_bad_value(const knob_spec& k, std::string_view key_and_value, std::string_view source,
                                  std::string_view why) {
  throw tuning_error(fmt::format("{} ({}): expected {}{}{}", key_and_value, source, expectation(k),
                                 why.empty() ? "" : " ", why));
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Parses a textual value (environment or argv). `key` is the spelling the user
// wrote (COACT_X or --coact-x), `source` e.g. "from environment".
knob_value parse_text(const knob_spec& k, std::string_view key, std::string_view text, std::string_view source) {
  const std::string kv = fmt::format("{}={}", key, quoted(text));
  knob_value v;
  if (k.kind == knob_kind::boolean) {
    for (auto word : {"1"sv, "true"sv, "yes"sv, "on"sv}) {
      if (iequals(text, word)) {
        v.flag = true;
        return v;
      }
    }
    for (auto word : {"0"sv, "false"sv, "no"sv, "off"sv}) {
      if (iequals(text, word)) return v;
    }
    throw_bad_value(k, kv, source, "");
  }
  if (is_optional(k) && iequals(text, "auto"sv)) {
    v.is_auto = true;
    return v;
  }
  if (text.empty()) throw_bad_value(k, kv, source, "(empty)");
  if (text.front() == '-' && text.size() > 1 &&
      std::all_of(text.begin() + 1, text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw_bad_value(k, kv, source, "(negative)");
  }
  if (!std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw_bad_value(k, kv, source, "(not a decimal number)");
  }
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n, 10);
  if (ec == std::errc::result_out_of_range || (ec == std::errc{} && n > k.max)) {
    throw_bad_value(k, kv, source, "(too large)");
  }
  if (ec != std::errc{} || end != text.data() + text.size()) {
    throw_bad_value(k, kv, source, "(not a decimal number)");  // unreachable after the digit check
  }
  if (n < k.min) throw_bad_value(k, kv, source, "(too small)");
  v.number = n;
  return v;
}

const char* toml_type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::none: return "nothing";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
  }
  return "an unknown type";
}

// The node as TOML would spell it, for messages (tables and arrays abbreviated).
std::string toml_repr(const toml::node& n) {
  if (n.is_table()) return "{...}";
  if (n.is_array()) return "[...]";
  std::ostringstream os;
  n.visit([&](const auto& x) { os << x; });
  return os.str();
}

// Parses one [scheduler] entry of the config file.
knob_value parse_toml(const knob_spec& k, const toml::node& node, std::string_view path) {
  const std::string kv = fmt::format("scheduler.{} = {}", k.file_key, toml_repr(node));
  const std::string source = fmt::format("from config file '{}'", path);
  knob_value v;
  if (k.kind == knob_kind::boolean) {
    if (const auto* b = node.as_boolean()) {
      v.flag = b->get();
      return v;
    }
    throw tuning_error(fmt::format("{} ({}): wrong TOML type: expected a TOML boolean (true/false), got {}", kv,
                                   source, toml_type_name(node.type())));
  }
  if (const auto* s = node.as_string(); s && is_optional(k) && iequals(s->get(), "auto"sv)) {
    v.is_auto = true;
    return v;
  }
  const auto* i = node.as_integer();
  if (i == nullptr) {
    throw tuning_error(fmt::format("{} ({}): wrong TOML type: expected a TOML integer in {}..{}{}, got {}", kv,
                                   source, k.min, k.max, is_optional(k) ? " or the string \"auto\"" : "",
                                   toml_type_name(node.type())));
  }
  const int64_t n = i->get();
  if (n < 0) throw_bad_value(k, kv, source, "(negative)");
  if (static_cast<uint64_t>(n) > k.max) throw_bad_value(k, kv, source, "(too large)");
  if (static_cast<uint64_t>(n) < k.min) throw_bad_value(k, kv, source, "(too small)");
  v.number = static_cast<uint64_t>(n);
  return v;
}

// Reads the whole file; throws tuning_error("config file 'P': <strerror>").
// POSIX read() rather than ifstream so a directory reports EISDIR and a pipe
// (e.g. bash's <(...)) works.
std::string read_file(const std::string& path) {
  auto fail = [&](int err) {
    return tuning_error(fmt::format("config file '{}': cannot read: {}", path, std::strerror(err)));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw fail(errno);
  std::string data;
  char buf[8192];
  for (;;) {
    ssize_t got = ::read(fd, buf, sizeof buf);
    if (got > 0) {
      data.append(buf, static_cast<std::size_t>(got));
    } else if (got == 0) {
      break;
    } else if (errno != EINTR) {
      int err = errno;
      ::close(fd);
      throw fail(err);
    }
  }
  ::close(fd);
  return data;
}

void apply_config_file(SchedulerTuning& t, const std::string& path) {
  const std::string text = read_file(path);
  toml::table doc;
  try {
    doc = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw tuning_error(
        fmt::format("config file '{}': line {}, column {}: {}", path, where.line, where.column, e.description()));
  }
  const toml::node* sched = doc.get("scheduler");
  if (sched == nullptr) return;  // a file for other components only
  const toml::table* table = sched->as_table();
  if (table == nullptr) {
    throw tuning_error(fmt::format("scheduler = {} (from config file '{}'): wrong TOML type: expected a table "
                                   "[scheduler], got {}",
                                   toml_repr(*sched), path, toml_type_name(sched->type())));
  }
  for (const auto& [key, node] : *table) {
    const std::string_view name = key.str();
    auto it = std::find_if(kKnobs.begin(), kKnobs.end(), [&](const knob_spec& k) { return k.file_key == name; });
    if (it == kKnobs.end()) {
      std::cerr << fmt::format("coact: warning: unknown key '{}' in [scheduler] of config file '{}' (known: {})\n",
                               name, path, known_list(spelling::file));
      continue;
    }
    apply(t, *it, parse_toml(*it, node, path));
  }
}

// The environment as (key, value) pairs, in order; injected or real.
std::vector<std::pair<std::string, std::string>> environment_of(const TuningSources& s) {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](std::string_view entry) {
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) return;
    out.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  };
  if (s.env) {
    for (const auto& e : *s.env) add(e);
  } else if (environ != nullptr) {
    for (char** e = environ; *e != nullptr; ++e) add(*e);
  }
  return out;
}

// One --coact-* argument after splitting; value empty-optional when absent.
struct flag_arg {
  std::string name;  // "--coact-workers"
  std::optional<std::string> value;
};

// Splits args into --coact-* options (in order). Consumes "--k v" pairs;
// everything else is the user's and is skipped. Stops at "--".
std::vector<flag_arg> coact_flags(const std::vector<std::string>& args) {
  std::vector<flag_arg> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (!a.starts_with("--coact-")) continue;
    flag_arg f;
    if (auto eq = a.find('='); eq != std::string::npos) {
      f.name = a.substr(0, eq);
      f.value = a.substr(eq + 1);
      out.push_back(std::move(f));
      continue;
    }
    f.name = a;
    auto it = std::find_if(kKnobs.begin(), kKnobs.end(), [&](const knob_spec& k) { return flag_of(k) == a; });
    const bool known = it != kKnobs.end() || a == "--coact-config";
    if (!known) {
      out.push_back(std::move(f));  // unknown: don't guess whether the next arg is its value
      continue;
    }
    const bool has_next = i + 1 < args.size();
    const bool bare_bool = it != kKnobs.end() && it->kind == knob_kind::boolean &&
                           (!has_next || args[i + 1].starts_with("-"));
    if (!bare_bool && has_next) {
      f.value = args[++i];
    } else if (bare_bool) {
      f.value = "true";
    }
    out.push_back(std::move(f));
  }
  return out;
}

// --coact-causal-foo -> COACT_CAUSAL_FOO, to check against kOtherComponentKeys.
std::string env_spelling_of_flag(std::string_view flag) {
  std::string out;
  for (char c : flag.substr(2)) {
    out += (c == '-') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
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

SchedulerTuning resolve_tuning(const TuningSources& sources) {
  SchedulerTuning t;
  const auto env = environment_of(sources);
  const auto flags = coact_flags(sources.args);

  // Step 2: the config file.
  std::string path = sources.config_path;
  if (path.empty()) {
    for (const auto& f : flags) {
      if (f.name != "--coact-config") continue;
      if (!f.value || f.value->empty()) {
        throw tuning_error(fmt::format("--coact-config={} (from command line): expected a file path",
                                       quoted(f.value.value_or(""))));
      }
      path = *f.value;  // the last one wins
    }
  }
  if (path.empty()) {
    for (const auto& [key, value] : env) {
      if (key == "COACT_CONFIG") path = value;  // empty = no file
    }
  }
  if (!path.empty()) apply_config_file(t, path);

  // Step 3: the environment.
  for (const auto& [key, value] : env) {
    if (!key.starts_with("COACT_")) continue;
    auto it = std::find_if(kKnobs.begin(), kKnobs.end(), [&](const knob_spec& k) { return k.env_key == key; });
    if (it != kKnobs.end()) {
      apply(t, *it, parse_text(*it, key, value, "from environment"));
    } else if (!is_other_component_key(key)) {
      std::cerr << fmt::format("coact: warning: unknown environment key {} (known: {})\n", key,
                               known_list(spelling::env));
    }
  }

  // Step 4: the command line.
  for (const auto& f : flags) {
    if (f.name == "--coact-config") continue;  // handled in step 2
    auto it = std::find_if(kKnobs.begin(), kKnobs.end(), [&](const knob_spec& k) { return flag_of(k) == f.name; });
    if (it == kKnobs.end()) {
      if (!is_other_component_key(env_spelling_of_flag(f.name))) {
        std::cerr << fmt::format("coact: warning: unknown command-line option {} (known: {})\n", f.name,
                                 known_list(spelling::flag));
      }
      continue;
    }
    if (!f.value) {
      throw tuning_error(fmt::format("{} (from command line): missing value; expected {}", f.name, expectation(*it)));
    }
    apply(t, *it, parse_text(*it, f.name, *f.value, "from command line"));
  }
  return t;
}

SchedulerTuning resolve_tuning(int argc, const char* const* argv) {
  TuningSources s;
  if (argv != nullptr) {
    for (int i = 1; i < argc; ++i) {
      if (argv[i] != nullptr) s.args.emplace_back(argv[i]);
    }
  }
  return resolve_tuning(s);
}

}  // namespace coact
