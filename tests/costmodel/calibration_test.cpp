// Calibration (calibration.h): applying one to a Plan, and its JSON.
#include "splitsim/costmodel/calibration.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

// A U-shape by hand: client | server | client, two micro-batches. Stage
// seconds are the model's plus the codec work the planner adds (the sender
// encodes forward and decodes backward, the receiver the other two).
Plan ushape() {
  Plan p;
  p.microbatch_sizes = {4, 4};
  p.schedule = Schedule::kGpipe;
  for (const char* party : {"client", "server", "client"}) {
    PlanStage st;
    st.party = party;
    st.fwd_s = {1.0, 1.0};
    st.bwd_s = {2.0, 2.0};
    st.update_s = 0.5;
    p.stages.push_back(st);
  }
  for (int k = 0; k < 2; ++k) {
    PlanBoundary b;
    b.from_stage = k;
    b.to_stage = k + 1;
    b.forward.encode_s = {0.1, 0.1};
    b.forward.decode_s = {0.2, 0.2};
    b.backward.encode_s = {0.3, 0.3};
    b.backward.decode_s = {0.4, 0.4};
    p.boundaries.push_back(b);
  }
  p.network.bandwidth_factor = 0.5;
  p.network.per_message_overhead_s = 1e-4;
  p.platform.cpu_s_per_byte_received = 1e-9;
  return p;
}

// Stage k's whole forward / backward of micro-batch i: model and codec work.
double whole_fwd(const Plan& p, int k, size_t i) {
  return Plan::forward_total(p.forward_pass(k, Plan::kOwnCosts, i));
}
double whole_bwd(const Plan& p, int k, size_t i) {
  return Plan::backward_total(p.backward_pass(k, Plan::kOwnCosts, i));
}

TEST(CalibrationTest, TheIdentityLeavesThePlanAsItWas) {
  const Plan p = ushape();
  EXPECT_EQ(nlohmann::json(apply_calibration(p, Calibration{})), nlohmann::json(p));
}

TEST(CalibrationTest, ScalesModelAndCodecPartsApartPerParty) {
  Calibration c;
  c.parties["server"] = {/*compute_scale=*/3.0, /*op_overhead_s=*/0.01, /*codec_scale=*/2.0};
  c.parties["*"] = {/*compute_scale=*/0.5, /*op_overhead_s=*/0.0, /*codec_scale=*/1.0};
  c.bandwidth_factor = 0.5;
  c.per_message_overhead_s = 2e-4;
  c.cpu_s_per_byte_sent = 3e-9;
  c.cpu_s_per_byte_received = 4e-9;
  const Plan q = apply_calibration(ushape(), c);
  // Server (stage 1): model 1.0 and 2.0; codec forward 0.2 (decode) + 0.1
  // (encode), backward 0.3 (encode) + 0.4 (decode).
  EXPECT_DOUBLE_EQ(whole_fwd(q, 1, 0), 1.0 * 3 + 0.01 + 0.3 * 2);
  EXPECT_DOUBLE_EQ(whole_bwd(q, 1, 1), 2.0 * 3 + 0.01 + 0.7 * 2);
  EXPECT_DOUBLE_EQ(q.stages[1].update_s, 0.5 * 3 + 0.01);
  // Clients ("*"): stage 0 sends (codec 0.1 forward, 0.4 backward), stage 2 receives.
  EXPECT_DOUBLE_EQ(whole_fwd(q, 0, 0), 1.0 * 0.5 + 0.1);
  EXPECT_DOUBLE_EQ(whole_bwd(q, 0, 0), 2.0 * 0.5 + 0.4);
  EXPECT_DOUBLE_EQ(whole_fwd(q, 2, 1), 1.0 * 0.5 + 0.2);
  EXPECT_DOUBLE_EQ(whole_bwd(q, 2, 1), 2.0 * 0.5 + 0.3);
  EXPECT_DOUBLE_EQ(q.stages[2].update_s, 0.25);
  // The boundaries' codec seconds follow the party that runs them.
  EXPECT_DOUBLE_EQ(q.boundaries[0].forward.encode_s[0], 0.1);   // client sends
  EXPECT_DOUBLE_EQ(q.boundaries[0].forward.decode_s[0], 0.4);   // server receives
  EXPECT_DOUBLE_EQ(q.boundaries[0].backward.encode_s[0], 0.6);  // server
  EXPECT_DOUBLE_EQ(q.boundaries[0].backward.decode_s[0], 0.4);  // client
  EXPECT_DOUBLE_EQ(q.boundaries[1].forward.encode_s[1], 0.2);   // server sends
  EXPECT_DOUBLE_EQ(q.boundaries[1].backward.decode_s[1], 0.8);  // server
  // The network and the platform.
  EXPECT_DOUBLE_EQ(q.network.bandwidth_factor, 0.25);
  EXPECT_DOUBLE_EQ(q.network.per_message_overhead_s, 3e-4);
  EXPECT_DOUBLE_EQ(q.platform.cpu_s_per_byte_sent, 3e-9);
  EXPECT_DOUBLE_EQ(q.platform.cpu_s_per_byte_received, 5e-9);
}

