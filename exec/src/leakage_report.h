#pragma once
// The train report's leakage parts (exec/README.md, the train report): the
// cut at each boundary and the leakage records of every rank, one entry per
// evaluation and boundary. No LibTorch in this header.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "splitsim/costmodel/plan.h"

namespace splitsim {

struct BoundaryLeakage;

// Per boundary, the last model unit before it.
nlohmann::json cuts_json(const Plan& plan);

// `records` (BoundaryLeakage, runner.h) as the report's "leakage": one entry
// per (evaluation, boundary) with what crossed it forward and backward.
nlohmann::json leakage_json(const Plan& plan, int64_t batches_per_epoch,
                            const std::vector<BoundaryLeakage>& records);

}  // namespace splitsim
