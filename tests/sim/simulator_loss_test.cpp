// A lossy link (network.loss_rate): TCP's rate under loss (tcp_loss.h, the
// formula of Mathis et al.) caps each transfer's rate over its path's round
// trip, against hand-computed figures; the scenario refuses a loss rate it
// cannot use.
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

// client | server, GPipe, 2 micro-batches of 1e6 B up; the client's forward
// 10 ms per micro-batch; a link of 1e8 B/s and 1 ms latency.
Plan streaming(double loss) {
  Plan p = equal_stages(2, 2, 0, 0, Schedule::kGpipe, 6, 2, {"client", "server"});
  p.stages[0].fwd_s.assign(2, 10e-3);
  p.network.bandwidth_bit_per_s = 8e8;
  p.network.latency_s = 1e-3;
  p.network.loss_rate = loss;
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

TEST(SimulatorLossTest, TheRateUnderLossCapsATransferLikeASlowerLink) {
  const double loss = loss_for(5e7);  // half the link's rate
  ASSERT_GT(loss, 0);
  ASSERT_LT(loss, 0.2);
  const Plan lossy = streaming(loss);
  // The first message: 1e6 B at 5e7 B/s, then the latency: 21 ms.
  EXPECT_NEAR(first_send_s(simulate(lossy)), 21e-3, 1e-9);
  // The whole run as on a loss-free link of that rate.
  Plan slower = streaming(0);
  slower.network.bandwidth_bit_per_s = 4e8;
  const Metrics a = compute_metrics(simulate(lossy), lossy, lossy.warmup);
  const Metrics b = compute_metrics(simulate(slower), slower, slower.warmup);
  EXPECT_NEAR(a.time_per_batch_s, b.time_per_batch_s, 1e-9);
  const Plan plain = streaming(0);
  EXPECT_GT(a.time_per_batch_s,
            compute_metrics(simulate(plain), plain, plain.warmup).time_per_batch_s);
}

TEST(SimulatorLossTest, ALossTheLinkOutpacesChangesNothing) {
  const Plan plain = streaming(0), lossy = streaming(loss_for(2e8));  // TCP's rate above the link's
  EXPECT_NEAR(first_send_s(simulate(lossy)), 11e-3, 1e-9);
  EXPECT_NEAR(compute_metrics(simulate(lossy), lossy, lossy.warmup).time_per_batch_s,
              compute_metrics(simulate(plain), plain, plain.warmup).time_per_batch_s, 1e-9);
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
}

}  // namespace
}  // namespace splitsim
