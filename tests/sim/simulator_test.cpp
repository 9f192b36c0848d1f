// The SimGrid simulator against analytical cases (each simulation in a process of its own).
#include "splitsim/sim/simulator.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/link_fit.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/trace.h"
#include "test_plans.h"

namespace splitsim {
namespace {

using testing::equal_stages;
using testing::set_wire_bytes;
using testing::ushape;

constexpr double kTf = 1e-3, kTb = 2e-3;  // per stage and micro-batch
constexpr double kRel = 1e-9;

Metrics run(const Plan& plan) { return compute_metrics(simulate(plan), plan, plan.warmup); }

TEST(SimulatorTest, SequentialTakesTfPlusTbPerBatch) {
  const int K = 4;
  const Metrics m = run(equal_stages(K, 1, kTf, kTb, Schedule::kSequential));
  EXPECT_NEAR(m.time_per_batch_s, K * (kTf + kTb), kRel);
  EXPECT_NEAR(m.computation_time_s, K * (kTf + kTb), kRel);
  const Metrics m2 = run(equal_stages(K, 2, kTf, kTb, Schedule::kSequential));
  EXPECT_NEAR(m2.time_per_batch_s, 2 * K * (kTf + kTb), kRel);
}

TEST(SimulatorTest, GpipeTakesMPlusKMinusOneSlots) {
  const int K = 4, mb = 4;
  const Metrics m = run(equal_stages(K, mb, kTf, kTb, Schedule::kGpipe));
  EXPECT_NEAR(m.time_per_batch_s, (mb + K - 1) * (kTf + kTb), kRel);
  EXPECT_NEAR(m.time_per_batch_spread.max_s - m.time_per_batch_spread.min_s, 0, kRel);
  for (const auto& s : m.stages) EXPECT_EQ(s.peak_stashed_microbatches, mb) << s.stage;
  // Bubble: each stage is busy m(tf+tb) of (m+K-1)(tf+tb).
  EXPECT_NEAR(m.bubble_fraction, 1.0 - double(mb) / (mb + K - 1), 1e-9);
}

TEST(SimulatorTest, OneFOneBHasGpipesMakespanWithLessStash) {
  const int K = 4, mb = 4;
  const Metrics m = run(equal_stages(K, mb, kTf, kTb, Schedule::k1F1B));
  EXPECT_NEAR(m.time_per_batch_s, (mb + K - 1) * (kTf + kTb), kRel);
  for (const auto& s : m.stages) EXPECT_EQ(s.peak_stashed_microbatches, K - s.stage) << s.stage;
  EXPECT_EQ(m.stages[0].peak_stash_bytes, 400);
  EXPECT_EQ(m.stages[3].peak_stash_bytes, 100);
}

// ZB-H1 against the published figure: K equal stages, free links, B and W
// of one micro-batch t_b and t_w (t_w <= t_f + t_b): a batch takes
// m (t_f + t_b + t_w) + (K-1)(t_f + t_b - t_w), where 1f1b, sending the
// gradient after the whole backward, takes (m + K - 1)(t_f + t_b + t_w).
TEST(SimulatorTest, ZeroBubbleH1MeetsThePublishedBubble) {
  for (const auto& [K, mb] : {std::pair{4, 8}, std::pair{3, 6}, std::pair{4, 4}, std::pair{2, 4}})
    for (const auto& [tf, tb, tw] : {std::tuple{1e-3, 1e-3, 1e-3}, std::tuple{1e-3, 2e-3, 1e-3},
                                     std::tuple{2e-3, 1e-3, 5e-4}}) {
      Plan p = equal_stages(K, mb, tf, tb + tw, Schedule::kZbH1, 10, 3);
      for (PlanStage& st : p.stages) st.bwd_weight_s.assign(static_cast<size_t>(mb), tw);
      const Metrics zb = run(p);
      const double ideal = mb * (tf + tb + tw);
      EXPECT_NEAR(zb.time_per_batch_s, ideal + (K - 1) * (tf + tb - tw), kRel)
          << "K=" << K << " m=" << mb << " tw=" << tw;
      for (const auto& s : zb.stages) EXPECT_EQ(s.peak_stashed_microbatches, std::min(mb, K));
      p.schedule = Schedule::k1F1B;
      EXPECT_NEAR(run(p).time_per_batch_s, (mb + K - 1) * (tf + tb + tw), kRel);
    }
}

// Interleaved 1F1B against the published figure: p parties holding v of
// K = p v equal stages each (t_f, t_b per stage and micro-batch), free
// links: a batch takes (m v + p - 1)(t_f + t_b), a bubble of (p-1)/(v m)
// of the party's m v (t_f + t_b) of work, against 1f1b's (p-1)/m with the
// same work in p stages.
TEST(SimulatorTest, InterleavedOneFOneBMeetsThePublishedBubble) {
  for (const auto& [p, v, mb] : {std::tuple{2, 2, 4}, std::tuple{2, 2, 2}, std::tuple{4, 2, 8},
                                 std::tuple{3, 2, 6}, std::tuple{2, 3, 4}}) {
    std::vector<std::string> parties;
    for (int s = 0; s < p * v; ++s) parties.push_back("p" + std::to_string(s % p));
    Plan plan = equal_stages(p * v, mb, kTf, kTb, Schedule::kInterleaved1F1B, 10, 3, parties);
    plan.virtual_stages = v;
    const Metrics m = run(plan);
    const double work = mb * v * (kTf + kTb);
    EXPECT_NEAR(m.time_per_batch_s, (mb * v + p - 1) * (kTf + kTb), kRel)
        << "p=" << p << " v=" << v << " m=" << mb;
    EXPECT_NEAR((m.time_per_batch_s - work) / work, double(p - 1) / (v * mb), 1e-9);
  }
}

TEST(SimulatorTest, PipeDreamSteadyStateIsOneStagesWork) {
  const int K = 4;
  const Metrics m = run(equal_stages(K, 1, kTf, kTb, Schedule::kPipeDream, 24, 8));
  EXPECT_NEAR(m.time_per_batch_s, kTf + kTb, kRel);  // (T_F + T_B) / K
  for (const auto& s : m.stages) EXPECT_EQ(s.peak_stashed_microbatches, K - s.stage);
}

TEST(SimulatorTest, DdgTakesTfPlusTbOverK) {
  const int K = 4;
  const Metrics m = run(equal_stages(K, 1, kTf, kTb, Schedule::kDdg, 16, 6));
  EXPECT_NEAR(m.time_per_batch_s, K * kTf + kTb, kRel);  // T_F + T_B / K
  for (const auto& s : m.stages) EXPECT_EQ(s.peak_stashed_microbatches, K - s.stage);
}

TEST(SimulatorTest, FeaturesReplayRecomputesTheForwardInTheBackward) {
  const int K = 4;
  const Metrics m = run(equal_stages(K, 1, kTf, kTb, Schedule::kFr, 16, 6));
  EXPECT_NEAR(m.time_per_batch_s, K * kTf + (kTf + kTb), kRel);  // T_F + (T_F + T_B) / K
}

TEST(SimulatorTest, LinkBoundBatchIsWireBytesOverBandwidthPlusLatencies) {
  Plan p = equal_stages(2, 1, 0, 0, Schedule::kSequential, 6, 1, {"client", "server"});
  p.network.up_bandwidth_bit_per_s = 8e8;    // 1e8 B/s client -> server
  p.network.down_bandwidth_bit_per_s = 4e8;  // 5e7 B/s server -> client
  p.network.latency_s = 1e-3;
  set_wire_bytes(&p, 0, 1000000, 300000);
  const Metrics m = run(p);
  const double expected = (1e-3 + 1e6 / 1e8) + (1e-3 + 3e5 / 5e7);
  EXPECT_NEAR(m.time_per_batch_s / expected, 1.0, 1e-6);
  EXPECT_NEAR(m.party("client")->peak_send_Bps, 1e6 / (1e-3 + 1e6 / 1e8), 1e-3);
  EXPECT_DOUBLE_EQ(m.party("client")->bytes_sent_per_batch, p.bytes_sent("client"));
  EXPECT_DOUBLE_EQ(m.party("server")->bytes_sent_per_batch, p.bytes_sent("server"));
}

TEST(SimulatorTest, BackToBackMessagesOverlapTheirLatency) {
  // GPipe, 4 micro-batches, no compute: the forwards stream through the
  // connection (one latency), then the backwards.
  Plan p = equal_stages(2, 4, 0, 0, Schedule::kGpipe, 6, 1, {"client", "server"});
  p.network.bandwidth_bit_per_s = 8e8;
  p.network.latency_s = 2e-3;
  set_wire_bytes(&p, 0, 100000, 100000);
  const Metrics m = run(p);
  EXPECT_NEAR(m.time_per_batch_s / (2 * (2e-3 + 4 * 1e5 / 1e8)), 1.0, 1e-6);
}

TEST(SimulatorTest, ATokenBucketLetsItsBurstPassAtOnce) {
  // 1e8 B/s each way, a bucket of 200 kB per direction; 1 MB up, 300 kB
  // down, no compute. Steady state: the up direction idled while the 300 kB
  // came down (1 ms: 100 kB of tokens), so 900 kB are paced (9 ms); the down
  // direction idled 9 ms (a full bucket), so 100 kB are paced (1 ms).
  Plan p = equal_stages(2, 1, 0, 0, Schedule::kSequential, 6, 1, {"client", "server"});
  p.network.bandwidth_bit_per_s = 8e8;
  p.network.burst_bytes = 200000;
  set_wire_bytes(&p, 0, 1000000, 300000);
  const Metrics m = run(p);
  EXPECT_NEAR(m.time_per_batch_s / (9e-3 + 1e-3), 1.0, 1e-6);
  EXPECT_DOUBLE_EQ(m.party("client")->bytes_sent_per_batch, 1e6);  // every byte still sent
  // The first batch starts with both buckets full: 800 kB paced up.
  const Timeline tl = simulate(p);
  for (const auto& e : tl.events)
    if (e.kind == EventKind::kSend) {
      EXPECT_NEAR(e.duration_s(), 8e-3, 1e-9);
      break;
    }
  // A message a full bucket holds arrives at once (after the latency); in
  // the long run a bucket refills only at the rate, so a batch takes at
  // least the up direction's 1 MB at the rate (10 ms), the bucket being
  // refilled while the other direction sends.
  p.network.burst_bytes = 2000000;
  p.network.latency_s = 1e-4;
  for (const auto& e : simulate(p).events)
    if (e.kind == EventKind::kSend) {
      EXPECT_NEAR(e.duration_s(), 1e-4, 1e-12);
      break;
    }
  p.iterations = 40;
  p.warmup = 20;
  EXPECT_NEAR(run(p).time_per_batch_s, 10e-3, 1e-6);
}

TEST(SimulatorTest, ABucketWithAPeakRateDrainsAtThatRate) {
  // 1e8 B/s, a bucket of 100 kB passing at 4e8 B/s; 1 ms of compute per
  // pass on each side, so each direction starts every message with a full
  // bucket, which lasts 100 kB / (4e8 - 1e8) B/s and carries 133.3 kB.
  Plan p = equal_stages(2, 1, 1e-3, 1e-3, Schedule::kSequential, 12, 4, {"client", "server"});
  p.network.bandwidth_bit_per_s = 8e8;
  p.network.burst_bytes = 100000;
  p.network.burst_peak_bit_per_s = 3.2e9;
  // 50 kB each way: all at the peak, 0.125 ms each.
  set_wire_bytes(&p, 0, 50000, 50000);
  EXPECT_NEAR(run(p).time_per_batch_s, 4e-3 + 2 * 0.125e-3, 1e-9);
  // 200 kB up: 133.3 kB at the peak (0.333 ms), 66.7 kB at the rate
  // (0.667 ms), the same as the link model fitted to single messages.
  set_wire_bytes(&p, 0, 200000, 50000);
  const Metrics m = run(p);
  EXPECT_NEAR(m.time_per_batch_s, 4e-3 + 1e-3 + 0.125e-3, 1e-8);  // whole bytes
  LinkFit fit;
  fit.rate_Bps = 1e8;
  fit.peak_Bps = 4e8;
  fit.burst_bytes = 100000;
  EXPECT_NEAR(fitted_transfer_s(fit, 200000), 1e-3, 1e-12);
  // The peak rate is the fastest transfer's: 200 kB in 1 ms up, 50 kB in
  // 0.125 ms down.
  EXPECT_NEAR(m.bandwidth_peak_client_Bps / 2e8, 1.0, 1e-5);
  EXPECT_NEAR(m.party("server")->peak_send_Bps, 4e8, 1e-3);
  // A peak no faster than the rate: the bucket carries nothing.
  p.network.burst_peak_bit_per_s = 8e8;
  EXPECT_NEAR(run(p).time_per_batch_s, 4e-3 + 2e-3 + 0.5e-3, 1e-9);
}

TEST(SimulatorTest, AnHtbBucketSendsWholePacketsOnCredit) {
  // 1e8 B/s each way, a bucket of 10 kB, packets of 64 kB; 1 ms of compute
  // per pass on each side, so a direction idles at least 3 ms (300 kB of
  // tokens) between its messages and starts each one with a full bucket.
  Plan p = equal_stages(2, 1, 1e-3, 1e-3, Schedule::kSequential, 12, 4, {"client", "server"});
  p.network.bandwidth_bit_per_s = 8e8;
  p.network.burst_bytes = 10000;
  p.network.burst_packet_bytes = 64000;
  // 50 kB each way: one packet, which leaves on credit at once (a plain
  // link takes 0.5 ms each way, a bucket without credit 0.4 ms).
  set_wire_bytes(&p, 0, 50000, 50000);
  EXPECT_NEAR(run(p).time_per_batch_s, 4e-3, 1e-9);
  // The same 50 kB as a quantizer's two tensors, 49,992 B and its 8 B of
  // scale, each its own message on the connection: the first packet leaves
  // on credit, the scale once the bucket is out of debt again, 0.4 ms later.
  Plan q8 = p;
  q8.boundaries[0].forward.wire_messages = 2;
  q8.boundaries[0].forward.last_tensor_bytes.assign(q8.microbatch_sizes.size(), 8);
  EXPECT_NEAR(run(q8).time_per_batch_s, 4e-3 + 0.39992e-3, 1e-9);
  // 150 kB up: packets of 64, 64 and 22 kB; the last leaves once the first
  // two (128 kB) are paid for beyond the 10 kB in the bucket: 1.18 ms.
  set_wire_bytes(&p, 0, 150000, 50000);
  EXPECT_NEAR(run(p).time_per_batch_s, 4e-3 + 1.18e-3, 1e-9);
  Plan classic = p;  // without credit: (150 - 10) and (50 - 10) kB paced
  classic.network.burst_packet_bytes = 0;
  EXPECT_NEAR(run(classic).time_per_batch_s, 4e-3 + 1.4e-3 + 0.4e-3, 1e-9);
  // With no compute to refill it, credit buys nothing in the long run: a
  // direction carries at most the rate, 50 kB each way in 0.5 ms.
  Plan busy = equal_stages(2, 1, 0, 0, Schedule::kSequential, 40, 20, {"client", "server"});
  busy.network = p.network;
  set_wire_bytes(&busy, 0, 50000, 50000);
  EXPECT_NEAR(run(busy).time_per_batch_s, 0.5e-3, 1e-9);
  EXPECT_DOUBLE_EQ(run(busy).party("client")->bytes_sent_per_batch, 5e4);
}

TEST(SimulatorTest, QueuedMessagesLeaveAsOneStreamBehindTheWaitingPacket) {
  // 1e8 B/s, a bucket of 10 kB, packets of 64 kB; two micro-batches of a
  // quantizer's 39,992 B of data and 8 B of scale, their forwards 0.1 ms
  // apart. The first, on an idle link: its data leaves on credit, the scale
  // once the 29,992 B beyond the bucket are paid for, 0.29992 ms later. The
  // second, posted meanwhile, goes as one packet when the first's scale has
  // left: after the 8 B the bucket then owes. Each counts from its post.
  Plan p = equal_stages(2, 2, 1e-4, 1e-4, Schedule::kGpipe, 1, 0, {"client", "server"});
  p.network.bandwidth_bit_per_s = 8e8;
  p.network.burst_bytes = 10000;
  p.network.burst_packet_bytes = 64000;
  set_wire_bytes(&p, 0, 40000, 0);
  p.boundaries[0].forward.wire_messages = 2;
  p.boundaries[0].forward.last_tensor_bytes = {8, 8};
  std::map<int64_t, TimelineEvent> sent;  // forward sends by micro-batch
  for (const auto& e : simulate(p).events)
    if (e.kind == EventKind::kSend && e.backward == 0) sent[e.microbatch] = e;
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_NEAR(sent[0].start_s, 1e-4, 1e-12);
  EXPECT_NEAR(sent[0].duration_s(), 0.29992e-3, 1e-12);
  EXPECT_NEAR(sent[1].start_s, 2e-4, 1e-12);
  EXPECT_NEAR(sent[1].end_s, sent[0].end_s + 8 / 1e8, 1e-12);
}

TEST(SimulatorTest, CalibrationKnobsAddOverheadAndScaleBandwidth) {
  Plan p = equal_stages(2, 1, 0, 0, Schedule::kSequential, 6, 1, {"client", "server"});
  p.network.bandwidth_bit_per_s = 8e8;
  p.network.per_message_overhead_s = 5e-4;
  p.network.bandwidth_factor = 0.5;
  set_wire_bytes(&p, 0, 1000000, 1000000);
  const Metrics m = run(p);
  EXPECT_NEAR(m.time_per_batch_s / (2 * (5e-4 + 1e6 / 5e7)), 1.0, 1e-6);
}

TEST(SimulatorTest, BandwidthTraceScalesTheLinks) {
  const std::string trace = ::testing::TempDir() + "splitsim_bw_trace.txt";
  std::ofstream(trace) << "0 0.25\n";
  Plan p = equal_stages(2, 1, 0, 0, Schedule::kSequential, 4, 1, {"client", "server"});
  p.network.bandwidth_bit_per_s = 8e8;
  p.network.bandwidth_trace = trace;
  set_wire_bytes(&p, 0, 1000000, 1000000);
  const Metrics m = run(p);
  EXPECT_NEAR(m.time_per_batch_s / (2 * 1e6 / 2.5e7), 1.0, 1e-6);
  // A drop to half at 5 ms: the first 1 MB (0.01 s at full rate) takes
  // 5 ms for its first half and 10 ms for the second.
  std::ofstream(trace) << "# time factor\n0 1\n0.005 0.5\n";
  const Timeline tl = simulate(p);
  ASSERT_EQ(tl.events.front().kind, EventKind::kForward);
  for (const auto& e : tl.events)
    if (e.kind == EventKind::kSend) {
      EXPECT_NEAR(e.duration_s(), 0.015, 1e-9);
      break;
    }
  std::ofstream(trace) << "0 1.5\n";
  EXPECT_THROW(simulate(p), InputError);
  std::remove(trace.c_str());
  EXPECT_THROW(simulate(p), InputError);
}

// The U-shape of the next tests: client 1 / 2 ms, server 4 / 8 ms per
// micro-batch, 1e9 B/s each way, 0.1 ms latency; 1 MB over the first cut and
// 10 kB over the second, each way.
Plan linked_ushape() {
  Plan p = ushape(1e-3, 2e-3, 4e-3, 8e-3);
  p.network.bandwidth_bit_per_s = 8e9;
  p.network.latency_s = 1e-4;
  set_wire_bytes(&p, 0, 1000000, 1000000);
  set_wire_bytes(&p, 1, 10000, 10000);
  return p;
}

TEST(SimulatorTest, UShapeRunsClientServerClientAndBack) {
  Plan p = linked_ushape();
  const Timeline tl = simulate(p);
  std::vector<std::string> order;
  for (const auto& e : tl.events)
    if (e.batch == 0 && e.kind != EventKind::kRecv)
      order.push_back(tl.parties[e.party] + ":" + event_name(e));
  const std::vector<std::string> expected = {
      "client:F s0 mb0",        "client:xfer fwd b0 mb0", "server:F s1 mb0",
      "server:xfer fwd b1 mb0", "client:F s2 mb0",        "client:B s2 mb0",
      "client:update s2",       "client:xfer bwd b1 mb0", "server:B s1 mb0",
      "server:update s1",       "server:xfer bwd b0 mb0", "client:B s0 mb0",
      "client:update s0"};
  EXPECT_EQ(order, expected);
  const Metrics m = compute_metrics(tl, p, p.warmup);
  const double xfer = 2 * (1e-4 + 1e6 / 1e9) + 2 * (1e-4 + 1e4 / 1e9);
  EXPECT_NEAR(m.time_per_batch_s, 2 * 1e-3 + 2 * 2e-3 + 4e-3 + 8e-3 + xfer, 1e-9);
  // The reports' average divides by the computation time, not the batch time.
  EXPECT_NEAR(m.computation_time_s, 2 * 1e-3 + 2 * 2e-3 + 4e-3 + 8e-3, 1e-9);
  const PartyMetrics* c = m.party("client");
  EXPECT_NEAR(c->bandwidth_avg_send_Bps, c->bytes_sent_per_batch / m.computation_time_s, 1e-6);
  EXPECT_GT(c->bandwidth_avg_send_Bps, c->send_Bps_over_time_per_batch);
  EXPECT_NEAR(m.bandwidth_peak_client_Bps, 1e6 / (1e-4 + 1e6 / 1e9), 1e-3);
  EXPECT_NEAR(m.bandwidth_peak_server_Bps, 1e6 / (1e-4 + 1e6 / 1e9), 1e-3);
  EXPECT_EQ(m.busiest_resource, "server");
}

// A U-shape whose first client part trains nothing (a LoRA client that
// only embeds): the planner marks the first cut's gradient unneeded
// (drop_unneeded_gradients), and the simulator neither sends it nor lets
// the server wait to send it; the client's first stage has no backward.
// By hand: the batch loses that transfer and stage 0's backward.
TEST(SimulatorTest, AGradientNobodyNeedsIsNotSent) {
  Plan p = linked_ushape();
  p.stages[0].param_count = p.stages[0].frozen_param_count = 100;  // frozen
  p.stages[1].param_count = 10;
  drop_unneeded_gradients(p);
  ASSERT_FALSE(p.boundaries[0].needs_gradient);
  ASSERT_TRUE(p.boundaries[1].needs_gradient);
  EXPECT_EQ(p.stages[0].bwd_s, std::vector<double>{0.0});
  const Timeline tl = simulate(p);
  for (const auto& e : tl.events)
    EXPECT_FALSE(e.boundary == 0 && e.backward &&
                 (e.kind == EventKind::kSend || e.kind == EventKind::kRecv))
        << event_name(e);
  const Metrics m = compute_metrics(tl, p, p.warmup);
  // Stage 0 waits for no gradient: it forwards the next batch while the
  // server works, and that batch's activation is there before the server
  // is done. The batch is the cycle server F, second cut, client F and B,
  // second cut back, server B (the U-shape test's less stage 0 and the
  // first cut both ways).
  const double cycle = 4e-3 + 2 * (1e-4 + 1e4 / 1e9) + 1e-3 + 2e-3 + 8e-3;
  EXPECT_NEAR(m.time_per_batch_s, cycle, 1e-9);
  EXPECT_DOUBLE_EQ(m.party("server")->bytes_sent_per_batch, 10000);
  EXPECT_DOUBLE_EQ(m.party("server")->bytes_sent_per_batch, p.bytes_sent("server"));
  EXPECT_DOUBLE_EQ(m.party("client")->bytes_received_per_batch, p.bytes_received("client"));
}

TEST(SimulatorTest, StagesOnOnePartyNeverComputeAtOnce) {
  const Plan p = ushape(3e-3, 3e-3, 1e-3, 1e-3, Schedule::kGpipe, 4);
  const Timeline tl = simulate(p);
  double last_end = 0;
  for (const auto& e : tl.events)  // sorted by start
    if (tl.parties[e.party] == "client" && is_compute(e.kind)) {
      EXPECT_GE(e.start_s, last_end - 1e-12) << event_name(e);
      last_end = e.end_s;
    }
}

TEST(SimulatorTest, AdjacentStagesOnOnePartyUseNoNetwork) {
  Plan p = equal_stages(3, 1, kTf, kTb, Schedule::kSequential, 4, 1, {"a", "a", "b"});
  set_wire_bytes(&p, 0, 1000000, 1000000);
  set_wire_bytes(&p, 1, 1000, 1000);
  const Metrics m = run(p);
  EXPECT_DOUBLE_EQ(m.party("a")->bytes_sent_per_batch, 1000);
  EXPECT_NEAR(m.time_per_batch_s, 3 * (kTf + kTb) + 2 * 1000 / 1e9, 1e-9);
}

TEST(SimulatorTest, SameInputGivesByteIdenticalOutput) {
  Plan p = ushape(1e-3, 2e-3, 4e-3, 8e-3, Schedule::k1F1B, 4);
  p.network.latency_s = 1e-4;
  set_wire_bytes(&p, 0, 123457, 98765);
  set_wire_bytes(&p, 1, 4321, 4321);
  const std::string a = nlohmann::json(run(p)).dump();
  const std::string b = nlohmann::json(run(p)).dump();
  EXPECT_EQ(a, b);
  std::ostringstream trace_a, trace_b;
  write_chrome_trace(simulate(p), trace_a);
  write_chrome_trace(simulate(p), trace_b);
  EXPECT_EQ(trace_a.str(), trace_b.str());
  const auto many = simulate_many({p, p, p}, {}, 2);
  for (const auto& tl : many) EXPECT_EQ(nlohmann::json(compute_metrics(tl, p, p.warmup)).dump(), a);
}

TEST(SimulatorTest, RefusesBadPlansBeforeForking) {
  Plan p = equal_stages(2, 1, kTf, kTb, Schedule::kSequential);
  p.warmup = p.iterations;
  EXPECT_THROW(simulate(p), InputError);
  Plan q = equal_stages(2, 2, kTf, kTb, Schedule::kSequential);
  q.stages[1].bwd_s.pop_back();
  EXPECT_THROW(simulate(q), std::invalid_argument);
}

TEST(SimulatorDeathTest, OneEnginePerProcess) {
  const Plan p = equal_stages(2, 1, kTf, kTb, Schedule::kSequential, 3, 1);
  EXPECT_EXIT(
      {
        simulate_in_process(p);
        try {
          simulate_in_process(p);
        } catch (const std::logic_error&) {
          std::_Exit(0);
        }
        std::_Exit(1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace splitsim
