#include "splitsim/exec/topology.h"

#include "splitsim/costmodel/errors.h"

namespace splitsim {

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
