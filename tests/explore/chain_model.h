#pragma once
// A synthetic model, devices and base scenario for the explorer's tests: a
// chain of seven units with known costs (no LibTorch, no measuring).
#include <map>
#include <string>

#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/model_profile.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {
namespace {

// Seven units with uneven MACs and activation sizes; unit 4 also reads unit
// 2's output (a skip), so no cut is valid before unit 4 (position 4).
inline ModelProfile chain() {
  const int64_t fwd[] = {4000, 1000, 9000, 3000, 2000, 7000, 500};
  const int64_t channels[] = {16, 8, 32, 8, 4, 16, 2};
  ModelProfile p;
  p.model = "chain";
  p.input_shape = {4, 8, 8};
  p.measured_batch = 4;
  for (int i = 0; i < 7; ++i) {
    UnitProfile u;
    u.name = "u" + std::to_string(i);
    u.inputs = {i - 1};
    if (i == 4) u.inputs = {3, 2};
    u.output_shape = {channels[i], 8, 8};
    u.fwd.matmul_macs = fwd[i];
    u.bwd.matmul_macs = 2 * fwd[i];
    // As a linear layer's: its input's gradient (none for the data) and its weights'.
    u.bwd_input.matmul_macs = i == 0 ? 0 : fwd[i];
    u.bwd_params.matmul_macs = fwd[i];
    u.param_count = 50 * (i + 1);
    u.param_bytes = 4 * u.param_count;
    u.stash_bytes_per_sample = 256 * channels[i];
    p.units.push_back(u);
  }
  return p;
}

inline DeviceProfile device(const std::string& name, double peak_flops) {
  DeviceProfile d;
  d.name = name;
  d.peak_flops = peak_flops;
  d.memory_bandwidth_Bps = 1e12;
  d.efficiency.matmul = 1.0;
  return d;
}

inline std::map<std::string, DeviceProfile> devices() {
  return {{"client", device("c", 2e6)},
          {"server", device("s", 4e7)},
          {"d0", device("d0", 2e7)},
          {"d1", device("d1", 1e7)},
          {"d2", device("d2", 3e7)}};
}

inline Scenario base() {
  Scenario s;
  s.name = "chain";
  s.batch_size = 8;
  s.schedule = Schedule::kGpipe;
  s.partition = {{"client", "u0", "u0"}, {"server", "u1", "u6"}};
  s.compression.resize(1);
  s.devices = {{"client", "c"}, {"server", "s"}, {"d0", "d0"}, {"d1", "d1"}, {"d2", "d2"}};
  s.network.bandwidth_bit_per_s = 8e6;
  s.optimizer.momentum = 0.9;
  return s;
}

}  // namespace
}  // namespace splitsim
