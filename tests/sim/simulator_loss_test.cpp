// A lossy link (network.loss_rate): each lost segment costs the link's
// recovery time (network.loss_recovery_s, or tcp_loss.h's default) and TCP's
// rate under loss (the formula of Mathis et al.) over the path's round trip
// bounds each transfer, against hand-computed figures; the scenario refuses
// a loss rate or recovery time it cannot use.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/scenario.h"
#include "splitsim/costmodel/tcp_loss.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "test_plans.h"

namespace splitsim {
namespace {

using testing::equal_stages;
using testing::set_wire_bytes;

TEST(TcpLossTest, MathisRateByHand) {
  // 1448 B / 30 ms x sqrt(3/2) / sqrt(0.01) = 48,266.7 x 1.22474 x 10
  // = 591,143.5 B/s (4.7 Mbit/s).
  EXPECT_NEAR(tcp_rate_under_loss_Bps(0.03, 0.01), 591143.5, 0.1);
  // Four times the loss, half the rate; twice the round trip, half again.
  EXPECT_DOUBLE_EQ(tcp_rate_under_loss_Bps(0.03, 0.04), tcp_rate_under_loss_Bps(0.03, 0.01) / 2);
  EXPECT_DOUBLE_EQ(tcp_rate_under_loss_Bps(0.06, 0.01), tcp_rate_under_loss_Bps(0.03, 0.01) / 2);
}

TEST(TcpLossTest, RecoveryTimeByHand) {
  // The default: two round trips plus, for twice the loss rate's share,
  // 200 ms: 2 x 2 ms + 2 x 0.01 x 0.2 s = 8 ms.
  EXPECT_NEAR(tcp_loss_recovery_s(2e-3, 0.01), 8e-3, 1e-15);
  // 1e6 B are ceil(1e6 / 1448) = 691 segments; at 1% loss and 8 ms each
  // they lose 691 x 0.01 x 8 ms = 55.28 ms.
  EXPECT_NEAR(tcp_loss_delay_s(1e6, 0.01, 8e-3), 55.28e-3, 1e-12);
  EXPECT_EQ(tcp_loss_delay_s(0, 0.01, 8e-3), 0);
  // Measured: 1 MB/s under 1% loss against 2 MB/s without took 0.5 us more
  // per byte, 0.724 ms per segment, 72.4 ms per lost one.
  EXPECT_NEAR(tcp_loss_recovery_from_goodput(1e6, 2e6, 0.01), 72.4e-3, 1e-12);
  // It inverts the delay: a long transfer at the lossy goodput takes the
  // loss-free time plus the delay (to the rounding of its last segment).
  const double bytes = 1448.0 * 10000, c = tcp_loss_recovery_from_goodput(1e6, 2e6, 0.01);
  EXPECT_NEAR(bytes / 2e6 + tcp_loss_delay_s(bytes, 0.01, c), bytes / 1e6, 1e-9);
  // A lossy transfer no slower than the loss-free one lost nothing.
  EXPECT_EQ(tcp_loss_recovery_from_goodput(2e6, 1.9e6, 0.01), 0);
}

// client | server, GPipe, 2 micro-batches of 1e6 B (691 segments) up; the
// client's forward 10 ms per micro-batch; a link of 1e8 B/s and 1 ms
// latency (2 ms round trip).
Plan streaming(double loss, double recovery_s = 0) {
  Plan p = equal_stages(2, 2, 0, 0, Schedule::kGpipe, 6, 2, {"client", "server"});
  p.stages[0].fwd_s.assign(2, 10e-3);
  p.network.bandwidth_bit_per_s = 8e8;
  p.network.latency_s = 1e-3;
  p.network.loss_rate = loss;
  p.network.loss_recovery_s = recovery_s;
  set_wire_bytes(&p, 0, 1000000, 0);
  return p;
}

// The loss rate at which TCP's rate over a 2 ms round trip is `Bps`.
double loss_for(double Bps) {
  const double at_one = tcp_rate_under_loss_Bps(2e-3, 1.0);
  return (at_one / Bps) * (at_one / Bps);
}

double first_send_s(const Timeline& t) {
  for (const TimelineEvent& e : t.events)
    if (e.kind == EventKind::kSend && e.batch == 0 && e.microbatch == 0) return e.end_s - e.start_s;
  ADD_FAILURE() << "no send";
  return -1;
}

double time_per_batch(const Plan& p) {
  return compute_metrics(simulate(p), p, p.warmup).time_per_batch_s;
}

TEST(SimulatorLossTest, EachLostSegmentCostsTheMeasuredRecovery) {
  // 0.01% loss, 50 ms a lost segment: 10 ms at the link's rate + 691 x 1e-4
  // x 50 ms = 3.455 ms, then the latency: 14.455 ms. (TCP's rate under that
  // loss over 2 ms, 8.87e7 B/s, would take 11.28 ms: not the bound here.)
  const Plan lossy = streaming(1e-4, 50e-3);
  ASSERT_LT(1e6 / tcp_rate_under_loss_Bps(2e-3, 1e-4), 10e-3 + 3.455e-3);
  EXPECT_NEAR(first_send_s(simulate(lossy)), 14.455e-3, 1e-9);
  // Twice the recovery time, twice the delay.
  EXPECT_NEAR(first_send_s(simulate(streaming(1e-4, 100e-3))), 17.91e-3, 1e-9);
  EXPECT_GT(time_per_batch(lossy), time_per_batch(streaming(0)));
}

TEST(SimulatorLossTest, TheRateUnderLossStillBoundsATransfer) {
  // A negligible recovery time: TCP's rate under loss (half the link's)
  // paces the transfer as a link of that rate would: 1e6 B at 5e7 B/s, then
  // the latency: 21 ms.
  const Plan lossy = streaming(loss_for(5e7), 1e-9);
  ASSERT_GT(lossy.network.loss_rate, 0);
  ASSERT_LT(lossy.network.loss_rate, 0.2);
  EXPECT_NEAR(first_send_s(simulate(lossy)), 21e-3, 1e-9);
  Plan slower = streaming(0);
  slower.network.bandwidth_bit_per_s = 4e8;
  EXPECT_NEAR(time_per_batch(lossy), time_per_batch(slower), 1e-9);
}

TEST(SimulatorLossTest, WithoutAMeasuredRecoveryTheDefaultApplies) {
  // 10% loss over a 2 ms round trip: 2 x 2 ms + 2 x 0.1 x 0.2 s = 44 ms a
  // lost segment: 10 ms + 691 x 0.1 x 44 ms = 3.0404 s, then 1 ms.
  EXPECT_NEAR(first_send_s(simulate(streaming(0.1))), 3.0514, 1e-9);
  // The same as that recovery time given.
  EXPECT_NEAR(time_per_batch(streaming(0.1)), time_per_batch(streaming(0.1, 44e-3)), 1e-9);
}

TEST(SimulatorLossTest, WithoutLossTheRecoveryTimeChangesNothing) {
  EXPECT_NEAR(first_send_s(simulate(streaming(0, 1.0))), 11e-3, 1e-9);
  EXPECT_NEAR(time_per_batch(streaming(0, 1.0)), time_per_batch(streaming(0)), 1e-12);
}

TEST(SimulatorLossTest, TheScenarioRefusesALossItCannotUse) {
  auto network = [](const std::string& fields) {
    return nlohmann::json::parse(
        "{\"schema\": \"splitsim.scenario/1\", \"name\": \"lossy\", \"batch_size\": 8, \"model\": "
        "{\"name\": \"resnet20\"}, "
        "\"partition\": [{\"party\": \"client\", \"from\": \"conv1\", \"to\": \"layer1.2\"}, "
        "{\"party\": \"server\", \"from\": \"layer2.0\", \"to\": \"head\"}], "
        "\"devices\": {\"client\": \"xeon_40core\", \"server\": \"v100\"}, \"network\": {" +
        fields + "}}");
  };
  EXPECT_DOUBLE_EQ(
      parse_scenario(network("\"latency_s\": 0.02, \"loss_rate\": 0.01")).network.loss_rate, 0.01);
  EXPECT_DOUBLE_EQ(parse_scenario(network("\"latency_s\": 0.02, \"loss_rate\": 0.01, "
                                          "\"loss_recovery_s\": 0.008"))
                       .network.loss_recovery_s,
                   0.008);
  for (const std::string& bad :
       {std::string("\"loss_rate\": 0.01"), std::string("\"latency_s\": 0.02, \"loss_rate\": 0.5"),
        std::string("\"latency_s\": 0.02, \"loss_rate\": -0.1")}) {
    try {
      parse_scenario(network(bad));
      ADD_FAILURE() << bad << ": accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "$.network.loss_rate") << bad;
    }
  }
  for (const std::string& bad :
       {std::string("\"loss_recovery_s\": -0.001"), std::string("\"loss_recovery_s\": 61")}) {
    try {
      parse_scenario(network("\"latency_s\": 0.02, \"loss_rate\": 0.01, " + bad));
      ADD_FAILURE() << bad << ": accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "$.network.loss_recovery_s") << bad;
    }
  }
}

}  // namespace
}  // namespace splitsim
