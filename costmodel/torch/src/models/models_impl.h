#pragma once
// Private to the model zoo. Each add_* builder appends a model's partition
// units to a SplitModel, in model order, and sets its task and output shape.
// REQUIRES: m.spec is resolved (resolve_model_defaults) and names the model;
// m.names and m.units are empty. Weights come from torch's global RNG, which
// add_unit seeds before each unit.
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "splitsim/costmodel/model_zoo.h"

namespace splitsim {
namespace models {

// A unit that runs one torch::nn::Sequential.
class SequentialUnit : public UnitModule {
 public:
  explicit SequentialUnit(torch::nn::Sequential seq) : seq_(register_module("seq", seq)) {}
  torch::Tensor forward(const torch::Tensor& x) override { return seq_->forward(x); }

 private:
  torch::nn::Sequential seq_;
};

// Wraps modules, in order, as one SequentialUnit.
template <typename... Modules>
std::shared_ptr<UnitModule> sequential_unit(Modules&&... modules) {
  return std::make_shared<SequentialUnit>(torch::nn::Sequential(std::forward<Modules>(modules)...));
}

namespace nn = torch::nn;

// A dense projection x W^T (+ b), the same ops as nn::Linear (its weights are
// drawn by one, so a model without adapters is the same for a seed, and
// measures the same: a matmul, then the bias added). With
// LoRA on it (FinetuneSpec::targets names it), W and b are frozen and an
// adapter adds (alpha / r) * dropout(x) A^T B^T: A [r, in] drawn as
// nn::Linear's weights, B [out, r] zero, so training starts from the base
// model (as PEFT does).
class ProjectionImpl : public nn::Module {
 public:
  // `name`: the projection's LoRA target name (scenario.h lora_targets()).
  ProjectionImpl(int64_t in, int64_t out, const std::string& name, const FinetuneSpec& finetune,
                 bool bias = true) {
    nn::Linear base(nn::LinearOptions(in, out).bias(bias));
    weight_ = register_parameter("weight", base->weight);
    if (bias) bias_ = register_parameter("bias", base->bias);
    const auto& t = finetune.targets;
    if (finetune.method != "lora" || std::find(t.begin(), t.end(), name) == t.end()) return;
    weight_.set_requires_grad(false);
    if (bias) bias_.set_requires_grad(false);
    lora_a_ = register_parameter(
        "lora_A", nn::Linear(nn::LinearOptions(in, finetune.rank).bias(false))->weight);
    lora_b_ = register_parameter("lora_B", torch::zeros({out, finetune.rank}));
    dropout_ = register_module("lora_dropout", nn::Dropout(finetune.dropout));
    scale_ = finetune.alpha / static_cast<double>(finetune.rank);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    namespace F = torch::nn::functional;
    torch::Tensor y = F::linear(x, weight_, bias_);
    if (!lora_a_.defined()) return y;
    return y + F::linear(F::linear(dropout_->forward(x), lora_a_), lora_b_) * scale_;
  }

 private:
  torch::Tensor weight_, bias_, lora_a_, lora_b_;
  nn::Dropout dropout_{nullptr};
  double scale_ = 0;
};
TORCH_MODULE(Projection);

// Appends unit `name`, made by `make` with torch's RNG seeded for this unit
// alone (build_model: a unit's weights do not depend on the units built
// before it), or left null where build_model was asked to leave it out.
void add_unit(SplitModel& m, std::string name,
              const std::function<std::shared_ptr<UnitModule>()>& make);
// Appends a unit made elsewhere (TorchScript: slices of one loaded module).
inline void add_unit(SplitModel& m, std::string name, std::shared_ptr<UnitModule> unit) {
  m.names.push_back(std::move(name));
  m.units.push_back(std::move(unit));
}

void add_mobilenet_v2(SplitModel& m);        // mobilenet_v2.cpp
void add_mobilenet_v2_cifar(SplitModel& m);  // mobilenet_v2.cpp
void add_resnet20(SplitModel& m);            // resnet20.cpp
void add_roberta_base(SplitModel& m);        // transformer.cpp
void add_bert_small(SplitModel& m);          // transformer.cpp
void add_llama(SplitModel& m);               // llama.cpp
// Loads m.spec.path and cuts it into units from its forward graph
// (script_split.h); throws InputError at "$.model.path" (or
// "$.model.split_inside[i]") when the file cannot be read or split, or its
// units run in order do not give what its forward gives.
void add_torchscript(SplitModel& m);  // torchscript.cpp

}  // namespace models
}  // namespace splitsim
