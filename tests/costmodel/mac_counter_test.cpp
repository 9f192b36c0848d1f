// MAC counting by observed ATen ops, against hand-computed values.
#include "splitsim/costmodel/mac_counter.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace splitsim {
namespace {

TEST(MacCounterTest, ConvForwardIsOutputPixelsTimesWeight) {
  auto conv = torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).stride(2).padding(1));
  auto x = torch::randn({2, 3, 32, 32});
  MacCounter c;
  conv->forward(x);
  // Output 16x16; MACs = N * Ho * Wo * Cout * Cin * k * k.
  EXPECT_EQ(c.counts().conv_macs, 2LL * 16 * 16 * 16 * 3 * 3 * 3);
  EXPECT_EQ(c.counts().depthwise_macs, 0);
  EXPECT_EQ(c.counts().matmul_macs, 0);
  EXPECT_EQ(c.counts().ops, 1);  // conv2d -> convolution -> ... counts once
}

TEST(MacCounterTest, DepthwiseConvIsItsOwnClass) {
  auto conv = torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 32, 3).padding(1).groups(32));
  auto x = torch::randn({1, 32, 10, 10});
  MacCounter c;
  conv->forward(x);
  EXPECT_EQ(c.counts().depthwise_macs, 1LL * 10 * 10 * 32 * 9);
  EXPECT_EQ(c.counts().conv_macs, 0);
}

TEST(MacCounterTest, TransposedConvCountsInputPixels) {
  auto deconv = torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(8, 4, 4).stride(4));
  auto x = torch::randn({3, 8, 5, 5});
  MacCounter c;
  auto y = deconv->forward(x);
  EXPECT_EQ(y.size(2), 20);
  EXPECT_EQ(c.counts().conv_macs, 3LL * 5 * 5 * 8 * 4 * 16);
}

TEST(MacCounterTest, LinearOn2dAnd3dInputs) {
  auto fc = torch::nn::Linear(64, 10);
  MacCounter c;
  fc->forward(torch::randn({5, 64}));
  EXPECT_EQ(c.counts().matmul_macs, 5LL * 64 * 10);
  c.reset();
  fc->forward(torch::randn({2, 7, 64}));  // [B,T,H]: B*T rows
  EXPECT_EQ(c.counts().matmul_macs, 2LL * 7 * 64 * 10);
}

TEST(MacCounterTest, BmmAndMatmul) {
  auto a = torch::randn({4, 3, 5}), b = torch::randn({4, 5, 6});
  MacCounter c;
  torch::bmm(a, b);
  EXPECT_EQ(c.counts().matmul_macs, 4LL * 3 * 5 * 6);
  c.reset();
  torch::matmul(torch::randn({2, 4, 3, 5}), torch::randn({2, 4, 5, 6}));
  EXPECT_EQ(c.counts().matmul_macs, 8LL * 3 * 5 * 6);
}

TEST(MacCounterTest, ElementwiseOpsAreCountedApart) {
  auto x = torch::randn({2, 3, 4});
  MacCounter c;
  auto y = torch::relu(x) + x;
  EXPECT_EQ(c.counts().macs(), 0);
  EXPECT_EQ(c.counts().elementwise_elems, 2 * 24);
  EXPECT_EQ(c.counts().ops, 2);
}

TEST(MacCounterTest, ConvBackwardCountsInputAndWeightGradients) {
  auto conv = torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 8, 3).bias(false));
  auto x = torch::randn({2, 4, 9, 9}, torch::requires_grad());
  auto y = conv->forward(x);
  const int64_t fwd = 2LL * 7 * 7 * 8 * 4 * 9;
  MacCounter c;
  y.sum().backward();
  EXPECT_EQ(c.counts().conv_macs, 2 * fwd);  // grad input + grad weight
}

TEST(MacCounterTest, ConvBackwardWithoutInputGradientCountsOnlyWeights) {
  auto conv = torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 8, 3).bias(false));
  auto x = torch::randn({2, 4, 9, 9});  // data: no gradient wanted
  auto y = conv->forward(x);
  MacCounter c;
  y.sum().backward();
  EXPECT_EQ(c.counts().conv_macs, 2LL * 7 * 7 * 8 * 4 * 9);
}

TEST(MacCounterTest, LinearBackwardIsTwiceForward) {
  auto fc = torch::nn::Linear(torch::nn::LinearOptions(32, 16).bias(false));
  auto x = torch::randn({8, 32}, torch::requires_grad());
  auto y = fc->forward(x);
  MacCounter c;
  y.backward(torch::ones_like(y));
  EXPECT_EQ(c.counts().matmul_macs, 2LL * 8 * 32 * 16);
}

TEST(MacCounterTest, NothingIsCountedOutsideTheCounterLifetime) {
  auto fc = torch::nn::Linear(8, 8);
  {
    MacCounter c;
    fc->forward(torch::randn({1, 8}));
    EXPECT_GT(c.counts().matmul_macs, 0);
  }
  MacCounter c2;
  EXPECT_EQ(c2.counts().matmul_macs, 0);
}

}  // namespace
}  // namespace splitsim
