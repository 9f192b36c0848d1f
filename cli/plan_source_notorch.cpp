// scenario_plans in the build without LibTorch: a scenario's model cannot be
// measured here, so only plan files are simulated.
#include "plan_source.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/input_file.h"

namespace splitsim {

std::vector<Plan> scenario_plans(const std::string& file, const std::string& variant,
                                 const std::shared_ptr<const Calibration>&) {
  parse_json_file(file, "plan file");  // an unreadable file or bad JSON: that error
  throw InputError(file,
                   "not a plan file (no \"schema\": \"splitsim.plan/1\"); this build of splitsim "
                   "has no LibTorch, so it cannot measure a scenario's model: give a plan file "
                   "written by `splitsim plan --json SCENARIO` in a build with LibTorch");
}

}  // namespace splitsim
