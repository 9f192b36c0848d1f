#pragma once
// The explore space as `splitsim explore` takes it: a space file (schema
// splitsim.explore/1, parse_space()) overridden by flags given as text
// lists ("1,4,8"). Errors name the flag, or the space file and its JSON path.
#include <cstdint>
#include <string>

#include "splitsim/costmodel/scenario.h"
#include "splitsim/explore/explore.h"

namespace splitsim {

// Empty strings, 0 and -1: not given.
struct SpaceFlags {
  std::string space_file;            // --space
  std::string objective;             // --objective time|bytes|client_macs
  std::string kinds;                 // --kinds single,ushape,kstage
  std::string chunks;                // --chunks 1,4,8
  std::string bandwidths;            // --bandwidth-bit-per-s 1e9,4e9
  int stages = 0;                    // --stages K: the scenario's first K parties
  int64_t client_memory_bytes = -1;  // --client-memory-bytes
  double max_client_mac_share = -1;  // --max-client-mac-share
  std::string calibration;           // --calibration FILE (splitsim.calibration/1)
};

// The space of `flags.space_file` (or the default one) with the flags
// applied, checked (check_space()). --stages K takes the parties of `base`'s
// partition in order, then the other parties of its devices, the first K.
// Throws InputError naming the field ("chunks", "space"), or "FILE $.path" for the space file.
ExploreSpace make_space(const SpaceFlags& flags, const Scenario& base);

}  // namespace splitsim
