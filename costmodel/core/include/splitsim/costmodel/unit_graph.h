#pragma once
// The unit graph: one vertex per partition unit plus the model input, one
// edge per tensor a unit consumes. A cut before unit c is valid iff exactly
// one tensor crosses it (ModelProfile::units[i].inputs are the edges).
#include <string>
#include <vector>

#include "splitsim/costmodel/model_profile.h"

namespace splitsim {

struct CutPoint {
  int position = 0;             // the cut lies before units[position]
  std::string before, after;    // last unit before / first unit after
  std::vector<int64_t> shape;   // the one tensor that crosses, per sample
};

// Valid cut points in model order, derived with Boost.Graph. REQUIRES the
// edges to point backwards (inputs < own index), checked by a topological sort.
std::vector<CutPoint> valid_cuts(const ModelProfile& profile);

}  // namespace splitsim
