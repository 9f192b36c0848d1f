// The compression catalogue as cost-model formulas: what goes on the wire
// (wire_layout) and the extra work (codec_work). The real modules in
// codec_module.cpp produce exactly these tensors; tests/costmodel/ prove it.
#include "splitsim/costmodel/codec.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <sstream>

#include "codec_internal.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/format.h"

namespace splitsim {

namespace codec_internal {

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t topk_keep_count(double keep_ratio, int64_t n) {
  const double x = keep_ratio * static_cast<double>(n);
  const auto k = static_cast<int64_t>(std::ceil(x - x * 1e-12));
  return std::clamp<int64_t>(k, 1, std::max<int64_t>(n, 1));
}

bool topk_uses_bitmap(int64_t k, int64_t n) { return (n + 7) / 8 < 4 * k; }

int64_t decayed_size(int64_t full, double rate, int64_t step, int64_t every_steps,
                     int64_t iterations) {
  const int64_t shrinks = std::min(step / std::max<int64_t>(every_steps, 1), iterations);
  const double size = static_cast<double>(full) * std::pow(rate, static_cast<double>(shrinks));
  return std::clamp<int64_t>(std::llround(size), 1, full);
}

MatrixSides matrix_sides(const std::vector<int64_t>& shape) {
  if (shape.size() == 3) return {shape[0], shape[1] * shape[2]};
  assert(shape.size() == 2);
  return {shape[0], shape[1]};
}

int64_t conv_out_size(int64_t in, int64_t kernel, int64_t stride) {
  return (in - kernel) / stride + 1;
}

int64_t conv_output_padding(int64_t in, int64_t kernel, int64_t stride) {
  return (in - kernel) % stride;
}

}  // namespace codec_internal

namespace ci = codec_internal;

bool CodecSpec::operator==(const CodecSpec& o) const {
  return method == o.method && out_channels == o.out_channels && kernel == o.kernel &&
         stride == o.stride && out_features == o.out_features && rate == o.rate &&
         every_steps == o.every_steps && iterations == o.iterations && l1 == o.l1 &&
         sequence_axis == o.sequence_axis && rank == o.rank && iters == o.iters && bits == o.bits &&
         keep_ratio == o.keep_ratio;
}

WireDType activation_dtype(const std::string& precision) {
  if (precision == "fp16") return WireDType::kF16;
  if (precision == "bf16") return WireDType::kBF16;
  return WireDType::kF32;
}

int64_t dtype_bytes(WireDType t) {
  switch (t) {
    case WireDType::kF32:
      return 4;
    case WireDType::kF16:
      return 2;
    case WireDType::kBF16:
      return 2;
    case WireDType::kU8:
      return 1;
    case WireDType::kI32:
      return 4;
    case WireDType::kI64:
      return 8;
  }
  return 0;
}

const char* dtype_name(WireDType t) {
  switch (t) {
    case WireDType::kF32:
      return "f32";
    case WireDType::kF16:
      return "f16";
    case WireDType::kBF16:
      return "bf16";
    case WireDType::kU8:
      return "u8";
    case WireDType::kI32:
      return "i32";
    case WireDType::kI64:
      return "i64";
  }
  return "?";
}

int64_t WireTensor::numel() const { return ci::numel_of(shape); }

bool WireTensor::operator==(const WireTensor& o) const {
  return shape == o.shape && dtype == o.dtype;
}

namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& message) {
  throw InputError(path, message);
}

// Throws unless `value` is positive; `what` names the parameter.
void require_positive(int64_t value, const char* what, const std::string& path) {
  if (value <= 0) {
    refuse(path, std::string(what) + " must be >= 1, got " + std::to_string(value));
  }
}

void check_ratio(double value, const char* what, const std::string& path) {
  if (!(value > 0.0 && value <= 1.0)) {
    std::ostringstream s;
    s << what << " must be in (0, 1], got " << value;
    refuse(path, s.str());
  }
}

std::string not_here(const char* method, const char* applies_to, const std::vector<int64_t>& shape,
                     const char* instead) {
  return std::string(method) + " applies to " + applies_to +
         ", but the tensor at this boundary is " + format_shape(shape) + " (per sample); use " +
         instead;
}

// The methods that do apply to a tensor of this rank, for the error messages.
const char* alternatives(const std::vector<int64_t>& shape) {
  if (shape.size() == 2) {
    return "linear_insert, decaying_linear, power_iteration, quantize, topk, fp16, bf16 or none";
  }
  if (shape.size() == 3) return "conv_insert, power_iteration, quantize, topk, fp16, bf16 or none";
  return "quantize, topk, fp16, bf16 or none";
}

std::vector<int64_t> batched(int64_t batch, const std::vector<int64_t>& shape) {
  std::vector<int64_t> out{batch};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

}  // namespace

