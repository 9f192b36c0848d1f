// compute_metrics on literal timelines, and the metrics JSON / CSV formats.
#include "splitsim/sim/metrics.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "test_plans.h"

namespace splitsim {
namespace {

TimelineEvent ev(EventKind kind, int party, int stage, int64_t batch, int64_t mb, double start,
                 double end, int peer = -1, int64_t bytes = 0, int boundary = -1) {
  TimelineEvent e;
  e.kind = kind;
  e.party = party;
  e.peer = peer;
  e.stage = stage;
  e.boundary = boundary;
  e.batch = batch;
  e.microbatch = mb;
  e.bytes = bytes;
  e.start_s = start;
  e.end_s = end;
  return e;
}

// Two-stage client|server run, 3 batches, each laid out as:
//   client F [0,1], send 1000 B [1,2] (recv on server), server F [2,4],
//   server B [4,7], send 500 B [7,7.5], client B [7.5,8.5], client U [8.5,9]
// shifted by 10 s per batch; batch 2 is 2 s slower (its client B is longer).
Timeline two_party_timeline() {
  Timeline tl;
  tl.parties = {"client", "server"};
  tl.client_parties = {0};
  for (int b = 0; b < 3; ++b) {
    const double o = 10.0 * b;
    const double slow = b == 2 ? 2.0 : 0.0;
    tl.events.push_back(ev(EventKind::kForward, 0, 0, b, 0, o + 0, o + 1));
    tl.events.push_back(ev(EventKind::kSend, 0, 0, b, 0, o + 1, o + 2, 1, 1000, 0));
    tl.events.push_back(ev(EventKind::kRecv, 1, 1, b, 0, o + 1, o + 2, 0, 1000, 0));
    tl.events.push_back(ev(EventKind::kForward, 1, 1, b, 0, o + 2, o + 4));
    tl.events.push_back(ev(EventKind::kBackward, 1, 1, b, 0, o + 4, o + 7));
    TimelineEvent s = ev(EventKind::kSend, 1, 1, b, 0, o + 7, o + 7.5, 0, 500, 0);
    s.backward = 1;
    tl.events.push_back(s);
    TimelineEvent r = ev(EventKind::kRecv, 0, 0, b, 0, o + 7, o + 7.5, 1, 500, 0);
    r.backward = 1;
    tl.events.push_back(r);
    tl.events.push_back(ev(EventKind::kBackward, 0, 0, b, 0, o + 7.5, o + 8.5 + slow));
    tl.events.push_back(ev(EventKind::kUpdate, 0, 0, b, -1, o + 8.5 + slow, o + 9 + slow));
  }
  return tl;
}

Plan two_party_plan() {
  return testing::equal_stages(2, 1, 0, 0, Schedule::kSequential, 3, 1, {"client", "server"});
}

TEST(MetricsTest, TimePerBatchIsTheSteadyWindowOverItsBatches) {
  const Metrics m = compute_metrics(two_party_timeline(), two_party_plan(), 1);
  // Batch 0 ends at 9, batch 2 at 31: (31 - 9) / 2.
  EXPECT_DOUBLE_EQ(m.time_per_batch_s, 11.0);
  EXPECT_DOUBLE_EQ(m.time_per_batch_spread.min_s, 10.0);  // 19 - 9
  EXPECT_DOUBLE_EQ(m.time_per_batch_spread.max_s, 12.0);  // 31 - 19
  EXPECT_DOUBLE_EQ(m.time_per_batch_spread.median_s, 11.0);
  EXPECT_DOUBLE_EQ(m.makespan_s, 31.0);
  EXPECT_EQ(m.batches, 3);
  EXPECT_EQ(m.warmup_batches, 1);
}

TEST(MetricsTest, WithoutWarmupTheWindowStartsAtTheFirstEvent) {
  const Metrics m = compute_metrics(two_party_timeline(), two_party_plan(), 0);
  EXPECT_DOUBLE_EQ(m.time_per_batch_s, 31.0 / 3);
  EXPECT_DOUBLE_EQ(m.time_per_batch_spread.min_s, 9.0);
}

TEST(MetricsTest, ComputationTimeIsTheUnionOfComputeIntervals) {
  const Metrics m = compute_metrics(two_party_timeline(), two_party_plan(), 1);
  // Per batch: 1 + 2 + 3 + 1 + 0.5 = 7.5 (batch 1), 9.5 (batch 2): mean 8.5.
  EXPECT_DOUBLE_EQ(m.computation_time_s, 8.5);
}

TEST(MetricsTest, BytesAverageAndPeakBandwidthFollowTheReportsDefinitions) {
  const Metrics m = compute_metrics(two_party_timeline(), two_party_plan(), 1);
  const PartyMetrics* c = m.party("client");
  const PartyMetrics* s = m.party("server");
  ASSERT_NE(c, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(c->bytes_sent_per_batch, 1000);
  EXPECT_DOUBLE_EQ(c->bytes_received_per_batch, 500);
  EXPECT_DOUBLE_EQ(s->bytes_sent_per_batch, 500);
  EXPECT_DOUBLE_EQ(s->bytes_received_per_batch, 1000);
  // Average: bytes / computation time; the other form: bytes / time per batch.
  EXPECT_DOUBLE_EQ(c->bandwidth_avg_send_Bps, 1000 / 8.5);
  EXPECT_DOUBLE_EQ(c->bandwidth_avg_recv_Bps, 500 / 8.5);
  EXPECT_DOUBLE_EQ(c->send_Bps_over_time_per_batch, 1000 / 11.0);
  // Peak: the fastest single transfer (1000 B in 1 s; 500 B in 0.5 s).
  EXPECT_DOUBLE_EQ(m.bandwidth_peak_client_Bps, 1000);
  EXPECT_DOUBLE_EQ(m.bandwidth_peak_server_Bps, 1000);
  EXPECT_DOUBLE_EQ(s->peak_send_Bps, 1000);
}

TEST(MetricsTest, BusyTimeUtilisationBubbleAndBusiestResource) {
  const Metrics m = compute_metrics(two_party_timeline(), two_party_plan(), 1);
  const PartyMetrics* c = m.party("client");
  const PartyMetrics* s = m.party("server");
  EXPECT_DOUBLE_EQ(c->busy_s_per_batch, 3.5);  // (2.5 + 4.5) / 2
  EXPECT_DOUBLE_EQ(s->busy_s_per_batch, 5.0);
  EXPECT_DOUBLE_EQ(s->utilisation, 5.0 / 11);
  EXPECT_DOUBLE_EQ(m.bubble_fraction, 1 - 8.5 / 22);
  EXPECT_EQ(m.busiest_resource, "server");
  ASSERT_EQ(m.links.size(), 2u);
  EXPECT_EQ(m.links[0].from, "client");
  EXPECT_EQ(m.links[0].to, "server");
  EXPECT_DOUBLE_EQ(m.links[0].bytes_per_batch, 1000);
  EXPECT_DOUBLE_EQ(m.links[0].busy_s_per_batch, 1.0);
  EXPECT_DOUBLE_EQ(m.links[1].utilisation, 0.5 / 11);
}

TEST(MetricsTest, PeakStashCountsMicrobatchesBetweenForwardStartAndBackwardEnd) {
  Timeline tl;
  tl.parties = {"a"};
  tl.client_parties = {0};
  // F0 F1 F2 then B0 B1 B2 (gpipe-like, 3 in flight), then F3 B3 (1 in flight).
  for (int i = 0; i < 3; ++i) tl.events.push_back(ev(EventKind::kForward, 0, 0, 0, i, i, i + 1));
  for (int i = 0; i < 3; ++i)
    tl.events.push_back(ev(EventKind::kBackward, 0, 0, 0, i, 3 + i, 4 + i));
  tl.events.push_back(ev(EventKind::kForward, 0, 0, 1, 0, 7, 8));
  tl.events.push_back(ev(EventKind::kBackward, 0, 0, 1, 0, 8, 9));
  Plan plan = testing::equal_stages(1, 1, 0, 0, Schedule::kGpipe, 2, 0, {"a"});
  plan.stages[0].stash_bytes_per_microbatch = 1000;
  const Metrics m = compute_metrics(tl, plan, 0);
  ASSERT_EQ(m.stages.size(), 1u);
  EXPECT_EQ(m.stages[0].peak_stashed_microbatches, 3);
  EXPECT_EQ(m.stages[0].peak_stash_bytes, 3000);
}

TEST(MetricsTest, SeveralClientsMeasureRoundsAndSumServerBytes) {
  Timeline tl;
  tl.parties = {"client0", "client1", "server"};
  tl.client_parties = {0, 1};
  tl.clients = 2;
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 2; ++c) {
      TimelineEvent s = ev(EventKind::kSend, c, 0, b, 0, 10 * b + c, 10 * b + c + 1, 2, 100, 0);
      s.client = c;
      TimelineEvent r = s;
      r.kind = EventKind::kRecv;
      std::swap(r.party, r.peer);
      tl.events.push_back(s);
      tl.events.push_back(r);
      TimelineEvent f = ev(EventKind::kForward, 2, 1, b, 0, 10 * b + 2 + c, 10 * b + 3 + c);
      f.client = c;
      tl.events.push_back(f);
    }
  const Metrics m = compute_metrics(
      tl, testing::equal_stages(2, 1, 0, 0, Schedule::kSequential, 2, 1, {"client", "server"}), 1);
  EXPECT_DOUBLE_EQ(m.time_per_batch_s, 10.0);  // round 0 ends at 4, round 1 at 14
  EXPECT_DOUBLE_EQ(m.throughput_batches_per_s, 0.2);
  EXPECT_DOUBLE_EQ(m.party("server")->bytes_received_per_batch, 200);
  EXPECT_DOUBLE_EQ(m.party("client1")->bytes_sent_per_batch, 100);
  EXPECT_TRUE(m.party("client1")->client);
  EXPECT_FALSE(m.party("server")->client);
}

TEST(MetricsTest, RefusesAWarmupThatLeavesNoBatch) {
  EXPECT_THROW(compute_metrics(two_party_timeline(), two_party_plan(), 3), std::invalid_argument);
}

TEST(MetricsTest, JsonCarriesTheContractAndRoundTrips) {
  const Metrics m = compute_metrics(two_party_timeline(), two_party_plan(), 1);
  const nlohmann::json j = m;
  EXPECT_EQ(j.at("schema"), "splitsim.metrics/1");
  EXPECT_EQ(j.at("source"), "sim");
  for (const char* key : {"time_per_batch_s", "computation_time_s", "bandwidth_peak_client_Bps",
                          "bandwidth_peak_server_Bps"})
    EXPECT_TRUE(j.at(key).is_number()) << key;
  for (const char* party : {"client", "server"})
    for (const char* key : {"bytes_sent_per_batch", "bytes_received_per_batch",
                            "bandwidth_avg_send_Bps", "bandwidth_avg_recv_Bps", "busy_s_per_batch"})
      EXPECT_TRUE(j.at("parties").at(party).at(key).is_number()) << party << "." << key;
  const Metrics back = j.get<Metrics>();
  EXPECT_EQ(nlohmann::json(back).dump(), j.dump());
}

TEST(MetricsTest, CsvRowHasOneFieldPerHeaderColumn) {
  const Metrics m = compute_metrics(two_party_timeline(), two_party_plan(), 1);
  std::ostringstream header, row;
  write_csv_header(header);
  write_csv_row(row, m);
  auto fields = [](const std::string& line) { return std::count(line.begin(), line.end(), ','); };
  EXPECT_EQ(fields(header.str()), fields(row.str()));
  EXPECT_EQ(row.str().rfind("sim,test,base,sequential,1,3,1,11,", 0), 0u) << row.str();
}

TEST(MetricsTest, CsvRecordIsTheCsvsColumnsAtFullPrecision) {
  const Metrics m = compute_metrics(two_party_timeline(), two_party_plan(), 1);
  const nlohmann::ordered_json r = csv_record(m);
  std::ostringstream header;
  write_csv_header(header);
  std::string keys;
  for (const auto& item : r.items()) keys += (keys.empty() ? "" : ",") + item.key();
  EXPECT_EQ(keys + "\n", header.str());
  EXPECT_EQ(r.at("time_per_batch_s").get<double>(), m.time_per_batch_s);
  EXPECT_EQ(r.at("client_bytes_sent_per_batch").get<double>(),
            m.party("client")->bytes_sent_per_batch);
  EXPECT_EQ(r.at("server_busy_s_per_batch").get<double>(), m.party("server")->busy_s_per_batch);
  ASSERT_EQ(r.at("peak_stash_bytes_per_stage").size(), m.stages.size());
  EXPECT_EQ(r.at("peak_stash_bytes_per_stage")[0].get<int64_t>(), m.stages[0].peak_stash_bytes);
}

// A server serving four clients holds its weights, gradients and state
// once (four times under splitfed_v1: a server part each), a posted
// receive per client, the stash the simulation kept on it (all clients'
// micro-batches at once) and one working memory: the figures of
// resnet20_two_groups.json's server, by hand.
TEST(MetricsTest, AServedPartyHoldsItsCopiesEachClientsReceivesAndTheSimulatedStash) {
  Plan plan;
  PlanStage s;
  s.party = "server";
  s.param_bytes = 814'080;
  s.optimizer_state_bytes = 814'080;
  s.recv_bytes = 1'572'864;
  s.stash_bytes_per_microbatch = 7'389'184;
  s.stashed_microbatches = 1;
  s.work_bytes = 4'456'448;
  const int64_t own = 3 * 814'080 + 1'572'864;  // params, gradients, state, one receive
  s.peak_memory_bytes = own + s.activation_bytes();
  plan.stages = {s};
  Metrics m;
  m.stages.resize(1);
  m.stages[0].peak_stash_bytes = 4 * 7'389'184;  // the simulation stashed four at once
  const int64_t stash_and_work = 4 * 7'389'184 + 4'456'448;
  EXPECT_EQ(served_party_peak_memory_bytes(plan, m, {0}, 4, 1),
            3 * 814'080 + 4 * 1'572'864 + stash_and_work);
  EXPECT_EQ(served_party_peak_memory_bytes(plan, m, {0}, 4, 4),
            4 * 3 * 814'080 + 4 * 1'572'864 + stash_and_work);
  // One client, one copy, one micro-batch: the plan's own peak.
  m.stages[0].peak_stash_bytes = 7'389'184;
  EXPECT_EQ(served_party_peak_memory_bytes(plan, m, {0}, 1, 1), s.peak_memory_bytes);
}

}  // namespace
}  // namespace splitsim
