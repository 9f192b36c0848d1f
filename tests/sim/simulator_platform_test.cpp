// The platform's host work against hand-computed timelines: CPU seconds per
// byte sent and received (competing with compute while a transfer runs), per
// message (a call on the stage's own actor, in its turn on the party's
// processor), the co-compute slowdown of parties that share one machine, and
// the wake cost of a computation after a wait.
#include <gtest/gtest.h>

#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "test_plans.h"

namespace splitsim {
namespace {

using testing::equal_stages;
using testing::set_wire_bytes;
using testing::ushape;

constexpr double kPlatformRel = 1e-6;

Metrics simulate_steady(const Plan& plan) {
  return compute_metrics(simulate(plan), plan, plan.warmup);
}

// Where an event of stage `stage`, kind `kind`, starts in batch `batch`.
double start_of(const Timeline& t, EventKind kind, int stage, int64_t batch, int64_t mb) {
  for (const TimelineEvent& e : t.events)
    if (e.kind == kind && e.stage == stage && e.batch == batch && e.microbatch == mb)
      return e.start_s;
  ADD_FAILURE() << "no such event";
  return -1;
}

// client | server, GPipe with 2 micro-batches: the client's forward of 10 ms
// per micro-batch, nothing else computes; 1e6 bytes up per micro-batch at
// 1e8 B/s (10 ms each), nothing comes back.
Plan streaming_client() {
  Plan p = equal_stages(2, 2, 0, 0, Schedule::kGpipe, 6, 2, {"client", "server"});
  p.stages[0].fwd_s.assign(2, 10e-3);
  p.network.bandwidth_bit_per_s = 8e8;
  set_wire_bytes(&p, 0, 1000000, 0);
  return p;
}

TEST(SimulatorPlatformTest, WithoutHostWorkTransfersOverlapCompute) {
  // F0 0..10, xfer0 10..20 beside F1 10..20, xfer1 20..30.
  const Metrics m = simulate_steady(streaming_client());
  EXPECT_NEAR(m.time_per_batch_s / 30e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(m.party("client")->busy_s_per_batch / 20e-3, 1.0, kPlatformRel);
}

TEST(SimulatorPlatformTest, SendWorkSlowsTheComputeItOverlaps) {
  // 5e-9 s/B: 5 ms of work per message spread over its 10 ms (half the
  // core). F1 shares the core with xfer0's work from 10 to 20 ms (half
  // speed, 5 ms done), then runs alone to 25; xfer1 25..35.
  Plan p = streaming_client();
  p.platform.cpu_s_per_byte_sent = 5e-9;
  const Metrics m = simulate_steady(p);
  EXPECT_NEAR(m.time_per_batch_s / 35e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(m.party("client")->busy_s_per_batch / 25e-3, 1.0, kPlatformRel);
  // The work is the host's, not compute: no event, no bytes changed.
  EXPECT_DOUBLE_EQ(m.party("client")->bytes_sent_per_batch, 2e6);
}

TEST(SimulatorPlatformTest, HostWorkOverHalfTheHostTakesWhatItAsksAndComputeTheRest) {
  // 7.5e-9 s/B: 7.5 ms of work per 10 ms message, 3/4 of the core. As the
  // kernel preempts the training thread, F1 runs at 1/4 from 10 to 20 (2.5
  // ms done) while xfer0's work keeps pace and the message arrives with
  // its last byte at 20 (shared evenly, the work would get half the core
  // and hold it back to 25); F1 then runs alone to 27.5, xfer1 27.5..37.5.
  Plan p = streaming_client();
  p.platform.cpu_s_per_byte_sent = 7.5e-9;
  const Timeline t = simulate(p);
  const Metrics m = compute_metrics(t, p, p.warmup);
  EXPECT_NEAR(m.time_per_batch_s / 37.5e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(m.party("client")->busy_s_per_batch / 27.5e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(
      (start_of(t, EventKind::kForward, 1, 3, 0) - start_of(t, EventKind::kForward, 0, 3, 0)) /
          20e-3,
      1.0, kPlatformRel);
}

TEST(SimulatorPlatformTest, ReceiveWorkRunsOnTheReceiver) {
  // The server computes nothing: its work slows no compute, and 5 ms per
  // 10 ms transfer never holds a message back.
  Plan p = streaming_client();
  p.platform.cpu_s_per_byte_received = 5e-9;
  const Metrics m = simulate_steady(p);
  EXPECT_NEAR(m.time_per_batch_s / 30e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(m.party("client")->busy_s_per_batch / 20e-3, 1.0, kPlatformRel);
}

TEST(SimulatorPlatformTest, HostWorkLongerThanTheWireHoldsTheMessage) {
  // 2e-8 s/B: 20 ms of work per 10 ms of wire. The receiver is idle, so
  // each message arrives when its work is done: 0..10 F0, xfer0 10..30 (F1
  // shares nothing: the work is the server's), xfer1 30..50.
  Plan p = streaming_client();
  p.platform.cpu_s_per_byte_received = 2e-8;
  const Metrics m = simulate_steady(p);
  EXPECT_NEAR(m.time_per_batch_s / 50e-3, 1.0, kPlatformRel);
}

// Where a message ends (its send event's end) in batch `batch`.
double end_of_send(const Timeline& t, int stage, int64_t batch, int64_t mb) {
  for (const TimelineEvent& e : t.events)
    if (e.kind == EventKind::kSend && e.stage == stage && e.batch == batch && e.microbatch == mb)
      return e.end_s;
  ADD_FAILURE() << "no such send";
  return -1;
}

TEST(SimulatorPlatformTest, AOneTensorMessageTheBucketPassesAtOnceDoesNotWaitForItsHostWork) {
  // htb's packets of 65,160 B, a bucket of 20,000 B; 10,000 B up per
  // micro-batch, one packet each; the server's work 1e-7 s/B: 1 ms per
  // message, and the server computes nothing. F0 10 ms, F1 0.1 ms: message
  // 0 arrives as F0 ends; message 1, posted 0.1 ms later, waits for message
  // 0's work (to 1 ms after F0) and then passes at once.
  Plan p = equal_stages(2, 2, 0, 0, Schedule::kGpipe, 6, 2, {"client", "server"});
  p.stages[0].fwd_s = {10e-3, 0.1e-3};
  p.network.bandwidth_bit_per_s = 8e8;
  p.network.burst_bytes = 20000;
  p.network.burst_packet_bytes = 65160;
  set_wire_bytes(&p, 0, 10000, 0);
  p.platform.cpu_s_per_byte_received = 1e-7;
  const Timeline t = simulate(p);
  const double f0_end = start_of(t, EventKind::kForward, 0, 3, 1);
  EXPECT_NEAR(end_of_send(t, 0, 3, 0), f0_end, 1e-9);
  EXPECT_NEAR(end_of_send(t, 0, 3, 1), f0_end + 1e-3, 1e-9);
  // Two tensors (data, then an 8 B scale): the scale is held until the
  // data's work is done, so message 0 arrives 1 ms after F0 and message 1
  // 1 ms after that.
  p.boundaries[0].forward.last_tensor_bytes.assign(p.microbatch_sizes.size(), 8);
  const Timeline pair = simulate(p);
  const double pair_f0_end = start_of(pair, EventKind::kForward, 0, 3, 1);
  EXPECT_NEAR(end_of_send(pair, 0, 3, 0), pair_f0_end + 1e-3, 1e-9);
  EXPECT_NEAR(end_of_send(pair, 0, 3, 1), pair_f0_end + 2e-3, 1e-9);
  p.boundaries[0].forward.last_tensor_bytes.clear();
  // On the fluid link the same work keeps pace with the wire (0.1 ms):
  // the message waits for it.
  p.network.burst_bytes = p.network.burst_packet_bytes = 0;
  const Timeline fluid = simulate(p);
  EXPECT_NEAR(end_of_send(fluid, 0, 3, 0) - start_of(fluid, EventKind::kForward, 0, 3, 1), 1e-3,
              1e-9);
}

TEST(SimulatorPlatformTest, TheSendCallPerTensorRunsOnTheSendingStage) {
  // 2.5 ms per tensor sent, 2 tensors per forward transfer: after F0
  // (0..10) the client's stage posts xfer0 (10..20) and makes the call
  // (10..15) before F1 (15..25); xfer1 25..35, call 25..30. Backward: the
  // server's gradients carry no bytes but are a message each: B1 at 35
  // posts (it arrives at once) and calls 35..37.5, B0 posts at 37.5. The
  // client takes B0's gradient at 37.5 and starts the next batch: 37.5 ms
  // per batch, of which the client computes 20 (the calls are not compute).
  Plan p = streaming_client();
  p.boundaries[0].forward.wire_messages = 2;
  p.platform.cpu_s_per_message_sent = 2.5e-3;
  EXPECT_TRUE(p.platform.any());
  const Timeline t = simulate(p);
  const Metrics m = compute_metrics(t, p, p.warmup);
  EXPECT_NEAR(m.time_per_batch_s / 37.5e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(m.party("client")->busy_s_per_batch / 20e-3, 1.0, kPlatformRel);
  const double f0 = start_of(t, EventKind::kForward, 0, 3, 0);
  EXPECT_NEAR((start_of(t, EventKind::kForward, 0, 3, 1) - f0) / 15e-3, 1.0, kPlatformRel);
  EXPECT_NEAR((start_of(t, EventKind::kSend, 0, 3, 1) - f0) / 25e-3, 1.0, kPlatformRel);
  // One tensor per transfer: half the call.
  p.boundaries[0].forward.wire_messages = 1;
  const Timeline one = simulate(p);
  EXPECT_NEAR(
      (start_of(one, EventKind::kForward, 0, 3, 1) - start_of(one, EventKind::kForward, 0, 3, 0)) /
          12.5e-3,
      1.0, kPlatformRel);
}

TEST(SimulatorPlatformTest, TheReceivePostPerTransferRunsOnTheReceivingStage) {
  // 20 ms per transfer received, however many tensors it carries, paid by
  // the receiving stage before it takes the message. The server posts
  // before F0 (0..20; xfer0 10..20 is there) and F1 (20..40; xfer1 20..30
  // waited), so its gradients leave at 40. The client posts before B1
  // (20..40) and B0 (40..60) and starts the next batch at 60; the server,
  // posting again from 40, is ready before the next xfer0 ends (70..80).
  // 60 ms per batch.
  Plan q = streaming_client();
  q.platform.cpu_s_per_message_received = 20e-3;
  Metrics m = simulate_steady(q);
  EXPECT_NEAR(m.time_per_batch_s / 60e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(m.party("client")->busy_s_per_batch / 20e-3, 1.0, kPlatformRel);
  q.boundaries[0].forward.wire_messages = 2;
  EXPECT_NEAR(simulate_steady(q).time_per_batch_s / 60e-3, 1.0, kPlatformRel);
}

TEST(SimulatorPlatformTest, TransportCallsTakeTheProcessorInTurnWithThePartysOtherStage) {
  // U-shape, GPipe, 2 micro-batches, 10 ms forwards, free links, 4 ms per
  // tensor sent. Client stage 0: F0 0..10, its call 10..14, F1 14..24, call
  // 24..28, each call in the stage's turn on the client's processor. The
  // server: F0 10..20, call 20..24; its message is at the client at 20, but
  // stage 2 takes the processor only when stage 0's call lets it go: F0 at
  // 28 (sharing the host with the call instead, it would start at 24).
  Plan p = ushape(10e-3, 0, 10e-3, 0, Schedule::kGpipe, 2);
  p.platform.cpu_s_per_message_sent = 4e-3;
  const Timeline t = simulate(p);
  EXPECT_NEAR(start_of(t, EventKind::kForward, 0, 0, 1) / 14e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(start_of(t, EventKind::kForward, 1, 0, 0) / 10e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(start_of(t, EventKind::kForward, 2, 0, 0) / 28e-3, 1.0, kPlatformRel);
  // The same on the receiving side: 4 ms per transfer received, paid
  // before the stage takes it. The server: call 0..4, F0 10..20, call
  // 20..24, F1 24..34. The client: stage 0's F0 0..10 (stage 0's actor
  // comes first), stage 2's first call waits for it and runs 10..14 while
  // stage 0's F1 waits (sharing the host, F1 would start at 10).
  Plan q = ushape(10e-3, 0, 10e-3, 0, Schedule::kGpipe, 2);
  q.platform.cpu_s_per_message_received = 4e-3;
  const Timeline u = simulate(q);
  EXPECT_NEAR(start_of(u, EventKind::kForward, 1, 0, 1) / 24e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(start_of(u, EventKind::kForward, 0, 0, 1) / 14e-3, 1.0, kPlatformRel);
}

TEST(SimulatorPlatformTest, APartysOwnHostWorkAddsToThePlatforms) {
  // The same 20 ms of receive work per message as above, half of it the
  // platform's and half the server's own; the client's own work on what it
  // receives (nothing) changes nothing.
  Plan p = streaming_client();
  p.platform.cpu_s_per_byte_received = 1e-8;
  p.platform.parties["server"].cpu_s_per_byte_received = 1e-8;
  p.platform.parties["client"].cpu_s_per_byte_received = 5e-8;
  EXPECT_DOUBLE_EQ(p.platform.received_s_per_byte("server"), 2e-8);
  EXPECT_DOUBLE_EQ(p.platform.received_s_per_byte("gpu1"), 1e-8);
  EXPECT_NEAR(simulate_steady(p).time_per_batch_s / 50e-3, 1.0, kPlatformRel);
  // The client's own send work (5e-9 s/B) slows its F1 as the platform's did.
  Plan q = streaming_client();
  q.platform.parties["client"].cpu_s_per_byte_sent = 5e-9;
  EXPECT_TRUE(q.platform.any());
  EXPECT_NEAR(simulate_steady(q).time_per_batch_s / 35e-3, 1.0, kPlatformRel);
}

// client | server, GPipe, 2 micro-batches, free links, forwards only: the
// client's F1 runs while the server's F0 does.
Plan overlapping(double client_f, double server_f) {
  Plan p = equal_stages(2, 2, 0, 0, Schedule::kGpipe, 6, 2, {"client", "server"});
  p.stages[0].fwd_s.assign(2, client_f);
  p.stages[1].fwd_s.assign(2, server_f);
  return p;
}

TEST(SimulatorPlatformTest, CoComputeSlowdownAppliesOnlyOnASharedMachine) {
  // Alone: c F0 0..10, c F1 & s F0 10..20, s F1 20..30.
  Plan p = overlapping(10e-3, 10e-3);
  p.platform.co_compute_slowdown = 2;
  EXPECT_NEAR(simulate_steady(p).time_per_batch_s / 30e-3, 1.0, kPlatformRel);  // not shared: ignored
  // Shared, 2x while both compute: the overlap takes 20 ms, s F1 30..40.
  p.platform.shared_machine = true;
  const Metrics m = simulate_steady(p);
  EXPECT_NEAR(m.time_per_batch_s / 40e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(m.party("server")->busy_s_per_batch / 30e-3, 1.0, kPlatformRel);
}

TEST(SimulatorPlatformTest, CoComputeSlowdownEndsWhenThePeerStops) {
  // s F0 (5 ms) and c F1 (10 ms) start together at 10 at half speed; s F0
  // ends at 20, c F1 has 5 ms left at full speed: 25; s F1 25..30.
  Plan p = overlapping(10e-3, 5e-3);
  p.platform.shared_machine = true;
  p.platform.co_compute_slowdown = 2;
  const Metrics m = simulate_steady(p);
  EXPECT_NEAR(m.time_per_batch_s / 30e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(m.party("client")->busy_s_per_batch / 25e-3, 1.0, kPlatformRel);
}

TEST(SimulatorPlatformTest, WakeCostIsPaidAfterAWaitByItsLength) {
  // c F0, c F1 | s F0, s F1 at 10 ms each: only c F0 and s F0 start after a
  // wait (c F1 and s F1 follow their own party's computation at once).
  // Flat 2 ms past 5 ms: c F0 0..12, c F1 12..22, s F0 12..24 (it waited
  // since the last batch's s F1), s F1 24..34.
  Plan p = overlapping(10e-3, 10e-3);
  p.platform.wake_cost = {{5e-3, 2e-3}};
  Metrics m = simulate_steady(p);
  EXPECT_NEAR(m.time_per_batch_s / 34e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(m.party("client")->busy_s_per_batch / 22e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(m.party("server")->busy_s_per_batch / 22e-3, 1.0, kPlatformRel);
  // Rising to 4 ms at 20 ms (0.2 s per second of wait): each party waits
  // 10 ms plus the other's cost w, so w = 0.2 (10 ms + w) = 2.5 ms, reached
  // within 0.2^2 per batch from the first batch's 2 ms.
  p.platform.wake_cost = {{20e-3, 4e-3}};
  p.iterations = 24;
  p.warmup = 12;
  m = simulate_steady(p);
  EXPECT_NEAR(m.time_per_batch_s / 35e-3, 1.0, kPlatformRel);
  EXPECT_NEAR(m.party("client")->busy_s_per_batch / 22.5e-3, 1.0, kPlatformRel);
}

}  // namespace
}  // namespace splitsim
