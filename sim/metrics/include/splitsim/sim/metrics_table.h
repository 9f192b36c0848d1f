#pragma once
// The human tables `splitsim simulate` prints, under a title line naming
// the scenario: by default one row per variant that fits kTableColumns
// (time per batch, computation time, the client's average and the peak
// bandwidth, the bottleneck; a long variant label wraps onto the next
// lines), and with --wide everything besides (the time's spread, bubble
// fraction, peak stash per stage, bytes per party) on one long row.
#include <cstddef>
#include <iosfwd>
#include <vector>

#include "splitsim/sim/metrics.h"

namespace splitsim {

// The terminal width the default table keeps within.
constexpr size_t kTableColumns = 120;

// REQUIRES: !all.empty(). Every line at most kTableColumns characters as
// long as each word of a label and each client group's name do.
void print_metrics_table(std::ostream& os, const std::vector<Metrics>& all);
// REQUIRES: !all.empty().
void print_wide_metrics_table(std::ostream& os, const std::vector<Metrics>& all);

}  // namespace splitsim
