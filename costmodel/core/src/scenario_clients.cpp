// "clients": a count, or client groups whose link figures are fixed, listed
// or drawn (scenarios/FORMAT.md "Clients").
#include <string>
#include <vector>

#include "json_read.h"
#include "scenario_internal.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"

namespace splitsim {
namespace {

namespace jr = json_read;
using nlohmann::json;

const std::vector<std::string> kClientGroupKeys = {"name", "count", "device", "bandwidth_bit_per_s",
                                                   "latency_s"};

// A number, a list of `count` numbers (one per client), or
// {"distribution": "uniform", "min": A, "max": B} /
// {"distribution": "lognormal", "median": M, "sigma": S}, every value in `range`.
DrawnValue parse_drawn(const json& j, const std::string& path, const jr::NumberRange& range,
                       int64_t count) {
  DrawnValue d;
  if (j.is_array()) {
    if (static_cast<int64_t>(j.size()) != count)
      throw InputError(path, "lists " + std::to_string(j.size()) +
                                 " values; expected one per client of the group (" +
                                 std::to_string(count) + ")");
    for (size_t i = 0; i < j.size(); ++i)
      d.values.push_back(jr::read_number(j[i], jr::index_path(path, i), range));
    return d;
  }
  if (!j.is_object()) {
    d.value = jr::read_number(j, path, range);
    return d;
  }
  const std::vector<std::string> kinds = {"uniform", "lognormal"};
  if (!j.contains("distribution"))
    throw InputError(path,
                     "expected a number or a distribution such as {\"distribution\": "
                     "\"uniform\", \"min\": 1e7, \"max\": 1e8}");
  d.distribution =
      jr::read_choice(j.at("distribution"), path + ".distribution", "distribution", kinds);
  if (d.distribution == "uniform") {
    jr::check_keys(j, path, {"distribution", "min", "max"});
    for (const char* k : {"min", "max"})
      if (!j.contains(k))
        throw InputError(path, std::string("a uniform distribution needs \"") + k + "\"");
    d.min = jr::read_number(j.at("min"), path + ".min", range);
    d.max = jr::read_number(j.at("max"), path + ".max", range);
    if (d.max < d.min) throw InputError(path + ".max", "must be >= min");
  } else {
    jr::check_keys(j, path, {"distribution", "median", "sigma"});
    for (const char* k : {"median", "sigma"})
      if (!j.contains(k))
        throw InputError(path, std::string("a lognormal distribution needs \"") + k + "\"");
    d.median = jr::read_number(j.at("median"), path + ".median", range);
    d.sigma = jr::read_number(j.at("sigma"), path + ".sigma", {0, false, 5, false});
  }
  return d;
}

// "clients": a count, or a list of groups. Returns the groups (none for a
// count) and sets *total.
}  // namespace

namespace scenario_internal {

std::vector<ClientGroupSpec> parse_clients(const json& j, int64_t* total) {
  if (!j.is_array()) {
    *total = jr::read_int(j, "$.clients", 1, limits::kMaxClients);
    return {};
  }
  if (j.empty())
    throw InputError("$.clients", "expected a count or a non-empty list of client groups");
  std::vector<ClientGroupSpec> groups;
  *total = 0;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = jr::index_path("$.clients", i);
    const json& g = j[i];
    jr::require_object(g, at,
                       "a client group such as {\"count\": 80, \"bandwidth_bit_per_s\": 1e8}");
    jr::check_keys(g, at, kClientGroupKeys);
    ClientGroupSpec c;
    c.name = g.contains("name") ? jr::read_string(g.at("name"), at + ".name")
                                : "group" + std::to_string(i);
    for (const ClientGroupSpec& other : groups)
      if (other.name == c.name)
        throw InputError(at + ".name", "\"" + c.name + "\" names two groups");
    if (!g.contains("count")) throw InputError(at, "a client group needs \"count\"");
    c.count = jr::read_int(g.at("count"), at + ".count", 1, limits::kMaxClients);
    if (g.contains("device")) c.device = jr::read_string(g.at("device"), at + ".device");
    if (g.contains("bandwidth_bit_per_s")) {
      c.has_bandwidth = true;
      c.bandwidth_bit_per_s = parse_drawn(
          g.at("bandwidth_bit_per_s"), at + ".bandwidth_bit_per_s",
          {limits::kMinBandwidthBitPerS, false, limits::kMaxBandwidthBitPerS, false}, c.count);
    }
    if (g.contains("latency_s")) {
      c.has_latency = true;
      c.latency_s = parse_drawn(g.at("latency_s"), at + ".latency_s",
                                {0, false, limits::kMaxLatencyS, false}, c.count);
    }
    *total += c.count;
    if (*total > limits::kMaxClients)
      throw InputError(at + ".count", "the groups hold more than " +
                                          std::to_string(limits::kMaxClients) + " clients");
    groups.push_back(c);
  }
  return groups;
}

}  // namespace scenario_internal

std::string client_group_device_key(const ClientGroupSpec& group) {
  return "client group " + group.name;
}

}  // namespace splitsim
