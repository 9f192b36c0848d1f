// make_run_spec: what a real run needs, derived once from a variant and its plan.
#include "splitsim/costmodel/run_spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

using Shape = std::vector<int64_t>;

// A U-shape of batch 4 (client, server, client); boundary 0 carries
// [8, 6, 6] through `codec`, boundary 1 [16].
ScenarioVariant variant_and_plan(const CodecSpec& codec, Plan* plan) {
  ScenarioVariant v;
  v.label = "chunks=2";
  v.scenario.model.name = "resnet20";
  v.scenario.seed = 7;
  v.scenario.compute_precision = "fp16";
  v.scenario.precision = "bf16";
  v.json = {{"name", "u"}, {"chunks", 2}};
  plan->iterations = 20;
  plan->warmup = 2;
  for (const std::string party : {"client", "server", "client"}) {
    PlanStage st;
    st.party = party;
    plan->stages.push_back(st);
  }
  PlanBoundary b0;
  b0.from_stage = 0;
  b0.to_stage = 1;
  b0.activation_shape = {4, 8, 6, 6};
  b0.forward.codec = codec;
  PlanBoundary b1;
  b1.from_stage = 1;
  b1.to_stage = 2;
  b1.activation_shape = {4, 16};
  plan->boundaries = {b0, b1};
  return v;
}

TEST(RunSpecTest, HoldsThePlanTheTopologyAndTheScenariosSettings) {
  Plan plan;
  const ScenarioVariant v = variant_and_plan(CodecSpec{}, &plan);
  const RunSpec r = make_run_spec(v, plan);
  EXPECT_EQ(r.plan.iterations, 20);
  EXPECT_EQ(r.plan.warmup, 2);
  EXPECT_EQ(r.topology.world_size(), 2);
  EXPECT_EQ(r.topology.server_party, "server");
  EXPECT_EQ(r.topology.rank_of(0, 0), 1);
  EXPECT_EQ(r.topology.rank_of(1, 0), 0);
  EXPECT_EQ(r.seed, 7u);
  EXPECT_EQ(r.activation_dtype, WireDType::kBF16);
  EXPECT_EQ(r.loss_scale, 128);  // fp16 compute's default
  EXPECT_EQ(r.label, "chunks=2");
  EXPECT_EQ(r.identity, v.json);  // the scenario's own iterations: not repeated
}

TEST(RunSpecTest, BoundaryShapesArePerSampleAndCarriedAsAtTheFirstStep) {
  Plan plan;
  CodecSpec conv;
  conv.method = CodecMethod::kConvInsert;
  conv.out_channels = 2;
  conv.kernel = 2;
  conv.stride = 2;
  const RunSpec r = make_run_spec(variant_and_plan(conv, &plan), plan);
  ASSERT_EQ(r.boundaries.size(), 2u);
  EXPECT_EQ(r.boundaries[0].activation_shape, (Shape{8, 6, 6}));
  EXPECT_EQ(r.boundaries[0].carried_shape, (Shape{2, 3, 3}));
  EXPECT_EQ(r.boundaries[1].activation_shape, (Shape{16}));
  EXPECT_EQ(r.boundaries[1].carried_shape, (Shape{16}));
}

TEST(RunSpecTest, ChangedIterationsKeepTheWarmupBelowThemAndEnterTheIdentity) {
  Plan plan;
  const ScenarioVariant v = variant_and_plan(CodecSpec{}, &plan);
  RunChanges changes;
  changes.iterations = 2;
  changes.seed = 11;
  changes.dataset = "cifar10";
  const RunSpec r = make_run_spec(v, plan, changes);
  EXPECT_EQ(r.plan.iterations, 2);
  EXPECT_EQ(r.plan.warmup, 1);
  EXPECT_EQ(r.identity.at("iterations"), 2);
  EXPECT_EQ(r.seed, 11u);
  EXPECT_EQ(r.dataset, "cifar10");
  changes.warmup = 0;
  EXPECT_EQ(make_run_spec(v, plan, changes).plan.warmup, 0);
}

// Client groups differ in device and link, which the processes' machines
// and the shaping around them give (scenarios/many_clients/): exec runs each
// of their clients as one more client process.
TEST(RunSpecTest, ClientGroupsRunAsThatManyClientProcesses) {
  Plan plan;
  const ScenarioVariant v = variant_and_plan(CodecSpec{}, &plan);
  plan.clients = 3;
  PlanClientGroup slow, fast;
  slow.name = "slow";
  slow.count = 1;
  fast.name = "fast";
  fast.count = 2;
  plan.client_groups = {slow, fast};
  const RunSpec r = make_run_spec(v, plan);
  EXPECT_EQ(r.topology.clients, 3);
  EXPECT_EQ(r.topology.world_size(), 4);
  for (int c = 0; c < 3; ++c) EXPECT_EQ(r.topology.rank_of(0, c), c + 1);
}

}  // namespace
}  // namespace splitsim
