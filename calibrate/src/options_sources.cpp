// options_sources.cpp: resolution of the COACT_* keys (coact/options.hpp
// resolve, init): reading the config file, the environment and the
// arguments, validating each value against its declaration
// (options_table.cpp), and the errors that name key, value and source.
//
// Resolution, in order (each step overrides the previous one's values):
//   1. Every key at its declared default.
//   2. The config file: Sources::config_path, else the last --coact-config in
//      the arguments, else COACT_CONFIG. Parsed as TOML; each table is a
//      subsystem's group ([scheduler], [calibrate], [causal]).
//   3. The environment: every COACT_* key (COACT_BENCH_* excepted: the
//      benchmark scripts' own variables, never passed to programs).
//   4. The --coact-* arguments, in order.
//   5. Sources::given: a tool's own flags for declared keys (coact-profile
//      run's, generated from causal/src/option_fields.cpp).
// Every value is validated where it is read, so a bad value anywhere is an
// error even when a higher-precedence source overrides it.
//
// argv is parsed by hand, not with CLI11: the user's own arguments must stay
// untouched (including positional ones after an unknown option), both
// "--k=v" and "--k v" are accepted, and the messages name key, value, source
// and range in one line; CLI11's allow_extras and validators fight all three.

#include <coact/options.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "options_internal.hpp"

extern "C" char** environ;  // POSIX; declared by <unistd.h> only under _GNU_SOURCE.

static_assert(TOML_EXCEPTIONS, "options_sources.cpp expects toml++ to report parse errors as exceptions");

