// The real codec modules (codec_module.h) against the formulas (codec.h):
// pack() produces exactly wire_layout(), decode(encode(x)) has the right
// shape and error (the trainable inserts and codec_work(): codec_insert_test.cpp).
#include "splitsim/costmodel/codec_module.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codec_specs.h"
#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

using namespace codec_specs;  // NOLINT: test helpers

// Every method, with parameters that apply to `shape`.
std::vector<CodecSpec> specs_for(const Shape& shape) {
  std::vector<CodecSpec> specs{plain(CodecMethod::kNone),
                               plain(CodecMethod::kFp16),
                               plain(CodecMethod::kBf16),
                               quantize(2),
                               quantize(8),
                               quantize(10),
                               quantize(12),
                               quantize(16),
                               topk(1.0),
                               topk(0.5),
                               topk(0.01)};
  const int64_t rows = shape[0], cols = shape.size() == 3 ? shape[1] * shape[2] : shape[1];
  specs.push_back(power(std::min<int64_t>(3, std::min(rows, cols)), 2));
  if (shape.size() == 3) {
    specs.push_back(conv(std::max<int64_t>(1, shape[0] / 2), 3, 2));
    specs.push_back(conv(shape[0] == 1280 ? 320 : shape[0], shape[0] == 1280 ? 1 : 4,
                         shape[0] == 1280 ? 1 : 4));
  } else {
    specs.push_back(linear(std::max<int64_t>(1, shape[1] / 3)));
    specs.push_back(decaying(0.5, 10, 2, false));
    specs.push_back(decaying(0.5, 10, 2, true));
  }
  return specs;
}

std::string trace(const CodecSpec& spec, const Shape& shape, int64_t batch, int64_t step) {
  std::string s = "method " + std::to_string(static_cast<int>(spec.method)) + " on [";
  for (int64_t d : shape) s += std::to_string(d) + ",";
  return s + "] batch " + std::to_string(batch) + " step " + std::to_string(step) + " (k" +
         std::to_string(spec.kernel) + " bits " + std::to_string(spec.bits) + " keep " +
         std::to_string(spec.keep_ratio) + " seq " + std::to_string(spec.sequence_axis) + ")";
}

// pack() matches wire_layout() exactly and unpack()/expand() give the
// carried and the input shapes, at `step` for the decaying codecs.
void check_round_trip(const CodecSpec& spec, const Shape& shape, int64_t batch, int64_t step) {
  SCOPED_TRACE(trace(spec, shape, batch, step));
  auto enc = make_encoder(spec, shape, 7);
  auto dec = make_decoder(spec, shape, 7);
  enc->set_step(step);
  dec->set_step(step);
  torch::Tensor x = torch::randn(batched(batch, shape));
  torch::Tensor y = enc->carry(x);
  std::vector<torch::Tensor> wire = enc->pack(y);
  const std::vector<WireTensor> layout = wire_layout(spec, shape, batch, WireDType::kF32, step);
  ASSERT_EQ(wire.size(), layout.size());
  int64_t bytes = 0;
  for (size_t i = 0; i < wire.size(); ++i) {
    EXPECT_EQ(wire[i].sizes(), torch::IntArrayRef(layout[i].shape)) << "wire tensor " << i;
    EXPECT_EQ(to_wire(wire[i].scalar_type()), layout[i].dtype) << "wire tensor " << i;
    EXPECT_FALSE(wire[i].requires_grad());
    bytes += wire[i].numel() * wire[i].element_size();
  }
  EXPECT_EQ(bytes, wire_bytes(spec, shape, batch, WireDType::kF32, step));
  torch::Tensor y_hat = dec->unpack(wire, batch);
  EXPECT_EQ(y_hat.sizes(), torch::IntArrayRef(batched(batch, carried_shape(spec, shape, step))));
  EXPECT_EQ(y.sizes(), y_hat.sizes());
  EXPECT_FALSE(y_hat.requires_grad());
  EXPECT_EQ(dec->expand(y_hat).sizes(), torch::IntArrayRef(batched(batch, shape)));
}

