// coact/options.hpp: every COACT_* knob of coact, declared once and resolved
// once per process (the options mechanism under calibrate, causal and runtime).
//
// Provides: the declaration table (keys(): name, type, unit, range, default,
// doc line, the subsystem that reads it), resolve() (one precedence for every
// key: command line --coact-* > environment COACT_* > TOML file > default),
// the process-wide resolved values (process(), init()) and a listing of every
// key with its value and source (Values::listing(), --coact-help).
//
// Spellings of one key: environment COACT_SPIN_WINDOW_US; command line
// --coact-spin-window-us=50 or --coact-spin-window-us 50 (a boolean given bare
// means true); TOML file (COACT_CONFIG=PATH or --coact-config=PATH) key
// spin_window_us in the table of the reading subsystem ([scheduler],
// [calibrate], [causal]). Integers are decimal digits only; booleans are
// 1/0/true/false/yes/no/on/off (any case); lists are comma-separated (TOML: an
// array of strings or one string); an empty environment value counts as unset.
// Keys that accept "auto" (a computed value: calibrated, adaptive, drawn) take
// it in every source and fall back to the computation.
//
// Unknown-key policy (one for all sources): an unknown COACT_* environment
// key (except COACT_BENCH_*, the benchmark scripts' own variables), an unknown
// --coact-* argument, and an unknown table or key in the config file are
// errors naming the key and the nearest declared one; an old spelling (e.g.
// COACT_SPIN_WINDOW_USEC) is an error that names its new key.
//
// Adding a key is a one-place change: add one line to kKeys in
// calibrate/src/options_table.cpp (in its subsystem's group), read it where it is
// used with Values::integer/boolean/text/list on process(), and run the
// options test: it fails until docs/options.md's table (generated from the
// table by `coact-calibrate --print-config --markdown`) lists the key and
// until something reads it. A scheduler or causal key is read through its
// subsystem's option group (coact/options_binding.hpp: runtime/src/tuning.cpp
// binds SchedulerTuning, causal/src/option_fields.cpp causal::Options and
// coact-profile run's flags); each group's test fails until the key has a
// binding.
//
// Threads: resolve() is pure apart from reading the environment (a race with
// a concurrent setenv) and the config file; process() and install() may be
// called from any thread (a mutex guards the process-wide copy). Nothing here
// blocks except file reads. Lifetime: Values is a plain value.
// Errors: option_error (a std::invalid_argument) whose message is one line naming
// the key, the value, its source and what is accepted. A program's entry
// point (init(), Runtime(argc, argv)) prints it and exits with status 2; the
// library entry points (resolve(), process(), Runtime(SchedulerTuning)) throw it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace coact::options {

/// A bad option value, an unknown key or an unreadable config file. The
/// message is one line: key, value, source and what is accepted. An
/// invalid_argument: a value given from outside the program is wrong.
class option_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class Type : uint8_t {
  integer,  ///< decimal digits in [min, max]; optionally "auto"
  boolean,  ///< 1/0/true/false/yes/no/on/off
  text,     ///< any string; `choices` restricts it ("time|uniform")
  list,     ///< comma-separated strings, blanks trimmed, empty items dropped
};

/// Where a resolved value came from, lowest precedence first.
enum class Source : uint8_t { default_value, config_file, environment, command_line };
std::string_view to_string(Source s) noexcept;  ///< "default", "config file", "environment", "command line"

/// One declared key.
struct Key {
  std::string_view name;   ///< environment spelling, "COACT_SPIN_WINDOW_US"
  std::string_view group;  ///< reading subsystem and TOML table: "scheduler", "calibrate", "causal", "options"
  std::string_view field;  ///< key inside the TOML table, "spin_window_us" ("" = not settable from the file)
  Type type;
  std::string_view unit;  ///< "us", "ns", "ms", "s", "Hz", "%" or ""
  uint64_t min = 0;       ///< integers: accepted range
  uint64_t max = 0;
  bool accepts_auto = false;       ///< integers: "auto" = computed (the default when default_value is "auto")
  std::string_view default_value;  ///< as text; "auto" or "" where computed / empty
  std::string_view choices;        ///< text: "a|b" accepted words ("" = any)
  std::string_view doc;            ///< one line

