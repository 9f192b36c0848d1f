#pragma once
// `splitsim bench`: how fast the simulator is, on given plans. Each figure
// is the median of `repeat` runs (wall clock, and the machine's busy CPU
// time), each simulation in a process of its own (simulator.h), simulate +
// compute_metrics, printed one line each with its target.
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "splitsim/costmodel/plan.h"

namespace splitsim {

struct BenchPlans {
  Plan base;                   // one variant of the scenario: 100 batches, 1,000 clients
  Plan chunked;                // a chunked variant: one CIFAR-10 epoch (782 batches)
  std::vector<Plan> variants;  // every variant: the sweeps (x link rates)
};

// A whole command timed as a user runs it (e.g. the explorer's default
// search, model measurement included), with its target.
struct BenchCommand {
  std::string label;
  std::function<void()> run;  // throws on failure
  double target_s = 0;
};

// Prints the figures to `out`: a simulation's own cost, one scenario of 100
// batches, one epoch, 1,000 clients x 10 batches, and sweeps of 500 and
// 5,000 variants over `jobs` parallel simulations (<= 0: the CPU count),
// with their rates: the rate must not fall with the sweep's size; then each
// of `commands`.
void run_simulator_bench(const BenchPlans& plans, int repeat, int jobs, std::ostream& out,
                         const std::vector<BenchCommand>& commands = {});

}  // namespace splitsim
