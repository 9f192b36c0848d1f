// The explore space from a space file and the command line's flags.
#include "splitsim/explore/space_flags.h"

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <type_traits>
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

// A list of positive decimal numbers ("1,4,8", "1e9,4e9"); integers
// (`T` integral) in digits only. std::stod alone would also read "0x10" as
// 16, "inf" and "nan", and a fraction as its integer part.
template <typename T>
std::vector<T> parse_list(const std::string& s, const std::string& flag) {
  constexpr bool kIntegers = std::is_integral_v<T>;
  std::vector<T> out;
  for (const auto& item : split(s)) {
    try {
      if (item.find_first_not_of(kIntegers ? "0123456789" : "0123456789.eE+-") != std::string::npos)
        throw std::invalid_argument(item);
      size_t used = 0;
      const double v = std::stod(item, &used);
      // 1e18: converting a larger value to an integer is undefined.
      if (used != item.size() || !(v > 0) || !(v <= 1e18)) throw std::invalid_argument(item);
      out.push_back(static_cast<T>(v));
    } catch (const std::exception&) {
      throw InputError(flag, "\"" + item.substr(0, 40) + "\" is not a positive " +
                                 (kIntegers ? "decimal integer" : "decimal number") +
                                 "; give a list like " + (kIntegers ? "1,4,8" : "1e9,4e9"));
    }
  }
  if (out.empty()) throw InputError(flag, "give at least one value");
  return out;
}

// Refuses a space of more than kMaxSpaceCombinations combinations, naming
// each factor and where it came from.
void check_space_size(const ExploreSpace& space, const SpaceFlags& a, const nlohmann::json& file) {
  const int64_t n = space_combinations(space);
  if (n <= kMaxSpaceCombinations) return;
  auto source = [&](const std::string& flag_value, const std::string& flag, const char* key,
                    const std::string& otherwise) {
    if (!flag_value.empty()) return flag;
    if (file.is_object() && file.contains(key))
      return "$." + std::string(key) + " in " + a.space_file;
    return otherwise;
  };
  auto count = [](size_t size) { return std::to_string(std::max<size_t>(size, 1)); };
  const std::string product =
      count(space.codecs.empty() ? default_codec_options().size() : space.codecs.size()) +
      " codec options (" + source("", "", "codecs", "the default ones") + ") x " +
      count(space.chunks.size()) + " chunk counts (" +
      source(a.chunks, "--chunks", "chunks", "the scenario's") + ") x " +
      count(space.schedules.size()) + " schedules (" +
      source("", "", "schedules", "the scenario's") + ") x " +
      count(space.bandwidths_bit_per_s.size()) + " bandwidths (" +
      source(a.bandwidths, "--bandwidth-bit-per-s", "bandwidths_bit_per_s", "the scenario's") + ")";
  throw InputError(a.space_file.empty() ? "explore space" : a.space_file,
                   "the space holds " + product + " = " + std::to_string(n) +
                       " combinations per cut; the limit is " +
                       std::to_string(kMaxSpaceCombinations) + ": give fewer values");
}

}  // namespace

ExploreSpace make_space(const SpaceFlags& a, const Scenario& base) {
  ExploreSpace space;
  nlohmann::json j;
  if (!a.space_file.empty()) {
    try {
      j = parse_json_file(a.space_file, "explore space file");
    } catch (const InputError& e) {
      throw InputError("space", e.what());
    }
    try {
      space = parse_space(j);
      // A training mode with rounds holds them between batches.
      for (size_t i = 0; i < space.schedules.size(); ++i)
        if (base.training != "unsynchronised" && !is_synchronous(space.schedules[i]))
          throw InputError("$.schedules[" + std::to_string(i) + "]",
                           std::string(schedule_name(space.schedules[i])) +
                               " overlaps batches, which the scenario's training " + base.training +
                               " separates by rounds");
    } catch (const InputError& e) {
      throw InputError(a.space_file + " " + e.where(),
                       e.message());
    }
  }
  if (!a.objective.empty()) space.objective = parse_objective(a.objective, "objective");
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
      throw InputError("stages", "the scenario has " + std::to_string(parties.size()) +
                                       " parties in $.devices, fewer than " +
                                       std::to_string(a.stages) + " stages");
    parties.resize(a.stages);
    space.stage_parties = parties;
  }
  if (!a.chunks.empty()) space.chunks = parse_list<int64_t>(a.chunks, "chunks");
  if (!a.bandwidths.empty())
    space.bandwidths_bit_per_s = parse_list<double>(a.bandwidths, "bandwidth_bit_per_s");
  if (a.client_memory_bytes >= 0) space.client_memory_bytes = a.client_memory_bytes;
  if (a.max_client_mac_share >= 0) space.max_client_mac_share = a.max_client_mac_share;
  if (a.max_client_mac_share == 0)
    throw InputError("max_client_mac_share", "must be a number in (0, 1]");
  check_space(space);
  check_space_size(space, a, j);
  return space;
}

}  // namespace splitsim
