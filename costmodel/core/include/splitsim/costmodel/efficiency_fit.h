#pragma once
// Fitting a device's per-op-class efficiency to measured timings.
#include <vector>

#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/model_profile.h"

namespace splitsim {

struct TimedWork {
  OpCounts work;     // what ran
  double seconds;    // how long it took
};

struct FitResult {
  Efficiency efficiency;       // fitted; classes absent from the data keep the prior
  double rms_rel_error = 0;    // of formula_seconds vs measured, over the observations
  double max_rel_error = 0;
  int observations = 0;
  std::vector<std::string> fitted;  // the classes the data determined
};

// Least squares (Eigen, relative error) for the inverse efficiencies of conv,
// depthwise, matmul and element-wise work plus a per-op overhead, given
// `device`'s peak_flops and memory bandwidth. Coefficients that would come out
// negative are dropped and the rest refitted. A class is fitted only if, at
// full efficiency, it takes at least 5% of some observation's measured time;
// otherwise it keeps the prior. REQUIRES device peaks > 0.
FitResult fit_efficiency(const DeviceProfile& device, const std::vector<TimedWork>& data);

}  // namespace splitsim
