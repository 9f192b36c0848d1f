#pragma once
// The Plan as raw bytes: what simulate_in_process and compute_metrics read,
// not what only the plan's table shows (unit names, MACs, op-class shares,
// codecs). Raw rather than the plan file's JSON: that parser also applies
// the file's limits, and parsing it costs a tenth of a short simulation.
// One function per direction (plan_codec.cpp), field for field in the same
// order: a field the simulation starts to read goes into both.
#include <cstddef>
#include <string>

#include "splitsim/costmodel/plan.h"

namespace splitsim::sim_internal {

std::string encode_plan(const Plan& plan);
// Throws std::runtime_error("malformed plan") for bytes encode_plan did not write.
Plan decode_plan(const char* data, size_t size);

}  // namespace splitsim::sim_internal
