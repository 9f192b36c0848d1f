#include "splitsim/exec/topology.h"

#include <algorithm>

#include "splitsim/costmodel/errors.h"

namespace splitsim {

int ExecTopology::party_of(int stage, int client) const {
  const std::string& p = stage_party.at(static_cast<size_t>(stage));
  if (p == client_party) return client;
  for (size_t i = static_cast<size_t>(clients); i < parties.size(); ++i)
    if (parties[i] == p) return static_cast<int>(i);
  return -1;
}

ExecTopology make_topology(const Plan& plan) {
  ExecTopology t;
  t.clients = static_cast<int>(plan.clients);
  t.stages = static_cast<int>(plan.stages.size());
  t.client_party = plan.stages.front().party;
  for (const auto& st : plan.stages) t.stage_party.push_back(st.party);
  for (int c = 0; c < t.clients; ++c) {
    t.parties.push_back(t.clients > 1 ? t.client_party + std::to_string(c) : t.client_party);
    t.client_parties.push_back(c);
  }
  std::vector<std::string> shared;
  for (const auto& st : plan.stages)
    if (st.party != t.client_party &&
        std::find(shared.begin(), shared.end(), st.party) == shared.end())
      shared.push_back(st.party);
  for (const auto& p : shared) t.parties.push_back(p);
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
      throw InputError("--client-index", "expected 0.." + std::to_string(t.clients - 1) +
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
  throw InputError("--role", "unknown party \"" + role + "\"; the plan's parties are " + names +
                                 " (\"server\" is rank 0: " + t.server_party + ")");
}

}  // namespace splitsim