TEST(CodecModule, PackMatchesWireLayoutForEveryMethodAndShape) {
  torch::manual_seed(1);
  const std::vector<Shape> shapes{{32, 112, 112}, {1280, 7, 7}, {24, 56, 56},
                                  {128, 768},     {5, 7, 9},    {7, 9}};
  for (const Shape& shape : shapes) {
    for (int64_t batch : {1, 3}) {
      for (const CodecSpec& spec : specs_for(shape)) {
        check_round_trip(spec, shape, batch, 0);
        if (spec.method == CodecMethod::kDecayingLinear) {
          check_round_trip(spec, shape, batch, 15);
          check_round_trip(spec, shape, batch, kSteadyState);
        }
      }
    }
  }
}

TEST(CodecModule, HalfActivationsKeepTheirDtypeOnTheWire) {
  const Shape shape{16, 6, 6};
  for (const CodecSpec& spec : {plain(CodecMethod::kNone), power(2, 1)}) {
    auto enc = make_encoder(spec, shape);
    auto dec = make_decoder(spec, shape);
    torch::Tensor x = torch::randn(batched(2, shape)).to(torch::kHalf);
    std::vector<torch::Tensor> wire = enc->pack(enc->carry(x));
    const std::vector<WireTensor> layout = wire_layout(spec, shape, 2, WireDType::kF16);
    ASSERT_EQ(wire.size(), layout.size());
    for (size_t i = 0; i < wire.size(); ++i) {
      EXPECT_EQ(wire[i].sizes(), torch::IntArrayRef(layout[i].shape));
      EXPECT_EQ(to_wire(wire[i].scalar_type()), WireDType::kF16);
    }
    EXPECT_EQ(dec->unpack(wire, 2).scalar_type(), torch::kHalf);
  }
}

// Runs x through encoder and decoder; returns x_hat = decode(encode(x)).
torch::Tensor round_trip(const CodecSpec& spec, const torch::Tensor& x,
                         std::vector<torch::Tensor>* wire_out = nullptr) {
  const Shape shape(x.sizes().begin() + 1, x.sizes().end());
  auto enc = make_encoder(spec, shape);
  auto dec = make_decoder(spec, shape);
  std::vector<torch::Tensor> wire = enc->pack(enc->carry(x));
  if (wire_out) *wire_out = wire;
  return dec->expand(dec->unpack(wire, x.size(0)));
}

double rel_error(const torch::Tensor& x, const torch::Tensor& x_hat) {
  return ((x - x_hat).norm() / x.norm()).item<double>();
}

TEST(CodecModule, CastsAreAccurate) {
  torch::manual_seed(2);
  torch::Tensor x = torch::randn({3, 128, 768});
  torch::Tensor h = round_trip(plain(CodecMethod::kFp16), x);
  EXPECT_EQ(h.scalar_type(), torch::kFloat);
  EXPECT_LT(rel_error(x, h), 1e-3);
  EXPECT_GT(rel_error(x, h), 0.0);  // it really went through half
  EXPECT_LT(rel_error(x, round_trip(plain(CodecMethod::kBf16), x)), 4e-3);
  EXPECT_TRUE(torch::equal(round_trip(plain(CodecMethod::kNone), x), x));
}

TEST(CodecModule, QuantizeErrorIsWithinHalfAStep) {
  torch::manual_seed(3);
  torch::Tensor x = torch::randn({3, 24, 56, 56}) * 3 + 1;
  const float lo = x.min().item<float>(), hi = x.max().item<float>();
  for (int64_t bits : {2, 4, 8, 10, 12, 16}) {
    std::vector<torch::Tensor> wire;
    torch::Tensor x_hat = round_trip(quantize(bits), x, &wire);
    const float wire_lo = wire[1][0].item<float>(), scale = wire[1][1].item<float>();
    EXPECT_EQ(wire_lo, lo);
    EXPECT_NEAR(scale, (hi - lo) / ((1 << bits) - 1), 1e-6 * (hi - lo));
    const double max_err = (x - x_hat).abs().max().item<double>();
    EXPECT_LE(max_err, scale / 2 + 1e-5) << bits << " bits";
    EXPECT_EQ(wire[0].numel(), (x.numel() * bits + 7) / 8);
  }
}

