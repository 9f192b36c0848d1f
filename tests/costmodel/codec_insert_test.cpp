// The trainable inserts (conv_insert, linear_insert, decaying_linear): they
// restore the shape and train on both sides; and codec_work() counts what
// the real modules compute.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <utility>
#include <vector>

#include "codec_specs.h"
#include "splitsim/costmodel/codec_module.h"

namespace splitsim {
namespace {

using namespace codec_specs;  // NOLINT: test helpers

// Sum of the numel of a module's parameters.
int64_t param_count(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const torch::Tensor& p : m.parameters()) n += p.numel();
  return n;
}

// Runs the sender/receiver protocol of codec_module.h once and back-propagates
// sum(x_hat); x requires grad.
void train_step(CodecEncoder& enc, CodecDecoder& dec, const torch::Tensor& x) {
  torch::Tensor y = enc.carry(x);
  torch::Tensor y_hat = dec.unpack(enc.pack(y), x.size(0)).requires_grad_();
  dec.expand(y_hat).pow(2).sum().backward();
  ASSERT_TRUE(y_hat.grad().defined());
  y.backward(y_hat.grad());
}

void expect_all_grads(const torch::nn::Module& m, const char* side) {
  ASSERT_FALSE(m.named_parameters().is_empty()) << side;
  for (const auto& p : m.named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << side << " " << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << side << " " << p.key();
  }
}

TEST(CodecModule, ConvInsertRestoresTheShapeAndTrains) {
  torch::manual_seed(9);
  const std::vector<std::pair<Shape, CodecSpec>> cases{{{32, 28, 28}, conv(20, 4, 4)},
                                                       {{8, 15, 13}, conv(4, 3, 2)},
                                                       {{5, 7, 9}, conv(2, 4, 3)},
                                                       {{64, 7, 7}, conv(16, 1, 1)}};
  for (const auto& [shape, spec] : cases) {
    auto enc = make_encoder(spec, shape, 3);
    auto dec = make_decoder(spec, shape, 3);
    torch::Tensor x = torch::randn(batched(3, shape)).requires_grad_();
    EXPECT_EQ(dec->expand(dec->unpack(enc->pack(enc->carry(x)), 3)).sizes(), x.sizes());
    train_step(*enc, *dec, x);
    expect_all_grads(*enc, "encoder");
    expect_all_grads(*dec, "decoder");
    ASSERT_TRUE(x.grad().defined());
    EXPECT_GT(x.grad().abs().sum().item<double>(), 0.0);
  }
  // The same seed gives the same weights on both runs; another seed does not.
  const Shape s{8, 15, 13};
  auto w = [&](uint64_t seed) { return make_encoder(conv(4, 3, 2), s, seed)->parameters()[0]; };
  EXPECT_TRUE(torch::equal(w(5), w(5)));
  EXPECT_FALSE(torch::equal(w(5), w(6)));
}

TEST(CodecModule, LinearInsertIsEyeInitialisedAndTrains) {
  torch::manual_seed(10);
  torch::Tensor x = torch::randn({3, 12, 16});
  // r == H: the identity both ways.
  auto enc = make_encoder(linear(16), {12, 16});
  auto dec = make_decoder(linear(16), {12, 16});
  EXPECT_TRUE(torch::allclose(enc->carry(x), x));
  EXPECT_TRUE(torch::allclose(dec->expand(enc->carry(x)), x));
  // r < H: keeps the first r features, expands them back with zeros.
  auto enc6 = make_encoder(linear(6), {12, 16});
  auto dec6 = make_decoder(linear(6), {12, 16});
  torch::Tensor y = enc6->carry(x);
  EXPECT_TRUE(torch::allclose(y, x.narrow(2, 0, 6)));
  EXPECT_TRUE(torch::allclose(dec6->expand(y).narrow(2, 0, 6), y));
  EXPECT_EQ(dec6->expand(y).narrow(2, 6, 10).abs().max().item<float>(), 0.0f);
  torch::Tensor xg = x.clone().requires_grad_();
  train_step(*enc6, *dec6, xg);
  expect_all_grads(*enc6, "encoder");
  expect_all_grads(*dec6, "decoder");
  EXPECT_GT(xg.grad().abs().sum().item<double>(), 0.0);
}

TEST(CodecModule, DecayingLinearSlicesItsFullSizeWeights) {
  const Shape shape{12, 16};
  const CodecSpec spec = decaying(0.5, 10, 2, true);
  auto enc = make_encoder(spec, shape);
  auto dec = make_decoder(spec, shape);
  torch::Tensor x = torch::randn(batched(2, shape));
  for (int64_t step : {int64_t{0}, int64_t{10}, int64_t{25}, kSteadyState}) {
    enc->set_step(step);
    dec->set_step(step);
    const Shape c = carried_shape(spec, shape, step);
    torch::Tensor y = enc->carry(x);
    // Eye-initialised along both axes: the leading [rt, r] block of x.
    EXPECT_TRUE(torch::allclose(y, x.narrow(1, 0, c[0]).narrow(2, 0, c[1]))) << step;
    EXPECT_EQ(dec->expand(y).sizes(), x.sizes());
  }
  EXPECT_EQ(carried_shape(spec, shape, kSteadyState), (Shape{3, 4}));
  // Parameters keep their initial size; rows past r get no gradient.
  EXPECT_EQ(param_count(*enc), 16 * 16 + 16 + 12 * 12 + 12);
  train_step(*enc, *dec, x.clone().requires_grad_());
  torch::Tensor g = enc->named_parameters()["hidden.weight"].grad();
  EXPECT_EQ(g.sizes(), torch::IntArrayRef({16, 16}));
  EXPECT_GT(g.narrow(0, 0, 4).abs().sum().item<double>(), 0.0);
  EXPECT_EQ(g.narrow(0, 4, 12).abs().sum().item<double>(), 0.0);
}

TEST(CodecModule, WorkFormulasCountWhatTheModulesCompute) {
  const int64_t b = 3;
  // conv: b * Ho * Wo * weight.numel() on both sides, from the real modules.
  const std::vector<std::pair<Shape, CodecSpec>> cases{
      {{32, 28, 28}, conv(20, 4, 4)}, {{5, 7, 9}, conv(2, 3, 2)}, {{1280, 7, 7}, conv(320, 1, 1)}};
  for (const auto& [shape, spec] : cases) {
    auto enc = make_encoder(spec, shape);
    auto dec = make_decoder(spec, shape);
    torch::Tensor y = enc->carry(torch::randn(batched(b, shape)));
    const CodecWork w = codec_work(spec, shape, b);
    const int64_t spatial = y.size(2) * y.size(3);
    EXPECT_EQ(w.encode_macs, b * spatial * enc->named_parameters()["conv.weight"].numel());
    EXPECT_EQ(w.decode_macs, b * spatial * dec->named_parameters()["deconv.weight"].numel());
    EXPECT_EQ(w.sender_param_count, param_count(*enc));
    EXPECT_EQ(w.receiver_param_count, param_count(*dec));
  }
  // linear inserts: b * T * H * r (+ b * r * T * rt), the parameters of the modules.
  for (const CodecSpec& spec : {linear(5), decaying(0.5, 1, 1, false), decaying(0.5, 1, 2, true)}) {
    const Shape shape{12, 16};
    auto enc = make_encoder(spec, shape);
    auto dec = make_decoder(spec, shape);
    enc->set_step(kSteadyState);
    const torch::Tensor y = enc->carry(torch::randn(batched(b, shape)));
    const int64_t rt = y.size(1), r = y.size(2);
    const int64_t seq_macs = spec.sequence_axis ? b * r * 12 * rt : 0;
    const CodecWork w = codec_work(spec, shape, b);
    EXPECT_EQ(w.encode_macs, b * 12 * 16 * r + seq_macs);
    EXPECT_EQ(w.decode_macs, w.encode_macs);
    EXPECT_EQ(w.sender_param_count, param_count(*enc));
    EXPECT_EQ(w.receiver_param_count, param_count(*dec));
  }
  // power iteration: per iteration bmm [C,N]x[N,r] and [N,C]x[C,r]; decode [C,r]x[r,N].
  const Shape shape{24, 6, 7};
  const CodecSpec spec = power(4, 3);
  std::vector<torch::Tensor> wire =
      make_encoder(spec, shape)->pack(torch::randn(batched(b, shape)));
  const int64_t c = wire[0].size(1), r = wire[0].size(2), n = wire[1].size(2);
  const CodecWork w = codec_work(spec, shape, b);
  EXPECT_EQ(w.encode_macs, b * 3 * (c * n * r + n * c * r));
  EXPECT_EQ(w.decode_macs, b * c * r * n);
  EXPECT_EQ(w.encode_elems, b * 3 * 2 * c * r * r);
  EXPECT_EQ(param_count(*make_encoder(spec, shape)), 0);
}

}  // namespace
}  // namespace splitsim
