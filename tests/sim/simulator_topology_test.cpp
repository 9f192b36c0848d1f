// Many clients that share the server's access link, and clients that
// differ (groups with their own links, latencies and devices): against
// analytical cases, and the scenario and plan formats that carry them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "../explore/chain_model.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/planner.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "test_plans.h"

namespace splitsim {
namespace {

using testing::equal_stages;
using testing::group_costs;
using testing::set_wire_bytes;

constexpr double kB = 1e6;  // bytes each client sends per batch

// Client | server, sequential, no compute: each batch is one forward
// transfer of kB bytes (the gradient carries none). Client links of
// `client_Bps` bytes/s each.
Plan link_bound(int64_t clients, double client_Bps) {
  Plan p = equal_stages(2, 1, 0, 0, Schedule::kSequential, 12, 4, {"client", "server"});
  p.clients = clients;
  p.network.bandwidth_bit_per_s = 8 * client_Bps;
  set_wire_bytes(&p, 0, static_cast<int64_t>(kB), 0);
  return p;
}

Metrics simulate_in_worker(const Plan& p) { return simulate_metrics({p}, {}, 1).front(); }

TEST(SimulatorTopologyTest, ClientsSharingAServerLinkTakeNTimesTheirBytesOverItsRate) {
  const double R = 1e8;  // the server link, bytes/s; clients' links 100x faster
  for (int64_t n : {1, 4, 10}) {
    Plan p = link_bound(n, 1e10);
    p.network.server_bandwidth_bit_per_s = 8 * R;
    const Metrics m = simulate_in_worker(p);
    EXPECT_NEAR(m.time_per_batch_s, n * kB / R, 1e-9 * n * kB / R) << n << " clients";
    EXPECT_EQ(m.busiest_resource, "link clients->server") << n;
    EXPECT_NEAR(m.busiest_utilisation, 1.0, 1e-6) << n;
  }
}

TEST(SimulatorTopologyTest, WithoutAServerLinkEachClientIsLimitedByItsOwnLinkOnly) {
  for (int64_t n : {1, 10}) {
    const Metrics m = simulate_in_worker(link_bound(n, 1e8));
    EXPECT_NEAR(m.time_per_batch_s, kB / 1e8, 1e-12) << n << " clients";
  }
}

TEST(SimulatorTopologyTest, ALoneClientGetsTheSlowerOfItsLinkAndTheServers) {
  Plan p = link_bound(1, 1e7);
  p.network.server_bandwidth_bit_per_s = 8 * 1e8;
  EXPECT_NEAR(simulate_in_worker(p).time_per_batch_s, kB / 1e7, 1e-12);
  p.network.server_bandwidth_bit_per_s = 8 * 1e6;
  EXPECT_NEAR(simulate_in_worker(p).time_per_batch_s, kB / 1e6, 1e-12);
}

TEST(SimulatorTopologyTest, HeterogeneousClientsTheRoundWaitsForTheSlowest) {
  Plan p = link_bound(3, 1e9);
  PlanClientGroup fast{"fast", "", 2, {8e9, 8e9}, {}, {}};
  PlanClientGroup slow{"slow", "", 1, {8e7}, {}, {}};
  p.client_groups = {fast, slow};
  const Metrics m = simulate_in_worker(p);
  EXPECT_NEAR(m.time_per_batch_s, kB / 1e7, 1e-12);
  ASSERT_EQ(m.client_groups.size(), 2u);
  EXPECT_EQ(m.client_groups[0].name, "fast");
  EXPECT_EQ(m.client_groups[0].clients, 2);
  EXPECT_NEAR(m.client_groups[0].time_per_batch.median_s, kB / 1e9, 1e-12);
  EXPECT_NEAR(m.client_groups[1].time_per_batch.max_s, kB / 1e7, 1e-12);
  EXPECT_DOUBLE_EQ(m.client_groups[1].bytes_sent_per_batch, kB);
  // The fast clients run ahead: every round waits longer for the slow one.
  EXPECT_GT(m.round_wait_spread.max_s, m.round_wait_spread.min_s);
  EXPECT_GT(m.round_wait_spread.min_s, 0);
}

TEST(SimulatorTopologyTest, ServerLinkAndSlowClientsCombine) {
  // Two clients at 1e7 B/s, eight at 1e9, through a 1e8 B/s server link:
  // max-min sharing gives the slow ones their 1e7 and the fast ones the rest
  // ((1e8 - 2e7) / 8 = 1e7 each): every client then takes kB / 1e7.
  Plan p = link_bound(10, 1e9);
  p.network.server_bandwidth_bit_per_s = 8e8;
  p.client_groups = {{"slow", "", 2, {8e7, 8e7}, {}, {}},
                     {"fast", "", 8, std::vector<double>(8, 8e9), {}, {}}};
  const Metrics m = simulate_in_worker(p);
  EXPECT_NEAR(m.time_per_batch_s, kB / 1e7, 1e-9);
  EXPECT_NEAR(m.client_groups[1].time_per_batch.median_s, kB / 1e7, 1e-9);
}

TEST(SimulatorTopologyTest, AClientsLatencyAndTheServersAddToItsMessages) {
  // The client's work only (3 ms a batch; the server's is free, so the
  // clients do not wait for each other), and two messages a batch.
  Plan p = equal_stages(2, 1, 1e-3, 2e-3, Schedule::kSequential, 12, 4, {"client", "server"});
  p.stages[1].fwd_s = p.stages[1].bwd_s = {0.0};
  p.clients = 2;
  p.network.server_latency_s = 1e-3;
  p.client_groups = {{"near", "", 1, {}, {0.0}, {}}, {"far", "", 1, {}, {10e-3}, {}}};
  const Metrics m = simulate_in_worker(p);
  EXPECT_NEAR(m.client_groups[0].time_per_batch.median_s, 3e-3 + 2 * 1e-3, 1e-9);
  EXPECT_NEAR(m.client_groups[1].time_per_batch.median_s, 3e-3 + 2 * 11e-3, 1e-9);
  EXPECT_NEAR(m.time_per_batch_s, 3e-3 + 2 * 11e-3, 1e-9);
}

TEST(SimulatorTopologyTest, AGroupComputesAtItsOwnDevicesCosts) {
  Plan p = equal_stages(2, 1, 1e-3, 2e-3, Schedule::kSequential, 12, 4, {"client", "server"});
  p.stages[1].fwd_s = p.stages[1].bwd_s = {0.0};  // the clients never wait for the server
  p.clients = 2;
  PlanClientGroup slow{"slow", "phone", 1, {}, {}, {group_costs(0, {10e-3}, {20e-3}, 5e-3)}};
  p.client_groups = {{"alike", "", 1, {}, {}, {}}, slow};
  const Metrics m = simulate_in_worker(p);
  EXPECT_NEAR(m.client_groups[0].busy_s_per_batch, 1e-3 + 2e-3, 1e-12);
  EXPECT_NEAR(m.client_groups[1].busy_s_per_batch, 10e-3 + 20e-3 + 5e-3, 1e-12);
  EXPECT_NEAR(m.time_per_batch_s, 10e-3 + 20e-3 + 5e-3, 1e-9);
}

TEST(SimulatorTopologyTest, AGroupsCodecWorkIsPricedOnItsOwnDevice) {
  Plan p = equal_stages(2, 1, 1e-3, 2e-3, Schedule::kSequential, 12, 4, {"client", "server"});
  p.stages[1].fwd_s = p.stages[1].bwd_s = {0.0};
  p.boundaries[0].forward.encode_s = {1e-3};  // on the plan's client device
  p.clients = 2;
  PlanClientGroup slow{"slow", "phone", 1, {}, {}, {group_costs(0, {10e-3}, {20e-3}, 5e-3)}};
  slow.stage_costs[0].fwd_encode_s = {4e-3};
  slow.stage_costs[0].bwd_decode_s = {3e-3};
  p.client_groups = {{"alike", "", 1, {}, {}, {}}, slow};
  const Metrics m = simulate_in_worker(p);
  EXPECT_NEAR(m.client_groups[0].busy_s_per_batch, 1e-3 + 1e-3 + 2e-3, 1e-12);
  EXPECT_NEAR(m.client_groups[1].busy_s_per_batch, 10e-3 + 4e-3 + 3e-3 + 20e-3 + 5e-3, 1e-12);
}

TEST(SimulatorTopologyTest, GroupsMustHoldThePlansClients) {
  Plan p = link_bound(3, 1e9);
  p.client_groups = {{"a", "", 2, {}, {}, {}}};
  EXPECT_THROW(simulate(p), InputError);
  p.client_groups = {{"a", "", 3, {8e9}, {}, {}}};
  EXPECT_THROW(simulate(p), std::invalid_argument);
}

// --- the scenario format and the planner ---

nlohmann::json chain_scenario_json() {
  return nlohmann::json::parse(R"({
    "schema": "splitsim.scenario/1", "name": "chain",
    "model": {"name": "resnet20"}, "batch_size": 8,
    "partition": [{"party": "client", "from": "u0", "to": "u4"},
                  {"party": "server", "from": "u5", "to": "u6"}],
    "devices": {"client": "c", "server": "s"},
    "network": {"bandwidth_bit_per_s": 1e9, "server_bandwidth_bit_per_s": 4e9,
                "server_latency_s": 0.002},
    "seed": 7
  })");
}

Plan plan_of(const nlohmann::json& j) {
  Scenario s = parse_scenario(j);
  std::map<std::string, DeviceProfile> devs = devices();
  for (const ClientGroupSpec& g : s.client_groups)
    if (!g.device.empty()) devs[client_group_device_key(g)] = device(g.device, 1e6);
  s.schedule = Schedule::kGpipe;
  return make_plan(s, chain(), devs);
}

// A plan file's broken group is refused at its path (a scenario's:
// BadGroupsAreRefusedNamingTheirPath below).
TEST(ClientGroupsFormatTest, BrokenGroupsOfAPlanFileNameTheirPath) {
  nlohmann::json s = chain_scenario_json();
  s["clients"] = nlohmann::json::parse(R"([
    {"name": "phones", "count": 3, "device": "phone", "latency_s": [0.01, 0.02, 0.03]},
    {"name": "fast", "count": 2, "bandwidth_bit_per_s": 1e9}
  ])");
  const nlohmann::json j = plan_of(s);
  ASSERT_EQ(j.at("client_groups").size(), 2u);
  ASSERT_EQ(j.at("client_groups")[0].at("stage_costs").size(), 1u);
  ASSERT_NO_THROW(parse_plan(j));
  struct Broken {
    const char* what;
    std::function<void(nlohmann::json&)> change;
    std::string where, says;
  };
  const std::vector<Broken> cases = {
      {"no clients", [](auto& g) { g[0]["count"] = 0; }, "[0].count", "from 1 to"},
      {"no name", [](auto& g) { g[1].erase("name"); }, "[1].name", "plan format"},
      {"device not text", [](auto& g) { g[0]["device"] = 5; }, "[0].device", "got 5"},
      {"short latency list", [](auto& g) { g[0]["latency_s"].erase(0); }, "[0].latency_s",
       "one per client (3)"},
      {"unknown key", [](auto& g) { g[1]["speed"] = 2; }, "[1].speed", ""},
  };
  for (const Broken& c : cases) {
    nlohmann::json broken = j;
    c.change(broken["client_groups"]);
    const std::string where = "$.client_groups" + c.where;
    try {
      parse_plan(broken);
      ADD_FAILURE() << c.what << ": accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), where) << c.what;
      EXPECT_NE(e.message().find(c.says), std::string::npos) << c.what << ": " << e.message();
    }
  }
}