void check_applicable(const CodecSpec& spec, const std::vector<int64_t>& shape,
                      const std::string& path) {
  for (int64_t d : shape) {
    if (d <= 0) {
      refuse(path, "the tensor at this boundary has an empty dimension " + format_shape(shape));
    }
  }
  switch (spec.method) {
    case CodecMethod::kNone:
    case CodecMethod::kFp16:
    case CodecMethod::kBf16:
      return;
    case CodecMethod::kConvInsert: {
      if (shape.size() != 3) {
        refuse(path,
               not_here("conv_insert", "image activations [C,H,W]", shape, alternatives(shape)));
      }
      require_positive(spec.out_channels, "conv_insert out_channels", path);
      require_positive(spec.kernel, "conv_insert kernel", path);
      require_positive(spec.stride, "conv_insert stride", path);
      const int64_t max_kernel = std::min(shape[1], shape[2]);
      if (spec.kernel > max_kernel) {
        refuse(path, "conv_insert kernel " + std::to_string(spec.kernel) + " does not fit in the " +
                         format_shape(shape) +
                         " activation; kernel must be <= " + std::to_string(max_kernel));
      }
      // The ConvTranspose2d needs output_padding = (in - k) % stride, which is
      // always < stride, as LibTorch requires: nothing more to refuse.
      return;
    }
    case CodecMethod::kLinearInsert:
    case CodecMethod::kDecayingLinear: {
      const bool decaying = spec.method == CodecMethod::kDecayingLinear;
      const char* name = decaying ? "decaying_linear" : "linear_insert";
      if (shape.size() != 2) {
        refuse(path, not_here(name, "transformer activations [T,H]", shape, alternatives(shape)));
      }
      if (!decaying) {
        if (spec.out_features < 1 || spec.out_features > shape[1]) {
          refuse(path, "linear_insert out_features must be in 1.." + std::to_string(shape[1]) +
                           " (the hidden size H of " + format_shape(shape) + "), got " +
                           std::to_string(spec.out_features));
        }
        return;
      }
      check_ratio(spec.rate, "decaying_linear rate", path);
      require_positive(spec.every_steps, "decaying_linear every_steps", path);
      if (spec.iterations < 0) {
        refuse(path,
               "decaying_linear iterations must be >= 0, got " + std::to_string(spec.iterations));
      }
      if (!(spec.l1 >= 0.0)) refuse(path, "decaying_linear l1 must be >= 0");
      return;
    }
    case CodecMethod::kPowerIteration: {
      if (shape.size() != 2 && shape.size() != 3) {
        const char* applies_to = "image activations [C,H,W] or transformer activations [T,H]";
        refuse(path, not_here("power_iteration", applies_to, shape, alternatives(shape)));
      }
      require_positive(spec.iters, "power_iteration iters", path);
      const ci::MatrixSides m = ci::matrix_sides(shape);
      const int64_t max_rank = std::min(m.rows, m.cols);
      if (spec.rank < 1 || spec.rank > max_rank) {
        refuse(path, "power_iteration rank must be in 1.." + std::to_string(max_rank) +
                         " for the " + format_shape(shape) + " activation (viewed as [" +
                         std::to_string(m.rows) + "," + std::to_string(m.cols) + "]), got " +
                         std::to_string(spec.rank));
      }
      return;
    }
    case CodecMethod::kQuantize:
      if (spec.bits < 2 || spec.bits > 16) {
        refuse(path, "quantize bits must be in 2..16, got " + std::to_string(spec.bits));
      }
      return;
    case CodecMethod::kTopK:
      check_ratio(spec.keep_ratio, "topk keep_ratio", path);
      return;
  }
}

std::vector<int64_t> carried_shape(const CodecSpec& spec, const std::vector<int64_t>& shape,
                                   int64_t step) {
  switch (spec.method) {
    case CodecMethod::kConvInsert:
      return {spec.out_channels, ci::conv_out_size(shape[1], spec.kernel, spec.stride),
              ci::conv_out_size(shape[2], spec.kernel, spec.stride)};
    case CodecMethod::kLinearInsert:
      return {shape[0], spec.out_features};
    case CodecMethod::kDecayingLinear: {
      const auto size = [&](int64_t full) {
        return ci::decayed_size(full, spec.rate, step, spec.every_steps, spec.iterations);
      };
      return {spec.sequence_axis ? size(shape[0]) : shape[0], size(shape[1])};
    }
    default:
      return shape;
  }
}

std::vector<WireTensor> wire_layout(const CodecSpec& spec, const std::vector<int64_t>& shape,
                                    int64_t batch, WireDType activation_dtype, int64_t step) {
  const int64_t n = batch * ci::numel_of(shape);
  switch (spec.method) {
    case CodecMethod::kNone:
      return {{batched(batch, shape), activation_dtype}};
    case CodecMethod::kFp16:
      return {{batched(batch, shape), WireDType::kF16}};
    case CodecMethod::kBf16:
      return {{batched(batch, shape), WireDType::kBF16}};
    case CodecMethod::kConvInsert:
    case CodecMethod::kLinearInsert:
    case CodecMethod::kDecayingLinear:
      return {{batched(batch, carried_shape(spec, shape, step)), activation_dtype}};
    case CodecMethod::kPowerIteration: {
      const ci::MatrixSides m = ci::matrix_sides(shape);
      return {{{batch, m.rows, spec.rank}, activation_dtype},
              {{batch, spec.rank, m.cols}, activation_dtype}};
    }
    case CodecMethod::kQuantize:
      return {{{(n * spec.bits + 7) / 8}, WireDType::kU8}, {{2}, WireDType::kF32}};
    case CodecMethod::kTopK: {
      const int64_t k = ci::topk_keep_count(spec.keep_ratio, n);
      if (ci::topk_uses_bitmap(k, n)) {
        return {{{k}, WireDType::kF32}, {{(n + 7) / 8}, WireDType::kU8}};
      }
      return {{{k}, WireDType::kF32}, {{k}, WireDType::kI32}};
    }
  }
  return {};
}

