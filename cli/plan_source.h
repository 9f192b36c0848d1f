#pragma once
// Where `simulate` gets its Plans: a plan file (what `splitsim plan --json`
// writes: one plan, or an array of them), read without LibTorch; or a
// scenario file, whose variants are measured and planned through the
// Workspace, which only the LibTorch build has.
#include <string>
#include <vector>

#include "splitsim/costmodel/plan.h"

namespace splitsim {

// The plans of `file` whose variant label contains `variant` (every plan
// when it is empty). A file is a plan file when its "schema" (or its first
// element's) is "splitsim.plan/1"; anything else is read as a scenario.
// Throws InputError: naming --variant and the labels when no plan matches.
std::vector<Plan> load_plans(const std::string& file, const std::string& variant);

// The plans of a scenario file's variants whose label contains `variant`.
// Defined by plan_source_torch.cpp (the Workspace) in the LibTorch build and
// by plan_source_notorch.cpp (an InputError: give a plan file) without it.
std::vector<Plan> scenario_plans(const std::string& file, const std::string& variant);

}  // namespace splitsim
