#pragma once
// A party's rank in a real execution from the role it is given on the
// command line (the topology itself: splitsim/costmodel/exec_topology.h).
#include <string>

#include "splitsim/costmodel/exec_topology.h"

namespace splitsim {

// The rank of `--role role` (a Plan party name; "client" also names the
// client role) for client `client_index`. Throws InputError naming --role
// (and the parties) for an unknown party, --client-index when out of range.
int rank_of_role(const ExecTopology& topo, const std::string& role, int client_index);

}  // namespace splitsim
