#include "splitsim/costmodel/exec_topology.h"

#include <algorithm>

#include "splitsim/costmodel/parties.h"

namespace splitsim {

ExecTopology make_topology(const Plan& plan) {
  // Client groups are clients like any other here: the device and link
  // that set them apart are the machines and the shaping the processes run
  // on (validate shapes and slows them on one machine:
  // exec/validate/README.md "Several clients").
  const RunParties rp = run_parties(plan);
  ExecTopology t;
  t.clients = rp.clients;
  t.stages = rp.stages;
  t.stage_party = rp.stage_party;
  t.client_party = rp.parties.front().plan_party;
  std::vector<std::string> shared;
  for (size_t i = 0; i < rp.parties.size(); ++i) {
    t.parties.push_back(rp.parties[i].name);
    if (rp.parties[i].client_role)
      t.client_parties.push_back(static_cast<int32_t>(i));
    else
      shared.push_back(rp.parties[i].name);
  }
  if (shared.empty()) return t;
  t.server_party =
      std::find(shared.begin(), shared.end(), "server") != shared.end() ? "server" : shared.front();
  t.party_rank.assign(t.parties.size(), -1);
  auto assign = [&](int party) {
    t.party_rank[party] = static_cast<int>(t.rank_party.size());
    t.rank_party.push_back(party);
  };
  for (size_t i = t.clients; i < t.parties.size(); ++i)
    if (t.parties[i] == t.server_party) assign(static_cast<int>(i));
  for (size_t i = t.clients; i < t.parties.size(); ++i)
    if (t.parties[i] != t.server_party) assign(static_cast<int>(i));
  for (int c = 0; c < t.clients; ++c) assign(c);
  return t;
}

}  // namespace splitsim
