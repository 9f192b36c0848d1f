#pragma once
// The human table `splitsim simulate` prints: one row per variant (time per
// batch and its spread, computation time, the client's average send/receive
// bandwidth, peak bandwidth, bubble fraction, busiest resource, peak stash
// per stage, bytes per party), under a title line naming the scenario.
#include <iosfwd>
#include <vector>

#include "splitsim/sim/metrics.h"

namespace splitsim {

// REQUIRES: !all.empty().
void print_metrics_table(std::ostream& os, const std::vector<Metrics>& all);

}  // namespace splitsim