TEST(ClientGroupsFormatTest, GroupsDrawTheirLinksWithTheSeedAndPlanTheirDevices) {
  nlohmann::json j = chain_scenario_json();
  j["clients"] = nlohmann::json::parse(R"([
    {"name": "phones", "count": 40, "device": "phone",
     "bandwidth_bit_per_s": {"distribution": "lognormal", "median": 5e7, "sigma": 0.5},
     "latency_s": {"distribution": "uniform", "min": 0.01, "max": 0.03}},
    {"count": 2, "bandwidth_bit_per_s": 1e9},
    {"name": "listed", "count": 3, "latency_s": [0.001, 0.002, 0.003]}
  ])");
  const Plan p = plan_of(j);
  EXPECT_EQ(p.clients, 45);
  EXPECT_EQ(p.client_groups[2].latency_s, (std::vector<double>{0.001, 0.002, 0.003}));
  EXPECT_DOUBLE_EQ(p.network.server_bandwidth_bit_per_s, 4e9);
  ASSERT_EQ(p.client_groups.size(), 3u);
  const PlanClientGroup& phones = p.client_groups[0];
  EXPECT_EQ(phones.name, "phones");
  EXPECT_EQ(p.client_groups[1].name, "group1");
  ASSERT_EQ(phones.bandwidth_bit_per_s.size(), 40u);
  ASSERT_EQ(phones.latency_s.size(), 40u);
  for (double l : phones.latency_s) {
    EXPECT_GE(l, 0.01);
    EXPECT_LE(l, 0.03);
  }
  std::vector<double> bw = phones.bandwidth_bit_per_s;
  std::sort(bw.begin(), bw.end());
  EXPECT_GT(bw.back() / bw.front(), 1.5);  // drawn, not one value
  EXPECT_GT(bw[20], 5e7 / 1.5);            // about the median
  EXPECT_LT(bw[20], 5e7 * 1.5);
  EXPECT_EQ(p.client_groups[1].bandwidth_bit_per_s, std::vector<double>(2, 1e9));
  EXPECT_TRUE(p.client_groups[1].latency_s.empty());
  // The phones' device (1e6 FLOP/s against the client's 2e6) on stage 0 only.
  ASSERT_EQ(phones.stage_costs.size(), 1u);
  EXPECT_EQ(phones.stage_costs[0].stage, 0);
  EXPECT_NEAR(phones.stage_costs[0].fwd_s[0] / p.stages[0].fwd_s[0], 2.0, 1e-9);
  EXPECT_EQ(phones.device, "phone");
  // The same seed draws the same; another seed other values.
  EXPECT_EQ(plan_of(j).client_groups[0].bandwidth_bit_per_s, phones.bandwidth_bit_per_s);
  nlohmann::json moved = j;  // a group before it: its draws stay
  moved["clients"].insert(moved["clients"].begin(),
                          nlohmann::json::parse(R"({"name": "new", "count": 1})"));
  EXPECT_EQ(plan_of(moved).client_groups[1].bandwidth_bit_per_s, phones.bandwidth_bit_per_s);
  j["seed"] = 8;
  EXPECT_NE(plan_of(j).client_groups[0].bandwidth_bit_per_s, phones.bandwidth_bit_per_s);
  // A client's figures, as the simulator reads them.
  EXPECT_DOUBLE_EQ(p.client_up_bit_per_s(41), 1e9);
  EXPECT_DOUBLE_EQ(p.client_latency_s(41), 0.002);
  EXPECT_DOUBLE_EQ(p.client_latency_s(0), phones.latency_s[0] + 0.002);
}

