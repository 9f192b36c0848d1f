// make_plan on a synthetic model with known costs.
#include "splitsim/costmodel/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "splitsim/costmodel/errors.h"
#include "toy_plan.h"

namespace splitsim {
namespace {

using namespace toy_plan;  // NOLINT: the fixtures

TEST(PlannerTest, StagesCarryUnitsMacsAndSeconds) {
  const Plan plan = make_plan(ushape(), toy_model(), devices());
  ASSERT_EQ(plan.stages.size(), 3u);
  EXPECT_EQ(plan.stages[1].units, (std::vector<std::string>{"u1", "u2"}));
  EXPECT_EQ(plan.stages[1].fwd_per_batch.macs(), 2 * 1000 * 8);
  EXPECT_EQ(plan.stages[1].bwd_per_batch.macs(), 2 * 2000 * 8);
  EXPECT_EQ(plan.microbatch_sizes, (std::vector<int64_t>{4, 4}));
  // client: 1e6 MAC/s; one micro-batch of u0 = 4000 MACs = 4 ms.
  ASSERT_EQ(plan.stages[0].fwd_s.size(), 2u);
  EXPECT_DOUBLE_EQ(plan.stages[0].fwd_s[0], 4e-3);
  EXPECT_DOUBLE_EQ(plan.stages[1].bwd_s[1], 2 * 2000 * 4 / 1e7);
}

TEST(PlannerTest, OpClassSharesAreTheFormulasTermsPerMicroBatch) {
  // u0 carries per-op cost as well: 10 ops of 1 ms per micro-batch beside its
  // matmuls (4 ms per micro-batch on the client), so the shares move with
  // the micro-batch size.
  ModelProfile m = toy_model();
  m.units[0].fwd.ops = 10;
  auto devs = devices();
  devs["client"].efficiency.per_op_s = 1e-3;
  Scenario s = ushape();
  s.chunks = 4;  // micro-batches of 2: 2 ms of matmuls, 10 ms of ops
  const Plan plan = make_plan(s, m, devs);
  ASSERT_EQ(plan.stages[0].fwd_op_class_shares.size(), 4u);
  const OpClassParts& f = plan.stages[0].fwd_op_class_shares[0];
  EXPECT_DOUBLE_EQ(f.matmul, 2e-3 / 12e-3);
  EXPECT_DOUBLE_EQ(f.per_op, 10e-3 / 12e-3);
  EXPECT_DOUBLE_EQ(f.conv + f.depthwise + f.elementwise, 0);
  EXPECT_DOUBLE_EQ(plan.stages[0].fwd_s[0], 12e-3);
  const OpClassParts& b = plan.stages[1].bwd_op_class_shares[3];
  EXPECT_DOUBLE_EQ(b.matmul, 1.0);
}

TEST(PlannerTest, BoundaryBytesFollowTheCodec) {
  Scenario s = ushape();
  s.compression[0].forward.method = CodecMethod::kFp16;
  const Plan plan = make_plan(s, toy_model(), devices());
  ASSERT_EQ(plan.boundaries.size(), 2u);
  EXPECT_EQ(plan.boundaries[0].activation_shape, (std::vector<int64_t>{8, 8, 4, 4}));
  EXPECT_EQ(plan.boundaries[0].forward.wire_bytes_per_batch, 8 * 128 * 2);
  EXPECT_EQ(plan.boundaries[0].backward.wire_bytes_per_batch, 8 * 128 * 4);
  EXPECT_EQ(plan.bytes_sent("client"), 8 * 128 * 2 + 8 * 128 * 4);
  EXPECT_EQ(plan.bytes_received("client"), 8 * 128 * 4 + 8 * 128 * 4);
  EXPECT_EQ(plan.bytes_sent("server"), plan.bytes_received("client"));
  // One tensor on the wire each way: one message per micro-batch.
  EXPECT_EQ(plan.boundaries[0].forward.wire_messages, 1);
  EXPECT_EQ(plan.boundaries[0].backward.wire_messages, 1);
}

TEST(PlannerTest, MessagesAreTheCodecsTensorsOnTheWire) {
  Scenario s = ushape();
  s.compression[0].forward.method = CodecMethod::kPowerIteration;  // the factors P and Q
  s.compression[0].forward.rank = 2;
  s.compression[1].backward.method = CodecMethod::kQuantize;  // values, and min and scale
  const Plan plan = make_plan(s, toy_model(), devices());
  const std::vector<int64_t> shape(plan.boundaries[0].activation_shape.begin() + 1,
                                   plan.boundaries[0].activation_shape.end());
  EXPECT_EQ(plan.boundaries[0].forward.wire_messages,
            static_cast<int64_t>(wire_layout(s.compression[0].forward, shape, 4).size()));
  EXPECT_EQ(plan.boundaries[0].forward.wire_messages, 2);
  EXPECT_EQ(plan.boundaries[0].backward.wire_messages, 1);
  EXPECT_EQ(plan.boundaries[1].backward.wire_messages, 2);
  EXPECT_EQ(plan.boundaries[1].backward.wire_messages,
            static_cast<int64_t>(
                wire_layout(s.compression[1].backward, plan.boundaries[1].backward.carried_shape, 4)
                    .size()));
  // The last tensor of each micro-batch, for a shaper that lets it through
  // last: Q ([rank, W] per sample, 4 samples), the quantizer's 8 B of
  // scale; none where one tensor is the whole message.
  const auto& pi = plan.boundaries[0].forward;
  ASSERT_EQ(pi.last_tensor_bytes.size(), pi.wire_bytes.size());
  for (size_t i = 0; i < pi.wire_bytes.size(); ++i) {
    const auto layout = wire_layout(s.compression[0].forward, shape, plan.microbatch_sizes[i]);
    EXPECT_EQ(pi.last_tensor_bytes[i], layout.back().bytes());
    EXPECT_LT(pi.last_tensor_bytes[i], pi.wire_bytes[i]);
  }
  EXPECT_EQ(plan.boundaries[1].backward.last_tensor_bytes,
            std::vector<int64_t>(plan.microbatch_sizes.size(), 8));
  EXPECT_TRUE(plan.boundaries[0].backward.last_tensor_bytes.empty());
}

TEST(PlannerTest, MeasuredCodecTimingsWinOverTheFormulaWhereTheyMatch) {
  Scenario s = ushape();
  s.compression[0].forward.method = CodecMethod::kQuantize;  // 8 bits
  s.compression[1].forward.method = CodecMethod::kFp16;      // no timing matches it
  s.compression[1].backward.method = CodecMethod::kFp16;
  const Plan formula = make_plan(s, toy_model(), devices());
  const std::string q8 = codec_to_json(s.compression[0].forward).dump();
  const std::string none = codec_to_json(s.compression[0].backward).dump();
  auto devs = devices();
  // Boundary 0 carries [8,4,4] per sample in micro-batches of 4.
  // Timings of one encode and decode (none of the backward's).
  auto timing = [](const std::string& codec, int64_t batch, double encode_s, double decode_s) {
    CodecTiming t;
    t.codec = codec;
    t.shape = {8, 4, 4};
    t.batch = batch;
    t.encode_s = encode_s;
    t.decode_s = decode_s;
    return t;
  };
  devs["client"].codec_timings = {timing(q8, 4, 0.011, 0.5),     // encode on the client
                                  timing(q8, 2, 0.9, 0.9),       // another micro-batch
                                  timing(none, 4, 0.5, 0.013)};  // gradient decode
  devs["server"].codec_timings = {timing(q8, 4, 0.5, 0.017),     // decode on the server
                                  timing(none, 4, 0.019, 0.5)};  // gradient encode
  const Plan plan = make_plan(s, toy_model(), devs);
  const PlanBoundary& b = plan.boundaries[0];
  EXPECT_EQ(b.forward.encode_s, (std::vector<double>{0.011, 0.011}));
  EXPECT_EQ(b.forward.decode_s, (std::vector<double>{0.017, 0.017}));
  EXPECT_EQ(b.backward.encode_s, (std::vector<double>{0.019, 0.019}));
  EXPECT_EQ(b.backward.decode_s, (std::vector<double>{0.013, 0.013}));
  // The stages' passes carry them beside the model's seconds, which stay:
  // the client's forward gains the encode, the server's the decode.
  const auto forward = [](const Plan& p, int k) {
    return Plan::forward_total(p.forward_pass(k, Plan::kOwnCosts, 0));
  };
  EXPECT_EQ(plan.stages[0].fwd_s, formula.stages[0].fwd_s);
  EXPECT_EQ(plan.stages[1].fwd_s, formula.stages[1].fwd_s);
  EXPECT_NEAR(forward(plan, 0) - forward(formula, 0),
              0.011 - formula.boundaries[0].forward.encode_s[0], 1e-12);
  EXPECT_NEAR(forward(plan, 1) - forward(formula, 1),
              0.017 - formula.boundaries[0].forward.decode_s[0], 1e-12);
  // Boundary 1 has no timing: the formula, unchanged.
  EXPECT_EQ(plan.boundaries[1].forward.encode_s, formula.boundaries[1].forward.encode_s);
  EXPECT_EQ(plan.boundaries[1].backward.decode_s, formula.boundaries[1].backward.decode_s);
}

TEST(PlannerTest, AFixedCodecsBackwardRunsNothing) {
  // A quantizer does no work in the backward (the gradient comes back through
  // the backward codec), so with per-op overhead priced the stages' backward
  // is that of the uncompressed plan; only the forward carries encode/decode.
  auto devs = devices();
  for (auto& [party, d] : devs) d.efficiency.per_op_s = 1e-3;
  Scenario s = ushape();
  const Plan none = make_plan(s, toy_model(), devs);
  s.compression[0].forward.method = CodecMethod::kQuantize;
  s.compression[1].forward.method = CodecMethod::kTopK;
  const Plan fixed = make_plan(s, toy_model(), devs);
  for (size_t k = 0; k < fixed.stages.size(); ++k)
    EXPECT_EQ(fixed.stages[k].bwd_s, none.stages[k].bwd_s) << "stage " << k;
  EXPECT_EQ(fixed.stages[0].fwd_s, none.stages[0].fwd_s);  // the model's
  EXPECT_GT(fixed.forward_pass(0, Plan::kOwnCosts, 0).encode, 0.0);
}

TEST(PlannerTest, ATrainableInsertsMeasuredBackwardWinsOverTheFormula) {
  Scenario s = ushape();
  CodecSpec& insert = s.compression[0].forward;  // client -> server, [8,4,4]
  insert.method = CodecMethod::kConvInsert;
  insert.out_channels = 2;
  insert.kernel = 1;
  insert.stride = 1;
  const std::string key = codec_to_json(insert).dump();
  const auto plan_with = [&](std::optional<double> sender, std::optional<double> receiver) {
    auto devs = devices();
    CodecTiming t{key, {8, 4, 4}, 4, 0.001, 0.002, sender, receiver};
    devs["client"].codec_timings = {t};
    devs["server"].codec_timings = {t};
    return make_plan(s, toy_model(), devs);
  };
  const Plan formula = plan_with(std::nullopt, std::nullopt);
  const Plan a = plan_with(0.3, 0.2), b = plan_with(0.7, 0.5);
  // The sender's backward through carry lands on the client's first stage,
  // the receiver's through expand on the server's, each exactly as measured.
  EXPECT_NEAR(b.stages[0].bwd_s[0] - a.stages[0].bwd_s[0], 0.4, 1e-12);
  EXPECT_NEAR(b.stages[1].bwd_s[0] - a.stages[1].bwd_s[0], 0.3, 1e-12);
  EXPECT_EQ(a.stages[2].bwd_s, formula.stages[2].bwd_s);
  // Unmeasured, the formula prices it: more than nothing, less than 0.3 s.
  EXPECT_GT(formula.stages[0].bwd_s[0], a.stages[0].bwd_s[0] - 0.3);
  EXPECT_LT(formula.stages[0].bwd_s[0], a.stages[0].bwd_s[0]);
}

TEST(PlannerTest, UnevenChunksSplitLikeTorchChunk) {
  Scenario s = ushape();
  s.batch_size = 10;
  s.chunks = 4;
  EXPECT_EQ(make_plan(s, toy_model(), devices()).microbatch_sizes,
            (std::vector<int64_t>{3, 3, 2, 2}));
}

TEST(PlannerTest, MeasuredTimingsWinOverTheFormula) {
  auto devs = devices();
  devs["server"].measured_model = "toy";
  devs["server"].measured_input_shape = {8, 4, 4};
  devs["server"].measured_batch = 2;
  devs["server"].timings = {{"u1", 0.1, 0.2, 0.01}, {"u2", 0.3, 0.4, 0.02}};
  const Plan plan = make_plan(ushape(), toy_model(), devs);
  EXPECT_TRUE(plan.stages[1].timed_from_measurement);
  EXPECT_NEAR(plan.stages[1].fwd_s[0], (0.1 + 0.3) * 4 / 2, 1e-12);
  EXPECT_NEAR(plan.stages[1].update_s, 0.03, 1e-12);
  EXPECT_FALSE(plan.stages[0].timed_from_measurement);
}

TEST(PlannerTest, UnknownUnitNamesTheAllowedOnes) {
  Scenario s = ushape();
  s.partition[1].to = "u9";
  try {
    make_plan(s, toy_model(), devices());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$.partition[1].to");
    EXPECT_NE(std::string(e.what()).find("\"u3\""), std::string::npos);
  }
}

// interleaved_1f1b: the parties must take turns and m be a multiple of
// them; the plan carries v, and each stage's stash is read off its part of
// its party's order. Refusals name the scenario's key.
TEST(PlannerTest, InterleavingTakesItsStagesPerPartyFromThePartition) {
  Scenario s = ushape();
  s.schedule = Schedule::kInterleaved1F1B;
  s.chunks = 4;
  auto where = [&](const Scenario& sc) {
    try {
      make_plan(sc, toy_model(), devices());
    } catch (const InputError& e) {
      return e.where();
    }
    return std::string("none");
  };
  EXPECT_EQ(where(s), "$.partition");  // a U-shape does not take turns
  s.partition = {{"client", "u0", "u0"},
                 {"server", "u1", "u1"},
                 {"client", "u2", "u2"},
                 {"server", "u3", "u3"}};
  s.compression.resize(3);
  const Plan plan = make_plan(s, toy_model(), devices());
  EXPECT_EQ(plan.virtual_stages, 2);
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(plan.stages[k].stashed_microbatches,
              peak_in_flight(stage_ops(Schedule::kInterleaved1F1B, k, 4, 4, 4, 2)));
  EXPECT_EQ(plan.stages[0].stashed_microbatches, 4);  // 2 (p-1) + (v-1) p = 4 warm-up forwards
  s.chunks = 3;
  EXPECT_EQ(where(s), "$.chunks");
  s.chunks = 4;
  s.virtual_stages = 4;
  EXPECT_EQ(where(s), "$.virtual_stages");
  s.virtual_stages = 2;
  EXPECT_EQ(where(s), "none");
  s.schedule = Schedule::k1F1B;
  EXPECT_EQ(where(s), "$.virtual_stages");  // only interleaved_1f1b takes it
}

TEST(PlannerTest, AModuleNameMeansAllItsUnits) {
  ModelProfile m = toy_model();
  m.units[1].name = "block.0";
  m.units[2].name = "block.1";
  Scenario by_units = ushape();
  by_units.partition[1].from = "block.0";
  by_units.partition[1].to = "block.1";
  Scenario by_module = by_units;
  by_module.partition[1].from = "block";
  by_module.partition[1].to = "block";
  const Plan want = make_plan(by_units, m, devices());
  const Plan got = make_plan(by_module, m, devices());
  EXPECT_EQ(got.stages[1].units, (std::vector<std::string>{"block.0", "block.1"}));
  EXPECT_EQ(nlohmann::json(got).dump(), nlohmann::json(want).dump());
  // A prefix of a name is not a module: "bloc" holds no "bloc.*" unit.
  by_module.partition[1].to = "bloc";
  EXPECT_THROW(make_plan(by_module, m, devices()), InputError);
}

TEST(PlannerTest, GapsAndOverlapsAreRefused) {
  Scenario s = ushape();
  s.partition[1].from = "u2";
  EXPECT_THROW(make_plan(s, toy_model(), devices()), InputError);
  s = ushape();
  s.partition[2] = {"client", "u3", "u2"};
  EXPECT_THROW(make_plan(s, toy_model(), devices()), InputError);
  s = ushape();
  s.partition.pop_back();
  s.compression.pop_back();
  EXPECT_THROW(make_plan(s, toy_model(), devices()), InputError);  // u3 not covered
}

TEST(PlannerTest, CutAcrossASkipConnectionIsRefusedWithTheValidCuts) {
  ModelProfile m = toy_model();
  m.units[2].inputs = {1, 0};  // u0's output also feeds u2: two tensors cross before u2
  Scenario s = ushape();
  s.partition = {{"client", "u0", "u1"}, {"server", "u2", "u2"}, {"client", "u3", "u3"}};
  EXPECT_NO_THROW(make_plan(ushape(), m, devices()));  // cuts before u1 and u3 are fine
  try {
    make_plan(s, m, devices());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$.partition[1].from");
    EXPECT_NE(std::string(e.what()).find("valid cuts"), std::string::npos);
  }
}

TEST(PlannerTest, CodecThatDoesNotApplyNamesTheBoundary) {
  Scenario s = ushape();
  s.compression[1].forward.method = CodecMethod::kLinearInsert;  // needs [T,H]
  s.compression[1].forward.out_features = 2;
  try {
    make_plan(s, toy_model(), devices());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().rfind("$.compression[1].forward", 0), 0u) << e.where();
  }
}

TEST(PlannerTest, PartyWithoutDeviceIsRefused) {
  auto devs = devices();
  devs.erase("server");
  EXPECT_THROW(make_plan(ushape(), toy_model(), devs), InputError);
}

// The MAC terms run at the compute precision's peak where the device lists
// one; a device without it computes at its FP32 peak.
TEST(PlannerTest, ComputePrecisionUsesTheDevicesPeak) {
  auto devs = devices();
  devs["server"].peak_flops_fp16 = 4 * devs["server"].peak_flops;
  Scenario s = ushape();
  const Plan fp32 = make_plan(s, toy_model(), devs);
  s.compute_precision = "fp16";
  const Plan fp16 = make_plan(s, toy_model(), devs);
  EXPECT_DOUBLE_EQ(fp16.stages[1].fwd_s[0], fp32.stages[1].fwd_s[0] / 4);
  EXPECT_DOUBLE_EQ(fp16.stages[1].bwd_s[0], fp32.stages[1].bwd_s[0] / 4);
  EXPECT_DOUBLE_EQ(fp16.stages[0].fwd_s[0], fp32.stages[0].fwd_s[0]);  // the client has none
  s.compute_precision = "bf16";
  EXPECT_DOUBLE_EQ(make_plan(s, toy_model(), devs).stages[1].fwd_s[0], fp32.stages[1].fwd_s[0]);
}

}  // namespace
}  // namespace splitsim
