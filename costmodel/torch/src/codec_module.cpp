// The compression catalogue as LibTorch modules: dtype mapping, the
// factories, the casts and the trainable inserts (conv_insert,
// linear_insert, decaying_linear). The wire-only compressors
// (power_iteration, quantize, topk) are in codec_module_compress.cpp.
#include "splitsim/costmodel/codec_module.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "codec_internal.h"
#include "codec_modules_impl.h"

namespace splitsim {

torch::ScalarType to_torch(WireDType t) {
  switch (t) {
    case WireDType::kF32:
      return torch::kFloat;
    case WireDType::kF16:
      return torch::kHalf;
    case WireDType::kBF16:
      return torch::kBFloat16;
    case WireDType::kU8:
      return torch::kByte;
    case WireDType::kI32:
      return torch::kInt;
    case WireDType::kI64:
      return torch::kLong;
  }
  TORCH_CHECK(false, "unknown WireDType");
}

WireDType to_wire(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat:
      return WireDType::kF32;
    case torch::kHalf:
      return WireDType::kF16;
    case torch::kBFloat16:
      return WireDType::kBF16;
    case torch::kByte:
      return WireDType::kU8;
    case torch::kInt:
      return WireDType::kI32;
    case torch::kLong:
      return WireDType::kI64;
    default:
      TORCH_CHECK(false, "no wire dtype for torch dtype ", t);
  }
}

