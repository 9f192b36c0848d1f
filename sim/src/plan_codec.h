#pragma once
// The Plan as raw bytes, for the simulator's worker processes. Raw rather
// than the plan file's JSON: that parser also applies the file's limits,
// and parsing it costs a tenth of a short simulation.
// Every field of plan_schema.h's lists, in their order: a new field there is
// carried without a change here.
#include <cstddef>
#include <string>

#include "splitsim/costmodel/plan.h"

namespace splitsim::sim_internal {

std::string encode_plan(const Plan& plan);
// Throws std::runtime_error("malformed plan") for bytes encode_plan did not write.
Plan decode_plan(const char* data, size_t size);

}  // namespace splitsim::sim_internal
