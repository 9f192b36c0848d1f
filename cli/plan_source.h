#pragma once
// Where `simulate` gets its Plans: a plan file (what `splitsim plan --json`
// writes: one plan, or an array of them), read without LibTorch; or a
// scenario file, whose variants are measured and planned through the
// Workspace, which only the LibTorch build has.
#include <memory>
#include <string>
#include <vector>

#include "splitsim/costmodel/calibration.h"
#include "splitsim/costmodel/plan.h"

namespace splitsim {

// The plans of `file` whose variant label contains `variant` (every plan
// when it is empty), calibrated with `calibration` when it is set: a
// scenario's variants plan with it (Scenario::command_calibration), a plan
// file's plans have it applied. A file is a plan file when its "schema" (or
// its first element's) is "splitsim.plan/1"; anything else is read as a
// scenario. Throws InputError: naming --variant and the labels when no plan
// matches.
std::vector<Plan> load_plans(const std::string& file, const std::string& variant,
                             const std::shared_ptr<const Calibration>& calibration = nullptr);

// The plans of a scenario file's variants whose label contains `variant`,
// each variant's scenario given `calibration` as its command_calibration.
// Defined by plan_source_torch.cpp (the Workspace) in the LibTorch build and
// by plan_source_notorch.cpp (an InputError: give a plan file) without it.
std::vector<Plan> scenario_plans(const std::string& file, const std::string& variant,
                                 const std::shared_ptr<const Calibration>& calibration);

}  // namespace splitsim
