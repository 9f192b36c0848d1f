// The real codec modules (codec_module.h) against the formulas (codec.h):
// pack() produces exactly wire_layout(), decode(encode(x)) has the right
// shape and error, and codec_work() counts what the modules compute.
#include "splitsim/costmodel/codec_module.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

using Shape = std::vector<int64_t>;

CodecSpec make(CodecMethod m) {
  CodecSpec c;
  c.method = m;
  return c;
}
CodecSpec conv(int64_t out, int64_t k, int64_t s) {
  CodecSpec c = make(CodecMethod::kConvInsert);
  c.out_channels = out;
  c.kernel = k;
  c.stride = s;
  return c;
}
CodecSpec linear(int64_t r) {
  CodecSpec c = make(CodecMethod::kLinearInsert);
  c.out_features = r;
  return c;
}
CodecSpec decaying(double rate, int64_t every, int64_t iterations, bool sequence_axis) {
  CodecSpec c = make(CodecMethod::kDecayingLinear);
  c.rate = rate;
  c.every_steps = every;
  c.iterations = iterations;
  c.sequence_axis = sequence_axis;
  return c;
}
CodecSpec power(int64_t rank, int64_t iters) {
  CodecSpec c = make(CodecMethod::kPowerIteration);
  c.rank = rank;
  c.iters = iters;
  return c;
}
CodecSpec quantize(int64_t bits) {
  CodecSpec c = make(CodecMethod::kQuantize);
  c.bits = bits;
  return c;
}
CodecSpec topk(double keep) {
  CodecSpec c = make(CodecMethod::kTopK);
  c.keep_ratio = keep;
  return c;
}

Shape batched(int64_t batch, const Shape& shape) {
  Shape out{batch};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

// Every method, with parameters that apply to `shape`.
std::vector<CodecSpec> specs_for(const Shape& shape) {
  std::vector<CodecSpec> specs{make(CodecMethod::kNone),
                               make(CodecMethod::kFp16),
                               make(CodecMethod::kBf16),
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
  for (const CodecSpec& spec : {make(CodecMethod::kNone), power(2, 1)}) {
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
  torch::Tensor h = round_trip(make(CodecMethod::kFp16), x);
  EXPECT_EQ(h.scalar_type(), torch::kFloat);
  EXPECT_LT(rel_error(x, h), 1e-3);
  EXPECT_GT(rel_error(x, h), 0.0);  // it really went through half
  EXPECT_LT(rel_error(x, round_trip(make(CodecMethod::kBf16), x)), 4e-3);
  EXPECT_TRUE(torch::equal(round_trip(make(CodecMethod::kNone), x), x));
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

TEST(CodecModule, FactoriesRefuseWhatDoesNotApply) {
  EXPECT_THROW(make_encoder(conv(4, 3, 1), {128, 768}), InputError);
  EXPECT_THROW(make_decoder(linear(4), {8, 4, 4}), InputError);
  EXPECT_THROW(make_encoder(power(9, 1), {8, 4, 4}), InputError);
  EXPECT_THROW(make_decoder(quantize(20), {8}), InputError);
}

}  // namespace
}  // namespace splitsim
