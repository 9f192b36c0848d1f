#pragma once
// Measuring this machine: per-unit forward, backward and optimizer-step
// seconds of a model (the `splitsim profile` command), plus peak rates.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/efficiency_fit.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {

struct ProfileOptions {
  int64_t batch = 32;
  int threads = 1;
  int warmup = 1;
  int repeats = 5;  // median of these
  // Micro-batches whose activations are held at once: each round runs the
  // forwards of `in_flight` micro-batches, then their backwards in reverse
  // (GPipe's order), so a backward reads activations written long before,
  // as a pipeline stage's does, not the ones just written.
  int64_t in_flight = 1;
  OptimizerSpec optimizer;  // the step that is timed
  // CPUs of another party's load: while timing, a thread pinned to them
  // trains the same model at the same batch, as the other process of a real
  // run does beside this one (shared caches and memory bandwidth: a core
  // alone ran up to 10% faster on this project's VM). Empty: no load.
  std::vector<int> load_cpus;
};

// Peak FLOP/s: the best of a 1024^3 matmul and a 64->64 3x3 convolution on
// [8,64,56,56]; and copy bandwidth (bytes read + written per second) of a
// 64 MiB tensor. Both with the current LibTorch threads.
double measure_peak_flops();
double measure_memory_bandwidth();

// Times a codec on this machine's CPU as exec runs it: encode = carry + pack
// of a random [batch, shape...] tensor, decode = unpack + expand of what was
// packed; a trainable insert also its backward through carry (sender) and
// through expand (receiver), input and weight gradients; each the median of
// `repeats` after one warm-up, with `threads` LibTorch threads. The result's
// `codec` is codec_to_json(codec).dump().
CodecTiming time_codec(const CodecSpec& codec, const std::vector<int64_t>& shape, int64_t batch,
                       int threads = 1, int repeats = 7);

// What a computation pays after its core waited (exec/validate/README.md
// "Idle cores"): the forward of the model's first units at `batch`, as many
// as take 0.3 ms (the whole model repeated when it takes less), with
// `threads` threads, timed back to back and after
// sleeping each of `gaps` seconds, `repeats` rounds interleaved. Each point
// is a gap as slept (the median) and the difference of the medians, not
// below 0; a gap whose median slept no longer than the previous one's (a
// loaded machine oversleeps short sleeps) gives no point, so the points'
// gaps increase. `progress` gets one line.
std::vector<WakePoint> measure_wake_cost(const ModelSpec& spec, int64_t batch, int threads,
                                         const std::function<void(const std::string&)>& progress,
                                         const std::vector<double>& gaps = {0.001, 0.003, 0.01,
                                                                            0.03},
                                         int repeats = 40);

// Times every unit of `spec` (resolved) at `opts.batch` on this machine's CPU
// with `opts.threads` threads. `progress` gets one line per step.
DeviceProfile profile_this_machine(const ModelSpec& spec, const ProfileOptions& opts,
                                   const std::function<void(const std::string&)>& progress);

// What `splitsim profile` writes: a device profile of this machine.
struct MeasuredDevice {
  DeviceProfile device;  // named, described, its efficiencies fitted
  FitResult fit;         // how well the fitted formula matches the unit timings
};

// profile_this_machine, the peak rates, and the per-op-class efficiencies
// fitted (fit_efficiency) to the unit timings and the model's MACs; the
// device is called `name`, its description and sources name this host, the
// date and the options. `progress` gets one line per step.
MeasuredDevice measure_this_machine(const ModelSpec& spec, const ProfileOptions& opts,
                                    const std::string& name,
                                    const std::function<void(const std::string&)>& progress);
// The device profile JSON, with the fit's figures under "fit".
nlohmann::json measured_device_json(const MeasuredDevice& m);
// The peak rates, the fitted efficiencies and the fit's error, one line each.
void print_measured_device(std::ostream& out, const MeasuredDevice& m);

// `splitsim profile` as values: the model, by zoo name and sizes or as a
// scenario names it (with its optimizer), and how to time it.
struct ProfileRequest {
  std::string model;     // zoo name (when `scenario` is "")
  std::string scenario;  // take the model and optimizer from this scenario file
  int64_t image_size = 0, seq_len = 0, num_classes = 0;  // 0: the model's default
  std::string name = "cpu_this_machine";                 // the device's name
  ProfileOptions options;
};

// measure_this_machine on the request's model. Throws InputError naming
// the request's field: "model" (none, or not a model), "image_size",
// "seq_len", "num_classes" (out of range), "batch" (too large for this
// machine's memory); or a path in the scenario file.
MeasuredDevice profile_this_machine(const ProfileRequest& r,
                                    const std::function<void(const std::string&)>& progress);

}  // namespace splitsim