namespace coact::options {
namespace {

using namespace std::string_view_literals;
using detail::flag_of;
using detail::index_of;
using detail::is_group;
using detail::mark_read;
using detail::renamed_to;
using detail::split_list;

// ---- spelling helpers ---------------------------------------------------------------

// --coact-foo-bar -> COACT_FOO_BAR
std::string env_of_flag(std::string_view flag) {
  std::string out = "COACT_";
  for (char c : flag.substr(8))
    out += (c == '-') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

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

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

enum class Spelling { env, flag, file };

std::string spelled(const Key& k, Spelling s) {
  switch (s) {
    case Spelling::env:
      return std::string(k.name);
    case Spelling::flag:
      return flag_of(k.name);
    case Spelling::file:
      return fmt::format("{}.{}", k.group, k.field);
  }
  return std::string(k.name);
}

// "unknown key X (from S); did you mean Y? ..." or the rename message.
[[noreturn]] void throw_unknown(std::string_view as_env, std::string_view written, Spelling s,
                                std::string_view source) {
  if (const Key* k = renamed_to(as_env)) {
    throw option_error(fmt::format("{} ({}) was renamed: use {}", written, source, spelled(*k, s)));
  }
  const Key* best = nullptr;
  std::size_t best_d = 4;  // suggest only near misses
  for (const Key& k : keys()) {
    if (s == Spelling::file && k.field.empty()) continue;
    const std::size_t d = edit_distance(as_env, k.name);
    if (d < best_d) {
      best_d = d;
      best = &k;
    }
  }
  throw option_error(fmt::format("unknown key {} ({}){} (--coact-help lists every key)", written, source,
                                 best ? fmt::format("; did you mean {}?", spelled(*best, s)) : std::string()));
}

// ---- values ----------------------------------------------------------------------------

[[noreturn]] void throw_bad(const Key& k, std::string_view written, std::string_view value_repr,
                            std::string_view source, std::string_view why) {
  throw option_error(fmt::format("{}={} ({}): expected {}{}{}", written, value_repr, source, k.accepted(),
                                 why.empty() ? "" : " ", why));
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + v[i];
  return out;
}

bool choice_ok(const Key& k, std::string_view text) {
  if (k.choices.empty()) return true;
  std::string_view rest = k.choices;
  while (!rest.empty()) {
    const auto bar = rest.find('|');
    if (rest.substr(0, bar) == text) return true;
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return false;
}

// Validates a textual value (environment or command line) and returns its
// canonical text.
std::string parse_text(const Key& k, std::string_view written, std::string_view text, std::string_view source) {
  const std::string repr = quoted(text);
  switch (k.type) {
    case Type::boolean:
      for (auto w : {"1"sv, "true"sv, "yes"sv, "on"sv}) {
        if (iequals(text, w)) return "true";
      }
      for (auto w : {"0"sv, "false"sv, "no"sv, "off"sv}) {
        if (iequals(text, w)) return "false";
      }
      throw_bad(k, written, repr, source, "");
    case Type::text:
      if (!choice_ok(k, text)) throw_bad(k, written, repr, source, "");
      return std::string(text);
    case Type::list:
      return join(split_list(text));
    case Type::integer:
      break;
  }
  if (k.accepts_auto && iequals(text, "auto"sv)) return "auto";
  if (text.empty()) throw_bad(k, written, repr, source, "(empty)");
  const auto digits = [](std::string_view t) {
    return std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (text.front() == '-' && text.size() > 1 && digits(text.substr(1)))
    throw_bad(k, written, repr, source, "(negative)");
  if (!digits(text)) throw_bad(k, written, repr, source, "(not a decimal number)");
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n, 10);
  if (ec == std::errc::result_out_of_range || (ec == std::errc{} && n > k.max)) {
    throw_bad(k, written, repr, source, "(too large)");
  }
  if (ec != std::errc{} || end != text.data() + text.size())
    throw_bad(k, written, repr, source, "(not a decimal number)");
  if (n < k.min) throw_bad(k, written, repr, source, "(too small)");
  return std::to_string(n);
}

const char* toml_type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::none:
      return "nothing";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
  }
  return "an unknown type";
}

std::string toml_repr(const toml::node& n) {
  if (n.is_table()) return "{...}";
  if (n.is_array()) return "[...]";
  std::ostringstream os;
  n.visit([&](const auto& x) { os << x; });
  return os.str();
}

std::string parse_toml(const Key& k, const toml::node& node, std::string_view path) {
  const std::string written = spelled(k, Spelling::file);
  const std::string source = fmt::format("from config file '{}'", path);
  const auto wrong_type = [&](std::string_view want) {
    return option_error(fmt::format("{} = {} ({}): wrong TOML type: expected {}, got {}", written, toml_repr(node),
                                    source, want, toml_type_name(node.type())));
  };
  const std::string kv = fmt::format("{} = {}", written, toml_repr(node));
  switch (k.type) {
    case Type::boolean:
      if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
      throw wrong_type("a TOML boolean (true/false)");
    case Type::text:
      if (const auto* s = node.as_string()) return parse_text(k, written, s->get(), source);
      throw wrong_type("a TOML string");
    case Type::list:
      if (const auto* s = node.as_string()) return join(split_list(s->get()));
      if (const auto* a = node.as_array()) {
        std::vector<std::string> items;
        for (const auto& e : *a) {
          const auto* s = e.as_string();
          if (s == nullptr) throw wrong_type("an array of strings");
          for (auto& x : split_list(s->get())) items.push_back(std::move(x));
        }
        return join(items);
      }
      throw wrong_type("an array of strings or a comma-separated string");
    case Type::integer:
      break;
  }
  if (const auto* s = node.as_string(); s && k.accepts_auto && iequals(s->get(), "auto"sv)) return "auto";
  const auto* i = node.as_integer();
  if (i == nullptr) {
    throw wrong_type(
        fmt::format("a TOML integer in {}..{}{}", k.min, k.max, k.accepts_auto ? " or the string \"auto\"" : ""));
  }
  const int64_t n = i->get();
  if (n < 0) throw option_error(fmt::format("{} ({}): expected {} (negative)", kv, source, k.accepted()));
  if (static_cast<uint64_t>(n) > k.max)
    throw option_error(fmt::format("{} ({}): expected {} (too large)", kv, source, k.accepted()));
  if (static_cast<uint64_t>(n) < k.min)
    throw option_error(fmt::format("{} ({}): expected {} (too small)", kv, source, k.accepted()));
  return std::to_string(n);
}

// POSIX read() rather than ifstream so a directory reports EISDIR and a pipe works.
// `named_by` is the key that named the file ("COACT_CONFIG", "--coact-config")
// or "" for Sources::config_path.
std::string read_whole_file(const std::string& path, std::string_view named_by) {
  auto fail = [&](int err) {
    if (named_by.empty())
      return option_error(fmt::format("config file '{}': cannot read: {}", path, std::strerror(err)));
    return option_error(fmt::format("{}={}: cannot read the config file: {} (expected a readable TOML file)", named_by,
                                    quoted(path), std::strerror(err)));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw fail(errno);
  std::string data;
  char buf[8192];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got > 0) {
      data.append(buf, static_cast<std::size_t>(got));
    } else if (got == 0) {
      break;
    } else if (errno != EINTR) {
      const int err = errno;
      ::close(fd);
      throw fail(err);
    }
  }
  ::close(fd);
  return data;
}

Entry& entry_of(std::vector<Entry>& entries, const Key* k) { return entries[index_of(k)]; }

void set(std::vector<Entry>& entries, const Key* k, std::string text, Source src, std::string origin) {
  Entry& e = entry_of(entries, k);
  e.text = std::move(text);
  e.source = src;
  e.origin = std::move(origin);
}

void apply_config_file(std::vector<Entry>& entries, const std::string& path, std::string_view named_by) {
  const std::string text = read_whole_file(path, named_by);
  toml::table doc;
  try {
    doc = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw option_error(
        fmt::format("config file '{}': line {}, column {}: {}", path, where.line, where.column, e.description()));
  }
  for (const auto& [tkey, tnode] : doc) {
    const std::string_view group = tkey.str();
    const bool known = group != "options"sv && is_group(group);
    if (!known) {
      throw option_error(
          fmt::format("config file '{}': unknown table [{}] (expected [scheduler], [calibrate] or "
                      "[causal])",
                      path, group));
    }
    const toml::table* table = tnode.as_table();
    if (table == nullptr) {
      throw option_error(fmt::format("{} = {} (from config file '{}'): wrong TOML type: expected a table [{}], got {}",
                                     group, toml_repr(tnode), path, group, toml_type_name(tnode.type())));
    }
    for (const auto& [key, node] : *table) {
      const std::string_view field = key.str();
      const auto all = keys();
      const auto it = std::find_if(all.begin(), all.end(), [&](const Key& k) {
        return k.group == group && !k.field.empty() && k.field == field;
      });
      const std::string source = fmt::format("from config file '{}'", path);
      if (it == all.end()) {
        // Moved to another table, or renamed: COACT_ + upper(field) names it.
        std::string as_env = "COACT_";
        for (char c : field) as_env += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        if (group == "causal"sv) as_env = "COACT_CAUSAL_" + as_env.substr(6);
        if (const Key* k = find(as_env); k && !k->field.empty()) {
          throw option_error(fmt::format("{}.{} ({}) belongs in table [{}]: use {}", group, field, source, k->group,
                                         spelled(*k, Spelling::file)));
        }
        throw_unknown(as_env, fmt::format("{}.{}", group, field), Spelling::file, source);
      }
      set(entries, &*it, parse_toml(*it, node, path), Source::config_file, path);
    }
  }
}

std::vector<std::pair<std::string, std::string>> environment_of(const Sources& s) {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](std::string_view entry) {
    const auto eq = entry.find('=');
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

bool is_ours(std::string_view env_key) {
  return env_key.starts_with("COACT_"sv) && !env_key.starts_with("COACT_BENCH_"sv);
}

// One --coact-* argument: its position(s) in args and its value.
struct FlagArg {
  std::string name;                  // "--coact-workers"
  std::optional<std::string> value;  // nullopt: missing
  std::size_t first = 0;             // index in args
  std::size_t count = 1;             // 1, or 2 for "--k v"
};

// Finds the --coact-* arguments (in order), stopping at "--". An unknown
// --coact-x does not consume the next argument (we cannot know its arity).
std::vector<FlagArg> coact_flags(const std::vector<std::string>& args) {
  std::vector<FlagArg> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (!a.starts_with("--coact-")) continue;
    FlagArg f;
    f.first = i;
    if (const auto eq = a.find('='); eq != std::string::npos) {
      f.name = a.substr(0, eq);
      f.value = a.substr(eq + 1);
      out.push_back(std::move(f));
      continue;
    }
    f.name = a;
    if (a == "--coact-help") {
      out.push_back(std::move(f));
      continue;
    }
    const Key* k = find(env_of_flag(a));
    if (k == nullptr) {
      out.push_back(std::move(f));
      continue;
    }
    const bool has_next = i + 1 < args.size();
    if (k->type == Type::boolean && (!has_next || args[i + 1].starts_with("-"))) {
      f.value = "true";
    } else if (has_next) {
      f.value = args[++i];
      f.count = 2;
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

Values resolve(const Sources& sources) {
  Values v = defaults();
  const auto env = environment_of(sources);
  const auto flags = coact_flags(sources.args);

  // Step 2: the config file.
  std::string path = sources.config_path;
  Source path_source = Source::command_line;
  std::string path_origin = "--coact-config";
  if (path.empty()) {
    for (const auto& f : flags) {
      if (f.name != "--coact-config") continue;
      if (!f.value || f.value->empty()) {
        throw option_error(
            fmt::format("--coact-config={} (from command line): expected a file path", quoted(f.value.value_or(""))));
      }
      path = *f.value;  // the last one wins
    }
  }
  if (path.empty()) {
    for (const auto& [key, value] : env) {
      if (key == "COACT_CONFIG") {
        path = value;  // empty = no file
        path_source = Source::environment;
        path_origin = "COACT_CONFIG";
      }
    }
  }
  mark_read(find("COACT_CONFIG"));
  if (!path.empty()) {
    set(v.entries_, find("COACT_CONFIG"), path, path_source, path_origin);
    apply_config_file(v.entries_, path, sources.config_path.empty() ? std::string_view(path_origin) : "");
  }

  // Step 3: the environment.
  for (const auto& [key, value] : env) {
    if (!is_ours(key) || key == "COACT_CONFIG") continue;
    const Key* k = find(key);
    if (k == nullptr) throw_unknown(key, key, Spelling::env, "from environment");
    if (value.empty() && k->type != Type::text && k->type != Type::list) {
      set(v.entries_, k, std::string(k->default_value), Source::default_value, "");  // empty = unset
      continue;
    }
    set(v.entries_, k, parse_text(*k, key, value, "from environment"), Source::environment, key);
  }

  // Step 4: the command line.
  for (const auto& f : flags) {
    if (f.name == "--coact-config" || f.name == "--coact-help") continue;
    const std::string as_env = env_of_flag(f.name);
    const Key* k = find(as_env);
    if (k == nullptr) throw_unknown(as_env, f.name, Spelling::flag, "from command line");
    if (!f.value) {
      throw option_error(fmt::format("{} (from command line): missing value; expected {}", f.name, k->accepted()));
    }
    set(v.entries_, k, parse_text(*k, f.name, *f.value, "from command line"), Source::command_line, f.name);
  }

  // Step 5: a tool's own command line (Sources::given).
  for (const Sources::Given& g : sources.given) {
    const Key* k = find(g.key);
    if (k == nullptr) throw std::logic_error(fmt::format("coact options: {} is not a declared key", g.key));
    set(v.entries_, k, parse_text(*k, g.written, g.value, "from command line"), Source::command_line, g.written);
  }
  return v;
}

Values init(int& argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i] != nullptr ? argv[i] : "");
  const auto flags = coact_flags(args);
  bool help = false;
  std::vector<bool> drop(args.size(), false);
  for (const auto& f : flags) {
    if (f.name == "--coact-help") help = true;
    for (std::size_t j = 0; j < f.count; ++j) drop[f.first + j] = true;
  }
  Values v;
  try {
    Sources s;
    s.args = std::move(args);
    v = resolve(s);
  } catch (const option_error& e) {
    exit_with(argc > 0 ? argv[0] : nullptr, e);
  }
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (!drop[static_cast<std::size_t>(i - 1)]) argv[out++] = argv[i];
  }
  for (int i = out; i < argc; ++i) argv[i] = nullptr;
  argc = out;
  install(v);
  if (help) {
    std::fputs(v.listing().c_str(), stdout);
    std::fflush(stdout);
    std::exit(0);
  }
  return v;
}

namespace detail {

std::vector<std::string> split_list(std::string_view value) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= value.size()) {
    std::size_t comma = value.find(',', pos);
    if (comma == std::string_view::npos) comma = value.size();
    std::string_view item = value.substr(pos, comma - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    pos = comma + 1;
  }
  return out;
}

}  // namespace detail
}  // namespace coact::options
