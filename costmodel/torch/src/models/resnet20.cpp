// ResNet-20 for CIFAR (He et al. 2016, section 4.2), option A shortcuts:
// where a block changes shape the shortcut subsamples by 2 and pads the new
// channels with zeros, so it has no parameters (269,722 parameters in all;
// option B's 1x1 projections would make it 272,474).
// Units: conv1 (3x3 conv 16 + BN + ReLU), layer1.0..2, layer2.0..2,
// layer3.0..2 (basic blocks, atomic), head (global average pool + Linear).
#include <string>

#include "models/models_impl.h"

namespace splitsim {
namespace models {
namespace {

namespace nn = torch::nn;
using torch::indexing::None;
using torch::indexing::Slice;

nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

// relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)).
class BasicBlock : public UnitModule {
 public:
  BasicBlock(int64_t in, int64_t planes, int64_t stride)
      : pad_channels_(stride != 1 || in != planes ? planes / 4 : 0),
        body_(register_module(
            "body", nn::Sequential(conv3x3(in, planes, stride), nn::BatchNorm2d(planes), nn::ReLU(),
                                   conv3x3(planes, planes, 1), nn::BatchNorm2d(planes)))) {}
  torch::Tensor forward(const torch::Tensor& x) override {
    torch::Tensor shortcut = x;
    if (pad_channels_ > 0) {
      // Option A: x[:, :, ::2, ::2] padded with planes/4 zero channels each side.
      shortcut = torch::constant_pad_nd(
          x.index({Slice(), Slice(), Slice(None, None, 2), Slice(None, None, 2)}),
          {0, 0, 0, 0, pad_channels_, pad_channels_});
    }
    return torch::relu(body_->forward(x) + shortcut);
  }

 private:
  int64_t pad_channels_;  // 0: identity shortcut
  nn::Sequential body_;
};

// Global average pool, flatten, Linear.
class Head : public UnitModule {
 public:
  Head(int64_t in, int64_t num_classes)
      : linear_(register_module("linear", nn::Linear(in, num_classes))) {}
  torch::Tensor forward(const torch::Tensor& x) override {
    return linear_->forward(torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1));
  }

 private:
  nn::Linear linear_;
};

}  // namespace

void add_resnet20(SplitModel& m) {
  constexpr int kBlocksPerStage = 3;  // depth 6n + 2 = 20
  m.task = TaskKind::kImageClassification;
  add_unit(m, "conv1",
           [&] { return sequential_unit(conv3x3(3, 16, 1), nn::BatchNorm2d(16), nn::ReLU()); });
  int64_t in = 16;
  const int64_t stage_planes[] = {16, 32, 64};
  for (int stage = 0; stage < 3; ++stage) {
    const int64_t planes = stage_planes[stage];
    for (int i = 0; i < kBlocksPerStage; ++i) {
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      add_unit(m, "layer" + std::to_string(stage + 1) + "." + std::to_string(i),
               [&] { return std::make_shared<BasicBlock>(in, planes, stride); });
      in = planes;
    }
  }
  add_unit(m, "head", [&] { return std::make_shared<Head>(in, m.spec.num_classes); });
  m.output_shape = {m.spec.num_classes};
}

}  // namespace models
}  // namespace splitsim
