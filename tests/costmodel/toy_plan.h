#pragma once
// A synthetic model with known costs and a U-shaped scenario on it, for the
// planner's tests (planner_test.cpp, planner_calibration_test.cpp, schedule_test.cpp).
#include <map>
#include <string>
#include <vector>

#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/model_profile.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim::toy_plan {

// K units in a chain, each 1000 fwd / 2000 bwd matmul MACs per sample, 100
// parameters and a 512-byte stash per sample; every output `shape`.
inline ModelProfile chain_of(const std::string& name, int K, const std::vector<int64_t>& shape,
                             int64_t measured_batch) {
  ModelProfile p;
  p.model = name;
  p.input_shape = shape;
  p.measured_batch = measured_batch;
  for (int i = 0; i < K; ++i) {
    UnitProfile u;
    u.name = "u" + std::to_string(i);
    u.inputs = {i - 1};
    u.output_shape = shape;
    u.fwd.matmul_macs = 1000;
    u.bwd.matmul_macs = 2000;
    u.param_count = 100;
    u.param_bytes = 400;
    u.stash_bytes_per_sample = 512;
    p.units.push_back(u);
  }
  return p;
}

// Four of them, output [8,4,4].
inline ModelProfile toy_model() { return chain_of("toy", 4, {8, 4, 4}, 2); }

inline DeviceProfile device(const std::string& name, double peak_flops) {
  DeviceProfile d;
  d.name = name;
  d.peak_flops = peak_flops;
  d.memory_bandwidth_Bps = 1e9;
  d.efficiency.matmul = 1.0;
  return d;
}

inline Scenario ushape() {
  Scenario s;
  s.name = "toy";
  s.batch_size = 8;
  s.chunks = 2;
  s.schedule = Schedule::kGpipe;
  s.partition = {{"client", "u0", "u0"}, {"server", "u1", "u2"}, {"client", "u3", "u3"}};
  s.compression.resize(2);
  s.devices = {{"client", "c"}, {"server", "s"}};
  return s;
}

inline std::map<std::string, DeviceProfile> devices() {
  return {{"client", device("c", 2e6)}, {"server", device("s", 2e7)}};
}

}  // namespace splitsim::toy_plan
