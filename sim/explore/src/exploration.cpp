// An exploration: search, screen, simulate the survivors, front and ranking.
#include "splitsim/explore/exploration.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"

namespace splitsim {

namespace {

using SimulateFn = std::function<std::vector<Metrics>(const std::vector<Plan>&)>;

// The first `top` of the ranking simulated at both ends of e->spreads (with
// no spread, the time itself), and how many of them tie the first.
void simulate_spreads(Exploration* e, size_t top, const SimulateFn& simulate) {
  std::vector<Candidate>& candidates = e->result.candidates;
  const size_t count = std::min(top, e->ranking.size());
  if (largest_spread(e->spreads) > 0) {
    std::vector<Plan> plans;
    for (size_t k = 0; k < count; ++k)
      for (int sign : {-1, 1})
        plans.push_back(plan_at_spread(candidates[e->ranking[k]].plan, e->spreads, sign));
    const std::vector<Metrics> metrics = simulate(plans);
    for (size_t k = 0; k < count; ++k)
      candidates[e->ranking[k]].spread = {metrics[2 * k].time_per_batch_s,
                                          metrics[2 * k + 1].time_per_batch_s};
  } else {
    for (size_t k = 0; k < count; ++k) {
      Candidate& c = candidates[e->ranking[k]];
      c.spread = {c.time_per_batch_s, c.time_per_batch_s};
    }
  }
  e->tied_with_best = 0;
  if (e->objective != Objective::kTime) return;  // ties of time only where time ranks
  for (size_t k = 1; k < count; ++k)
    if (predicted_tie(candidates[e->ranking[0]].spread, candidates[e->ranking[k]].spread))
      ++e->tied_with_best;
}

}  // namespace

Exploration run_exploration(const Scenario& base, const ModelProfile& model,
                            const std::map<std::string, DeviceProfile>& devices,
                            const ExploreSpace& space, const ExploreOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  Exploration e;
  e.objective = space.objective;
  e.result = explore(base, model, devices, space);
  std::vector<Candidate>& candidates = e.result.candidates;
  std::vector<size_t> to_sim;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (!candidates[i].screened_out ||
        (options.always_simulate && options.always_simulate(candidates[i])))
      to_sim.push_back(i);
  std::stable_sort(to_sim.begin(), to_sim.end(), [&](size_t x, size_t y) {
    return candidates[x].lower_bound_s < candidates[y].lower_bound_s;
  });
  const size_t cap = static_cast<size_t>(std::max(0, options.max_simulations));
  e.not_simulated_over_cap = to_sim.size() > cap ? to_sim.size() - cap : 0;
  to_sim.resize(to_sim.size() - e.not_simulated_over_cap);
  e.simulated = to_sim.size();
  const int jobs = options.jobs > 0
                       ? options.jobs
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const SimulateFn simulate = options.simulate ? options.simulate : [jobs](const auto& plans) {
    return simulate_metrics(plans, SimOptions{}, jobs);
  };
  for (size_t s = 0; s < to_sim.size(); s += kExploreSimulationBatch) {
    std::vector<Plan> plans;
    for (size_t k = s; k < std::min(to_sim.size(), s + kExploreSimulationBatch); ++k)
      plans.push_back(candidates[to_sim[k]].plan);
    const std::vector<Metrics> metrics = simulate(plans);
    if (metrics.size() != plans.size())
      throw std::runtime_error("the simulations returned " + std::to_string(metrics.size()) +
                               " results for " + std::to_string(plans.size()) + " plans");
    for (size_t k = 0; k < plans.size(); ++k)
      candidates[to_sim[s + k]].time_per_batch_s = metrics[k].time_per_batch_s;
    if (options.progress)
      options.progress(
          {candidates.size(), std::min(to_sim.size(), s + kExploreSimulationBatch), to_sim.size()});
  }
  e.front = candidate_front(candidates);
  e.ranking = rank(candidates, space.objective);
  if (e.ranking.empty()) throw std::runtime_error("no candidate was simulated");
  e.spreads = party_spreads(devices, options.spread);
  simulate_spreads(&e, options.spread_top, simulate);
  e.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return e;
}

}  // namespace splitsim
