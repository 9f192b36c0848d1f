// make_plan's client groups (planner.h): each group's links, drawn per
// client, and its client-role stages priced on the group's own device.
#include <algorithm>
#include <cmath>
#include <random>

#include "planner_internal.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"

namespace splitsim::planner_internal {

namespace {

// A 64-bit mix of x (splitmix64's finaliser): one independent stream per
// (seed, group, field).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// FNV-1a: a stable number for a group's name.
uint64_t name_hash(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// `count` values of `d`, drawn with the stream of (seed, group name,
// field): adding or moving a group leaves the others' draws alone. A
// lognormal draw is clamped to [lo, hi], the range the scenario allows.
std::vector<double> draw(const DrawnValue& d, int64_t count, uint64_t seed,
                         const std::string& group, int field, double lo, double hi) {
  std::vector<double> out;
  std::mt19937_64 rng(mix(seed ^ mix(name_hash(group) * 2 + static_cast<uint64_t>(field))));
  auto uniform01 = [&rng] { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; };
  if (!d.values.empty()) return d.values;  // listed per client
  for (int64_t i = 0; i < count; ++i) {
    if (d.distribution.empty()) {
      out.push_back(d.value);
    } else if (d.distribution == "uniform") {
      out.push_back(d.min + (d.max - d.min) * uniform01());
    } else {  // lognormal: median x exp(sigma x z), z standard normal (Box-Muller)
      const double u1 = uniform01(), u2 = uniform01();
      const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
      out.push_back(std::clamp(d.median * std::exp(d.sigma * z), lo, hi));
    }
  }
  return out;
}

// The client-role stages' costs with the client role on `device` (a
// client group's), the other parties on theirs: each priced as make_plan
// prices it (its units, its side of its boundaries' codecs, its update)
// and calibrated as the plan is. `plan`: planned, not calibrated.
std::vector<PlanStageCosts> client_stage_costs(const PlanContext& c, const Plan& plan,
                                               const DeviceProfile& device) {
  const std::string& client = plan.stages.front().party;
  auto device_of = [&](const PlanStage& st) -> const DeviceProfile& {
    return st.party == client ? device : c.devices.at(st.party);
  };
  Plan on = plan;  // of its other stages only the client-role ones are read
  for (PlanStage& st : on.stages) {
    if (st.party != client) continue;
    time_units(c.model, device, on.microbatch_sizes, st);
    if (splits_backward(c.sc.schedule))
      split_backward_seconds(c.model, device, on.microbatch_sizes, st);
  }
  for (PlanBoundary& bd : on.boundaries) {
    PlanStage& sender = on.stages[bd.from_stage];
    PlanStage& receiver = on.stages[bd.to_stage];
    if (sender.party != client && receiver.party != client) continue;
    for (auto* v :
         {&bd.forward.encode_s, &bd.forward.decode_s, &bd.backward.encode_s, &bd.backward.decode_s})
      v->clear();
    price_codecs(on.microbatch_sizes, device_of(sender), device_of(receiver), bd, sender, receiver);
  }
  for (PlanStage& st : on.stages)
    if (st.party == client) st.update_s = update_seconds(c, device, st);
  drop_unneeded_gradients(on);
  on = calibrated(on, c.sc);
  std::vector<PlanStageCosts> out;
  for (size_t k = 0; k < on.stages.size(); ++k) {
    if (on.stages[k].party != client) continue;
    PlanStageCosts costs;
    costs.stage = static_cast<int>(k);
    costs.fwd_s = on.stages[k].fwd_s;
    costs.bwd_s = on.stages[k].bwd_s;
    costs.update_s = on.stages[k].update_s;
    set_codec_seconds(costs, on);
    out.push_back(costs);
  }
  return out;
}

}  // namespace

PlanClientGroup client_group(const PlanContext& c, const Plan& plan, size_t i) {
  const Scenario& sc = c.sc;
  const ClientGroupSpec& g = sc.client_groups[i];
  const std::string at = "$.clients[" + std::to_string(i) + "]";
  PlanClientGroup pg;
  pg.name = g.name;
  pg.count = g.count;
  pg.device = plan.stages.front().device;
  if (g.has_bandwidth)
    pg.bandwidth_bit_per_s = draw(g.bandwidth_bit_per_s, g.count, sc.seed, g.name, 0,
                                  limits::kMinBandwidthBitPerS, limits::kMaxBandwidthBitPerS);
  if (g.has_latency)
    pg.latency_s = draw(g.latency_s, g.count, sc.seed, g.name, 1, 0, limits::kMaxLatencyS);
  if (!g.device.empty()) {
    const auto dev = c.devices.find(client_group_device_key(g));
    if (dev == c.devices.end())
      throw InputError(at + ".device", "no device profile \"" + g.device +
                                           "\" was loaded for the group (a Workspace loads it)");
    pg.device = dev->second.name;
    pg.stage_costs = client_stage_costs(c, plan, dev->second);
  }
  return pg;
}

void set_training(const Scenario& sc, const std::map<std::string, DeviceProfile>& devices,
                  Plan* plan) {
  plan->training = sc.training;
  plan->aggregate_every = sc.aggregate_every;
  if (!plan->synchronised()) return;
  if (!is_synchronous(plan->schedule))
    throw InputError("$.training", "training " + sc.training +
                                       " takes rounds between batches, which schedule " +
                                       schedule_name(plan->schedule) + " overlaps");
  const std::string& client = plan->stages.front().party;
  for (const PlanStage& st : plan->stages) {
    if (st.party == client) continue;
    const auto dev = devices.find(st.party);
    const double bw = dev == devices.end() ? 0 : dev->second.memory_bandwidth_Bps;
    plan->average_s_per_byte = bw > 0 ? 1 / bw : 0;
    return;
  }
  throw InputError("$.training", "training " + sc.training +
                                     " needs a server: a party besides the client's (stage 0's) "
                                     "in the partition");
}

}  // namespace splitsim::planner_internal