// Reference bit stream, one bit at a time: value i at bits [i*b, (i+1)*b).
std::vector<uint8_t> reference_stream(const std::vector<int64_t>& q, int64_t bits) {
  std::vector<uint8_t> out((q.size() * bits + 7) / 8, 0);
  for (size_t i = 0; i < q.size(); ++i) {
    for (int64_t j = 0; j < bits; ++j) {
      const int64_t bit = static_cast<int64_t>(i) * bits + j;
      if ((q[i] >> j) & 1) out[bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
    }
  }
  return out;
}

TEST(CodecModule, QuantizeIsBitExactlyPacked) {
  torch::manual_seed(4);
  for (int64_t bits : {3, 10, 12, 16}) {
    const int64_t levels = (int64_t{1} << bits) - 1;
    // Integers 0..levels with both ends present, so lo = 0 and scale = 1.
    torch::Tensor qt = torch::randint(0, levels + 1, {1, 5, 7, 9}, torch::kLong);
    qt.view(-1)[0] = 0;
    qt.view(-1)[1] = levels;
    std::vector<int64_t> q(qt.data_ptr<int64_t>(), qt.data_ptr<int64_t>() + qt.numel());
    std::vector<torch::Tensor> wire;
    torch::Tensor x = qt.to(torch::kFloat);
    torch::Tensor x_hat = round_trip(quantize(bits), x, &wire);
    EXPECT_EQ(wire[1][1].item<float>(), 1.0f);
    const std::vector<uint8_t> expected = reference_stream(q, bits);
    ASSERT_EQ(wire[0].numel(), static_cast<int64_t>(expected.size()));
    const uint8_t* got = wire[0].data_ptr<uint8_t>();
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), got)) << bits << " bits";
    EXPECT_TRUE(torch::equal(x_hat, x)) << bits << " bits";
  }
  // 10 and 12 bits take exactly ceil(n*bits/8) + 8 bytes.
  for (int64_t bits : {10, 12}) {
    std::vector<torch::Tensor> wire;
    round_trip(quantize(bits), torch::randn({3, 5, 7, 9}), &wire);
    EXPECT_EQ(wire[0].nbytes() + wire[1].nbytes(), (945 * bits + 7) / 8 + 8);
  }
}

TEST(CodecModule, QuantizeConstantTensorDecodesExactly) {
  torch::Tensor x = torch::full({2, 3, 4}, 2.5f);
  std::vector<torch::Tensor> wire;
  EXPECT_TRUE(torch::equal(round_trip(quantize(8), x, &wire), x));
  EXPECT_EQ(wire[1][1].item<float>(), 1.0f);
}

TEST(CodecModule, TopKKeepAllIsExact) {
  torch::manual_seed(5);
  torch::Tensor x = torch::randn({3, 5, 7, 9});
  EXPECT_TRUE(torch::equal(round_trip(topk(1.0), x), x));
}

TEST(CodecModule, TopKKeepsExactlyTheLargestMagnitudes) {
  torch::manual_seed(6);
  // Distinct magnitudes 1..n with random signs.
  const int64_t n = 3 * 24 * 56 * 56;
  torch::Tensor x = ((torch::randperm(n) + 1).to(torch::kFloat) *
                     (torch::randint(0, 2, {n}) * 2 - 1).to(torch::kFloat))
                        .view({3, 24, 56, 56});
  for (double keep : {0.5, 0.2, 0.01}) {  // bitmap, bitmap, indices
    std::vector<torch::Tensor> wire;
    torch::Tensor x_hat = round_trip(topk(keep), x, &wire);
    const int64_t k = static_cast<int64_t>(std::ceil(keep * n));
    EXPECT_EQ(wire[0].numel(), k);
    EXPECT_EQ(wire[1].scalar_type(), keep > 0.1 ? torch::kByte : torch::kInt);
    torch::Tensor kept = x.abs() > (n - k);  // exactly the k largest |x|
    EXPECT_EQ(kept.sum().item<int64_t>(), k);
    EXPECT_TRUE(torch::equal(x_hat, x * kept)) << keep;
    // Values travel in ascending position order either way.
    EXPECT_TRUE(torch::equal(wire[0], x.view(-1).masked_select(kept.view(-1))));
  }
}

