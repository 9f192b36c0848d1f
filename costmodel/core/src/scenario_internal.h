#pragma once
// The keys of the scenario format, shared by the parser (scenario.cpp) and
// the sweep expansion (scenario_sweep.cpp), and the network and platform
// readers plan files share (plan_parse.cpp), and the clients' reader. Internal to splitsim_core.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/scenario.h"

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

// The keys of the "model" object, and the object at `path`, resolved with
// its model's defaults (scenario_model.cpp). Throws InputError.
const std::vector<std::string>& model_keys();
ModelSpec parse_model(const nlohmann::json& j, const std::string& path);
// The "network" and "platform" objects at `path` (also in plan files).
// Throws InputError.
NetworkSpec parse_network(const nlohmann::json& j, const std::string& path);
PlatformSpec parse_platform(const nlohmann::json& j, const std::string& path);
// The "platform" object's keys (scenario_platform.cpp, with parse_platform).
const std::vector<std::string>& platform_keys();
// "$.clients": a count, or a list of client groups (scenario_clients.cpp).
// Returns the groups (none for a count) and sets *total. Throws InputError.
std::vector<ClientGroupSpec> parse_clients(const nlohmann::json& j, int64_t* total);

}  // namespace splitsim::scenario_internal
