#pragma once
// The encoder/decoder classes behind make_encoder()/make_decoder(). Each
// pack() returns exactly wire_layout() (codec.h) for the tensor it is given;
// each unpack() returns [batch, ...carried_shape] without grad.
// Trainable inserts live in codec_module.cpp, the wire-only compressors in
// codec_module_compress.cpp.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "splitsim/costmodel/codec_module.h"

namespace splitsim::codec_modules {

// none / fp16 / bf16: the tensor as is, or cast to `wire_dtype`
// (c10::nullopt keeps the activation dtype). Decoding a cast gives float32.
class CastEncoder : public CodecEncoder {
 public:
  explicit CastEncoder(c10::optional<torch::ScalarType> wire_dtype) : wire_dtype_(wire_dtype) {}
  std::vector<torch::Tensor> pack(const torch::Tensor& y) override;

 private:
  c10::optional<torch::ScalarType> wire_dtype_;
};

class CastDecoder : public CodecDecoder {
 public:
  CastDecoder(std::vector<int64_t> shape, bool to_float)
      : shape_(std::move(shape)), to_float_(to_float) {}
  torch::Tensor unpack(const std::vector<torch::Tensor>& wire, int64_t batch) override;

 private:
  std::vector<int64_t> shape_;
  bool to_float_;
};

// conv_insert: Conv2d(C->out, k, stride s, no padding) before the cut.
class ConvInsertEncoder : public CodecEncoder {
 public:
  ConvInsertEncoder(const CodecSpec& spec, const std::vector<int64_t>& shape, uint64_t seed);
  torch::Tensor carry(const torch::Tensor& x) override { return conv_(x); }
  std::vector<torch::Tensor> pack(const torch::Tensor& y) override;
  const torch::nn::Conv2d& conv() const { return conv_; }

 private:
  torch::nn::Conv2d conv_{nullptr};
};

// conv_insert: ConvTranspose2d(out->C, k, s, output_padding (H-k)%s) after the
// cut, so that the output is exactly [C,H,W] again.
class ConvInsertDecoder : public CodecDecoder {
 public:
  ConvInsertDecoder(const CodecSpec& spec, const std::vector<int64_t>& shape, uint64_t seed);
  torch::Tensor unpack(const std::vector<torch::Tensor>& wire, int64_t batch) override;
  torch::Tensor expand(const torch::Tensor& y_hat) override;
  const torch::nn::ConvTranspose2d& deconv() const { return deconv_; }

 private:
  std::vector<int64_t> carried_;
  std::vector<int64_t> out_size_;  // {H, W}
  torch::nn::ConvTranspose2d deconv_{nullptr};
};

// linear_insert and decaying_linear on [T,H]. The encoder holds Linear
// "hidden" H->R0 (weight = the first R0 rows of the identity, bias 0) and,
// with sequence_axis, Linear "sequence" T->T (identity) applied along T.
// For linear_insert R0 = r; for decaying_linear R0 = H and the current
// r(step), rt(step) select the leading rows of those weights: the parameter
// tensors keep their initial size, rows past r get no gradient.
class LinearInsertEncoder : public CodecEncoder {
 public:
  LinearInsertEncoder(const CodecSpec& spec, const std::vector<int64_t>& shape);
  torch::Tensor carry(const torch::Tensor& x) override;
  std::vector<torch::Tensor> pack(const torch::Tensor& y) override;

 private:
  CodecSpec spec_;
  std::vector<int64_t> shape_;
  torch::nn::Linear hidden_{nullptr}, sequence_{nullptr};
};

// The transpose: Linear "hidden" R0->H (weight = the first R0 columns of the
// identity) and, with sequence_axis, "sequence" T->T, sliced to the current
// r(step), rt(step) columns.
class LinearInsertDecoder : public CodecDecoder {
 public:
  LinearInsertDecoder(const CodecSpec& spec, const std::vector<int64_t>& shape);
  torch::Tensor unpack(const std::vector<torch::Tensor>& wire, int64_t batch) override;
  torch::Tensor expand(const torch::Tensor& y_hat) override;

 private:
  CodecSpec spec_;
  std::vector<int64_t> shape_;
  torch::nn::Linear hidden_{nullptr}, sequence_{nullptr};
};

// power_iteration: see codec_module_compress.cpp.
class PowerIterationEncoder : public CodecEncoder {
 public:
  PowerIterationEncoder(const CodecSpec& spec, const std::vector<int64_t>& shape, uint64_t seed)
      : spec_(spec), shape_(shape), seed_(seed) {}
  std::vector<torch::Tensor> pack(const torch::Tensor& y) override;

 private:
  CodecSpec spec_;
  std::vector<int64_t> shape_;
  uint64_t seed_;
};

class PowerIterationDecoder : public CodecDecoder {
 public:
  explicit PowerIterationDecoder(const std::vector<int64_t>& shape) : shape_(shape) {}
  torch::Tensor unpack(const std::vector<torch::Tensor>& wire, int64_t batch) override;

 private:
  std::vector<int64_t> shape_;
};

class QuantizeEncoder : public CodecEncoder {
 public:
  explicit QuantizeEncoder(int64_t bits) : bits_(bits) {}
  std::vector<torch::Tensor> pack(const torch::Tensor& y) override;

 private:
  int64_t bits_;
};

class QuantizeDecoder : public CodecDecoder {
 public:
  QuantizeDecoder(int64_t bits, const std::vector<int64_t>& shape) : bits_(bits), shape_(shape) {}
  torch::Tensor unpack(const std::vector<torch::Tensor>& wire, int64_t batch) override;

 private:
  int64_t bits_;
  std::vector<int64_t> shape_;
};

class TopKEncoder : public CodecEncoder {
 public:
  explicit TopKEncoder(double keep_ratio) : keep_ratio_(keep_ratio) {}
  std::vector<torch::Tensor> pack(const torch::Tensor& y) override;

 private:
  double keep_ratio_;
};

class TopKDecoder : public CodecDecoder {
 public:
  TopKDecoder(double keep_ratio, const std::vector<int64_t>& shape)
      : keep_ratio_(keep_ratio), shape_(shape) {}
  torch::Tensor unpack(const std::vector<torch::Tensor>& wire, int64_t batch) override;

 private:
  double keep_ratio_;
  std::vector<int64_t> shape_;
};

// [batch, ...shape]
std::vector<int64_t> batched(int64_t batch, const std::vector<int64_t>& shape);

}  // namespace splitsim::codec_modules
