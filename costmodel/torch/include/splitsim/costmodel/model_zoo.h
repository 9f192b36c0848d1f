#pragma once
// The model zoo (LibTorch): every model as an ordered list of partition units.
// Unit names and layouts: costmodel/README.md "Models and partition units" lists them.
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "splitsim/costmodel/scenario.h"

namespace splitsim {

// One partition unit: a tensor in, a tensor out.
class UnitModule : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
};

enum class TaskKind {
  kImageClassification,     // input [B,3,H,W] float, target [B] class ids
  kSequenceClassification,  // input [B,T] token ids, target [B] labels
  kMaskedLmAndNsp,          // input [B,T] token ids, target [B,T+1]: MLM ids then NSP label
  kCausalLm,                // input [B,T] token ids, output [B,T,V], target [B,T] next tokens
  kRegression,              // TorchScript models: target = output-shaped noise, MSE loss
};

struct SplitModel {
  ModelSpec spec;  // resolved (no 0 defaults left)
  TaskKind task = TaskKind::kImageClassification;
  std::vector<std::string> names;  // unit names, model order
  // Null where build_model left a unit out (`build_units`): its name, inputs
  // and the task stay; only built units may run or give parameters.
  std::vector<std::shared_ptr<UnitModule>> units;
  std::vector<std::vector<int>> inputs;  // producers of each unit; -1 = model input
  std::vector<int64_t> output_shape;     // per sample (batch dim removed), of the last unit

  int size() const { return static_cast<int>(units.size()); }
  // Unit i; throws std::logic_error naming it when it was not built.
  UnitModule& built(int i) const;
  // Runs units [first, last] in order.
  torch::Tensor forward(const torch::Tensor& x, int first, int last) const;
  torch::Tensor forward(const torch::Tensor& x) const { return forward(x, 0, size() - 1); }
  // Deterministic synthetic batch for `seed`.
  torch::Tensor make_input(int64_t batch, uint64_t seed) const;
  torch::Tensor make_target(int64_t batch, uint64_t seed) const;
  // Mean loss of the model's task.
  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& target) const;
  // Parameters of units [first, last].
  std::vector<torch::Tensor> parameters(int first, int last) const;
  void train(bool on = true);
};

// Builds `spec` (resolved with resolve_model_defaults). Unit i's weights are
// drawn from a stream of its own, seeded by `seed` and i, so a unit is the
// same whichever other units are built. `build_units` null builds every
// unit; else unit i is built only where i < size() and (*build_units)[i]
// (exec builds its own stages; a TorchScript file is always built whole).
// `on_meta` (the zoo's transformers only): each unit is moved to the meta
// device as soon as it is built, so its weights have shapes and no memory
// and at most one unit's weights are ever held (measure_model's shape pass).
// Throws InputError for an unknown model or an unreadable TorchScript file.
SplitModel build_model(const ModelSpec& spec, uint64_t seed = 0,
                       const std::vector<bool>* build_units = nullptr, bool on_meta = false);

}  // namespace splitsim
