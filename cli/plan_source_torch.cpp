// scenario_plans in the LibTorch build: the Workspace measures the model and
// plans every selected variant.
#include <iostream>

#include "plan_source.h"
#include "splitsim/costmodel/workspace.h"

namespace splitsim {

std::vector<Plan> scenario_plans(const std::string& file, const std::string& variant) {
  Workspace ws(file, [](const std::string& line) { std::cerr << line << "\n"; });
  ws.select(variant);
  std::vector<Plan> plans;
  for (const auto& v : ws.variants()) plans.push_back(ws.plan(v));
  return plans;
}

}  // namespace splitsim