int64_t wire_bytes(const CodecSpec& spec, const std::vector<int64_t>& shape, int64_t batch,
                   WireDType activation_dtype, int64_t step) {
  int64_t bytes = 0;
  for (const WireTensor& t : wire_layout(spec, shape, batch, activation_dtype, step)) {
    bytes += t.bytes();
  }
  return bytes;
}

// Element-wise work is counted as passes over the n = batch * numel values:
//   fp16/bf16  encode n (cast),            decode n (cast back)
//   quantize   encode 3n (min/max, affine+round, bit-pack), decode 2n (unpack, affine)
//   topk       encode 2n + k (|x|, selection, gather),     decode n + k (zeros, scatter)
//   power_iteration encode b*iters*2*C*r*r: the reduced QR of each [C,r] P,
//              twice the r*r*C Householder work per iteration.
// MACs are the matrix products: conv b*Ho*Wo*weight.numel() on both sides;
// linear b*T*H*r (plus b*r*T*rt along the sequence axis); power iteration
// encode b*iters*2*C*N*r (P = M Q and Q = M^T P), decode b*C*N*r (P Q^T).
// Backward through a trainable insert costs twice its forward (input and
// weight gradients); the other methods are not differentiated through (the
// gradient crosses by the backward codec), so they add no backward work.
// Parameter counts are those of the real modules,
// biases included; decaying_linear keeps its initial full-size [H,H] (and
// [T,T]) tensors and computes with slices of them, so it counts the full size.
CodecWork codec_work(const CodecSpec& spec, const std::vector<int64_t>& shape, int64_t batch,
                     int64_t step) {
  CodecWork w;
  const int64_t n = batch * ci::numel_of(shape);
  switch (spec.method) {
    case CodecMethod::kNone:
      break;
    case CodecMethod::kFp16:
    case CodecMethod::kBf16:
      w.encode_elems = n;
      w.decode_elems = n;
      break;
    case CodecMethod::kQuantize:
      w.encode_elems = 3 * n;
      w.decode_elems = 2 * n;
      break;
    case CodecMethod::kTopK: {
      const int64_t k = ci::topk_keep_count(spec.keep_ratio, n);
      w.encode_elems = 2 * n + k;
      w.decode_elems = n + k;
      break;
    }
    case CodecMethod::kPowerIteration: {
      const ci::MatrixSides m = ci::matrix_sides(shape);
      const int64_t r = spec.rank;
      w.encode_macs = batch * spec.iters * 2 * m.rows * m.cols * r;
      w.encode_elems = batch * spec.iters * 2 * m.rows * r * r;
      w.decode_macs = batch * m.rows * m.cols * r;
      break;
    }
    case CodecMethod::kConvInsert: {
      const int64_t c = shape[0], k = spec.kernel, out = spec.out_channels;
      const std::vector<int64_t> carried = carried_shape(spec, shape, step);
      const int64_t weight_numel = out * c * k * k;
      w.encode_macs = batch * carried[1] * carried[2] * weight_numel;
      w.decode_macs = w.encode_macs;
      w.sender_backward_macs = 2 * w.encode_macs;
      w.receiver_backward_macs = 2 * w.decode_macs;
      w.sender_param_count = weight_numel + out;
      w.receiver_param_count = weight_numel + c;
      break;
    }
    case CodecMethod::kLinearInsert:
    case CodecMethod::kDecayingLinear: {
      const int64_t t = shape[0], h = shape[1];
      const std::vector<int64_t> carried = carried_shape(spec, shape, step);
      const int64_t rt = carried[0], r = carried[1];
      w.encode_macs = batch * t * h * r;
      if (spec.method == CodecMethod::kLinearInsert) {
        w.sender_param_count = h * r + r;
        w.receiver_param_count = r * h + h;
      } else {
        w.sender_param_count = h * h + h;
        if (spec.sequence_axis) {
          w.encode_macs += batch * r * t * rt;
          w.sender_param_count += t * t + t;
        }
        w.receiver_param_count = w.sender_param_count;
      }
      w.decode_macs = w.encode_macs;
      w.sender_backward_macs = 2 * w.encode_macs;
      w.receiver_backward_macs = 2 * w.decode_macs;
      break;
    }
  }
  return w;
}

}  // namespace splitsim
