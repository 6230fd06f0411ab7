// coact/causal/option_fields.hpp: which causal::Options member holds each
// COACT_CAUSAL_* key. One table (causal/src/option_fields.cpp) from which
// options_from reads a sweep's Options, to_env exports them to a child,
// options_json records them (the startup record's "options", named by the
// keys' TOML fields), and coact-profile run makes its sweep flags
// (--cooldown-ms for COACT_CAUSAL_COOLDOWN_MS, with the key's help line,
// default and validation).
//
// The key itself (type, range, default, help line, TOML field) is declared
// once in the options core's table (calibrate/src/options_table.cpp, group
// "causal"), which resolves and validates every value; a binding here names
// the member and how its value is read and written (options_binding.hpp).
// The options test checks both directions: every key of group "causal"
// except COACT_CAUSAL itself has exactly one binding, and every binding
// names a declared key.
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
#include <coact/options_binding.hpp>

namespace coact::causal {

/// One COACT_CAUSAL_* key bound to its Options member(s) (coact/options_binding.hpp).
using OptionField = options::Binding<Options>;

/// The tool flag spelling of a binding: "--cooldown-ms" (the key without
/// COACT_CAUSAL_, lower case, '_' as '-').
std::string flag_of(const OptionField& f);

/// Every binding, in the order of the options core's table; Options fields
/// that depend on another (json_output on output) come after it.
std::span<const OptionField> option_fields() noexcept;

/// How a key's value was written where it was set, for error messages: the
/// flag as given on a command line ("--cooldown-ms", "--coact-causal-cooldown-ms"),
/// else the key's name.
std::string written_as(const options::Values& v, std::string_view key);

namespace detail {
/// Throws option_error "KEY='value': expected ACCEPTED", KEY as written_as
/// spells it: a value the declaration accepts but the sweep cannot use.
[[noreturn]] void bad_value(const options::Values& v, std::string_view key, std::string_view value,
                            std::string_view accepted);
}  // namespace detail

}  // namespace coact::causal
