#include "deployment.h"

#include <cassert>
#include <map>

namespace splitsim::sim_internal {

Deployment make_deployment(const Plan& plan) {
  Deployment d;
  d.stages = static_cast<int>(plan.stages.size());
  d.clients = static_cast<int>(plan.clients);
  const std::string& client_party = plan.stages.front().party;
  // Parties in order of first appearance along the stages; the client role
  // first, replicated per client.
  std::map<std::string, int> shared;
  for (int c = 0; c < d.clients; ++c)
    d.parties.push_back({d.clients > 1 ? client_party + std::to_string(c) : client_party, true});
  for (const auto& st : plan.stages)
    if (st.party != client_party && !shared.count(st.party)) {
      shared[st.party] = static_cast<int>(d.parties.size());
      d.parties.push_back({st.party, false});
    }
  for (int c = 0; c < d.clients; ++c)
    for (int k = 0; k < d.stages; ++k) {
      const std::string& p = plan.stages[k].party;
      d.instances.push_back({k, c, p == client_party ? c : shared.at(p)});
    }
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
