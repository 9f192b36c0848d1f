#include "splitsim/costmodel/parties.h"

#include <cassert>
#include <map>

namespace splitsim {

RunParties run_parties(const Plan& plan) {
  assert(!plan.stages.empty() && plan.clients >= 1);
  RunParties r;
  r.clients = static_cast<int>(plan.clients);
  r.stages = static_cast<int>(plan.stages.size());
  const std::string& client_party = plan.stages.front().party;
  for (int c = 0; c < r.clients; ++c)
    r.parties.push_back(
        {r.clients > 1 ? client_party + std::to_string(c) : client_party, client_party, true});
  std::map<std::string, int> shared;  // Plan name -> party index
  for (const auto& st : plan.stages)
    if (st.party != client_party &&
        shared.emplace(st.party, static_cast<int>(r.parties.size())).second)
      r.parties.push_back({st.party, st.party, false});
  for (int c = 0; c < r.clients; ++c)
    for (const auto& st : plan.stages)
      r.stage_party.push_back(st.party == client_party ? c : shared.at(st.party));
  return r;
}

}  // namespace splitsim