namespace codec_modules {

namespace ci = codec_internal;

std::vector<int64_t> batched(int64_t batch, const std::vector<int64_t>& shape) {
  std::vector<int64_t> out{batch};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

namespace {

// REQUIRES wire.size() == 1 and wire[0] of shape [batch, ...shape].
const torch::Tensor& single(const std::vector<torch::Tensor>& wire, int64_t batch,
                            const std::vector<int64_t>& shape) {
  TORCH_CHECK(wire.size() == 1, "codec expects 1 wire tensor, got ", wire.size());
  TORCH_CHECK(wire[0].sizes() == torch::IntArrayRef(batched(batch, shape)),
              "codec wire tensor has shape ", wire[0].sizes(), ", expected ",
              torch::IntArrayRef(batched(batch, shape)));
  return wire[0];
}

// PyTorch's default init (kaiming_uniform a=sqrt(5), i.e. U(+-1/sqrt(fan_in))
// for weight and bias), drawn from a private generator seeded with `seed`.
void init_uniform(torch::Tensor& weight, torch::Tensor& bias, int64_t fan_in, uint64_t seed) {
  torch::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  weight.uniform_(-bound, bound, gen);
  bias.uniform_(-bound, bound, gen);
}

// The decoder's weights come from a different stream than the encoder's.
constexpr uint64_t kDecoderSeedOffset = 0x9E3779B97F4A7C15ULL;

// Linear in->out with weight = eye(out, in) and bias 0.
torch::nn::Linear eye_linear(int64_t in, int64_t out) {
  torch::nn::Linear linear(torch::nn::LinearOptions(in, out));
  torch::NoGradGuard no_grad;
  linear->weight.copy_(torch::eye(out, in));
  linear->bias.zero_();
  return linear;
}

}  // namespace

std::vector<torch::Tensor> CastEncoder::pack(const torch::Tensor& y) {
  torch::NoGradGuard no_grad;
  torch::Tensor out = y.detach();
  if (wire_dtype_) out = out.to(*wire_dtype_);
  return {out.contiguous()};
}

torch::Tensor CastDecoder::unpack(const std::vector<torch::Tensor>& wire, int64_t batch) {
  const torch::Tensor& t = single(wire, batch, shape_);
  return to_float_ ? t.to(torch::kFloat) : t;
}

ConvInsertEncoder::ConvInsertEncoder(const CodecSpec& spec, const std::vector<int64_t>& shape,
                                     uint64_t seed) {
  conv_ = register_module(
      "conv",
      torch::nn::Conv2d(
          torch::nn::Conv2dOptions(shape[0], spec.out_channels, spec.kernel).stride(spec.stride)));
  init_uniform(conv_->weight, conv_->bias, shape[0] * spec.kernel * spec.kernel, seed);
}

std::vector<torch::Tensor> ConvInsertEncoder::pack(const torch::Tensor& y) {
  return {y.detach().contiguous()};
}

ConvInsertDecoder::ConvInsertDecoder(const CodecSpec& spec, const std::vector<int64_t>& shape,
                                     uint64_t seed)
    : carried_(carried_shape(spec, shape)), out_size_{shape[1], shape[2]} {
  const int64_t pad_h = ci::conv_output_padding(shape[1], spec.kernel, spec.stride);
  const int64_t pad_w = ci::conv_output_padding(shape[2], spec.kernel, spec.stride);
  deconv_ = register_module(
      "deconv", torch::nn::ConvTranspose2d(
                    torch::nn::ConvTranspose2dOptions(spec.out_channels, shape[0], spec.kernel)
                        .stride(spec.stride)
                        .output_padding({pad_h, pad_w})));
  // LibTorch's fan_in for a transposed conv: weight.size(1) * k * k = C * k * k.
  init_uniform(deconv_->weight, deconv_->bias, shape[0] * spec.kernel * spec.kernel,
               seed + kDecoderSeedOffset);
}

torch::Tensor ConvInsertDecoder::unpack(const std::vector<torch::Tensor>& wire, int64_t batch) {
  return single(wire, batch, carried_);
}

torch::Tensor ConvInsertDecoder::expand(const torch::Tensor& y_hat) {
  torch::Tensor x_hat = deconv_(y_hat);
  TORCH_CHECK(x_hat.size(2) == out_size_[0] && x_hat.size(3) == out_size_[1],
              "conv_insert decoder produced ", x_hat.sizes());
  return x_hat;
}

LinearInsertEncoder::LinearInsertEncoder(const CodecSpec& spec, const std::vector<int64_t>& shape)
    : spec_(spec), shape_(shape) {
  const bool decaying = spec.method == CodecMethod::kDecayingLinear;
  const int64_t t = shape[0], h = shape[1];
  hidden_ = register_module("hidden", eye_linear(h, decaying ? h : spec.out_features));
  if (decaying && spec.sequence_axis) sequence_ = register_module("sequence", eye_linear(t, t));
}

torch::Tensor LinearInsertEncoder::carry(const torch::Tensor& x) {
  const std::vector<int64_t> carried = carried_shape(spec_, shape_, step_);
  const int64_t rt = carried[0], r = carried[1];
  torch::Tensor y =
      torch::linear(x, hidden_->weight.narrow(0, 0, r), hidden_->bias.narrow(0, 0, r));
  if (sequence_) {  // [b,T,r] -> [b,r,T] -> [b,r,rt] -> [b,rt,r]
    y = torch::linear(y.transpose(1, 2), sequence_->weight.narrow(0, 0, rt),
                      sequence_->bias.narrow(0, 0, rt))
            .transpose(1, 2);
  }
  return y;
}

std::vector<torch::Tensor> LinearInsertEncoder::pack(const torch::Tensor& y) {
  return {y.detach().contiguous()};
}

LinearInsertDecoder::LinearInsertDecoder(const CodecSpec& spec, const std::vector<int64_t>& shape)
    : spec_(spec), shape_(shape) {
  const bool decaying = spec.method == CodecMethod::kDecayingLinear;
  const int64_t t = shape[0], h = shape[1];
  hidden_ = register_module("hidden", eye_linear(decaying ? h : spec.out_features, h));
  if (decaying && spec.sequence_axis) sequence_ = register_module("sequence", eye_linear(t, t));
}

torch::Tensor LinearInsertDecoder::unpack(const std::vector<torch::Tensor>& wire, int64_t batch) {
  return single(wire, batch, carried_shape(spec_, shape_, step_));
}

torch::Tensor LinearInsertDecoder::expand(const torch::Tensor& y_hat) {
  const std::vector<int64_t> carried = carried_shape(spec_, shape_, step_);
  const int64_t rt = carried[0], r = carried[1];
  torch::Tensor z = y_hat;
  if (sequence_) {  // [b,rt,r] -> [b,r,rt] -> [b,r,T] -> [b,T,r]
    z = torch::linear(z.transpose(1, 2), sequence_->weight.narrow(1, 0, rt), sequence_->bias)
            .transpose(1, 2);
  }
  return torch::linear(z, hidden_->weight.narrow(1, 0, r), hidden_->bias);
}

}  // namespace codec_modules

namespace cm = codec_modules;

std::shared_ptr<CodecEncoder> make_encoder(const CodecSpec& spec, const std::vector<int64_t>& shape,
                                           uint64_t seed) {
  check_applicable(spec, shape, "make_encoder");
  switch (spec.method) {
    case CodecMethod::kNone:
      return std::make_shared<cm::CastEncoder>(c10::nullopt);
    case CodecMethod::kFp16:
      return std::make_shared<cm::CastEncoder>(torch::kHalf);
    case CodecMethod::kBf16:
      return std::make_shared<cm::CastEncoder>(torch::kBFloat16);
    case CodecMethod::kConvInsert:
      return std::make_shared<cm::ConvInsertEncoder>(spec, shape, seed);
    case CodecMethod::kLinearInsert:
    case CodecMethod::kDecayingLinear:
      return std::make_shared<cm::LinearInsertEncoder>(spec, shape);
    case CodecMethod::kPowerIteration:
      return std::make_shared<cm::PowerIterationEncoder>(spec, shape, seed);
    case CodecMethod::kQuantize:
      return std::make_shared<cm::QuantizeEncoder>(spec.bits);
    case CodecMethod::kTopK:
      return std::make_shared<cm::TopKEncoder>(spec.keep_ratio);
  }
  TORCH_CHECK(false, "unknown codec method");
}

std::shared_ptr<CodecDecoder> make_decoder(const CodecSpec& spec, const std::vector<int64_t>& shape,
                                           uint64_t seed) {
  check_applicable(spec, shape, "make_decoder");
  switch (spec.method) {
    case CodecMethod::kNone:
      return std::make_shared<cm::CastDecoder>(shape, false);
    case CodecMethod::kFp16:
    case CodecMethod::kBf16:
      return std::make_shared<cm::CastDecoder>(shape, true);
    case CodecMethod::kConvInsert:
      return std::make_shared<cm::ConvInsertDecoder>(spec, shape, seed);
    case CodecMethod::kLinearInsert:
    case CodecMethod::kDecayingLinear:
      return std::make_shared<cm::LinearInsertDecoder>(spec, shape);
    case CodecMethod::kPowerIteration:
      return std::make_shared<cm::PowerIterationDecoder>(shape);
    case CodecMethod::kQuantize:
      return std::make_shared<cm::QuantizeDecoder>(spec.bits, shape);
    case CodecMethod::kTopK:
      return std::make_shared<cm::TopKDecoder>(spec.keep_ratio, shape);
  }
  TORCH_CHECK(false, "unknown codec method");
}

}  // namespace splitsim