  std::string flag() const;      ///< "--coact-spin-window-us"
  std::string accepted() const;  ///< "an integer in 0..1000000 (us)", "a boolean (...)", ...
};

/// Every declared key, grouped by subsystem (options, calibrate, causal, scheduler).
std::span<const Key> keys() noexcept;
/// The key named `name` (environment spelling); nullptr if none.
const Key* find(std::string_view name) noexcept;

struct Sources;

/// One key's resolved value.
struct Entry {
  const Key* key = nullptr;
  std::string text;  ///< canonical text ("50", "true", "auto", "a,b", "")
  Source source = Source::default_value;
  std::string origin;  ///< "COACT_X", "--coact-x", "file.toml" or "" (default)
};

/// The resolved value of every key. Typed reads take the environment
/// spelling; reading an undeclared name or with the wrong type is a
/// programming error (std::logic_error). Every read marks the key as read
/// for unread_keys(). Any thread (const).
class Values {
 public:
  /// Integer; nullopt when the value is "auto" (or unset without a default).
  std::optional<uint64_t> integer(std::string_view name) const;
  bool boolean(std::string_view name) const;
  const std::string& text(std::string_view name) const;
  std::vector<std::string> list(std::string_view name) const;
  /// True when some source other than the default set the key.
  bool is_set(std::string_view name) const;
  const Entry& entry(std::string_view name) const;
  const std::vector<Entry>& entries() const noexcept { return entries_; }
  /// One line per key: "COACT_X=value  (source[ origin]; accepted) doc".
  std::string listing() const;

 private:
  friend Values resolve(const Sources&);
  friend Values defaults();
  std::vector<Entry> entries_;  // in keys() order
};

/// Every key at its default (no source read).
Values defaults();

/// What resolve() reads.
struct Sources {
  /// Command-line arguments (argv[1..]): --coact-KEY=VALUE or --coact-KEY VALUE,
  /// plus --coact-config=PATH. Parsing stops at "--"; other arguments are ignored.
  std::vector<std::string> args;
  /// Environment entries "KEY=VALUE"; nullopt = the real process environment.
  std::optional<std::vector<std::string>> env;
  /// Config file; empty = --coact-config from args, else COACT_CONFIG, else none.
  std::string config_path;
  /// Values a tool's own command line gave for declared keys (coact-profile
  /// run's --cooldown-ms for COACT_CAUSAL_COOLDOWN_MS), applied after `args`
  /// with command-line precedence, validated like them and named in errors
  /// and in Entry::origin as `written`.
  struct Given {
    std::string key;      ///< environment spelling of a declared key
    std::string value;    ///< as given (a bare boolean flag: "true")
    std::string written;  ///< the tool's spelling, "--cooldown-ms"
  };
  std::vector<Given> given;
};

/// Resolves every key: default < config file < environment < command line.
/// Every source is validated, even where a higher one overrides it.
/// Errors: option_error (see the header comment). Any thread.
Values resolve(const Sources& sources = {});

/// The process's resolved values: those installed by init()/install(), else
/// resolved once from the real environment (and COACT_CONFIG) at the first
/// call and kept. Errors: option_error from that first resolution (thrown
/// again on later calls until one succeeds). Any thread.
Values process();
/// Makes `v` the process's values (later process() calls return it).
void install(Values v);

/// A program's entry point: removes every --coact-* argument (and the value
/// of "--coact-KEY VALUE") from argv, shifting the rest down and lowering
/// argc (as InitGoogleTest does), stopping at "--"; resolves with the real
/// environment and installs the result. --coact-help prints listing() to
/// stdout and exits 0. On option_error prints "PROG: error: MESSAGE" (PROG =
/// basename of argv[0]) on stderr and exits 2. Returns the installed values.
/// Call from main's thread before starting threads that read options.
Values init(int& argc, char** argv);

/// Prints "PROG: error: MESSAGE" for `e` on stderr and exits with status 2.
[[noreturn]] void exit_with(const char* argv0, const option_error& e);

/// Declared keys that no Values read in this process so far (names).
std::vector<std::string> unread_keys();

/// docs/options.md's table (Markdown), generated from keys().
std::string markdown_table();

}  // namespace coact::options
