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
//
// Transformers repeat one block. With `replicate_blocks`, a roberta_base,
// bert_small or llama of more than two blocks whose blocks all train alike
// (no frozen entry names some blocks and not others) is measured with two
// blocks, and the second block's units stand for blocks 2 .. layers-1 under
// their own names: every count, shape and byte equals the whole model's
// (each block runs the same ops on the same shapes, with the same parameters
// training and its input needing a gradient alike), at the cost of two
// blocks (tests/costmodel/measure_replicated_test.cpp).
//
// Where the step runs (`on`): kAuto runs the zoo's transformers on the meta
// device (tensors with shapes and no memory: the same ops observed, no
// weights or activations held, so a 7B decoder measures in seconds) and
// everything else on the CPU (LibTorch 1.13 has no meta kernel for a
// convolution's backward; the CNNs are small). On the meta device the stash
// is counted from the tensors the unit's ops created and still held
// (StorageAccount). Both give the same profile, byte for byte
// (tests/costmodel/measure_shapes_test.cpp); kCpu and kMeta force one.
enum class MeasureOn { kAuto, kCpu, kMeta };
ModelProfile measure_model(const ModelSpec& spec, int64_t batch = 2, bool replicate_blocks = true,
                           MeasureOn on = MeasureOn::kAuto);

}  // namespace splitsim
