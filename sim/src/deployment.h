#pragma once
// Deployment: who runs where, as data (no SimGrid). Built from a Plan:
//  - parties: run_parties() (splitsim/costmodel/parties.h); with
//    Plan.clients > 1 the client role (the party of stage 0) is replicated as
//    "<party>0", "<party>1", ... while the other parties are shared by all
//    clients;
//  - instances: one per (client, stage), the actors;
//  - channels: one per (client, boundary, direction), local when both ends
//    are on the same party (no network), else remote.
#include <string>
#include <vector>

#include "splitsim/costmodel/parties.h"
#include "splitsim/costmodel/plan.h"

namespace splitsim::sim_internal {

struct Instance {
  int stage = 0;
  int client = 0;
  int party = 0;  // index into Deployment::parties
};

struct Channel {
  int boundary = 0;
  bool backward = false;
  int from = 0, to = 0;  // instance indices
  bool local = false;
};

struct Deployment {
  int stages = 0;
  int clients = 1;
  std::vector<RunParty> parties;    // client_role: owns the data (stage 0's party or a replica)
  std::vector<Instance> instances;  // index = client * stages + stage
  std::vector<Channel> channels;

  int instance(int stage, int client) const { return client * stages + stage; }
  // Channel index of (client, boundary, direction).
  int channel(int client, int boundary, bool backward) const {
    return (client * (stages - 1) + boundary) * 2 + (backward ? 1 : 0);
  }
};

Deployment make_deployment(const Plan& plan);

}  // namespace splitsim::sim_internal
