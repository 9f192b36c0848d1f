#pragma once
// Who runs what in a real execution (no LibTorch); RunSpec holds it
// (run_spec.h). Parties as the simulator
// has them (run_parties in splitsim/costmodel/parties.h): the client role
// (the party of stage 0) first, replicated as "client0", "client1", ... with
// several clients, then the other parties in order of first appearance along
// the stages. Ranks: the server (the party named "server", else the first
// non-client party) is rank 0, then the other shared parties in order, then
// the clients.
#include <string>
#include <vector>

#include "splitsim/costmodel/plan.h"

namespace splitsim {

struct ExecTopology {
  std::vector<std::string> parties;     // Timeline party names
  std::vector<int32_t> client_parties;  // indices of the client-role parties
  std::vector<int> party_rank;          // rank of each party
  std::vector<int> rank_party;          // party of each rank
  std::string client_party;             // Plan name of the client role
  std::string server_party;             // Plan name of rank 0
  int clients = 1;
  int stages = 0;
  std::vector<int> stage_party;  // index client * stages + stage -> party index

  int world_size() const { return static_cast<int>(rank_party.size()); }
  // Party index running stage k for client c.
  int party_of(int stage, int client) const {
    return stage_party[static_cast<size_t>(client * stages + stage)];
  }
  int rank_of(int stage, int client) const { return party_rank[party_of(stage, client)]; }
};

// REQUIRES: plan.stages not empty and not all on one party.
ExecTopology make_topology(const Plan& plan);

}  // namespace splitsim
