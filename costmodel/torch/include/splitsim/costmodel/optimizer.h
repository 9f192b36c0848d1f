#pragma once
// The scenario's optimizer as a LibTorch optimizer (profile and exec share it).
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "splitsim/costmodel/scenario.h"

namespace splitsim {

// sgd (momentum, weight decay), adam or adamw over `params`. Returns nullptr
// when `params` is empty (a parameter-free stage has nothing to step).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerSpec& spec,
                                                        const std::vector<torch::Tensor>& params);

}  // namespace splitsim