TEST(CodecModule, TopKKeepsExactlyKUnderTiesFirstByPosition) {
  // |x| = 2 at positions 3 and 7, |x| = 1 everywhere else; k = 5.
  torch::Tensor x =
      torch::tensor({1.f, -1.f, 1.f, 2.f, -1.f, 1.f, 1.f, -2.f, 1.f, -1.f}).view({1, 10});
  std::vector<torch::Tensor> wire;
  torch::Tensor x_hat = round_trip(topk(0.5), x, &wire);
  EXPECT_TRUE(torch::equal(
      x_hat, torch::tensor({1.f, -1.f, 1.f, 2.f, 0.f, 0.f, 0.f, -2.f, 0.f, 0.f}).view({1, 10})));
  EXPECT_TRUE(torch::equal(wire[0], torch::tensor({1.f, -1.f, 1.f, 2.f, -2.f})));
  EXPECT_EQ(wire[1][0].item<int>(), 0b10001111);  // bitmap, bit i of byte 0 = position i
  EXPECT_EQ(wire[1][1].item<int>(), 0);
  // All zeros: still exactly k values (zeros) on the wire.
  EXPECT_TRUE(torch::equal(round_trip(topk(0.3), torch::zeros({2, 5})), torch::zeros({2, 5})));
}

TEST(CodecModule, PowerIterationReconstructsExactlyLowRank) {
  torch::manual_seed(8);
  struct Case {
    Shape shape;
    int64_t rows, cols, rank;
  };
  for (const Case& c :
       {Case{{16, 10, 10}, 16, 100, 3}, Case{{64, 96}, 64, 96, 4}, Case{{5, 7, 9}, 5, 63, 5}}) {
    for (int64_t iters : {1, 3}) {
      torch::Tensor m =
          torch::bmm(torch::randn({3, c.rows, c.rank}), torch::randn({3, c.rank, c.cols}))
              .view(batched(3, c.shape));
      std::vector<torch::Tensor> wire;
      torch::Tensor m_hat = round_trip(power(c.rank, iters), m, &wire);
      EXPECT_LT(rel_error(m, m_hat), 1e-4) << c.rank << " " << iters;
      // P has orthonormal columns.
      torch::Tensor ptp = torch::bmm(wire[0].transpose(1, 2), wire[0]);
      EXPECT_TRUE(torch::allclose(ptp, torch::eye(c.rank).expand_as(ptp), 1e-4, 1e-4));
    }
  }
  // Deterministic: the same seed gives the same factors.
  torch::Tensor x = torch::randn({2, 8, 4, 4});
  auto enc = make_encoder(power(2, 2), {8, 4, 4}, 11);
  EXPECT_TRUE(torch::equal(enc->pack(x)[0], enc->pack(x)[0]));
  EXPECT_TRUE(torch::equal(make_encoder(power(2, 2), {8, 4, 4}, 11)->pack(x)[1], enc->pack(x)[1]));
}

TEST(CodecModule, FactoriesRefuseWhatDoesNotApply) {
  EXPECT_THROW(make_encoder(conv(4, 3, 1), {128, 768}), InputError);
  EXPECT_THROW(make_decoder(linear(4), {8, 4, 4}), InputError);
  EXPECT_THROW(make_encoder(power(9, 1), {8, 4, 4}), InputError);
  EXPECT_THROW(make_decoder(quantize(20), {8}), InputError);
}

}  // namespace
}  // namespace splitsim
