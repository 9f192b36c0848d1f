// scenario_plans in the LibTorch build: the Workspace measures the model and
// plans every selected variant.
#include <iostream>

#include "plan_source.h"
#include "splitsim/costmodel/workspace.h"

namespace splitsim {

std::vector<Plan> scenario_plans(const std::string& file, const std::string& variant,
                                 const std::shared_ptr<const Calibration>& calibration) {
  Workspace ws(file, [](const std::string& line) { std::cerr << line << "\n"; });
  ws.select(variant);
  std::vector<Plan> plans;
  for (ScenarioVariant v : ws.variants()) {
    v.scenario.command_calibration = calibration;
    plans.push_back(ws.plan(v));
  }
  return plans;
}

}  // namespace splitsim
