// The scenario's "platform" object (scenarios/FORMAT.md "Platform"): what
// the machines running the parties add to the model's compute, also read
// from plan files; and PlatformSpec's lookups.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "json_read.h"
#include "scenario_internal.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/format.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {
namespace {

namespace jr = json_read;
using nlohmann::json;

const std::vector<std::string> kWakePointKeys = {"gap_s", "seconds"};
const std::vector<std::string> kPartyHostWorkKeys = {"cpu_s_per_byte_sent",
                                                     "cpu_s_per_byte_received"};

std::vector<WakePoint> parse_wake_cost(const json& j, const std::string& path) {
  jr::require_array(j, path,
                    "wake-cost points such as [{\"gap_s\": 0.001, \"seconds\": 4e-5}, "
                    "{\"gap_s\": 0.01, \"seconds\": 2e-4}]");
  std::vector<WakePoint> points;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = jr::index_path(path, i);
    jr::require_object(j[i], at, "a point such as {\"gap_s\": 0.001, \"seconds\": 4e-5}");
    jr::check_keys(j[i], at, kWakePointKeys);
    jr::require_key(j[i], at, "gap_s", "the wait before the computation, in seconds");
    jr::require_key(j[i], at, "seconds", "what the computation pays after it, in seconds");
    WakePoint w;
    w.gap_s =
        jr::read_number(j[i].at("gap_s"), at + ".gap_s", {0, true, limits::kMaxOverheadS, false});
    w.seconds = jr::read_number(j[i].at("seconds"), at + ".seconds",
                                {0, false, limits::kMaxOverheadS, false});
    if (!points.empty() && !(w.gap_s > points.back().gap_s))
      throw InputError(at + ".gap_s", "the points' gaps must increase (" + format_seconds(w.gap_s) +
                                          " after " + format_seconds(points.back().gap_s) + ")");
    points.push_back(w);
  }
  return points;
}

}  // namespace

namespace scenario_internal {

const std::vector<std::string>& platform_keys() {
  static const std::vector<std::string> keys = {"cpu_s_per_byte_sent",
                                                "cpu_s_per_byte_received",
                                                "cpu_s_per_message_sent",
                                                "cpu_s_per_message_received",
                                                "shared_machine",
                                                "co_compute_slowdown",
                                                "parties",
                                                "wake_cost"};
  return keys;
}

PlatformSpec parse_platform(const json& j, const std::string& path) {
  jr::require_object(j, path,
                     "a platform object such as {\"cpu_s_per_byte_sent\": 2e-9, "
                     "\"shared_machine\": true, \"co_compute_slowdown\": 1.05}");
  jr::check_keys(j, path, platform_keys());
  PlatformSpec p;
  const auto per_byte = [](const json& obj, const std::string& at, const char* key, double* out) {
    if (obj.contains(key))
      *out =
          jr::read_number(obj.at(key), at + "." + key, {0, false, limits::kMaxCpuSPerByte, false});
  };
  per_byte(j, path, "cpu_s_per_byte_sent", &p.cpu_s_per_byte_sent);
  per_byte(j, path, "cpu_s_per_byte_received", &p.cpu_s_per_byte_received);
  for (const auto& [key, out] :
       {std::pair{"cpu_s_per_message_sent", &p.cpu_s_per_message_sent},
        std::pair{"cpu_s_per_message_received", &p.cpu_s_per_message_received}})
    if (j.contains(key))
      *out = jr::read_number(j.at(key), path + "." + key, {0, false, limits::kMaxOverheadS, false});
  if (j.contains("parties")) {
    const std::string at = path + ".parties";
    jr::require_object(
        j.at("parties"), at,
        "host work per party such as {\"server\": {\"cpu_s_per_byte_received\": 2e-9}}");
    for (const auto& [name, v] : j.at("parties").items()) {
      const std::string pat = jr::member_path(at, name);
      if (name.empty()) throw InputError(pat, "a party name must not be empty");
      jr::require_object(v, pat,
                         "{\"cpu_s_per_byte_sent\": ..., \"cpu_s_per_byte_received\": ...}");
      jr::check_keys(v, pat, kPartyHostWorkKeys);
      PartyHostWork& w = p.parties[name];
      per_byte(v, pat, "cpu_s_per_byte_sent", &w.cpu_s_per_byte_sent);
      per_byte(v, pat, "cpu_s_per_byte_received", &w.cpu_s_per_byte_received);
    }
  }
  if (j.contains("shared_machine"))
    p.shared_machine = jr::read_bool(j.at("shared_machine"), path + ".shared_machine");
  if (j.contains("co_compute_slowdown"))
    p.co_compute_slowdown =
        jr::read_number(j.at("co_compute_slowdown"), path + ".co_compute_slowdown",
                        {1, false, limits::kMaxCoComputeSlowdown, false});
  if (j.contains("wake_cost"))
    p.wake_cost = parse_wake_cost(j.at("wake_cost"), path + ".wake_cost");
  return p;
}

}  // namespace scenario_internal

double PlatformSpec::sent_s_per_byte(const std::string& party) const {
  auto it = parties.find(party);
  return cpu_s_per_byte_sent + (it == parties.end() ? 0.0 : it->second.cpu_s_per_byte_sent);
}

double PlatformSpec::received_s_per_byte(const std::string& party) const {
  auto it = parties.find(party);
  return cpu_s_per_byte_received + (it == parties.end() ? 0.0 : it->second.cpu_s_per_byte_received);
}

double PlatformSpec::wake_cost_s(double gap_s) const {
  if (wake_cost.empty() || !(gap_s > 0)) return 0;
  if (gap_s >= wake_cost.back().gap_s) return wake_cost.back().seconds;
  WakePoint before;  // (0, 0)
  for (const WakePoint& w : wake_cost) {
    if (gap_s <= w.gap_s)
      return before.seconds +
             (w.seconds - before.seconds) * (gap_s - before.gap_s) / (w.gap_s - before.gap_s);
    before = w;
  }
  return wake_cost.back().seconds;
}

bool PlatformSpec::any() const {
  bool per_party = false;
  for (const auto& [name, w] : parties)
    per_party = per_party || w.cpu_s_per_byte_sent > 0 || w.cpu_s_per_byte_received > 0;
  return per_party || cpu_s_per_byte_sent > 0 || cpu_s_per_byte_received > 0 ||
         cpu_s_per_message_sent > 0 || cpu_s_per_message_received > 0 ||
         (shared_machine && co_compute_slowdown != 1.0);
}

}  // namespace splitsim
