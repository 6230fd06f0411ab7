// coact/causal/option_fields.hpp: which causal::Options member holds each
// COACT_CAUSAL_* key. One table (causal/src/option_fields.cpp) from which
// options_from reads a sweep's Options, to_env exports them to a child,
// options_json records them (the startup record's "options", named by the
// keys' TOML fields), and coact-profile run makes its sweep flags
// (--cooldown-ms for COACT_CAUSAL_COOLDOWN_MS, with the key's help line,
// default and validation).
//
// The key itself (type, range, default, help line, TOML field) is declared
// once in the options core's table (calibrate/src/options.cpp, group
// "causal"), which resolves and validates every value; a binding here names
// the member and how its value is read and written. The options test checks
// both directions: every key of group "causal" except COACT_CAUSAL itself
// has exactly one binding, and every binding names a declared key.
// Adding a sweep option: its Key line, its Options member, its binding line
// in option_fields.cpp, and a test; nothing else names it.
//
// Threads: the table is immutable; its functions are pure (any thread).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <coact/causal/controller.hpp>
#include <coact/options.hpp>

namespace coact::causal {

/// One COACT_CAUSAL_* key bound to its Options member(s).
struct OptionField {
  std::string_view key;  ///< "COACT_CAUSAL_COOLDOWN_MS"
  /// Sets the member from resolved values (already validated against the
  /// key's declaration; a value the member cannot hold throws
  /// options::option_error naming the key as the user wrote it).
  void (*read)(Options& o, const options::Values& v, std::string_view key);
  /// The member as the key's canonical text ("10", "true", "a,b", "auto"):
  /// what to_env exports and options_json records.
  std::string (*text)(const Options& o);
  /// to_env exports it even at its default (the tool reads it back).
  bool always_exported = false;

  /// The key's declaration in the options core's table.
  const options::Key& declared() const;
  /// The tool flag spelling: "--cooldown-ms" (the key without COACT_CAUSAL_,
  /// lower case, '_' as '-').
  std::string flag() const;
};

/// Every binding, in the order of the options core's table; Options fields
/// that depend on another (json_output on output) come after it.
std::span<const OptionField> option_fields() noexcept;

/// How a key's value was written where it was set, for error messages: the
/// flag as given on a command line ("--cooldown-ms", "--coact-causal-cooldown-ms"),
/// else the key's name.
std::string written_as(const options::Values& v, std::string_view key);

}  // namespace coact::causal
