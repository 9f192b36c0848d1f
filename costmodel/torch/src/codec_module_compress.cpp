// The wire-only compressors: power_iteration, quantize, topk. None of them
// is differentiated through; pack() runs without grad and unpack() returns a
// fresh tensor of the input shape. quantize and topk work on the CPU (the
// bit streams are written by tight loops) and hand back tensors on the
// device they were given.
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "codec_internal.h"
#include "codec_modules_impl.h"

namespace splitsim::codec_modules {

namespace ci = codec_internal;

namespace {

// Float types LibTorch can QR and bmm everywhere; half types compute in f32.
torch::ScalarType work_dtype(torch::ScalarType t) {
  return (t == torch::kHalf || t == torch::kBFloat16) ? torch::kFloat : t;
}

void check_wire(const std::vector<torch::Tensor>& wire, const std::vector<WireTensor>& layout,
                const char* method) {
  TORCH_CHECK(wire.size() == layout.size(), method, " expects ", layout.size(),
              " wire tensors, got ", wire.size());
  for (size_t i = 0; i < wire.size(); ++i) {
    TORCH_CHECK(wire[i].sizes() == torch::IntArrayRef(layout[i].shape) &&
                    wire[i].scalar_type() == to_torch(layout[i].dtype),
                method, " wire tensor ", i, " is ", wire[i].sizes(), " ", wire[i].scalar_type(),
                ", expected ", torch::IntArrayRef(layout[i].shape), " ",
                dtype_name(layout[i].dtype));
  }
}

}  // namespace

// Per sample M = [rows, cols]; Q0 ~ N(0,1) [b,cols,r] from a generator seeded
// with seed_ (the same Q0 on every call). Each iteration: P = M Q,
// P = QR(P).Q (reduced), Q = M^T P. Wire: P [b,rows,r] and Q^T [b,r,cols].
std::vector<torch::Tensor> PowerIterationEncoder::pack(const torch::Tensor& y) {
  torch::NoGradGuard no_grad;
  const ci::MatrixSides sides = ci::matrix_sides(shape_);
  const int64_t b = y.size(0), r = spec_.rank;
  const torch::ScalarType dtype = work_dtype(y.scalar_type());
  const torch::Tensor m = y.detach().to(dtype).reshape({b, sides.rows, sides.cols});
  at::Generator gen = at::detail::createCPUGenerator(seed_);
  torch::Tensor q =
      torch::randn({b, sides.cols, r}, gen, torch::TensorOptions().dtype(dtype)).to(y.device());
  torch::Tensor p;
  for (int64_t i = 0; i < spec_.iters; ++i) {
    p = std::get<0>(torch::linalg_qr(torch::bmm(m, q)));
    q = torch::bmm(m.transpose(1, 2), p);
  }
  return {p.to(y.scalar_type()).contiguous(), q.transpose(1, 2).to(y.scalar_type()).contiguous()};
}

torch::Tensor PowerIterationDecoder::unpack(const std::vector<torch::Tensor>& wire, int64_t batch) {
  TORCH_CHECK(wire.size() == 2, "power_iteration expects 2 wire tensors, got ", wire.size());
  const ci::MatrixSides sides = ci::matrix_sides(shape_);
  const torch::Tensor& p = wire[0];
  const torch::Tensor& qt = wire[1];
  TORCH_CHECK(p.dim() == 3 && p.size(0) == batch && p.size(1) == sides.rows && qt.dim() == 3 &&
                  qt.size(0) == batch && qt.size(1) == p.size(2) && qt.size(2) == sides.cols,
              "power_iteration wire tensors ", p.sizes(), " and ", qt.sizes(), " do not fit ",
              torch::IntArrayRef(shape_));
  const torch::ScalarType dtype = work_dtype(p.scalar_type());
  torch::NoGradGuard no_grad;
  return torch::bmm(p.to(dtype), qt.to(dtype)).to(p.scalar_type()).reshape(batched(batch, shape_));
}

// Affine per micro-batch: lo = min, scale = (max - min) / (2^bits - 1), or 1
// when max == min; q = round((x - lo) / scale) clamped to [0, 2^bits - 1]
// (round half up), written as `bits` bits per value, little-endian:
// value i occupies stream bits [i*bits, (i+1)*bits), stream bit j is bit
// j % 8 of byte j / 8. Wire: the ceil(n*bits/8) bytes, then f32 {lo, scale}.
std::vector<torch::Tensor> QuantizeEncoder::pack(const torch::Tensor& y) {
  torch::NoGradGuard no_grad;
  const torch::Tensor x = y.detach().to(torch::kCPU, torch::kFloat).contiguous().view(-1);
  const int64_t n = x.numel(), bits = bits_;
  const auto [lo_t, hi_t] = torch::aminmax(x);
  const float lo = lo_t.item<float>(), hi = hi_t.item<float>();
  const int64_t levels = (int64_t{1} << bits) - 1;
  const float scale = hi > lo ? static_cast<float>((double{hi} - lo) / levels) : 1.0f;
  const double inv_scale = 1.0 / scale;

  torch::Tensor bytes = torch::empty({(n * bits + 7) / 8}, torch::kByte);
  const float* in = x.data_ptr<float>();
  uint8_t* out = bytes.data_ptr<uint8_t>();
  const double max_q = static_cast<double>(levels);
  uint64_t acc = 0;  // pending bits, the oldest in the low end
  int64_t pending = 0;
  for (int64_t i = 0; i < n; ++i) {
    // x >= lo, so truncating v + 0.5 rounds half up; the clamp also maps NaN to 0.
    const double v = (static_cast<double>(in[i]) - lo) * inv_scale + 0.5;
    const double q = v >= 1.0 ? (v < max_q ? v : max_q) : 0.0;
    acc |= static_cast<uint64_t>(q) << pending;
    pending += bits;
    while (pending >= 8) {
      *out++ = static_cast<uint8_t>(acc);
      acc >>= 8;
      pending -= 8;
    }
  }
  if (pending > 0) *out++ = static_cast<uint8_t>(acc);
  torch::Tensor header = torch::tensor({lo, scale}, torch::kFloat);
  return {bytes.to(y.device()), header.to(y.device())};
}

torch::Tensor QuantizeDecoder::unpack(const std::vector<torch::Tensor>& wire, int64_t batch) {
  CodecSpec spec;
  spec.method = CodecMethod::kQuantize;
  spec.bits = bits_;
  check_wire(wire, wire_layout(spec, shape_, batch), "quantize");
  const torch::Tensor bytes = wire[0].to(torch::kCPU).contiguous();
  const torch::Tensor header = wire[1].to(torch::kCPU);
  const float lo = header[0].item<float>(), scale = header[1].item<float>();
  const int64_t n = batch * ci::numel_of(shape_), bits = bits_;
  const uint64_t mask = (uint64_t{1} << bits) - 1;

  torch::Tensor x = torch::empty({n}, torch::kFloat);
  const uint8_t* in = bytes.data_ptr<uint8_t>();
  float* out = x.data_ptr<float>();
  uint64_t acc = 0;
  int64_t available = 0;
  for (int64_t i = 0; i < n; ++i) {
    while (available < bits) {  // never reads past the ceil(n*bits/8) bytes
      acc |= static_cast<uint64_t>(*in++) << available;
      available += 8;
    }
    out[i] = lo + static_cast<float>(acc & mask) * scale;
    acc >>= bits;
    available -= bits;
  }
  return x.view(batched(batch, shape_)).to(wire[0].device());
}

namespace {

// |x| as an order-preserving key: the float's bits without the sign.
inline uint32_t magnitude_key(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits & 0x7fffffffu;
}

// Radix selection of the k-th largest magnitude key in two 16-bit passes.
// Returns that key and how many of the values with exactly that key to keep
// (the first ones by position), so that exactly k values are kept.
std::pair<uint32_t, int64_t> kth_largest_key(const float* x, int64_t n, int64_t k) {
  std::vector<int64_t> hist(1 << 16);
  for (int64_t i = 0; i < n; ++i) ++hist[magnitude_key(x[i]) >> 16];
  int64_t above = 0;  // values with a larger key than the selected bins
  uint32_t high = 0xffff;
  while (above + hist[high] < k) above += hist[high--];
  std::fill(hist.begin(), hist.end(), 0);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t key = magnitude_key(x[i]);
    if ((key >> 16) == high) ++hist[key & 0xffff];
  }
  uint32_t low = 0xffff;
  while (above + hist[low] < k) above += hist[low--];
  return {(high << 16) | low, k - above};
}

}  // namespace

