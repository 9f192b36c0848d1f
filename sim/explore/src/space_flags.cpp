// The explore space from a space file and the command line's flags.
#include "splitsim/explore/space_flags.h"

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/input_file.h"

namespace splitsim {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

template <typename T>
std::vector<T> parse_list(const std::string& s, const std::string& flag) {
  std::vector<T> out;
  for (const auto& item : split(s)) {
    try {
      size_t used = 0;
      const double v = std::stod(item, &used);
      // 1e18: converting a larger value to an integer is undefined.
      if (used != item.size() || !(v > 0) || !(v <= 1e18)) throw std::invalid_argument(item);
      out.push_back(static_cast<T>(v));
    } catch (const std::exception&) {
      throw InputError(flag, "\"" + item + "\" is not a positive number; give a list like 1,4,8");
    }
  }
  if (out.empty()) throw InputError(flag, "give at least one value");
  return out;
}

}  // namespace

ExploreSpace make_space(const SpaceFlags& a, const Scenario& base) {
  ExploreSpace space;
  if (!a.space_file.empty()) {
    nlohmann::json j;
    try {
      j = parse_json_file(a.space_file, "explore space file");
    } catch (const InputError& e) {
      throw InputError("--space", e.what());
    }
    try {
      space = parse_space(j);
    } catch (const InputError& e) {
      throw InputError(a.space_file + " " + e.where(),
                       e.message());
    }
  }
  if (!a.objective.empty()) space.objective = parse_objective(a.objective, "--objective");
  if (!a.calibration.empty()) space.calibration = load_calibration_file(a.calibration);
  if (!a.kinds.empty()) {
    space.kinds.clear();
    for (const auto& k : split(a.kinds)) space.kinds.push_back(parse_cut_kind(k, "--kinds"));
  }
  if (a.stages > 0) {
    std::vector<std::string> parties;
    for (const auto& p : base.partition)
      if (std::find(parties.begin(), parties.end(), p.party) == parties.end())
        parties.push_back(p.party);
    for (const auto& [party, dev] : base.devices)
      if (std::find(parties.begin(), parties.end(), party) == parties.end())
        parties.push_back(party);
    if (static_cast<int>(parties.size()) < a.stages)
      throw InputError("--stages", "the scenario has " + std::to_string(parties.size()) +
                                       " parties in $.devices, fewer than " +
                                       std::to_string(a.stages) + " stages");
    parties.resize(a.stages);
    space.stage_parties = parties;
  }
  if (!a.chunks.empty()) space.chunks = parse_list<int64_t>(a.chunks, "--chunks");
  if (!a.bandwidths.empty())
    space.bandwidths_bit_per_s = parse_list<double>(a.bandwidths, "--bandwidth-bit-per-s");
  if (a.client_memory_bytes >= 0) space.client_memory_bytes = a.client_memory_bytes;
  if (a.max_client_mac_share >= 0) space.max_client_mac_share = a.max_client_mac_share;
  if (a.max_client_mac_share == 0)
    throw InputError("--max-client-mac-share", "must be a number in (0, 1]");
  check_space(space);
  return space;
}

}  // namespace splitsim
