// The link probe: its arithmetic on literal phases, and its protocol over
// the in-process loopback transport (two ranks in two threads).
#include "splitsim/exec/link_probe.h"

#include <gtest/gtest.h>

#include <thread>

#include "splitsim/exec/loopback_transport.h"

namespace splitsim {
namespace {

TEST(LinkProbe, PerByteCostsAreBusyTimeBeyondTheIdleBaseline) {
  LinkProbeResult r;
  r.idle = {0, {0.5, 0.01}, {0.5, 0.02}};  // server 2%, client 4% of a CPU when idle
  r.up = {100000000, {2.0, 0.44}, {2.0, 0.68}};
  r.down = {100000000, {2.0, 0.24}, {2.0, 0.48}};
  derive_link_costs(&r);
  EXPECT_NEAR(r.client_send_s_per_byte, (0.68 - 0.04 * 2) / 1e8, 1e-18);
  EXPECT_NEAR(r.server_recv_s_per_byte, (0.44 - 0.02 * 2) / 1e8, 1e-18);
  EXPECT_NEAR(r.server_send_s_per_byte, (0.24 - 0.02 * 2) / 1e8, 1e-18);
  EXPECT_NEAR(r.client_recv_s_per_byte, (0.48 - 0.04 * 2) / 1e8, 1e-18);
  EXPECT_NEAR(r.cpu_s_per_byte_sent, (6e-9 + 2e-9) / 2, 1e-18);
  EXPECT_NEAR(r.cpu_s_per_byte_received, (4e-9 + 4e-9) / 2, 1e-18);
  // Less busy than idle never gives a negative cost.
  r.up.client.busy_s = 0.01;
  derive_link_costs(&r);
  EXPECT_EQ(r.client_send_s_per_byte, 0.0);
}

TEST(LinkProbe, ReportRoundTripsThroughJson) {
  LinkProbeResult r;
  r.idle = {0, {0.5, 0.01}, {0.5, 0.02}};
  r.up = {1000, {1.0, 0.3}, {1.0, 0.2}};
  r.down = {1000, {1.0, 0.1}, {1.0, 0.4}};
  derive_link_costs(&r);
  const nlohmann::json j = link_probe_json(r);
  EXPECT_EQ(j["schema"], "splitsim.link_probe/1");
  const LinkProbeResult back = link_probe_from_json(j);
  EXPECT_DOUBLE_EQ(back.cpu_s_per_byte_sent, r.cpu_s_per_byte_sent);
  EXPECT_DOUBLE_EQ(back.cpu_s_per_byte_received, r.cpu_s_per_byte_received);
  EXPECT_EQ(back.down.bytes, 1000);
  EXPECT_THROW(link_probe_from_json(nlohmann::json{{"schema", "other"}}), std::runtime_error);
  EXPECT_THROW(link_probe_from_json(nlohmann::json::object()), std::runtime_error);
}

TEST(LinkProbe, BothRanksRunThePhasesOverATransport) {
  auto hub = std::make_shared<LoopbackHub>(2);
  LoopbackTransport server(hub, 0), client(hub, 1);
  LinkProbeOptions o;
  o.message_bytes = 4096;
  o.bytes_per_direction = 32 * 4096;  // 32 messages each way
  o.idle_s = 0.05;
  o.timeout = std::chrono::milliseconds(10000);
  LinkProbeResult from_client;
  std::thread t([&] { from_client = run_link_probe(client, o); });
  const LinkProbeResult r = run_link_probe(server, o);
  t.join();
  EXPECT_EQ(r.up.bytes, 32 * 4096);
  EXPECT_EQ(r.down.bytes, 32 * 4096);
  EXPECT_EQ(server.bytes_received(), client.bytes_sent());
  EXPECT_GE(client.bytes_sent(), 32 * 4096);
  // Rank 0 has both sides (the client's came over the transport).
  EXPECT_GE(r.idle.server.wall_s, 0.05);
  EXPECT_GE(r.idle.client.wall_s, 0.04);
  EXPECT_DOUBLE_EQ(r.up.client.wall_s, from_client.up.client.wall_s);
  EXPECT_GE(r.cpu_s_per_byte_sent, 0.0);
  EXPECT_EQ(from_client.cpu_s_per_byte_sent, 0.0);  // rank 1 derives nothing
}

}  // namespace
}  // namespace splitsim
