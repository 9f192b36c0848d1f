#pragma once
// `splitsim simulate` as values: what it is asked (SimulateRequest, the
// CLI's flags) and the one call that answers it: the plans simulated, each
// one's metrics printed as a table, JSON or CSV, and a Chrome trace of one.
// InputErrors name the request's fields ("server_order", "trace").
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "splitsim/costmodel/plan.h"

namespace splitsim {

struct SimulateRequest {
  bool json = false;                  // metrics JSON (splitsim.metrics/1): one object, or an array
  bool csv = false;                   // else CSV, one row per plan
  bool wide = false;                  // else the table with every column (else print_metrics_table)
  std::string trace;                  // write the one plan's Chrome trace here ("": none)
  std::string server_order = "fifo";  // fifo | round-robin
  int jobs = 0;                       // simulations at once (<= 0: the CPU count)
};

// Checks `r` (before anything is planned), takes the plans from `load`,
// simulates them and prints the report to `out` (nothing on an error);
// notes go to `err`.
void simulate_and_report(const SimulateRequest& r, const std::function<std::vector<Plan>()>& load,
                         std::ostream& out, std::ostream& err);

}  // namespace splitsim
