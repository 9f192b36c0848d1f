#pragma once
// The keys of the scenario format, shared by the parser (scenario.cpp) and
// the sweep expansion (scenario_sweep.cpp). Internal to splitsim_core.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace splitsim::scenario_internal {

inline constexpr const char* kSchema = "splitsim.scenario/1";

// Throws InputError at "$" or "$.schema" unless `j` is an object whose
// "schema" is kSchema.
void check_schema(const nlohmann::json& j);
// Top-level keys of one scenario, in documentation order (without "sweep").
const std::vector<std::string>& top_level_keys();
// The keys of the nested object `object` ("model", "optimizer", "network"),
// or nullptr when `object` has no fixed key set.
const std::vector<std::string>* nested_keys(const std::string& object);

}  // namespace splitsim::scenario_internal