TEST(CalibrationTest, OpClassScalesActOnTheirSharesOfTheModelPart) {
  Plan p = ushape();
  OpClassParts fwd, bwd;
  fwd.conv = 0.6;
  fwd.per_op = 0.4;
  bwd.conv = 1.0;
  for (PlanStage& st : p.stages) {
    st.fwd_op_class_shares = {fwd, fwd};
    st.bwd_op_class_shares = {bwd, bwd};
  }
  Calibration c;
  c.parties["server"].compute_scale = 3.0;
  c.parties["server"].op_class_scale.conv = 2.0;
  c.parties["server"].op_class_scale.per_op = 0.5;
  c.parties["server"].op_class_scale.elementwise = 4.0;
  const Plan q = apply_calibration(p, c);
  // Model 1.0 forward: 3 × (0.6 × 2 + 0.4 × 0.5); the codec part (0.3) as it was.
  EXPECT_DOUBLE_EQ(whole_fwd(q, 1, 0), 1.0 * 3 * (0.6 * 2 + 0.4 * 0.5) + 0.3);
  EXPECT_DOUBLE_EQ(whole_bwd(q, 1, 1), 2.0 * 3 * 2 + 0.7);
  // The update step is element-wise work.
  EXPECT_DOUBLE_EQ(q.stages[1].update_s, 0.5 * 3 * 4);
  // The clients are not named: as planned.
  EXPECT_DOUBLE_EQ(q.stages[0].fwd_s[0], p.stages[0].fwd_s[0]);
}

TEST(CalibrationTest, APartysHostWorkPerByteGoesToThatParty) {
  Calibration c;
  c.parties["server"].cpu_s_per_byte_received = 5e-9;
  c.parties["*"].cpu_s_per_byte_sent = 2e-9;
  c.cpu_s_per_byte_received = 3e-9;
  Plan p = ushape();  // platform: 1e-9 s per byte received
  p.platform.parties["server"].cpu_s_per_byte_received = 4e-9;
  const Plan q = apply_calibration(p, c);
  // Server: the plan's 1e-9 + 4e-9, the calibration's 3e-9 + 5e-9.
  EXPECT_DOUBLE_EQ(q.platform.received_s_per_byte("server"), 13e-9);
  EXPECT_DOUBLE_EQ(q.platform.sent_s_per_byte("server"), 0);  // named: "*" does not apply
  // The client (two stages, added once): "*".
  EXPECT_DOUBLE_EQ(q.platform.sent_s_per_byte("client"), 2e-9);
  EXPECT_DOUBLE_EQ(q.platform.received_s_per_byte("client"), 4e-9);
}

TEST(CalibrationTest, OpClassScalesNeedThePlansShares) {
  Calibration c;
  c.parties["server"].op_class_scale.depthwise = 2.0;
  try {
    apply_calibration(ushape(), c);  // a plan without shares
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$.stages[1]");
    EXPECT_NE(std::string(e.what()).find("fwd_op_class_shares_per_microbatch"), std::string::npos)
        << e.what();
  }
  // Scales of 1 need nothing.
  c.parties["server"].op_class_scale.depthwise = 1.0;
  EXPECT_NO_THROW(apply_calibration(ushape(), c));
}

