// MobileNetV2 in two layouts (costmodel/README.md "Models and partition units"):
//  - mobilenet_v2: torchvision's, width 1.0. Units features.0.conv,
//    features.0.bn, features.0.relu (so a cut can fall between features[0]'s
//    BN and its ReLU6), features.1 .. features.17 (inverted residual blocks,
//    atomic), features.18, classifier.
//  - mobilenet_v2_cifar: kuangliu/pytorch-cifar's. Units conv1, bn1 (BN +
//    ReLU), layers.0 .. layers.16, conv2, bn2 (BN + ReLU), linear.
#include <string>

#include "models/models_impl.h"

namespace splitsim {
namespace models {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t groups = 1) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel)
                        .stride(stride)
                        .padding((kernel - 1) / 2)
                        .groups(groups)
                        .bias(false));
}

// Block settings (t, c, n, s): expansion, output channels, repeats, first stride.
struct BlockRow {
  int64_t t, c, n, s;
};

// torchvision InvertedResidual: [1x1 expand + BN + ReLU6] (when t != 1),
// 3x3 depthwise + BN + ReLU6, 1x1 project + BN; skip iff stride 1 and in == out.
class InvertedResidual : public UnitModule {
 public:
  InvertedResidual(int64_t in, int64_t out, int64_t stride, int64_t t)
      : use_skip_(stride == 1 && in == out) {
    const int64_t hidden = in * t;
    if (t != 1) {
      conv_->push_back(conv(in, hidden, 1));
      conv_->push_back(nn::BatchNorm2d(hidden));
      conv_->push_back(nn::ReLU6());
    }
    conv_->push_back(conv(hidden, hidden, 3, stride, hidden));
    conv_->push_back(nn::BatchNorm2d(hidden));
    conv_->push_back(nn::ReLU6());
    conv_->push_back(conv(hidden, out, 1));
    conv_->push_back(nn::BatchNorm2d(out));
    register_module("conv", conv_);
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    torch::Tensor y = conv_->forward(x);
    return use_skip_ ? x + y : y;
  }

 private:
  bool use_skip_;
  nn::Sequential conv_;
};

// torchvision's classifier with the pooling of MobileNetV2.forward before it:
// global average pool, flatten, Dropout 0.2, Linear.
class TorchvisionClassifier : public UnitModule {
 public:
  TorchvisionClassifier(int64_t in, int64_t num_classes)
      : dropout_(register_module("dropout", nn::Dropout(0.2))),
        linear_(register_module("linear", nn::Linear(in, num_classes))) {}
  torch::Tensor forward(const torch::Tensor& x) override {
    torch::Tensor y = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return linear_->forward(dropout_->forward(y));
  }

 private:
  nn::Dropout dropout_;
  nn::Linear linear_;
};

// kuangliu Block: 1x1 expand + BN + ReLU (always, even for expansion 1),
// 3x3 depthwise + BN + ReLU, 1x1 project + BN; a shortcut only when stride is
// 1, with 1x1 conv + BN when in != out.
class CifarBlock : public UnitModule {
 public:
  CifarBlock(int64_t in, int64_t out, int64_t t, int64_t stride) : stride_(stride) {
    const int64_t planes = t * in;
    body_ = register_module(
        "body", nn::Sequential(conv(in, planes, 1), nn::BatchNorm2d(planes), nn::ReLU(),
                               conv(planes, planes, 3, stride, planes), nn::BatchNorm2d(planes),
                               nn::ReLU(), conv(planes, out, 1), nn::BatchNorm2d(out)));
    if (stride == 1 && in != out) {
      shortcut_ =
          register_module("shortcut", nn::Sequential(conv(in, out, 1), nn::BatchNorm2d(out)));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    torch::Tensor y = body_->forward(x);
    if (stride_ != 1) return y;
    return y + (shortcut_ ? shortcut_->forward(x) : x);
  }

 private:
  int64_t stride_;
  nn::Sequential body_{nullptr};
  nn::Sequential shortcut_{nullptr};
};

// kuangliu's head: avg_pool2d over what is left (4x4 at 32x32 input),
// flatten, Linear.
class CifarLinear : public UnitModule {
 public:
  CifarLinear(int64_t in, int64_t num_classes, int64_t pool)
      : pool_(pool), linear_(register_module("linear", nn::Linear(in, num_classes))) {}
  torch::Tensor forward(const torch::Tensor& x) override {
    return linear_->forward(torch::avg_pool2d(x, {pool_, pool_}).flatten(1));
  }

 private:
  int64_t pool_;
  nn::Linear linear_;
};

}  // namespace

void add_mobilenet_v2(SplitModel& m) {
  static const BlockRow kTable[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                    {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  m.task = TaskKind::kImageClassification;
  add_unit(m, "features.0.conv", [&] { return sequential_unit(conv(3, 32, 3, 2)); });
  add_unit(m, "features.0.bn", [&] { return sequential_unit(nn::BatchNorm2d(32)); });
  add_unit(m, "features.0.relu", [&] { return sequential_unit(nn::ReLU6()); });
  int64_t in = 32;
  int index = 1;
  for (const BlockRow& row : kTable) {
    for (int64_t i = 0; i < row.n; ++i) {
      add_unit(m, "features." + std::to_string(index++), [&] {
        return std::make_shared<InvertedResidual>(in, row.c, i == 0 ? row.s : 1, row.t);
      });
      in = row.c;
    }
  }
  add_unit(m, "features.18",
           [&] { return sequential_unit(conv(in, 1280, 1), nn::BatchNorm2d(1280), nn::ReLU6()); });
  add_unit(m, "classifier",
           [&] { return std::make_shared<TorchvisionClassifier>(1280, m.spec.num_classes); });
  m.output_shape = {m.spec.num_classes};
}

void add_mobilenet_v2_cifar(SplitModel& m) {
  // kuangliu's cfg: the second row has stride 1 (CIFAR images are small).
  static const BlockRow kTable[] = {{1, 16, 1, 1}, {6, 24, 2, 1},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                    {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  m.task = TaskKind::kImageClassification;
  add_unit(m, "conv1", [&] { return sequential_unit(conv(3, 32, 3)); });
  add_unit(m, "bn1", [&] { return sequential_unit(nn::BatchNorm2d(32), nn::ReLU()); });
  int64_t in = 32;
  int index = 0;
  for (const BlockRow& row : kTable) {
    for (int64_t i = 0; i < row.n; ++i) {
      add_unit(m, "layers." + std::to_string(index++),
               [&] { return std::make_shared<CifarBlock>(in, row.c, row.t, i == 0 ? row.s : 1); });
      in = row.c;
    }
  }
  add_unit(m, "conv2", [&] { return sequential_unit(conv(in, 1280, 1)); });
  add_unit(m, "bn2", [&] { return sequential_unit(nn::BatchNorm2d(1280), nn::ReLU()); });
  // Three stride-2 stages: 32x32 -> 4x4 (resolve_model_defaults checks
  // image_size % 8 == 0).
  add_unit(m, "linear", [&] {
    return std::make_shared<CifarLinear>(1280, m.spec.num_classes, m.spec.image_size / 8);
  });
  m.output_shape = {m.spec.num_classes};
}

}  // namespace models
}  // namespace splitsim
