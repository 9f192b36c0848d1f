#include "splitsim/costmodel/optimizer.h"

namespace splitsim {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerSpec& o,
                                                        const std::vector<torch::Tensor>& params) {
  if (params.empty()) return nullptr;
  if (o.name == "adam")
    return std::make_unique<torch::optim::Adam>(
        params, torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay).eps(o.eps));
  if (o.name == "adamw")
    return std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay).eps(o.eps));
  return std::make_unique<torch::optim::SGD>(
      params, torch::optim::SGDOptions(o.lr).momentum(o.momentum).weight_decay(o.weight_decay));
}

}  // namespace splitsim
