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

// Peak micro-batches whose activations stage k (0-based) of K keeps for
// backward, with m micro-batches per batch (sim/README.md "Execution model"): sequential 1,
// gpipe m, 1f1b min(m, K-k), pipedream K-k, ddg and fr (K-k)*m (they delay
// whole batches; fr keeps only the stage inputs).
int64_t stashed_microbatches(Schedule s, int k, int K, int64_t m);
// Copies of the weights stage k keeps (pipedream: K-k; others 1).
int64_t weight_versions(Schedule s, int k, int K);

}  // namespace splitsim
