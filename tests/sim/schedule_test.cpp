// The schedules' operation orders against literal tables.
#include "splitsim/sim/schedule.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "splitsim/costmodel/planner.h"

namespace splitsim {
namespace {

std::string ops(Schedule s, int k, int K, int64_t m, int64_t batches) {
  return to_string(stage_ops(s, k, K, m, batches));
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
  for (Schedule s : {Schedule::kSequential, Schedule::kGpipe, Schedule::k1F1B, Schedule::kPipeDream,
                     Schedule::kDdg, Schedule::kFr})
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
          EXPECT_EQ(seen.size(), static_cast<size_t>(4 * (2 * m + 1))) << schedule_name(s);
        }
}

TEST(ScheduleTest, InFlightForwardsMatchThePlannersStashCounts) {
  for (Schedule s : {Schedule::kSequential, Schedule::kGpipe, Schedule::k1F1B, Schedule::kPipeDream,
                     Schedule::kDdg, Schedule::kFr})
    for (int K : {2, 3, 5})
      for (int64_t m : {1, 4}) {
        if ((s == Schedule::kDdg || s == Schedule::kFr) && m > 1) continue;  // see schedule.h
        for (int k = 0; k < K; ++k)
          EXPECT_EQ(peak_in_flight(stage_ops(s, k, K, m, 8)), stashed_microbatches(s, k, K, m))
              << schedule_name(s) << " k=" << k << " K=" << K << " m=" << m;
      }
}

}  // namespace
}  // namespace splitsim
