#include "splitsim/exec/topology.h"

#include <algorithm>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/parties.h"

namespace splitsim {

ExecTopology make_topology(const Plan& plan) {
  // Real processes on this machine: the clients are alike (one device, the
  // link validate shapes), so groups that differ have nothing to run on.
  if (!plan.client_groups.empty())
    throw InputError("$.clients",
                     "client groups (clients that differ in device or link) are simulated only; "
                     "exec runs alike clients: give \"clients\": N");
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

int rank_of_role(const ExecTopology& t, const std::string& role, int client_index) {
  if (role == t.client_party || role == "client") {
    if (client_index < 0 || client_index >= t.clients)
      throw InputError("client_index", "expected 0.." + std::to_string(t.clients - 1) +
                                             " (the scenario has " + std::to_string(t.clients) +
                                             " clients), got " + std::to_string(client_index));
    return t.party_rank[client_index];
  }
  if (role == "server") return 0;  // rank 0, whatever the plan calls it
  std::string names = t.client_party;
  for (size_t i = t.clients; i < t.parties.size(); ++i) {
    if (t.parties[i] == role) return t.party_rank[i];
    names += ", " + t.parties[i];
  }
  throw InputError("role", "unknown party \"" + role + "\"; the plan's parties are " + names +
                                 " (\"server\" is rank 0: " + t.server_party + ")");
}

}  // namespace splitsim
