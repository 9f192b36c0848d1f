// make_plan's memory on a synthetic model with known costs: the stash by
// schedule, each party's peak (parameters, gradients, optimizer state, stash,
// working memory, the step's temporaries) and mixed precision's copies.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/planner.h"
#include "toy_plan.h"

namespace splitsim {
namespace {

using namespace toy_plan;  // NOLINT: the fixtures

TEST(PlannerTest, StashTableBySchedule) {
  // K = 4 stages, m = 8 micro-batches.
  const int K = 4;
  const int64_t m = 8;
  const int64_t gpipe[] = {8, 8, 8, 8}, f1b1[] = {4, 3, 2, 1}, pd[] = {4, 3, 2, 1};
  for (int k = 0; k < K; ++k) {
    EXPECT_EQ(stashed_microbatches(Schedule::kSequential, k, K, m), 1);
    EXPECT_EQ(stashed_microbatches(Schedule::kGpipe, k, K, m), gpipe[k]);
    EXPECT_EQ(stashed_microbatches(Schedule::k1F1B, k, K, m), f1b1[k]);
    EXPECT_EQ(stashed_microbatches(Schedule::kPipeDream, k, K, m), pd[k]);
    EXPECT_EQ(stashed_microbatches(Schedule::kDdg, k, K, m), pd[k] * m);
    EXPECT_EQ(stashed_microbatches(Schedule::kFr, k, K, 1), pd[k]);
    // pipedream's K-k micro-batches in flight, all of one batch but at the
    // turn of a batch: the live weights and the ones the older forwards hold.
    EXPECT_EQ(weight_versions(Schedule::kPipeDream, k, K, m), k + 1 < K ? 2 : 1);
    EXPECT_EQ(weight_versions(Schedule::kPipeDream, k, K, 1), pd[k]);
    EXPECT_EQ(weight_versions(Schedule::kGpipe, k, K, m), 1);
  }
  EXPECT_EQ(stashed_microbatches(Schedule::k1F1B, 0, K, 2), 2);  // fewer micro-batches than stages
}

TEST(PlannerTest, PeakMemoryAddsParamsGradsStateAndStash) {
  Scenario s = ushape();
  s.optimizer.name = "adamw";
  const Plan plan = make_plan(s, toy_model(), devices());
  const PlanStage& st = plan.stages[1];
  EXPECT_EQ(st.optimizer_state_bytes, 2 * 800);
  // Per micro-batch of 4: u1's and u2's stash and the input received from u0.
  EXPECT_EQ(st.stash_bytes_per_microbatch, 2 * 512 * 4 + 512 * 4);
  EXPECT_EQ(st.stashed_microbatches, 2);
  // u2's backward holds the gradient received for its output; u1's comes
  // after u2's stash is freed.
  EXPECT_EQ(st.work_bytes, 512 * 4);
  EXPECT_EQ(st.input_bytes, 0);
  // gpipe, m = 2: the stage's ops are F0 F1 B1 B0 U per batch, receives
  // posted for the next 2m + 2 = 6 ops; at B1: B0, U, F0', F1', B1', B0' =
  // 2 activations and 3 gradients of 2,048 bytes each (codec none).
  EXPECT_EQ(st.recv_bytes, 5 * 2048);
  EXPECT_EQ(st.peak_memory_bytes, 800 + 800 + 1600 + 2 * 6144 + 2048 + 10240);
  EXPECT_EQ(plan.stages[0].input_bytes, 8 * 512);  // the batch: 8 samples of [8,4,4] floats
  // Mixed precision as autocast holds it: FP32 weights and their half
  // copies (x1.5), FP32 gradients and optimizer state, the units' stash in
  // half precision (x0.5) but the received input and gradient in FP32 (the
  // wire's decoded tensors); the wire's bytes are the codec's.
  s.compute_precision = "fp16";
  const Plan mixed = make_plan(s, toy_model(), devices());
  EXPECT_EQ(mixed.stages[1].stash_bytes_per_microbatch, 4096 / 2 + 2048);
  EXPECT_EQ(mixed.stages[1].work_bytes, 2048);
  EXPECT_EQ(mixed.stages[1].peak_memory_bytes,
            1200 + 800 + 2 * (4096 / 2 + 2048) + 2048 + 1600 + 10240);
  EXPECT_EQ(mixed.compute_precision, "fp16");
}

// The loss runs on FP32 logits under mixed precision: its share of the last
// unit's stash and working memory does not halve; the rest does.
TEST(PlannerTest, MixedPrecisionKeepsTheLossesShareInFp32) {
  ModelProfile m = toy_model();
  UnitProfile& head = m.units[3];  // the U-shape's client tail, stage 2
  head.loss_stash_bytes_per_sample = 256;
  head.bwd_work_bytes_per_sample = 1000;
  head.loss_bwd_work_bytes_per_sample = 600;
  Scenario s = ushape();
  const Plan fp32 = make_plan(s, m, devices());
  EXPECT_EQ(fp32.stages[2].stash_bytes_per_microbatch, (512 + 512) * 4);  // + the received input
  EXPECT_EQ(fp32.stages[2].work_bytes, 1000 * 4);
  s.compute_precision = "bf16";
  const Plan mixed = make_plan(s, m, devices());
  EXPECT_EQ(mixed.stages[2].stash_bytes_per_microbatch, ((512 - 256) / 2 + 256 + 512) * 4);
  EXPECT_EQ(mixed.stages[2].work_bytes, ((1000 - 600) / 2 + 600) * 4);
  // The client holds one working memory, the larger, as the stages count it.
  EXPECT_EQ(party_peak_memory_bytes(mixed, {0, 2}),
            mixed.stages[0].peak_memory_bytes + mixed.stages[2].peak_memory_bytes -
                std::min(mixed.stages[0].work_bytes, mixed.stages[2].work_bytes));
  // Without a loss share, the whole unit halves.
  m.units[3].loss_stash_bytes_per_sample = m.units[3].loss_bwd_work_bytes_per_sample = 0;
  const Plan halved = make_plan(s, m, devices());
  EXPECT_EQ(halved.stages[2].stash_bytes_per_microbatch, (512 / 2 + 512) * 4);
  EXPECT_EQ(halved.stages[2].work_bytes, 1000 / 2 * 4);
}

// A backward's working memory counts above the stash of the units before
// it: the units after it have freed theirs. A party running several stages
// holds one working memory at a time.
TEST(PlannerTest, WorkingMemoryIsTheHungriestBackwardAboveTheStash) {
  ModelProfile m = toy_model();
  m.units[1].bwd_work_bytes_per_sample = 1000;
  m.units[2].bwd_work_bytes_per_sample = 3000;
  const Plan plan = make_plan(ushape(), m, devices());
  // u2 (last): 3000 + its received gradient 512; u1: 1000 less u2's stash.
  EXPECT_EQ(plan.stages[1].work_bytes, (3000 + 512) * 4);
  m.units[1].bwd_work_bytes_per_sample = 9000;
  EXPECT_EQ(make_plan(ushape(), m, devices()).stages[1].work_bytes, (9000 - 512) * 4);
  m.units[0].bwd_work_bytes_per_sample = 700;
  m.units[3].bwd_work_bytes_per_sample = 100;
  const Plan p = make_plan(ushape(), m, devices());
  const int64_t w0 = p.stages[0].work_bytes, w2 = p.stages[2].work_bytes;
  EXPECT_EQ(w0, (700 + 512) * 4);
  EXPECT_EQ(w2, 100 * 4);
  EXPECT_EQ(party_peak_memory_bytes(p, {0, 2}),
            p.stages[0].peak_memory_bytes + p.stages[2].peak_memory_bytes - w2);
  EXPECT_EQ(party_peak_memory_bytes(p, {1}), p.stages[1].peak_memory_bytes);
}

// The optimizer's step comes after the backwards: its temporaries (copies of
// the largest trainable tensor) count instead of the stash and working
// memory where they are larger; while one stage of a party steps, its other
// stages may still hold their stash.
TEST(PlannerTest, TheOptimizersStepCountsWhereItHoldsMore) {
  ModelProfile m = toy_model();
  for (UnitProfile& u : m.units) u.largest_trainable_tensor_bytes = 300;
  Scenario s = ushape();
  s.optimizer.name = "adam";
  s.optimizer.weight_decay = 0.1;  // 3 copies
  Plan p = make_plan(s, m, devices());
  // Weights, gradients, adam's two moments of u1 and u2, the posted receives.
  const int64_t held1 = 800 + 800 + 2 * 800 + p.stages[1].recv_bytes;
  EXPECT_EQ(p.stages[1].step_bytes, 3 * 300);
  EXPECT_EQ(p.stages[1].activation_bytes(), 2 * 6144 + 2048);
  EXPECT_EQ(p.stages[1].peak_memory_bytes, held1 + 2 * 6144 + 2048);
  m.units[2].largest_trainable_tensor_bytes = 10000;
  p = make_plan(s, m, devices());
  EXPECT_EQ(p.stages[1].step_bytes, 30000);
  EXPECT_EQ(p.stages[1].peak_memory_bytes, held1 + 30000);
  // The client: stage 0 (u0, holding the batch) steps beside stage 2's stash.
  m.units[0].largest_trainable_tensor_bytes = 20000;
  p = make_plan(s, m, devices());
  const PlanStage &s0 = p.stages[0], &s2 = p.stages[2];
  const int64_t held0 = 400 + 400 + 800 + s0.input_bytes + s0.recv_bytes;
  const int64_t held2 = 400 + 400 + 800 + s2.recv_bytes;
  EXPECT_EQ(s0.peak_memory_bytes, held0 + 60000);
  EXPECT_EQ(party_peak_memory_bytes(p, {0, 2}),
            held0 + held2 + 60000 + s2.stash_bytes_per_microbatch * s2.stashed_microbatches);
}

// Mixed precision copies the weights of the units that run matmuls or
// convolutions (autocast's half-precision copies); an embedding's table,
// looked up and not multiplied, is not copied.
TEST(PlannerTest, MixedPrecisionCopiesTheWeightsOfUnitsThatMultiply) {
  ModelProfile m = toy_model();
  Scenario s = ushape();
  const Plan fp32 = make_plan(s, m, devices());
  s.compute_precision = "bf16";
  const Plan mixed = make_plan(s, m, devices());
  auto held = [](const PlanStage& st) {
    return st.peak_memory_bytes - std::max(st.activation_bytes(), st.step_bytes);
  };
  EXPECT_EQ(held(mixed.stages[0]) - held(fp32.stages[0]), 400 / 2);
  m.units[0].fwd = OpCounts{};  // u0 becomes a lookup: no MACs
  m.units[0].fwd.elementwise_elems = 128;
  EXPECT_EQ(held(make_plan(s, m, devices()).stages[0]), held(fp32.stages[0]));
}

}  // namespace
}  // namespace splitsim