// The k = clamp(ceil(keep_ratio * n), 1, n) largest |x| of the micro-batch;
// of equal magnitudes at the cut-off, the first by position are kept. Found
// by radix selection in O(n). Positions as a bitmap (bit i % 8 of byte i / 8
// is set iff position i is kept) when ceil(n/8) < 4k, else as int32
// indices; values follow in ascending position order either way.
std::vector<torch::Tensor> TopKEncoder::pack(const torch::Tensor& y) {
  torch::NoGradGuard no_grad;
  const torch::Tensor x = y.detach().to(torch::kCPU, torch::kFloat).contiguous().view(-1);
  const int64_t n = x.numel();
  const int64_t k = ci::topk_keep_count(keep_ratio_, n);
  const bool bitmap = ci::topk_uses_bitmap(k, n);
  TORCH_CHECK(bitmap || n <= INT32_MAX, "topk: ", n, " positions do not fit int32 indices");
  const float* in = x.data_ptr<float>();
  const auto [threshold, ties] =
      k < n ? kth_largest_key(in, n, k) : std::pair<uint32_t, int64_t>{0, n};
  int64_t ties_left = ties;

  torch::Tensor values = torch::empty({k}, torch::kFloat);
  torch::Tensor positions =
      bitmap ? torch::zeros({(n + 7) / 8}, torch::kByte) : torch::empty({k}, torch::kInt);
  float* out = values.data_ptr<float>();
  uint8_t* bits = bitmap ? positions.data_ptr<uint8_t>() : nullptr;
  int32_t* index = bitmap ? nullptr : positions.data_ptr<int32_t>();
  int64_t j = 0;
  for (int64_t i = 0; i < n && j < k; ++i) {
    const uint32_t key = magnitude_key(in[i]);
    if (key < threshold || (key == threshold && ties_left-- <= 0)) continue;
    out[j++] = in[i];
    if (bitmap) {
      bits[i >> 3] |= static_cast<uint8_t>(1u << (i & 7));
    } else {
      index[j - 1] = static_cast<int32_t>(i);
    }
  }
  TORCH_CHECK(j == k, "topk selected ", j, " of ", k, " values");
  return {values.to(y.device()), positions.to(y.device())};
}

