// tools/coact-profile/run_report.hpp: what `coact-profile run` prints about
// the child's records (run_report.cpp): its notes as they arrive, the
// ranking of the status line and of the end report, the per-region summary
// and a profile-only run's heaviest regions. Called by run.cpp on its one
// thread; each prints on stderr or returns text.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_reader.hpp"

namespace coact::profile_tool {

/// Prints a warning or error record once per kind ("what"), naming run's
/// flags; for a name that matches nothing, also the valid names (the first
/// time that kind is shown) and the closest one ("did you mean"). `listed`
/// holds the kinds already listed.
void print_note(const Records& r, const nlohmann::json& n, std::vector<std::string>& listed);
/// Whether an error record says a filter or fixed name matched nothing (a
/// usage error: exit 2).
bool naming_error(const Records& r);
/// "\n    N  region" per region, most experiments first.
std::string per_region_text(const Records& r);
/// --profile-only: the heaviest regions of the "profile" record `p`, and where
/// the profile is kept (`files`).
void print_profile(const nlohmann::json& p, const std::string& files);
/// The ranking from the last "estimates" record: regions ranked, the leader
/// with its interval, settled or not; "" before any estimate. `verbose`:
/// region names in full.
std::string ranking_status(const Records& r, bool verbose);

}  // namespace coact::profile_tool
