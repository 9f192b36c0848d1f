#pragma once
// The median of a sample: the middle value, or the mean of the two middle
// ones; NaN for an empty sample. What every measured figure in splitsim is
// reduced to (unit timings, codec timings, spreads, link-probe times,
// calibration errors).
#include <vector>

namespace splitsim {

double median(std::vector<double> values);

}  // namespace splitsim
