#pragma once
// The parties of a run, simulated or real, named as in the Timeline: the
// client role (the party of stage 0) first, replicated as "<party>0",
// "<party>1", ... with several clients (its Plan name with one client), then
// the other parties, shared by all clients, in order of first appearance
// along the stages. The simulator's deployment and the real execution's
// topology both start from it.
#include <string>
#include <vector>

#include "splitsim/costmodel/plan.h"

namespace splitsim {

struct RunParty {
  std::string name;        // Timeline name
  std::string plan_party;  // the Plan's party name (the client role's for every replica)
  bool client_role = false;
};

struct RunParties {
  int clients = 1;
  int stages = 0;
  std::vector<RunParty> parties;  // index c < clients: client c's replica of the client role
  std::vector<int> stage_party;   // index client * stages + stage -> party index

  // Party index running stage k for client c.
  int party_of(int stage, int client) const {
    return stage_party[static_cast<size_t>(client * stages + stage)];
  }
};

// REQUIRES: plan.stages not empty, plan.clients >= 1.
RunParties run_parties(const Plan& plan);

}  // namespace splitsim
