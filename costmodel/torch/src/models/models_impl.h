#pragma once
// Private to the model zoo. Each add_* builder appends a model's partition
// units to a SplitModel, in model order, and sets its task and output shape.
// REQUIRES: m.spec is resolved (resolve_model_defaults) and names the model;
// m.names and m.units are empty. Weights come from torch's global RNG, which
// build_model() seeds first.
#include <torch/torch.h>

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

inline void add_unit(SplitModel& m, std::string name, std::shared_ptr<UnitModule> unit) {
  m.names.push_back(std::move(name));
  m.units.push_back(std::move(unit));
}

void add_mobilenet_v2(SplitModel& m);        // mobilenet_v2.cpp
void add_mobilenet_v2_cifar(SplitModel& m);  // mobilenet_v2.cpp
void add_resnet20(SplitModel& m);            // resnet20.cpp
void add_roberta_base(SplitModel& m);        // transformer.cpp
void add_bert_small(SplitModel& m);          // transformer.cpp
// Loads m.spec.path and cuts it into units from its forward graph
// (script_split.h); throws InputError at "$.model.path" (or
// "$.model.split_inside[i]") when the file cannot be read or split, or its
// units run in order do not give what its forward gives.
void add_torchscript(SplitModel& m);  // torchscript.cpp

}  // namespace models
}  // namespace splitsim
