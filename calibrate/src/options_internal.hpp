// calibrate/src/options_internal.hpp: what the options core's three files
// share (private to calibrate): options_table.cpp (the declarations),
// options_sources.cpp (reading the config file, the environment and the
// arguments: resolve, init) and options.cpp (Key, Values, the process-wide
// values, the listing). Pure functions on any thread, except mark_read (a
// relaxed atomic store).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <coact/options.hpp>

namespace coact::options::detail {

/// A subsystem's group name of the table ("scheduler", "causal", ...).
bool is_group(std::string_view group);
/// The new key of an old spelling (environment form), else nullptr.
const Key* renamed_to(std::string_view old_name);
/// k's position in keys() (k must point into it).
std::size_t index_of(const Key* k);
/// Records that k was read (unread_keys()).
void mark_read(const Key* k);
/// COACT_FOO_BAR -> --coact-foo-bar.
std::string flag_of(std::string_view env_name);
/// A list value's items: split at commas, blanks trimmed, empty items dropped.
std::vector<std::string> split_list(std::string_view value);

}  // namespace coact::options::detail
