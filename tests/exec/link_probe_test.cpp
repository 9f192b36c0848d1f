// The link probe: its arithmetic on literal phases, and its protocol over
// the in-process loopback transport (two ranks in two threads).
#include "splitsim/exec/link_probe.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>
#include <utility>

#include "splitsim/exec/loopback_transport.h"

namespace splitsim {
namespace {

TEST(LinkProbe, PerByteCostsAreComputeLostAgainstTheIdleRate) {
  LinkProbeResult r;
  // Idle: the server's loop does 1000 products/s, the client's 500/s, over
  // 1 s before and 0.5 s after the traffic; 2% and 4% of a CPU busy.
  r.idle = {0, {1.0, 0.02, 1000}, {1.0, 0.04, 500}};
  r.idle_after = {0, {0.5, 0.01, 500}, {0.5, 0.02, 250}};
  // 2 s of traffic each way: each side's loop got less done.
  r.up = {100000000, {2.0, 0.44, 1500}, {2.0, 0.68, 800}};
  r.down = {100000000, {2.0, 0.24, 1800}, {2.0, 0.48, 700}};
  derive_link_costs(&r);
  EXPECT_NEAR(r.client_send_s_per_byte, (2.0 - 800 / 500.0) / 1e8, 1e-18);
  EXPECT_NEAR(r.server_recv_s_per_byte, (2.0 - 1500 / 1000.0) / 1e8, 1e-18);
  EXPECT_NEAR(r.server_send_s_per_byte, (2.0 - 1800 / 1000.0) / 1e8, 1e-18);
  EXPECT_NEAR(r.client_recv_s_per_byte, (2.0 - 700 / 500.0) / 1e8, 1e-18);
  EXPECT_NEAR(r.cpu_s_per_byte_sent, (4e-9 + 2e-9) / 2, 1e-18);
  EXPECT_NEAR(r.cpu_s_per_byte_received, (5e-9 + 6e-9) / 2, 1e-18);
  // CPU time beyond the idle rate, for comparison.
  EXPECT_NEAR(r.busy_s_per_byte_sent, ((0.68 - 0.04 * 2) + (0.24 - 0.02 * 2)) / 2 / 1e8, 1e-18);
  EXPECT_NEAR(r.busy_s_per_byte_received, ((0.44 - 0.02 * 2) + (0.48 - 0.04 * 2)) / 2 / 1e8,
              1e-18);
  // 100 small messages of 1000 B each way. The server receiving: 0.5 s of
  // wall in which its loop did 300 products (0.3 s at the idle rate), so
  // 0.2 s lost, less 1e5 B at 5e-9 s/B: 1.95 ms per message.
  r.small_messages = 100;
  r.small_up = {100000, {0.5, 0.1, 300}, {0.5, 0.1, 200}};
  r.small_down = {100000, {0.5, 0.1, 450}, {0.5, 0.1, 100}};
  derive_link_costs(&r);
  EXPECT_NEAR(r.server_recv_s_per_message, (0.2 - 1e5 * 5e-9) / 100, 1e-15);
  EXPECT_NEAR(r.client_send_s_per_message, (0.1 - 1e5 * 4e-9) / 100, 1e-15);
  EXPECT_NEAR(r.server_send_s_per_message, (0.05 - 1e5 * 2e-9) / 100, 1e-15);
  EXPECT_NEAR(r.client_recv_s_per_message, (0.3 - 1e5 * 6e-9) / 100, 1e-15);
  EXPECT_NEAR(r.cpu_s_per_message_sent,
              (r.client_send_s_per_message + r.server_send_s_per_message) / 2, 1e-15);
  EXPECT_NEAR(r.cpu_s_per_message_received,
              (r.server_recv_s_per_message + r.client_recv_s_per_message) / 2, 1e-15);
  // Less lost than the bytes' cost: 0, not negative.
  r.small_down.server.work = 500;
  derive_link_costs(&r);
  EXPECT_EQ(r.server_send_s_per_message, 0.0);
  // More work than at the idle rate never gives a negative cost.
  r.up.client.work = 1200;
  derive_link_costs(&r);
  EXPECT_EQ(r.client_send_s_per_byte, 0.0);
  // No baseline (the loop never ran): no cost rather than a division by 0.
  r.idle.server.work = r.idle_after.server.work = 0;
  derive_link_costs(&r);
  EXPECT_EQ(r.server_recv_s_per_byte, 0.0);
}

TEST(LinkProbe, GoodputIsTheLargeMessagesBytesOverTheLongerEndsWall) {
  LinkProbeResult r;
  r.up = {36000000, {1.0, 0.1, 100}, {1.2, 0.1, 100}};  // the client's wall 0.2 s longer
  r.down = {36000000, {0.9, 0.1, 100}, {0.8, 0.1, 100}};
  derive_link_costs(&r);
  EXPECT_DOUBLE_EQ(r.goodput_up_Bps, 36e6 / 1.2);
  EXPECT_DOUBLE_EQ(r.goodput_down_Bps, 36e6 / 0.9);
  const nlohmann::json j = link_probe_json(r);
  EXPECT_DOUBLE_EQ(j.at("goodput_Bps").at("client_to_server").get<double>(), 36e6 / 1.2);
  // Read back, the goodput comes from the phases again.
  EXPECT_DOUBLE_EQ(link_probe_from_json(j).goodput_down_Bps, 36e6 / 0.9);
  // The share of a 300 Mbit/s rate (37.5 MB/s): the slower way's, 30 of 37.5 MB/s.
  EXPECT_DOUBLE_EQ(goodput_share(r, 300e6), 30e6 / 37.5e6);
  // Never above the rate (a bucket's burst in the phase), 1 when unmeasured.
  EXPECT_EQ(goodput_share(r, 100e6), 1.0);
  r.up = {};
  derive_link_costs(&r);
  EXPECT_EQ(r.goodput_up_Bps, 0.0);
  EXPECT_EQ(goodput_share(r, 300e6), 1.0);
}

TEST(LinkProbe, ReportRoundTripsThroughJson) {
  LinkProbeResult r;
  r.idle = {0, {0.5, 0.01, 400}, {0.5, 0.02, 410}};
  r.idle_after = {0, {0.25, 0.01, 200}, {0.25, 0.01, 205}};
  r.up = {1000, {1.0, 0.3, 700}, {1.0, 0.2, 650}};
  r.down = {1000, {1.0, 0.1, 720}, {1.0, 0.4, 600}};
  r.small_messages = 10;
  r.small_up = {100, {0.1, 0.03, 60}, {0.1, 0.02, 70}};
  r.small_down = {100, {0.1, 0.01, 75}, {0.1, 0.04, 50}};
  // Single messages on a wire of 1e7 B/s with 100 us a message.
  for (int64_t b : {1024, 4096, 16384, 65536}) {
    r.single_up.push_back({b, 1e-4 + static_cast<double>(b) / 1e7});
    r.single_down.push_back({b, 1e-4 + static_cast<double>(b) / 1e7});
  }
  r.pair_up.push_back({4096, 1e-4 + 4104 / 1e7, 8});
  r.pair_down.push_back({8192, 1e-4 + 8200 / 1e7, 8});
  r.clock_offset_s = 5e-5;
  derive_link_costs(&r);
  EXPECT_NEAR(r.link.rate_Bps, 1e7, 1.0);
  const nlohmann::json j = link_probe_json(r);
  EXPECT_EQ(j["schema"], "splitsim.link_probe/5");
  EXPECT_NEAR(j["link"]["latency_s"].get<double>(), 1e-4, 1e-9);
  const LinkProbeResult back = link_probe_from_json(j);
  EXPECT_DOUBLE_EQ(back.cpu_s_per_byte_sent, r.cpu_s_per_byte_sent);
  EXPECT_DOUBLE_EQ(back.cpu_s_per_byte_received, r.cpu_s_per_byte_received);
  EXPECT_GT(back.cpu_s_per_byte_received, 0.0);
  EXPECT_EQ(back.down.bytes, 1000);
  EXPECT_DOUBLE_EQ(back.idle_after.client.work, 205);
  EXPECT_EQ(back.small_messages, 10);
  EXPECT_DOUBLE_EQ(back.small_down.client.work, 50);
  EXPECT_DOUBLE_EQ(back.cpu_s_per_message_received, r.cpu_s_per_message_received);
  EXPECT_GT(back.cpu_s_per_message_received, 0.0);
  ASSERT_EQ(back.single_down.size(), 4u);
  EXPECT_EQ(back.single_down[3].bytes, 65536);
  EXPECT_EQ(back.single_down[3].tail_bytes, 0);
  ASSERT_EQ(back.pair_up.size(), 1u);
  ASSERT_EQ(back.pair_down.size(), 1u);
  EXPECT_EQ(back.pair_down[0].bytes, 8192);
  EXPECT_EQ(back.pair_down[0].tail_bytes, 8);
  EXPECT_DOUBLE_EQ(back.pair_up[0].seconds, r.pair_up[0].seconds);
  EXPECT_DOUBLE_EQ(back.clock_offset_s, 5e-5);
  EXPECT_DOUBLE_EQ(back.link.rate_Bps, r.link.rate_Bps);  // fitted again from the samples
  EXPECT_THROW(link_probe_from_json(nlohmann::json{{"schema", "other"}}), std::runtime_error);
  EXPECT_THROW(link_probe_from_json(nlohmann::json::object()), std::runtime_error);
  nlohmann::json old = j;  // a report of the first schema, without the loop's work
  old["schema"] = "splitsim.link_probe/1";
  EXPECT_THROW(link_probe_from_json(old), std::runtime_error);
  old["schema"] = "splitsim.link_probe/2";  // without the small messages
  EXPECT_THROW(link_probe_from_json(old), std::runtime_error);
  old["schema"] = "splitsim.link_probe/3";  // without the single messages
  EXPECT_THROW(link_probe_from_json(old), std::runtime_error);
}

// A probe small enough for a test: `messages` of 4 KiB each way, 20 small
// ones of 100 B, idle phases of `idle_s`.
LinkProbeOptions small_probe(int64_t messages, double idle_s) {
  LinkProbeOptions o;
  o.message_bytes = 4096;
  o.bytes_per_direction = messages * 4096;
  o.idle_s = idle_s;
  o.small_messages = 20;
  o.small_message_bytes = 100;
  o.single_max_bytes = 2048;  // single messages of 1024, 1218, 1448, 1722, 2048 B
  o.single_repeats = 3;
  o.single_gap_s = 0.001;
  o.timeout = std::chrono::milliseconds(10000);
  return o;
}

// Runs the probe on both ranks of a loopback transport; the server's result
// first, then the client's.
std::pair<LinkProbeResult, LinkProbeResult> run_both(const LinkProbeOptions& o,
                                                     LoopbackTransport& server,
                                                     LoopbackTransport& client) {
  LinkProbeResult from_client;
  std::thread t([&] { from_client = run_link_probe(client, o); });
  const LinkProbeResult r = run_link_probe(server, o);
  t.join();
  return {r, from_client};
}

TEST(LinkProbe, BothRanksRunThePhasesOverATransport) {
  auto hub = std::make_shared<LoopbackHub>(2);
  LoopbackTransport server(hub, 0), client(hub, 1);
  const auto t0 = std::chrono::steady_clock::now();
  const auto [r, from_client] = run_both(small_probe(32, 0.05), server, client);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.up.bytes, 32 * 4096);
  EXPECT_EQ(r.down.bytes, 32 * 4096);
  EXPECT_EQ(r.small_messages, 20);
  EXPECT_EQ(r.small_up.bytes, 20 * 100);
  EXPECT_EQ(r.small_down.bytes, 20 * 100);
  // Single messages: a median per size each way, posted to completed.
  ASSERT_EQ(r.single_up.size(), 5u);
  ASSERT_EQ(r.single_down.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(r.single_up[i].bytes, std::llround(1024 * std::pow(2.0, i / 4.0)));
    EXPECT_GT(r.single_up[i].seconds, 0.0);
    EXPECT_GT(r.single_down[i].seconds, 0.0);
  }
  // The offset is how far apart the two ranks took their time origins: on
  // one clock, less than the whole run (14 ms on a loaded machine, so no
  // tighter bound). The single messages' times, positive both ways above,
  // are what pin it: an offset off by more than a message's time would make
  // one way's negative.
  EXPECT_LT(std::fabs(r.clock_offset_s), wall_s);
  EXPECT_TRUE(from_client.single_up.empty());  // the client returns its own side only
  EXPECT_EQ(server.bytes_received(), client.bytes_sent());
  EXPECT_GE(client.bytes_sent(), 32 * 4096 + 20 * 100);
  // Rank 0 has both sides (the client's came over the transport).
  EXPECT_GE(r.idle.server.wall_s, 0.05);
  EXPECT_GE(r.idle.client.wall_s, 0.04);
  EXPECT_GE(r.idle_after.server.wall_s, 0.025);
  // The compute loop ran beside the idle phases on both sides (the traffic
  // here may end before one product does).
  for (const LinkProbePhase* ph : {&r.idle, &r.idle_after}) {
    EXPECT_GT(ph->server.work, 0.0);
    EXPECT_GT(ph->client.work, 0.0);
  }
  EXPECT_DOUBLE_EQ(r.up.client.wall_s, from_client.up.client.wall_s);
  EXPECT_GE(r.cpu_s_per_byte_sent, 0.0);
  EXPECT_GE(r.cpu_s_per_message_received, 0.0);
  EXPECT_EQ(from_client.cpu_s_per_byte_sent, 0.0);  // rank 1 derives nothing
}

TEST(LinkProbe, AGapPausesTheSenderAfterEachLargeMessageOnly) {
  auto hub = std::make_shared<LoopbackHub>(2);
  LoopbackTransport server(hub, 0), client(hub, 1);
  LinkProbeOptions o = small_probe(8, 0.02);
  o.gap_s = 0.02;
  const LinkProbeResult r = run_both(o, server, client).first;
  // Each way: 8 pauses of 20 ms on the sender, and the receiver waits out
  // at least the 7 between its messages (its phase may start a little
  // after the sender's: the barrier releases the ranks one after the other).
  EXPECT_GE(r.up.client.wall_s, 8 * 0.02);
  EXPECT_GE(r.down.server.wall_s, 8 * 0.02);
  EXPECT_GE(r.up.server.wall_s, 7 * 0.02);
  EXPECT_GE(r.down.client.wall_s, 7 * 0.02);
  // The small messages go back to back: 20 pauses would take 0.4 s.
  EXPECT_LT(r.small_up.server.wall_s, 20 * 0.02);
  EXPECT_LT(r.small_down.client.wall_s, 20 * 0.02);
}

}  // namespace
}  // namespace splitsim
