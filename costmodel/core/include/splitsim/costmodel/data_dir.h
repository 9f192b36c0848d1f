#pragma once
// Where the shipped scenarios and device profiles are, found at run time
// (nothing compiled in): the same binary works from the build tree, installed
// (`cmake --install`) anywhere, or copied with its data.
#include <string>

namespace splitsim {

// The directory of the shipped scenarios (holding `devices/`), the first of:
//  1. $SPLITSIM_DATA_DIR, when set and not empty (used as given);
//  2. <directory of the running binary>/../share/splitsim/scenarios: the
//     installed layout (bin/splitsim, share/splitsim/scenarios/), and the
//     build tree's (the build links build/share/splitsim/scenarios to the
//     source tree's scenarios/, and the binary is build/cli/splitsim);
// "" when $SPLITSIM_DATA_DIR is unset and (2) is not a directory.
std::string data_dir();

// The shipped default scenario (data_dir()/mobilenet_v2_ushape.json);
// "mobilenet_v2_ushape.json" when there is no data_dir().
std::string default_scenario_file();

}  // namespace splitsim
