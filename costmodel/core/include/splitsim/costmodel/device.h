#pragma once
// DeviceProfile: how fast one device computes. Either from a spec sheet
// (peak FLOP/s, memory bandwidth, efficiency per op class) or measured on a
// machine by `splitsim profile` (per-unit seconds plus fitted efficiencies).
// JSON schema "splitsim.device/1" (scenarios/devices/*.json).
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "splitsim/costmodel/model_profile.h"

namespace splitsim {

// Fraction of peak reached per op class; per_op_s is a fixed cost per ATen op
// (framework and launch overhead).
struct Efficiency {
  double conv = 0.5;
  double depthwise = 0.1;
  double matmul = 0.6;
  double elementwise = 0.6;  // of memory bandwidth
  double per_op_s = 0.0;
};

struct UnitTiming {
  std::string unit;
  double fwd_s = 0;  // per measured batch
  double bwd_s = 0;
  double update_s = 0;  // optimizer step for this unit's parameters
};

// A codec measured on the device: encode (carry + pack on the sender) and
// decode (unpack + expand on the receiver) of one micro-batch of `batch`
// samples of per-sample `shape`, in seconds. `codec` is the codec's JSON
// (codec_to_json(...).dump()). The planner uses it in place of the codec's
// formula wherever codec, shape and batch match. A trainable insert also
// has its backward measured: through carry on the sender, through expand on
// the receiver (the input's and the weights' gradients); unset: the formula.
struct CodecTiming {
  std::string codec;
  std::vector<int64_t> shape;
  int64_t batch = 0;
  double encode_s = 0;
  double decode_s = 0;
  std::optional<double> sender_backward_s;
  std::optional<double> receiver_backward_s;
};

struct DeviceProfile {
  std::string name;
  std::string description;
  double peak_flops = 0;       // FP32 FLOP/s (1 MAC = 2 FLOP)
  double peak_flops_fp16 = 0;  // FP16 / BF16 FLOP/s (tensor cores); 0: none listed
  double peak_flops_bf16 = 0;
  double memory_bandwidth_Bps = 0;
  double memory_bytes = 0;
  Efficiency efficiency;
  // The share of the FP16 / BF16 peak the MAC classes reach (conv, depthwise,
  // matmul; element-wise and per-op work keep `efficiency`'s). Unset: the
  // FP32 shares. Tensor cores usually reach a smaller share of a larger peak.
  std::optional<Efficiency> efficiency_fp16, efficiency_bf16;
  std::vector<std::string> sources;
  // Present when measured by `splitsim profile`: timings of one model.
  std::string measured_model;  // ModelSpec::name
  std::vector<int64_t> measured_input_shape;
  int64_t measured_batch = 0;
  int64_t measured_in_flight = 1;  // micro-batches held at once (ProfileOptions::in_flight)
  int64_t threads = 0;
  std::vector<UnitTiming> timings;
  // How much the model's time moved between the measured rounds: (max -
  // min) / (2 x median) of a round's forward + backward seconds of every
  // unit, a relative half-width ("measured.timing_spread"; 0: not
  // measured). The explorer and validate give a prediction this spread
  // (spread.h).
  double timing_spread = 0;
  std::vector<CodecTiming> codec_timings;  // "measured_codecs" in JSON

  double peak_macs_per_s() const { return peak_flops / 2; }
  // Returns the measured timing of `codec` (its JSON text) at per-sample
  // `shape` and `batch`, or nullptr.
  const CodecTiming* codec_timing_for(const std::string& codec, const std::vector<int64_t>& shape,
                                      int64_t batch) const;
  // Returns the timing of `unit` of `model` at `input_shape`, or nullptr.
  const UnitTiming* timing_for(const std::string& model, const std::vector<int64_t>& input_shape,
                               const std::string& unit) const;
};

// The relative half-range of measured seconds, (max - min) / (2 x median),
// of each list (a list: the seconds of one thing timed, round after round),
// and the median of those; lists with fewer than two values or a zero
// median left out; 0 when none is left; at most kMaxTimingSpread (a round
// three times the median, on a machine disturbed that much, would put the
// fast end of a prediction below zero). DeviceProfile::timing_spread is
// that of one list, the rounds' totals.
constexpr double kMaxTimingSpread = 0.9;
double timing_spread_of(const std::vector<std::vector<double>>& seconds_by_unit);

// Seconds of work split by op class: the terms of the formula below. Used
// as seconds, and (normalized) as the share of a stage's time each class
// takes, which a calibration's per-class scales act on.
struct OpClassParts {
  double conv = 0, depthwise = 0, matmul = 0, elementwise = 0, per_op = 0;

  double total() const { return conv + depthwise + matmul + elementwise + per_op; }
  // Each part ÷ total(); all zero when the total is not positive.
  OpClassParts normalized() const;
  bool operator==(const OpClassParts& o) const;
};
// The class names, in the order of OpClassParts' fields (JSON keys).
inline constexpr const char* kOpClassNames[5] = {"conv", "depthwise", "matmul", "elementwise",
                                                 "per_op"};
// The field of `p` named kOpClassNames[i].
double& op_class_part(OpClassParts& p, size_t i);
double op_class_part(const OpClassParts& p, size_t i);

// Seconds to run `work` on `device` by the spec-sheet formula, per class:
//   macs / (peak_macs * eff_class) per MAC class, 8 B * elems / (mem_bw * eff_elem),
//   ops * per_op_s.
OpClassParts formula_parts(const DeviceProfile& device, const OpCounts& work);
// The device as it computes in `precision` ("fp32", or "fp16" / "bf16"
// mixed precision): the MAC terms run at that precision's peak and MAC
// efficiencies where the device lists the peak, else at its FP32 ones
// (*applied says which). Element-wise work and measured timings are left as
// they are.
DeviceProfile at_compute_precision(const DeviceProfile& d, const std::string& precision,
                                   bool* applied = nullptr);

// The device `factor` times slower at everything it computes (a processor
// that takes `factor` x as long; exec --compute-slowdown emulates one): the
// peaks and memory bandwidth divided by it, the per-op cost and every
// measured unit and codec timing multiplied. REQUIRES: factor > 0.
DeviceProfile slowed_profile(const DeviceProfile& d, double factor);

// formula_parts(device, work).total().
double formula_seconds(const DeviceProfile& device, const OpCounts& work);
// Seconds for an optimizer step over `param_count` parameters keeping
// `state_copies` state tensors: (3 + 2*state_copies) * 4 B per parameter moved.
double update_formula_seconds(const DeviceProfile& device, int64_t param_count,
                              int64_t state_copies);

void to_json(nlohmann::json& j, const DeviceProfile& d);
// Throws InputError naming `where` on a malformed profile.
DeviceProfile parse_device(const nlohmann::json& j, const std::string& where);
// `name_or_file` is a path to a .json file or a name looked up as
// <dir>/<name>.json in each of `search_dirs`. Throws InputError naming `where`
// and the names that exist.
DeviceProfile load_device(const std::string& name_or_file,
                          const std::vector<std::string>& search_dirs, const std::string& where);

}  // namespace splitsim