TEST(ClientGroupsFormatTest, APlanWithGroupsRoundTripsThroughItsFile) {
  nlohmann::json j = chain_scenario_json();
  j["clients"] = nlohmann::json::parse(
      R"([{"name": "a", "count": 3, "device": "phone", "latency_s": 0.01}, {"name": "b", "count": 1}])");
  const Plan p = plan_of(j);
  const nlohmann::json once = p;
  EXPECT_EQ(nlohmann::json(parse_plan(once)).dump(), once.dump());
  EXPECT_EQ(simulate_in_worker(p).client_groups.size(), 2u);
}

std::string where(const nlohmann::json& j) {
  try {
    plan_of(j);
  } catch (const InputError& e) {
    return e.where();
  }
  return "(none)";
}

TEST(ClientGroupsFormatTest, BadGroupsAreRefusedNamingTheirPath) {
  nlohmann::json j = chain_scenario_json();
  j["clients"] = nlohmann::json::array();
  EXPECT_EQ(where(j), "$.clients");
  j["clients"] = nlohmann::json::parse(R"([{"name": "a"}])");
  EXPECT_EQ(where(j), "$.clients[0]");
  j["clients"] = nlohmann::json::parse(R"([{"count": 2, "speed": 3}])");
  EXPECT_EQ(where(j), "$.clients[0].speed");
  j["clients"] = nlohmann::json::parse(R"([{"count": 2}, {"count": 1023}])");
  EXPECT_EQ(where(j), "$.clients[1].count");
  j["clients"] = nlohmann::json::parse(R"([{"name": "x", "count": 1}, {"name": "x", "count": 1}])");
  EXPECT_EQ(where(j), "$.clients[1].name");
  j["clients"] = nlohmann::json::parse(
      R"([{"count": 2, "bandwidth_bit_per_s": {"distribution": "uniform", "min": 5e7, "max": 1e7}}])");
  EXPECT_EQ(where(j), "$.clients[0].bandwidth_bit_per_s.max");
  j["clients"] =
      nlohmann::json::parse(R"([{"count": 2, "latency_s": {"distribution": "pareto", "min": 0}}])");
  EXPECT_EQ(where(j), "$.clients[0].latency_s.distribution");
  j["clients"] = nlohmann::json::parse(R"([{"count": 2, "bandwidth_bit_per_s": 0}])");
  EXPECT_EQ(where(j), "$.clients[0].bandwidth_bit_per_s");
  j["clients"] = nlohmann::json::parse(R"([{"count": 2, "latency_s": [0.1]}])");
  EXPECT_EQ(where(j), "$.clients[0].latency_s");
  j["clients"] = nlohmann::json::parse(R"([{"count": 2, "latency_s": [0.1, -1]}])");
  EXPECT_EQ(where(j), "$.clients[0].latency_s[1]");
  j["clients"] = 3;
  j["network"]["server_bandwidth_bit_per_s"] = -1;
  EXPECT_EQ(where(j), "$.network.server_bandwidth_bit_per_s");
}

}  // namespace
}  // namespace splitsim