TEST(CalibrationTest, APartyNeitherNamedNorStarIsLeftAsPlanned) {
  Calibration c;
  c.parties["server"].compute_scale = 2.0;
  const Plan p = ushape();
  const Plan q = apply_calibration(p, c);
  EXPECT_EQ(q.stages[0].fwd_s, p.stages[0].fwd_s);
  EXPECT_EQ(q.stages[2].bwd_s, p.stages[2].bwd_s);
  EXPECT_NE(q.stages[1].fwd_s, p.stages[1].fwd_s);
}

TEST(CalibrationTest, TheBandwidthFactorStopsAtItsFloor) {
  Calibration c;
  c.bandwidth_factor = 0.001;
  EXPECT_DOUBLE_EQ(apply_calibration(ushape(), c).network.bandwidth_factor, 0.001);
}

TEST(CalibrationTest, JsonRoundTrips) {
  Calibration c;
  c.parties["client"] = {1.5, 2e-5, 0.75};
  c.parties["server"].op_class_scale.per_op = 0.25;  // only the classes that are not 1 written
  c.parties["server"].cpu_s_per_byte_received = 3e-9;
  c.bandwidth_factor = 0.8;
  c.per_message_overhead_s = 1e-4;
  c.cpu_s_per_byte_received = 2e-9;
  c.description = "testbed, 4 runs";
  const nlohmann::json j = c;
  EXPECT_EQ(j.at("schema"), kCalibrationSchema);
  EXPECT_EQ(nlohmann::json(parse_calibration(j)), j);
  EXPECT_EQ(j.at("parties").at("server").at("op_class_scale"), nlohmann::json({{"per_op", 0.25}}));
  EXPECT_FALSE(j.at("parties").at("client").contains("op_class_scale"));
}

TEST(CalibrationTest, BadInputNamesItsPath) {
  const auto where = [](const std::string& text) {
    try {
      parse_calibration(nlohmann::json::parse(text));
    } catch (const InputError& e) {
      return e.where();
    }
    return std::string("(accepted)");
  };
  const std::string s = R"("schema": "splitsim.calibration/1")";
  EXPECT_EQ(where("{" + s + R"(, "bandwidth_factor": 1.5})"), "$.bandwidth_factor");
  EXPECT_EQ(where("{" + s + R"(, "bandwidth_factr": 0.5})"), "$.bandwidth_factr");
  EXPECT_EQ(where("{" + s + R"(, "parties": {"server": {"compute_scale": 0}}})"),
            "$.parties.server.compute_scale");
  EXPECT_EQ(where("{" + s + R"(, "parties": {"server": {"op_overhead_s": -1}}})"),
            "$.parties.server.op_overhead_s");
  EXPECT_EQ(where("{" + s + R"(, "parties": {"server": {"scale": 2}}})"), "$.parties.server.scale");
  EXPECT_EQ(where("{" + s + R"(, "cpu_s_per_byte_sent": "1e-9"})"), "$.cpu_s_per_byte_sent");
  EXPECT_EQ(where("{" + s + R"(, "parties": {"server": {"op_class_scale": {"gemm": 2}}}})"),
            "$.parties.server.op_class_scale.gemm");
  EXPECT_EQ(where("{" + s + R"(, "parties": {"server": {"op_class_scale": {"conv": -1}}}})"),
            "$.parties.server.op_class_scale.conv");
  EXPECT_EQ(where("{" + s + R"(, "parties": {"server": {"op_class_scale": 2}}})"),
            "$.parties.server.op_class_scale");
  EXPECT_EQ(where("{" + s + R"(, "parties": {"server": {"cpu_s_per_byte_sent": -1e-9}}})"),
            "$.parties.server.cpu_s_per_byte_sent");
  EXPECT_EQ(where(R"({"schema": "splitsim.plan/1"})"), "$.schema");
  EXPECT_EQ(where(R"({"parties": {}})"), "$.schema");
  EXPECT_EQ(where("[]"), "$");
  EXPECT_EQ(where("{" + s + "}"), "(accepted)");
}

}  // namespace
}  // namespace splitsim
