#pragma once
// make_plan: a pure function from (scenario, measured model, devices) to Plan.
#include <map>
#include <string>

#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/model_profile.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {

// Throws InputError naming the scenario's JSON path when the partition names
// unknown units, is not contiguous and in order, cuts where more than one
// tensor crosses (the valid cuts are listed), gives a codec that does not
// apply to the tensor at its boundary, or names a party without a device.
Plan make_plan(const Scenario& scenario, const ModelProfile& model,
               const std::map<std::string, DeviceProfile>& devices,
               const std::string& variant_label = "base");

}  // namespace splitsim
