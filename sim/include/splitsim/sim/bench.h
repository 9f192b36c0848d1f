#pragma once
// `splitsim bench`: how fast the simulator is, on given plans, and how fast
// and how small planning the shipped big models is. Each figure
// is the median of `repeat` runs (wall clock, and the machine's busy CPU
// time), each simulation in a process of its own (simulator.h), simulate +
// compute_metrics, printed one line each with its target.
#include <cstdint>
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

// Runs this program with `args` (e.g. {"plan", FILE}), its output discarded;
// throws unless it exits 0. Returns the child's peak resident set size (B).
using RunSelf = std::function<int64_t(const std::vector<std::string>& args)>;

// Every variant's plan of a scenario file, the model measured once.
using PlansOf = std::function<std::vector<Plan>(const std::string& scenario_file)>;

struct BenchOptions {
  std::string scenario;      // whose plans are simulated ("": default_scenario_file())
  int repeat = 3;            // runs per figure, >= 1
  int jobs = 0;              // parallel simulations in the sweeps (<= 0: the CPU count)
  std::string what = "all";  // sim: the simulator's figures; plan: planning big models; all
};

// Of a scenario's plans (one per variant): the unchunked uncompressed one as
// `base`, the 8-chunk uncompressed one as `chunked` (each else the first),
// and all of them as `variants`.
BenchPlans bench_plans(std::vector<Plan> all);

// `splitsim bench`: run_simulator_bench on the scenario's plans, with the
// explorer's default search run as a user runs it (`explore SCENARIO --kinds
// ushape --chunks 1,4,8` through `run_self`), then run_plan_bench; as
// `options.what` says. Throws InputError("repeat") when repeat < 1.
void run_bench(const BenchOptions& options, const PlansOf& plans_of, const RunSelf& run_self,
               std::ostream& out);

// `plan FILE --variant V` on the shipped big models (a 7B decoder, a 1.3B
// encoder), each a process of its own through `run_self`: the median wall
// time of `repeat` runs (min..max) and the largest peak RSS, beside the
// targets.
void run_plan_bench(int repeat, const RunSelf& run_self, std::ostream& out);

}  // namespace splitsim
