#include "deployment.h"

#include <cassert>
#include <utility>

namespace splitsim::sim_internal {

Deployment make_deployment(const Plan& plan) {
  Deployment d;
  RunParties rp = run_parties(plan);
  d.stages = rp.stages;
  d.clients = rp.clients;
  for (int c = 0; c < d.clients; ++c)
    for (int k = 0; k < d.stages; ++k) d.instances.push_back({k, c, rp.party_of(k, c)});
  d.parties = std::move(rp.parties);
  for (int c = 0; c < d.clients; ++c)
    for (const auto& b : plan.boundaries) {
      assert(b.to_stage == b.from_stage + 1);
      const int from = d.instance(b.from_stage, c), to = d.instance(b.to_stage, c);
      const bool local = d.instances[from].party == d.instances[to].party;
      d.channels.push_back({b.from_stage, false, from, to, local});
      d.channels.push_back({b.from_stage, true, to, from, local});
    }
  return d;
}

}  // namespace splitsim::sim_internal
