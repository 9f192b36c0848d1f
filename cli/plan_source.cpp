#include "plan_source.h"

#include <nlohmann/json.hpp>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/input_file.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {

std::vector<Plan> load_plans(const std::string& file, const std::string& variant,
                             const std::shared_ptr<const Calibration>& calibration) {
  nlohmann::json j;
  try {
    j = parse_json_file(file, "scenario or plan file");
  } catch (const InputError&) {
    // Not readable JSON: the scenario reader says why, in its own words.
    return scenario_plans(file, variant, calibration);
  }
  if (!is_plan_json(j)) return scenario_plans(file, variant, calibration);
  std::vector<Plan> kept;
  std::vector<std::string> labels;
  for (const Plan& p : load_plan_file(file)) {
    labels.push_back(p.variant);
    if (p.variant.find(variant) != std::string::npos) kept.push_back(p);
  }
  if (kept.empty()) throw no_variant_matches(variant, labels);
  if (calibration)  // planned already: the calibration goes on top
    for (Plan& p : kept) p = apply_calibration(p, *calibration);
  return kept;
}

}  // namespace splitsim
