#pragma once
// ModelProfile: what the cost model measured about a model, unit by unit.
// A plain value type (no LibTorch): produced by costmodel/torch/src/measure.cpp,
// consumed by the planner, the simulator and the explorer. JSON schema
// "splitsim.model_profile/1" (cli/README.md "Output formats").
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace splitsim {

// Work observed in ATen ops. One MAC = one multiply-add. Element-wise,
// normalisation, pooling, softmax and loss ops are not MACs: they are counted
// as elements produced (`elementwise_elems`), reported separately.
struct OpCounts {
  int64_t conv_macs = 0;          // convolutions with groups < in_channels
  int64_t depthwise_macs = 0;     // convolutions with groups == in_channels > 1
  int64_t matmul_macs = 0;        // mm, addmm, bmm, baddbmm (linear, attention)
  int64_t elementwise_elems = 0;  // elements written by all other counted ops
  int64_t ops = 0;                // outermost ATen ops observed

  int64_t macs() const { return conv_macs + depthwise_macs + matmul_macs; }
  OpCounts& operator+=(const OpCounts& o);
  // Every field multiplied by `factor`, rounded to the nearest integer.
  OpCounts scaled(double factor) const;
  bool operator==(const OpCounts& o) const;
};

struct UnitProfile {
  std::string name;
  std::vector<int> inputs;                     // producer units; -1 = model input
  std::vector<int64_t> output_shape;           // per sample (batch dim removed)
  int64_t output_elem_bytes = 4;
  OpCounts fwd;                                // per sample
  OpCounts bwd;                                // per sample
  // The parts a split backward runs alone (zb_h1), per sample: the input's
  // gradient only (none where the input needs none), and the trainable
  // parameters' gradients only (with what of the unit's own chain leads to
  // them; none without trainable parameters).
  OpCounts bwd_input, bwd_params;
  int64_t param_count = 0;
  int64_t param_bytes = 0;
  int64_t frozen_param_count = 0;              // no requires_grad (LoRA, frozen units)
  int64_t frozen_param_bytes = 0;
  // Floating-point buffers (batch norm's running statistics): state that
  // training changes besides the weights, averaged with them by splitfed.
  int64_t buffer_bytes = 0;
  int64_t stash_bytes_per_sample = 0;          // retained after forward, for backward
  // The part of that stash that is its output's storage, and whether its
  // own backward keeps its input: within a stage the output of a unit whose
  // successor does not keep it is freed (unit_stash_in_stage, planner).
  int64_t output_stash_bytes_per_sample = 0;
  bool keeps_input = true;
  // The most tensor bytes its backward holds at once beyond the stash and
  // the parameters' gradients (the gradients of its activations, the
  // loss's gradient of the logits): working memory, freed when it ends.
  int64_t bwd_work_bytes_per_sample = 0;
  // The last unit only: the parts of the two above that are the loss's
  // (what it keeps, its backward's working memory). The loss runs on FP32
  // logits under mixed precision, so these stay FP32 there.
  int64_t loss_stash_bytes_per_sample = 0;
  int64_t loss_bwd_work_bytes_per_sample = 0;
  // Its largest trainable parameter tensor: what the optimizer's step
  // makes temporary copies of (OptimizerSpec::step_temporary_copies).
  int64_t largest_trainable_tensor_bytes = 0;

  int64_t output_numel() const;                // per sample
  int64_t output_bytes() const { return output_numel() * output_elem_bytes; }
  int64_t trainable_param_count() const { return param_count - frozen_param_count; }
  int64_t trainable_param_bytes() const { return param_bytes - frozen_param_bytes; }
};

struct ModelProfile {
  std::string model;                           // "mobilenet_v2", ...
  std::vector<int64_t> input_shape;            // per sample
  std::string input_dtype = "float32";         // or "int64" for token ids
  int64_t measured_batch = 0;                  // batch the counts were taken at
  std::vector<UnitProfile> units;

  // Returns the index of the unit called `name`, or -1.
  int index_of(const std::string& name) const;
  std::vector<std::string> unit_names() const;
};

void to_json(nlohmann::json& j, const OpCounts& c);
void from_json(const nlohmann::json& j, OpCounts& c);
void to_json(nlohmann::json& j, const UnitProfile& u);
void from_json(const nlohmann::json& j, UnitProfile& u);
void to_json(nlohmann::json& j, const ModelProfile& p);
void from_json(const nlohmann::json& j, ModelProfile& p);

}  // namespace splitsim
