#pragma once
// Running an exploration: the search of explore.h on one scenario variant,
// then the candidates that survive the screen simulated (SimGrid, one child
// process each: simulate_many), their time per batch filled in, the Pareto
// front and the ranking. What `splitsim explore` runs (cli/cmd_explore.cpp);
// documented in sim/explore/README.md.
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/model_profile.h"
#include "splitsim/costmodel/scenario.h"
#include "splitsim/explore/explore.h"
#include "splitsim/sim/metrics.h"

namespace splitsim {

// Where the simulations stand: after each batch of kExploreSimulationBatch.
struct ExploreProgress {
  size_t candidates = 0;   // feasible candidates (screened ones included)
  size_t simulated = 0;    // simulated so far
  size_t to_simulate = 0;  // to simulate in all
};

// Simulations handed to simulate_many at once (one progress report each).
constexpr size_t kExploreSimulationBatch = 32;

struct ExploreOptions {
  int jobs = 0;                // simulations at once; 0: the CPU count
  int max_simulations = 1000;  // simulate at most this many survivors, lowest bound first
  std::function<void(const ExploreProgress&)> progress;  // may be empty
  // The first `spread_top` of the ranking are simulated again at the ends of
  // the timing spread: the devices' measured one, or `spread` for every
  // party when set (a relative half-width in [0, 1)).
  size_t spread_top = 10;
  std::optional<double> spread;
  // Candidates simulated even when the screen put them off the Pareto front
  // (those whose leakage was measured, explore --leakage); may be empty.
  std::function<bool(const Candidate&)> always_simulate;
  // Simulates plans, metrics in input order; empty: simulate_metrics with
  // `jobs` here (the Python package hands in a Dask cluster's).
  std::function<std::vector<Metrics>(const std::vector<Plan>&)> simulate;
};

struct Exploration {
  ExploreResult result;  // every feasible candidate; the simulated ones have time_per_batch_s
  Objective objective = Objective::kTime;
  size_t simulated = 0;
  size_t not_simulated_over_cap = 0;  // survivors over max_simulations
  std::vector<size_t> front;          // candidate_front(): indices into result.candidates
  std::vector<size_t> ranking;        // rank() by objective: every simulated candidate
  // Each party's timing spread (party_spreads(); "*": the largest) and how
  // many plans after the first of the ranking tie it (predicted_tie()).
  std::map<std::string, double> spreads;
  size_t tied_with_best = 0;
  double wall_s = 0;                  // search and simulations
};

// Explores `space` around `base` (a scenario variant, with its measured
// model and its parties' device profiles; explore()), simulates the
// survivors of the screen in order of their lower bound, at most
// options.max_simulations of them, and ranks them. The result does not
// depend on options.jobs. Throws InputError when the space does not fit the
// scenario, std::runtime_error when no candidate was simulated.
Exploration run_exploration(const Scenario& base, const ModelProfile& model,
                            const std::map<std::string, DeviceProfile>& devices,
                            const ExploreSpace& space, const ExploreOptions& options);

}  // namespace splitsim
