#pragma once
// What `splitsim explore` prints: a table, JSON (schema splitsim.explore/1)
// or CSV of an Exploration (exploration.h), and its progress line. The
// fields are described in sim/explore/README.md.
#include <cstddef>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "splitsim/explore/exploration.h"

namespace splitsim {

// "explore: 120 screened, 64/90 simulated".
std::string progress_line(const ExploreProgress& p);

// The numbers of the run, the Pareto front and the first `top` of the
// ranking; `validation` (the report of validate_top(),
// exec/validate/include/splitsim/validate/ranking_check.h) is shown when it
// is not null, and so are `accuracy` (accuracy_ranking_json(), accuracy.h:
// the ranking by time to a target accuracy) and `leakage`
// (leakage_ranking_json(), leakage.h: the plans within leakage limits).
// `scenario` names the scenario in the heading / the JSON.
void write_explore_table(std::ostream& out, const std::string& scenario, const Exploration& e,
                         size_t top, const nlohmann::json& validation,
                         const nlohmann::json& accuracy = nullptr,
                         const nlohmann::json& leakage = nullptr);
void write_explore_json(std::ostream& out, const std::string& scenario, const Exploration& e,
                        size_t top, const nlohmann::json& validation,
                        const nlohmann::json& accuracy = nullptr,
                        const nlohmann::json& leakage = nullptr);
// The whole ranking, one row per simulated candidate (no validation).
void write_explore_csv(std::ostream& out, const Exploration& e);

}  // namespace splitsim
