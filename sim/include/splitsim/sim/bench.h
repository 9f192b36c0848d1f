#pragma once
// `splitsim bench`: how fast the simulator is, on given plans. Each figure
// is the median of `repeat` runs (wall clock, and the CPU time of this
// process and its reaped children), each simulation in its own child
// process, simulate + compute_metrics, printed one line each with its target.
#include <iosfwd>
#include <vector>

#include "splitsim/costmodel/plan.h"

namespace splitsim {

struct BenchPlans {
  Plan base;                   // one variant of the scenario: 100 batches, 1,000 clients
  Plan chunked;                // a chunked variant: one CIFAR-10 epoch (782 batches)
  std::vector<Plan> variants;  // every variant: the 300-variant sweep (x link rates)
};

// Prints the figures to `out`: a child process's own cost, one scenario of
// 100 batches, one epoch, 1,000 clients x 10 batches, and a 300-variant
// sweep over `jobs` parallel simulations (<= 0: the CPU count).
void run_simulator_bench(const BenchPlans& plans, int repeat, int jobs, std::ostream& out);

}  // namespace splitsim
