#pragma once
// Helpers shared by the explorer's translation units. Internal to splitsim_explore.
#include <cstdint>
#include <string>
#include <vector>

#include "splitsim/costmodel/scenario.h"

namespace splitsim::explore_internal {

// Bytes per second from `from` to `to`: the up bandwidth when `from` is the
// client, the down bandwidth when `to` is, else bandwidth_bit_per_s; times
// bandwidth_factor, as the simulator's platform does.
double link_Bps(const NetworkSpec& net, const std::string& from, const std::string& to,
                const std::string& client);

// The scenario with the candidate's choices applied (up/down overrides
// dropped when a bandwidth is given, i.e. bandwidth_bit_per_s > 0).
Scenario with_choices(const Scenario& base, const std::vector<PartSpec>& partition,
                      const std::vector<BoundaryCodecs>& compression, int64_t chunks,
                      Schedule schedule, double bandwidth_bit_per_s);

}  // namespace splitsim::explore_internal