torch::Tensor TopKDecoder::unpack(const std::vector<torch::Tensor>& wire, int64_t batch) {
  CodecSpec spec;
  spec.method = CodecMethod::kTopK;
  spec.keep_ratio = keep_ratio_;
  check_wire(wire, wire_layout(spec, shape_, batch), "topk");
  const int64_t n = batch * ci::numel_of(shape_), k = wire[0].numel();
  const torch::Tensor values = wire[0].to(torch::kCPU).contiguous();
  const torch::Tensor positions = wire[1].to(torch::kCPU).contiguous();
  torch::Tensor x = torch::zeros({n}, torch::kFloat);
  const float* in = values.data_ptr<float>();
  float* out = x.data_ptr<float>();
  int64_t j = 0;
  if (positions.scalar_type() == torch::kByte) {
    const uint8_t* bits = positions.data_ptr<uint8_t>();
    for (int64_t i = 0; i < n; ++i) {
      if ((bits[i >> 3] >> (i & 7)) & 1) {
        TORCH_CHECK(j < k, "topk bitmap marks more than ", k, " positions");
        out[i] = in[j++];
      }
    }
    TORCH_CHECK(j == k, "topk bitmap marks ", j, " positions for ", k, " values");
  } else {
    const int32_t* index = positions.data_ptr<int32_t>();
    for (; j < k; ++j) {
      TORCH_CHECK(index[j] >= 0 && index[j] < n, "topk index ", index[j], " out of ", n);
      out[index[j]] = in[j];
    }
  }
  return x.view(batched(batch, shape_)).to(wire[0].device());
}

}  // namespace splitsim::codec_modules
