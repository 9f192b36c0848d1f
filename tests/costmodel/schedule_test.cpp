// The schedules: names, operation orders against literal tables, and the
// planner's stash counts against the orders.
#include "splitsim/costmodel/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "splitsim/costmodel/planner.h"
#include "toy_plan.h"

namespace splitsim {
namespace {

// The schedules whose stage orders stand alone for any K and m (not
// interleaved_1f1b: its stages' orders come from their parties').
std::vector<Schedule> stand_alone_schedules() {
  std::vector<Schedule> out;
  for (Schedule s : all_schedules())
    if (s != Schedule::kInterleaved1F1B) out.push_back(s);
  return out;
}

std::string ops(Schedule s, int k, int K, int64_t m, int64_t batches, int v = 1) {
  return to_string(stage_ops(s, k, K, m, batches, v));
}

TEST(ScheduleTest, SequentialRunsEachMicrobatchForwardAndBackwardThenUpdates) {
  EXPECT_EQ(ops(Schedule::kSequential, 1, 2, 2, 2),
            "F0.0 B0.0 F0.1 B0.1 U0 F1.0 B1.0 F1.1 B1.1 U1");
}

TEST(ScheduleTest, GpipeRunsAllForwardsThenBackwardsInReverse) {
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(ops(Schedule::kGpipe, k, 3, 3, 2),
              "F0.0 F0.1 F0.2 B0.2 B0.1 B0.0 U0 F1.0 F1.1 F1.2 B1.2 B1.1 B1.0 U1");
}

TEST(ScheduleTest, OneFOneBWarmsUpWithKMinusKForwards) {
  const char* table[] = {
      "F0.0 F0.1 F0.2 F0.3 B0.0 B0.1 B0.2 B0.3 U0",
      "F0.0 F0.1 F0.2 B0.0 F0.3 B0.1 B0.2 B0.3 U0",
      "F0.0 F0.1 B0.0 F0.2 B0.1 F0.3 B0.2 B0.3 U0",
      "F0.0 B0.0 F0.1 B0.1 F0.2 B0.2 F0.3 B0.3 U0",
  };
  for (int k = 0; k < 4; ++k) EXPECT_EQ(ops(Schedule::k1F1B, k, 4, 4, 1), table[k]) << k;
  // Fewer micro-batches than stages: the warm-up is cut to m.
  EXPECT_EQ(ops(Schedule::k1F1B, 0, 4, 2, 1), "F0.0 F0.1 B0.0 B0.1 U0");
}

TEST(ScheduleTest, PipeDreamNeverFlushesAndUpdatesAfterEachBatch) {
  const char* table[] = {
      "F0.0 F1.0 F2.0 B0.0 U0 F3.0 B1.0 U1 B2.0 U2 B3.0 U3",
      "F0.0 F1.0 B0.0 U0 F2.0 B1.0 U1 F3.0 B2.0 U2 B3.0 U3",
      "F0.0 B0.0 U0 F1.0 B1.0 U1 F2.0 B2.0 U2 F3.0 B3.0 U3",
  };
  for (int k = 0; k < 3; ++k) EXPECT_EQ(ops(Schedule::kPipeDream, k, 3, 1, 4), table[k]) << k;
  EXPECT_EQ(ops(Schedule::kPipeDream, 0, 2, 2, 2), "F0.0 F0.1 B0.0 F1.0 B0.1 U0 F1.1 B1.0 B1.1 U1");
}

// ZB-H1 as the zero-bubble repository's schedule (exact semantics) orders
// it: K-k-1 warm-up forwards, k forward-backward pairs with their weight
// passes deferred, F B W, B W, then the deferred Ws.
TEST(ScheduleTest, ZeroBubbleH1DefersKWeightPassesAtStageK) {
  const char* table[] = {
      "F0.0 F0.1 F0.2 F0.3 B0.0 W0.0 B0.1 W0.1 B0.2 W0.2 B0.3 W0.3 U0",
      "F0.0 F0.1 F0.2 B0.0 F0.3 B0.1 W0.0 B0.2 W0.1 B0.3 W0.2 W0.3 U0",
      "F0.0 F0.1 B0.0 F0.2 B0.1 F0.3 B0.2 W0.0 B0.3 W0.1 W0.2 W0.3 U0",
      "F0.0 B0.0 F0.1 B0.1 F0.2 B0.2 F0.3 B0.3 W0.0 W0.1 W0.2 W0.3 U0",
  };
  for (int k = 0; k < 4; ++k) EXPECT_EQ(ops(Schedule::kZbH1, k, 4, 4, 1), table[k]) << k;
  // More micro-batches than stages: F B W in the middle.
  EXPECT_EQ(ops(Schedule::kZbH1, 1, 3, 6, 1),
            "F0.0 F0.1 B0.0 F0.2 B0.1 W0.0 F0.3 B0.2 W0.1 F0.4 B0.3 W0.2 F0.5 B0.4 W0.3 B0.5 W0.4 "
            "W0.5 U0");
  // Fewer: the warm-up is cut to m.
  EXPECT_EQ(ops(Schedule::kZbH1, 2, 4, 2, 1), "F0.0 F0.1 B0.0 B0.1 W0.0 W0.1 U0");
  EXPECT_TRUE(splits_backward(Schedule::kZbH1));
  EXPECT_TRUE(is_synchronous(Schedule::kZbH1));
  for (Schedule s : stand_alone_schedules()) {
    if (s == Schedule::kZbH1) continue;
    EXPECT_FALSE(splits_backward(s)) << schedule_name(s);
    for (const Op& op : stage_ops(s, 0, 3, 2, 2)) EXPECT_NE(op.kind, OpKind::kWeight);
  }
  // Each W after its B, in the order of the Bs; every stage keeps min(m, K)
  // micro-batches until their W (1f1b's first stage's count).
  for (int K = 1; K <= 5; ++K)
    for (int k = 0; k < K; ++k)
      for (int64_t m = 1; m <= 8; ++m) {
        std::vector<int64_t> bs, ws;
        for (const Op& op : stage_ops(Schedule::kZbH1, k, K, m, 1)) {
          if (op.kind == OpKind::kBackward) bs.push_back(op.microbatch);
          if (op.kind == OpKind::kWeight) {
            ws.push_back(op.microbatch);
            EXPECT_LE(ws.size(), bs.size());
          }
        }
        EXPECT_EQ(ws, bs);
        EXPECT_EQ(stashed_microbatches(Schedule::kZbH1, k, K, m), std::min<int64_t>(m, K))
            << "k=" << k << " K=" << K << " m=" << m;
        const int64_t waiting = waiting_weight_passes(Schedule::kZbH1, k, K, m);
        EXPECT_LE(waiting, std::min<int64_t>(k + 1, m));
        if (m >= K) {
          EXPECT_EQ(waiting, k + 1) << "k=" << k << " K=" << K << " m=" << m;
        }
        EXPECT_EQ(waiting_weight_passes(Schedule::k1F1B, k, K, m), 0);
      }
}

// A party's order under interleaved_1f1b, each op with its stage ("F0.1@2").
std::string device(int d, int p, int v, int64_t m) {
  std::string out;
  for (const StageOp& s : device_ops(d, p, v, m, 1))
    out += (out.empty() ? "" : " ") + to_string(s.op) + "@" + std::to_string(s.stage);
  return out;
}

// Megatron-LM's interleaved order: 2 (p-d-1) + (v-1) p warm-up forwards
// (all when m = p), chunk by chunk in groups of p micro-batches, backwards
// from the last chunk.
TEST(ScheduleTest, InterleavedOneFOneBFollowsMegatronsOrder) {
  EXPECT_EQ(device(0, 2, 2, 4),
            "F0.0@0 F0.1@0 F0.0@2 F0.1@2 F0.2@0 B0.0@2 F0.3@0 B0.1@2 F0.2@2 B0.0@0 F0.3@2 B0.1@0 "
            "B0.2@2 B0.3@2 B0.2@0 B0.3@0 U0@0 U0@2");
  EXPECT_EQ(device(1, 2, 2, 4),
            "F0.0@1 F0.1@1 F0.0@3 B0.0@3 F0.1@3 B0.1@3 F0.2@1 B0.0@1 F0.3@1 B0.1@1 F0.2@3 B0.2@3 "
            "F0.3@3 B0.3@3 B0.2@1 B0.3@1 U0@1 U0@3");
  // m = p: every forward first.
  EXPECT_EQ(device(1, 2, 2, 2),
            "F0.0@1 F0.1@1 F0.0@3 F0.1@3 B0.0@3 B0.1@3 B0.0@1 B0.1@1 U0@1 U0@3");
  EXPECT_EQ(device(2, 3, 2, 3),
            "F0.0@2 F0.1@2 F0.2@2 F0.0@5 F0.1@5 F0.2@5 B0.0@5 B0.1@5 B0.2@5 B0.0@2 B0.1@2 B0.2@2 "
            "U0@2 U0@5");
  // A stage's own order is its part of its party's.
  EXPECT_EQ(ops(Schedule::kInterleaved1F1B, 3, 4, 4, 1, 2),
            "F0.0 B0.0 F0.1 B0.1 F0.2 B0.2 F0.3 B0.3 U0");
  // Every op of every stage once per batch, each backward after its forward.
  for (int p = 2; p <= 4; ++p)
    for (int v = 2; v <= 3; ++v)
      for (int64_t m = p; m <= 8; m += p) {
        const int K = p * v;
        std::map<int, std::vector<Op>> by_stage;
        for (int d = 0; d < p; ++d)
          for (const StageOp& s : device_ops(d, p, v, m, 2)) {
            EXPECT_EQ(s.stage % p, d);
            by_stage[s.stage].push_back(s.op);
          }
        ASSERT_EQ(by_stage.size(), static_cast<size_t>(K));
        for (int k = 0; k < K; ++k) {
          const auto& list = by_stage[k];
          EXPECT_EQ(list, stage_ops(Schedule::kInterleaved1F1B, k, K, m, 2, v));
          EXPECT_EQ(list.size(), static_cast<size_t>(2 * (2 * m + 1)));
          std::set<std::pair<int64_t, int64_t>> forwarded;
          for (const Op& op : list) {
            if (op.kind == OpKind::kForward) forwarded.insert({op.batch, op.microbatch});
            if (op.kind == OpKind::kBackward) {
              EXPECT_TRUE(forwarded.count({op.batch, op.microbatch})) << to_string(op);
            }
          }
        }
      }
  EXPECT_TRUE(is_synchronous(Schedule::kInterleaved1F1B));
}

TEST(ScheduleTest, InterleavingNeedsPartiesThatTakeTurns) {
  using P = std::vector<std::string>;
  EXPECT_EQ(virtual_stages_of(P{"c", "s", "c", "s"}), 2);
  EXPECT_EQ(virtual_stages_of(P{"a", "b", "c", "a", "b", "c"}), 2);
  EXPECT_EQ(virtual_stages_of(P{"c", "s", "c"}), 0);  // a U-shape
  EXPECT_EQ(virtual_stages_of(P{"c", "s"}), 1);
  EXPECT_EQ(virtual_stages_of(P{"c", "s", "s", "c"}), 0);
  EXPECT_EQ(interleaving_problem(P{"c", "s", "c", "s"}, 4, 2), "");
  EXPECT_NE(interleaving_problem(P{"c", "s", "c"}, 4, 2).find("take turns"), std::string::npos);
  EXPECT_NE(interleaving_problem(P{"c", "s", "c", "s"}, 3, 2).find("multiple of the 2 parties"),
            std::string::npos);
  EXPECT_NE(interleaving_problem(P{"c", "s", "c", "s"}, 4, 3).find("disagrees"), std::string::npos);
}

TEST(ScheduleTest, DdgAndFrDelayTheBackwardByKMinusOneMinusKIterations) {
  const char* table[] = {
      "F0.0 S0 F1.0 S1 B0.0 U0 S2 B1.0 U1 S3",
      "F0.0 S0 F1.0 B0.0 U0 S1 B1.0 U1 S2 S3",
      "F0.0 B0.0 U0 S0 F1.0 B1.0 U1 S1 S2 S3",
  };
  for (Schedule s : {Schedule::kDdg, Schedule::kFr})
    for (int k = 0; k < 3; ++k) EXPECT_EQ(ops(s, k, 3, 1, 2), table[k]) << schedule_name(s) << k;
  EXPECT_TRUE(has_iteration_barrier(Schedule::kDdg));
  EXPECT_TRUE(has_iteration_barrier(Schedule::kFr));
  EXPECT_FALSE(has_iteration_barrier(Schedule::kPipeDream));
}

TEST(ScheduleTest, EveryOpAppearsOnceAndUpdatesFollowTheirBackwards) {
  for (Schedule s : stand_alone_schedules())
    for (int K : {1, 2, 5})
      for (int64_t m : {1, 3})
        for (int k = 0; k < K; ++k) {
          const auto list = stage_ops(s, k, K, m, 4);
          std::set<std::tuple<int, int64_t, int64_t>> seen;
          std::vector<int64_t> backwards_done(4, 0);
          for (const Op& op : list) {
            if (op.kind == OpKind::kBarrier) continue;
            EXPECT_TRUE(seen.insert({static_cast<int>(op.kind), op.batch, op.microbatch}).second)
                << to_string(op);
            if (op.kind == OpKind::kBackward) {
              EXPECT_TRUE(seen.count({static_cast<int>(OpKind::kForward), op.batch, op.microbatch}))
                  << "backward before forward: " << to_string(op);
              ++backwards_done[op.batch];
            }
            if (op.kind == OpKind::kUpdate) {
              EXPECT_EQ(backwards_done[op.batch], m) << to_string(op);
            }
          }
          const int64_t passes = splits_backward(s) ? 3 : 2;  // F, B (and W)
          EXPECT_EQ(seen.size(), static_cast<size_t>(4 * (passes * m + 1))) << schedule_name(s);
        }
}

TEST(ScheduleTest, NamesRoundTripAndUnknownNamesAreRefused) {
  ASSERT_EQ(all_schedules().size(), schedule_names().size());
  for (size_t i = 0; i < all_schedules().size(); ++i) {
    EXPECT_EQ(schedule_names()[i], schedule_name(all_schedules()[i]));
    Schedule s = Schedule::kSequential;
    EXPECT_TRUE(schedule_from_name(schedule_names()[i], &s)) << schedule_names()[i];
    EXPECT_EQ(s, all_schedules()[i]);
  }
  EXPECT_EQ(schedule_names(), (std::vector<std::string>{"sequential", "gpipe", "1f1b", "pipedream",
                                                        "ddg", "fr", "zb_h1", "interleaved_1f1b"}));
  Schedule s = Schedule::kGpipe;
  EXPECT_FALSE(schedule_from_name("GPipe", &s));
  EXPECT_FALSE(schedule_from_name("", &s));
  EXPECT_EQ(s, Schedule::kGpipe);
}

TEST(ScheduleTest, InFlightForwardsFollowTheSchedulesClosedForms) {
  // Literal values first: ddg/fr keep whole delayed batches, m micro-batches each.
  EXPECT_EQ(peak_in_flight(stage_ops(Schedule::kDdg, 0, 3, 4, 6)), 12);
  EXPECT_EQ(peak_in_flight(stage_ops(Schedule::kFr, 1, 3, 4, 6)), 8);
  EXPECT_EQ(peak_in_flight(stage_ops(Schedule::kFr, 2, 3, 4, 6)), 4);
  EXPECT_EQ(peak_in_flight(stage_ops(Schedule::k1F1B, 0, 4, 2, 3)), 2);
  EXPECT_EQ(peak_in_flight(stage_ops(Schedule::kPipeDream, 1, 4, 2, 3)), 3);
  for (int K = 1; K <= 5; ++K)
    for (int k = 0; k < K; ++k)
      for (int64_t m = 1; m <= 8; ++m) {
        const int64_t steady = peak_in_flight(stage_ops(Schedule::kSequential, k, K, m, K + 3));
        EXPECT_EQ(steady, 1);
        EXPECT_EQ(peak_in_flight(stage_ops(Schedule::kGpipe, k, K, m, K + 3)), m);
        EXPECT_EQ(peak_in_flight(stage_ops(Schedule::k1F1B, k, K, m, K + 3)),
                  std::min<int64_t>(m, K - k));
        EXPECT_EQ(peak_in_flight(stage_ops(Schedule::kPipeDream, k, K, m, K + 3)), K - k);
        for (Schedule s : {Schedule::kDdg, Schedule::kFr})
          EXPECT_EQ(peak_in_flight(stage_ops(s, k, K, m, K + 3)), (K - k) * m)
              << schedule_name(s) << " k=" << k << " K=" << K << " m=" << m;
      }
}

TEST(ScheduleTest, StashCountIsTheSteadyStatePeakOfTheOrder) {
  // stashed_microbatches runs K batches; running more keeps no more in flight,
  // and K-1 batches are too few for some.
  for (Schedule s : stand_alone_schedules())
    for (int K = 1; K <= 5; ++K)
      for (int k = 0; k < K; ++k)
        for (int64_t m = 1; m <= 8; ++m) {
          const int64_t stash = stashed_microbatches(s, k, K, m);
          EXPECT_EQ(stash, peak_in_flight(stage_ops(s, k, K, m, K)));
          EXPECT_EQ(stash, peak_in_flight(stage_ops(s, k, K, m, 3 * K + 2)))
              << schedule_name(s) << " k=" << k << " K=" << K << " m=" << m;
        }
  EXPECT_LT(peak_in_flight(stage_ops(Schedule::kDdg, 0, 4, 2, 3)),
            stashed_microbatches(Schedule::kDdg, 0, 4, 2));
  EXPECT_LT(peak_in_flight(stage_ops(Schedule::kPipeDream, 0, 4, 1, 3)),
            stashed_microbatches(Schedule::kPipeDream, 0, 4, 1));
}

// K units of 100 parameters; stash 512 bytes per sample each.
ModelProfile chain_model(int K) { return toy_plan::chain_of("chain", K, {8}, 1); }

TEST(ScheduleTest, PlannerKeepsTheOrdersPeakInFlightAtEveryStage) {
  for (int K = 1; K <= 5; ++K) {
    const ModelProfile model = chain_model(K);
    std::map<std::string, DeviceProfile> devices;
    Scenario sc;
    sc.name = "stash";
    sc.batch_size = 8;
    for (int k = 0; k < K; ++k) {
      const std::string party = "p" + std::to_string(k), unit = "u" + std::to_string(k);
      sc.partition.push_back({party, unit, unit});
      sc.devices[party] = "d";
      DeviceProfile d;
      d.name = "d";
      d.peak_flops = 1e9;
      d.memory_bandwidth_Bps = 1e9;
      devices[party] = d;
    }
    sc.compression.resize(static_cast<size_t>(K - 1));
    for (Schedule s : stand_alone_schedules())
      for (int64_t m = 1; m <= 8; ++m) {
        sc.schedule = s;
        sc.chunks = m;
        const Plan plan = make_plan(sc, model, devices);
        ASSERT_EQ(plan.stages.size(), static_cast<size_t>(K));
        for (int k = 0; k < K; ++k) {
          const PlanStage& st = plan.stages[static_cast<size_t>(k)];
          EXPECT_EQ(st.stashed_microbatches, peak_in_flight(stage_ops(s, k, K, m, 2 * K + 1)))
              << schedule_name(s) << " k=" << k << " K=" << K << " m=" << m;
          EXPECT_EQ(st.weight_versions, weight_versions(s, k, K, m));
        }
      }
  }
}

TEST(ScheduleTest, PipeDreamKeepsTheWeightVersionsItsForwardsInFlightHold) {
  // By hand, K = 2, m = 2, stage 0 (the order is the PipeDream test's):
  // F0.0 F0.1 B0.0 F1.0 (v0) B0.1 U0 -> live v1 and F1.0's v0 = 2;
  // F1.1 (v1) B1.0 -> v1 only.
  EXPECT_EQ(peak_weight_versions(stage_ops(Schedule::kPipeDream, 0, 2, 2, 2)), 2);
  // K = 4, m = 3, stage 0: F0.0 F0.1 F0.2 F1.0, B0.0 F1.1, B0.1 F1.2 all
  // with v0; B0.2 U0 -> live v1 and v0 held by F1.0-F1.2 = 2; F2.0 (v1) B1.0
  // F2.1 B1.1 F2.2 B1.2 U1 -> live v2 and v1 held by F2.* = 2 (as m = 1
  // would give 4).
  EXPECT_EQ(weight_versions(Schedule::kPipeDream, 0, 4, 3), 2);
  // m = 1: each forward in flight holds a version of its own.
  const int64_t one[] = {4, 3, 2, 1};
  for (int k = 0; k < 4; ++k) EXPECT_EQ(weight_versions(Schedule::kPipeDream, k, 4, 1), one[k]);
  // The closed form, 1 + ceil((K-k-1)/m), for K <= 6, m <= 8, and the
  // count of a longer run is no larger (steady state reached).
  for (int K = 1; K <= 6; ++K)
    for (int k = 0; k < K; ++k)
      for (int64_t m = 1; m <= 8; ++m) {
        const int64_t versions = weight_versions(Schedule::kPipeDream, k, K, m);
        EXPECT_EQ(versions, 1 + (K - k - 1 + m - 1) / m) << "k=" << k << " K=" << K << " m=" << m;
        EXPECT_EQ(peak_weight_versions(stage_ops(Schedule::kPipeDream, k, K, m, 5 * K)), versions);
      }
  // The others stash nothing: one version.
  for (Schedule s : all_schedules()) {
    if (s == Schedule::kPipeDream) continue;
    EXPECT_EQ(weight_versions(s, 0, 4, 4), 1) << schedule_name(s);
  }
}

TEST(ScheduleTest, CooldownLetsTheLastMeasuredBatchEndInSteadyState) {
  EXPECT_EQ(cooldown_batches(Schedule::kDdg, 4, 3), 3);
  EXPECT_EQ(cooldown_batches(Schedule::kFr, 1, 3), 0);
  EXPECT_EQ(cooldown_batches(Schedule::kPipeDream, 4, 1), 3);
  EXPECT_EQ(cooldown_batches(Schedule::kPipeDream, 4, 2), 2);
  EXPECT_EQ(cooldown_batches(Schedule::kPipeDream, 4, 3), 1);
  EXPECT_EQ(cooldown_batches(Schedule::k1F1B, 4, 3), 0);
  EXPECT_EQ(cooldown_batches(Schedule::kGpipe, 4, 3), 0);
}

// Synchronous: at every stage, each batch's operations all come before the
// next batch's (the order itself says which schedules are).
TEST(ScheduleTest, SynchronousSchedulesFinishEachBatchBeforeTheNext) {
  for (Schedule s : stand_alone_schedules()) {
    bool batches_in_order = true;
    for (int k = 0; k < 3; ++k) {
      int64_t last_batch = 0;
      for (const Op& op : stage_ops(s, k, 3, 2, 4)) {
        batches_in_order &= op.batch >= last_batch;
        last_batch = std::max(last_batch, op.batch);
      }
    }
    EXPECT_EQ(is_synchronous(s), batches_in_order) << schedule_name(s);
  }
  EXPECT_TRUE(is_synchronous(Schedule::k1F1B));
  EXPECT_FALSE(is_synchronous(Schedule::kPipeDream));
}

}  // namespace
}  // namespace splitsim
