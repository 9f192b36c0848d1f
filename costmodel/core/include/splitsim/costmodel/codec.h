#pragma once
// The compression catalogue, as cost-model formulas (no LibTorch).
// Every method here has a real LibTorch module in codec_module.h, and
// tests/costmodel/codec_test.cpp proves the two agree byte for byte.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace splitsim {

enum class CodecMethod {
  kNone,            // the tensor as is, in the activation dtype
  kFp16,            // cast to IEEE half
  kBf16,            // cast to bfloat16
  kConvInsert,      // trainable Conv2d before / ConvTranspose2d after the cut
  kLinearInsert,    // trainable Linear H->r before / r->H after the cut
  kDecayingLinear,  // linear_insert whose r shrinks during training
  kPowerIteration,  // low-rank P,Q by power iteration with QR
  kQuantize,        // per-tensor min/max affine, bit-packed
  kTopK,            // largest-|x| values + their positions
};

struct CodecSpec {
  CodecMethod method = CodecMethod::kNone;
  // conv_insert
  int64_t out_channels = 0, kernel = 0, stride = 0;
  // linear_insert
  int64_t out_features = 0;
  // decaying_linear: r(step) = round(H * rate^min(step / every_steps, iterations))
  double rate = 1.0;
  int64_t every_steps = 1, iterations = 0;
  double l1 = 0.0;
  bool sequence_axis = false;  // also shrink the sequence axis T the same way
  // power_iteration
  int64_t rank = 0, iters = 1;
  // quantize
  int64_t bits = 8;
  // topk
  double keep_ratio = 1.0;

  bool operator==(const CodecSpec& o) const;
};

enum class WireDType { kF32, kF16, kBF16, kU8, kI32, kI64 };
int64_t dtype_bytes(WireDType t);
const char* dtype_name(WireDType t);
// The wire dtype of a scenario's "precision": fp32 | fp16 | bf16.
WireDType activation_dtype(const std::string& precision);

// One tensor that really goes on the wire.
struct WireTensor {
  std::vector<int64_t> shape;
  WireDType dtype = WireDType::kF32;
  int64_t numel() const;
  int64_t bytes() const { return numel() * dtype_bytes(dtype); }
  bool operator==(const WireTensor& o) const;
};

// Training step at which the steady state is reached (decaying codecs).
constexpr int64_t kSteadyState = INT64_MAX;

const char* method_name(CodecMethod m);
std::vector<std::string> method_names();
// Short human description: "conv_insert(32->20 k4 s4)", "quantize(8 bit)".
std::string describe(const CodecSpec& spec);

// Parses {"method": "...", ...}. Throws InputError naming `path` for an
// unknown method, an unknown or mistyped key, or an out-of-range value.
CodecSpec parse_codec(const nlohmann::json& j, const std::string& path);
nlohmann::json codec_to_json(const CodecSpec& spec);

// Throws InputError naming `path` unless `spec` applies to a tensor of
// `shape` (per sample): conv_insert needs [C,H,W] with kernel <= H,W;
// linear_insert / decaying_linear need [T,H]; power_iteration needs [C,H,W]
// or [T,H] with rank <= min of the two matrix sides.
void check_applicable(const CodecSpec& spec, const std::vector<int64_t>& shape,
                      const std::string& path);

// The shape (per sample) of the tensor the codec hands across the cut, whose
// gradient comes back: the reduced shape for the trainable inserts, the input
// shape for everything else (those compress only on the wire).
std::vector<int64_t> carried_shape(const CodecSpec& spec, const std::vector<int64_t>& shape,
                                   int64_t step = kSteadyState);

// Exactly the tensors that go on the wire for one micro-batch of `batch`
// samples of `shape` in `activation_dtype`. REQUIRES check_applicable().
std::vector<WireTensor> wire_layout(const CodecSpec& spec, const std::vector<int64_t>& shape,
                                    int64_t batch, WireDType activation_dtype = WireDType::kF32,
                                    int64_t step = kSteadyState);
int64_t wire_bytes(const CodecSpec& spec, const std::vector<int64_t>& shape, int64_t batch,
                   WireDType activation_dtype = WireDType::kF32, int64_t step = kSteadyState);

// Extra work the codec adds for one micro-batch, on each side of the cut.
struct CodecWork {
  int64_t encode_macs = 0;        // sender, when the tensor is sent
  int64_t decode_macs = 0;        // receiver, when it arrives
  int64_t encode_elems = 0;       // element-wise work on the sender
  int64_t decode_elems = 0;       // element-wise work on the receiver
  int64_t sender_backward_macs = 0;    // trainable inserts: backward through the encoder
  int64_t receiver_backward_macs = 0;  // trainable inserts: backward through the decoder
  int64_t sender_param_count = 0;      // trainable inserts: parameters on each side
  int64_t receiver_param_count = 0;
};
CodecWork codec_work(const CodecSpec& spec, const std::vector<int64_t>& shape, int64_t batch,
                     int64_t step = kSteadyState);

}  // namespace splitsim
