// Training modes (Plan::training): rounds between the clients' batches,
// against hand math.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "../costmodel/expect_input_error.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "test_plans.h"

namespace splitsim {
namespace {

using testing::ushape;

// Client work 4 ms a batch, server work 30 ms, free links of 1e9 B/s: one
// client's batch takes 34 ms (SimulatorClientsTest). The client part (stage
// 0) holds 1e6 trainable bytes: 1 ms each way; averaging reads each copy and
// writes the average at 1e9 B/s.
Plan rounds_plan(const char* training, int clients) {
  Plan p = ushape(1e-3, 1e-3, 10e-3, 20e-3);
  p.iterations = 12;
  p.warmup = 4;
  p.clients = clients;
  p.stages[0].param_bytes = 1'000'000;
  p.training = training;
  p.average_s_per_byte = 1e-9;
  return p;
}

TEST(SimulatorRoundsTest, VanillaClientsTakeTurnsAndHandTheClientPartOn) {
  Plan p = rounds_plan("vanilla", 2);
  const Metrics m = compute_metrics(simulate(p), p, p.warmup);
  // Each client's batch (34 ms), then its client part up (1 ms) and down to
  // the next (1 ms): a round of two is 72 ms, not the shared server's 60;
  // the steady rounds (4..11) less the last's hand-over, which has no next.
  EXPECT_NEAR(m.time_per_batch_s, (8 * 2 * (34e-3 + 2e-3) - 2e-3) / 8, 1e-9);
  EXPECT_NEAR(m.round_wait_spread.median_s, 36e-3, 1e-9);  // client 1 ends a turn later
  p.training = "unsynchronised";
  EXPECT_NEAR(compute_metrics(simulate(p), p, p.warmup).time_per_batch_s, 60e-3, 1e-9);
}

TEST(SimulatorRoundsTest, VanillaWithOneClientIsTheUnsynchronisedRun) {
  Plan p = rounds_plan("vanilla", 1);
  EXPECT_NEAR(compute_metrics(simulate(p), p, p.warmup).time_per_batch_s, 34e-3, 1e-9);
}

TEST(SimulatorRoundsTest, SplitfedAveragesTheClientPartEveryRound) {
  // A batch, the upload (1 ms), the average of one copy (read 1e6 B, write
  // 1e6 B: 2 ms), the download (1 ms).
  Plan p = rounds_plan("splitfed_v1", 1);
  const Timeline tl = simulate(p);
  EXPECT_NEAR(compute_metrics(tl, p, p.warmup).time_per_batch_s, 34e-3 + 4e-3, 1e-9);
  int averages = 0;
  for (const TimelineEvent& e : tl.events) averages += e.kind == EventKind::kAverage;
  EXPECT_EQ(averages, 12);
  // Every 2 batches: 2 x 34 + 4 ms over 2.
  p.aggregate_every = 2;
  EXPECT_NEAR(compute_metrics(simulate(p), p, p.warmup).time_per_batch_s, 36e-3, 1e-9);
}

TEST(SimulatorRoundsTest, SplitfedV1AlsoAveragesTheServerPartsV2KeepsOne) {
  Plan p = rounds_plan("splitfed_v1", 1);
  p.stages[1].param_bytes = 1'000'000;  // the server part: averaged on the server, not sent
  EXPECT_NEAR(compute_metrics(simulate(p), p, p.warmup).time_per_batch_s, 34e-3 + 6e-3, 1e-9);
  p.training = "splitfed_v2";
  EXPECT_NEAR(compute_metrics(simulate(p), p, p.warmup).time_per_batch_s, 34e-3 + 4e-3, 1e-9);
}

TEST(SimulatorRoundsTest, AFastClientWaitsForTheSlowOneAtEachAverage) {
  // Link-bound clients, one 10x slower: unsynchronised, the fast one runs
  // ahead and the wait for the last client grows round after round; under
  // splitfed it is the same every round.
  Plan p = rounds_plan("unsynchronised", 2);
  p.stages[1].fwd_s = {1e-3};  // a server that is nobody's bottleneck
  p.stages[1].bwd_s = {2e-3};
  testing::set_wire_bytes(&p, 0, 1'000'000, 1'000'000);
  p.client_groups = {{"fast", "", 1, {8e9}, {}, {}}, {"slow", "", 1, {8e8}, {}, {}}};
  const Metrics free = compute_metrics(simulate(p), p, p.warmup);
  EXPECT_GT(free.round_wait_spread.max_s - free.round_wait_spread.min_s, 0.05);
  p.training = "splitfed_v1";
  const Metrics fed = compute_metrics(simulate(p), p, p.warmup);
  EXPECT_NEAR(fed.round_wait_spread.max_s, fed.round_wait_spread.min_s, 1e-9);
  EXPECT_GT(fed.round_wait_spread.min_s, 0);
  // The straggler in either mode: the slow client ends every round's
  // batches last, though under splitfed both take a round per batch.
  for (const Metrics* m : {&free, &fed}) {
    ASSERT_EQ(m->client_groups.size(), 2u);
    EXPECT_DOUBLE_EQ(m->client_groups[0].last_in_round, 0);
    EXPECT_DOUBLE_EQ(m->client_groups[1].last_in_round, 1);
  }
  EXPECT_NEAR(fed.client_groups[0].time_per_batch.median_s,
              fed.client_groups[1].time_per_batch.median_s, 1e-9);
}

TEST(SimulatorRoundsTest, SplitfedV2ServesTheClientsInClientOrder) {
  for (ServerOrder order : {ServerOrder::kFifo, ServerOrder::kRoundRobin}) {
    Plan p = rounds_plan("splitfed_v2", 3);
    p.stages[0].fwd_s = {5e-3};  // clients slower than the server's turn
    SimOptions o;
    o.server_order = order;
    const Timeline tl = simulate(p, o);
    // Client c's server work of batch b starts after client c - 1's (client
    // 2's of batch b - 1 for client 0) has ended.
    auto server_span = [&tl](int c, int64_t b) {
      double first = std::numeric_limits<double>::infinity(), last = 0;
      for (const TimelineEvent& e : tl.events)
        if (e.stage == 1 && e.client == c && e.batch == b && is_compute(e.kind)) {
          first = std::min(first, e.start_s);
          last = std::max(last, e.end_s);
        }
      return std::make_pair(first, last);
    };
    for (int64_t b = 0; b < p.iterations; ++b)
      for (int c = 0; c < 3; ++c) {
        if (b == 0 && c == 0) continue;
        const auto before = c > 0 ? server_span(c - 1, b) : server_span(2, b - 1);
        EXPECT_GE(server_span(c, b).first, before.second - 1e-12)
            << "batch " << b << " client " << c;
      }
  }
}

TEST(SimulatorRoundsTest, PipelinesWithTwoServerStagesHoldTheirRounds) {
  // Two stages a party (client 0 and 2, server 1 and 3), 4 micro-batches,
  // two clients: every mode finishes every batch under every synchronous
  // pipeline, and rounds never make a round shorter than running free.
  for (Schedule s : {Schedule::k1F1B, Schedule::kZbH1, Schedule::kInterleaved1F1B}) {
    Plan p =
        testing::equal_stages(4, 4, 1e-3, 2e-3, s, 8, 2, {"client", "server", "client", "server"});
    p.virtual_stages = s == Schedule::kInterleaved1F1B ? 2 : 1;
    p.clients = 2;
    p.stages[0].param_bytes = p.stages[2].param_bytes = 500'000;
    p.average_s_per_byte = 1e-9;
    const double free = compute_metrics(simulate(p), p, p.warmup).time_per_batch_s;
    for (const char* mode : {"vanilla", "splitfed_v1", "splitfed_v2"}) {
      p.training = mode;
      const Metrics m = compute_metrics(simulate(p), p, p.warmup);
      EXPECT_GE(m.time_per_batch_s, free - 1e-12) << schedule_name(s) << " " << mode;
      EXPECT_EQ(m.batches, 8) << schedule_name(s) << " " << mode;
    }
  }
}

TEST(SimulatorRoundsTest, PlanFilesKeepTheModeAndRefuseOneThatCannotHoldRounds) {
  Plan p = rounds_plan("splitfed_v2", 2);
  p.aggregate_every = 3;
  const Plan back = parse_plan(nlohmann::json(p));
  EXPECT_EQ(back.training, "splitfed_v2");
  EXPECT_EQ(back.aggregate_every, 3);
  EXPECT_DOUBLE_EQ(back.average_s_per_byte, 1e-9);
  nlohmann::json j = nlohmann::json(p);
  j["training"] = "fedavg";
  expect_error([&] { parse_plan(j); }, "$.training", "training mode");
  j = nlohmann::json(p);
  j["schedule"] = "pipedream";
  expect_error([&] { parse_plan(j); }, "$.training", "pipedream");
}

}  // namespace
}  // namespace splitsim
