#pragma once
// Measuring a model: MACs per unit (forward and backward), output shapes,
// parameter bytes and retained activation memory.
#include <cstdint>

#include "splitsim/costmodel/model_profile.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {

// Builds `spec` and runs one training step at `batch` samples, unit by unit,
// observing every ATen op. Counts are divided by `batch` (per sample); they are
// linear in the batch size for every model here. batch >= 2 (BatchNorm).
ModelProfile measure_model(const ModelSpec& spec, int64_t batch = 2);

}  // namespace splitsim
