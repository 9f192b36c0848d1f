// Plan files (splitsim.plan/1) read back: hand-built plans of every schedule,
// codec, network and platform option round-trip through to_json and
// parse_plan and simulate to the same metrics; broken files are refused at
// their JSON path. No LibTorch: this suite also builds without it. (Plans of
// the shipped scenarios, which need a measured model, round-trip in
// tests/cli/plan_file_cli_test.cpp.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "test_plans.h"

namespace splitsim {
namespace {

using nlohmann::json;
using testing::equal_stages;
using testing::group_costs;
using testing::set_wire_bytes;
using testing::ushape;

json to_j(const Plan& p) { return json(p); }

// Plans that between them set every field the simulator and the metrics read.
std::vector<Plan> sample_plans() {
  std::vector<Plan> plans;
  for (Schedule s : {Schedule::kSequential, Schedule::kGpipe, Schedule::k1F1B, Schedule::kPipeDream,
                     Schedule::kDdg, Schedule::kFr}) {
    Plan p = equal_stages(3, 2, 1e-3, 2e-3, s, 8, 3);
    p.variant = std::string("schedule=") + schedule_name(s);
    set_wire_bytes(&p, 0, 100000, 50000);
    set_wire_bytes(&p, 1, 70000, 0);
    p.stages[1].update_s = 4e-4;
    if (s == Schedule::kFr) p.stages[1].replay_bytes = 12345;
    plans.push_back(p);
  }
  // U-shape with codecs, uneven micro-batches, informational fields,
  // asymmetric links.
  Plan u = ushape(2e-3, 3e-3, 1e-3, 1.5e-3, Schedule::kGpipe, 3);
  u.variant = "ushape q8";
  u.microbatch_sizes = {3, 3, 2};
  u.batch_size = 8;
  set_wire_bytes(&u, 0, 4096, 16384);
  u.boundaries[0].forward.wire_bytes = {4096, 4096, 2731};
  u.boundaries[0].forward.wire_bytes_per_batch = 4096 + 4096 + 2731;
  u.boundaries[0].forward.codec.method = CodecMethod::kQuantize;
  u.boundaries[0].forward.carried_shape = {16, 8, 8};
  u.boundaries[0].activation_shape = {8, 16, 8, 8};
  u.boundaries[0].forward.wire_messages = 2;  // the data, then 8 B of scale
  u.boundaries[0].forward.last_tensor_bytes = {8, 8, 8};
  u.boundaries[0].forward.encode_s = {1e-4, 1e-4, 7e-5};
  u.boundaries[0].forward.decode_s = {5e-5, 5e-5, 3e-5};
  u.stages[0].units = {"conv1", "layer1.0"};
  u.stages[0].device = "xeon_40core";
  u.stages[0].fwd_per_batch.conv_macs = 123456789;
  u.stages[0].fwd_per_batch.ops = 42;
  u.stages[0].param_count = 1000;
  u.stages[0].param_bytes = 4000;
  u.stages[0].peak_memory_bytes = 99999;
  u.stages[0].timed_from_measurement = true;
  for (size_t i = 0; i < 3; ++i) {
    OpClassParts share;
    share.conv = 0.5;
    share.elementwise = 0.25;
    share.per_op = 0.25;
    u.stages[0].fwd_op_class_shares.push_back(share);
    u.stages[0].bwd_op_class_shares.push_back(OpClassParts{});  // no model work: all 0
  }
  u.network.up_bandwidth_bit_per_s = 1e8;
  u.network.down_bandwidth_bit_per_s = 4e8;
  u.network.latency_s = 2e-4;
  u.network.per_message_overhead_s = 1e-5;
  u.network.bandwidth_factor = 0.9;
  u.network.burst_bytes = 37500;
  u.network.burst_packet_bytes = 65160;
  plans.push_back(u);
  // Several clients, host work per byte, a shared machine.
  Plan c = ushape(1e-3, 1e-3, 2e-3, 2e-3);
  c.variant = "clients=3";
  c.clients = 3;
  set_wire_bytes(&c, 0, 20000, 20000);
  c.platform.cpu_s_per_byte_sent = 2e-9;
  c.platform.cpu_s_per_byte_received = 1e-9;
  c.platform.parties["server"] = {3e-9, 4e-9};
  c.platform.shared_machine = true;
  c.platform.co_compute_slowdown = 1.25;
  c.platform.wake_cost = {{1e-3, 5e-5}, {2e-2, 3e-4}};
  plans.push_back(c);
  // zb_h1's weight passes; interleaved_1f1b's parties taking turns.
  Plan zb = equal_stages(3, 2, 1e-3, 3e-3, Schedule::kZbH1, 6, 2);
  for (PlanStage& st : zb.stages) st.bwd_weight_s = {1e-3, 1e-3};
  zb.variant = "zb_h1";
  plans.push_back(zb);
  Plan il = equal_stages(4, 2, 1e-3, 2e-3, Schedule::kInterleaved1F1B, 6, 2,
                         {"client", "server", "client", "server"});
  il.virtual_stages = 2;
  il.variant = "interleaved";
  plans.push_back(il);
  return plans;
}

TEST(PlanFileTest, EverySamplePlanRoundTrips) {
  for (const Plan& p : sample_plans()) {
    SCOPED_TRACE(p.variant);
    const json j = to_j(p);
    const Plan back = parse_plan(j);
    EXPECT_EQ(to_j(back), j);
    // Through text, as a file holds it.
    EXPECT_EQ(to_j(parse_plan(json::parse(j.dump(2)))), j);
  }
}

TEST(PlanFileTest, ParsedPlansSimulateToTheSameMetrics) {
  const std::vector<Plan> plans = sample_plans();
  std::vector<Plan> parsed;
  for (const Plan& p : plans) parsed.push_back(parse_plan(json::parse(to_j(p).dump())));
  const std::vector<Timeline> a = simulate_many(plans, {}, 2);
  const std::vector<Timeline> b = simulate_many(parsed, {}, 2);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    SCOPED_TRACE(plans[i].variant);
    const json ma = compute_metrics(a[i], plans[i], plans[i].warmup);
    const json mb = compute_metrics(b[i], parsed[i], parsed[i].warmup);
    EXPECT_GT(ma.at("time_per_batch_s").get<double>(), 0);
    EXPECT_EQ(ma, mb);
  }
}

// Three stages, codecs on both boundaries (the middle stage decodes and
// encodes in each pass), a client group with codec work of its own.
Plan codec_plan(double model, const std::vector<double>& codec) {
  Plan p = equal_stages(3, 2, model, 2 * model, Schedule::kGpipe, 8, 3);
  for (PlanBoundary& b : p.boundaries)
    for (PlanTransfer* t : {&b.forward, &b.backward}) {
      t->encode_s = {codec[0], codec[1]};
      t->decode_s = {codec[2], codec[3]};
    }
  p.clients = 2;
  PlanClientGroup own{"phones", "phone", 1,
                      {},       {},      {group_costs(0, {3 * model, model}, {model, model}, 0)}};
  own.stage_costs[0].fwd_encode_s = {codec[1], codec[0]};
  own.stage_costs[0].bwd_decode_s = {codec[3], codec[2]};
  p.client_groups = {{"alike", "", 1, {}, {}, {}}, own};
  return p;
}

TEST(PlanFileTest, AFileStatesWholePassesAndReadsTheModelsPartBack) {
  const Plan p = codec_plan(1e-3, {1e-4, 2e-4, 3e-4, 4e-4});
  const json j = to_j(p);
  // The middle stage's forward decodes (boundary 0) and encodes (boundary 1).
  EXPECT_EQ(j.at("stages")[1].at("fwd_s_per_microbatch")[0].get<double>(), (1e-3 + 3e-4) + 1e-4);
  EXPECT_EQ(j.at("stages")[1].at("bwd_s_per_microbatch")[1].get<double>(), (2e-3 + 2e-4) + 4e-4);
  EXPECT_EQ(j.at("stages")[0].at("fwd_s_per_microbatch")[0].get<double>(), 1e-3 + 1e-4);
  // The group's passes with its own codec work.
  const json& own = j.at("client_groups")[1].at("stage_costs")[0];
  EXPECT_EQ(own.at("fwd_s_per_microbatch")[0].get<double>(), 3e-3 + 2e-4);
  EXPECT_EQ(own.at("bwd_s_per_microbatch")[1].get<double>(), 1e-3 + 3e-4);
  const Plan back = parse_plan(j);
  EXPECT_EQ(to_j(back), j);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(back.stages[k].fwd_s, p.stages[k].fwd_s) << "stage " << k;
    EXPECT_EQ(back.stages[k].bwd_s, p.stages[k].bwd_s) << "stage " << k;
  }
  // The group's codec work where it differs from the plan's; the rest is
  // the plan's, left out.
  EXPECT_EQ(own.at("fwd_encode_s_per_microbatch"), json({2e-4, 1e-4}));
  EXPECT_FALSE(own.contains("fwd_decode_s_per_microbatch"));
  const PlanStageCosts& g = back.client_groups[1].stage_costs[0];
  EXPECT_EQ(g.fwd_s, p.client_groups[1].stage_costs[0].fwd_s);
  EXPECT_EQ(g.fwd_encode_s, (std::vector<double>{2e-4, 1e-4}));
  EXPECT_EQ(Plan::forward_total(back.forward_pass(0, 1, 0)),
            own.at("fwd_s_per_microbatch")[0].get<double>());
}

TEST(PlanFileTest, ModelPartsSumBackToTheFilesBytesForAnySeconds) {
  // Model and codec seconds of any magnitudes: reading the file and writing
  // it again gives its bytes, however the sums round.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> exponent(-9, 2);
  auto any = [&] { return std::pow(10.0, exponent(rng)); };
  for (int trial = 0; trial < 300; ++trial) {
    const Plan p = codec_plan(any(), {any(), any(), any(), any()});
    const json j = to_j(p);
    EXPECT_EQ(to_j(parse_plan(j)), j) << "trial " << trial;
  }
}

TEST(PlanFileTest, AStatedPassBelowItsCodecWorkLeavesNoModelWork) {
  json j = to_j(codec_plan(1e-3, {1e-4, 2e-4, 3e-4, 4e-4}));
  j["stages"][1]["fwd_s_per_microbatch"][0] = 1e-4;  // codec work alone is 4e-4
  j["stages"][1].erase("fwd_s_per_batch");
  EXPECT_EQ(parse_plan(j).stages[1].fwd_s[0], 0.0);
}

TEST(PlanFileTest, AnArrayOfPlansIsReadInOrder) {
  const std::vector<Plan> plans = sample_plans();
  json all = json::array();
  for (const Plan& p : plans) all.push_back(p);
  EXPECT_TRUE(is_plan_json(all));
  EXPECT_TRUE(is_plan_json(all[0]));
  EXPECT_FALSE(is_plan_json(json::array()));
  EXPECT_FALSE(is_plan_json(json{{"schema", "splitsim.scenario/1"}}));
  const std::vector<Plan> back = parse_plans(all);
  ASSERT_EQ(back.size(), plans.size());
  for (size_t i = 0; i < plans.size(); ++i) EXPECT_EQ(to_j(back[i]), all[i]);
  ASSERT_EQ(parse_plans(all[2]).size(), 1u);
}

TEST(PlanFileTest, OptionalFieldsMayBeLeftOut) {
  json j = to_j(sample_plans()[6]);
  for (const char* key : {"scenario", "variant", "model", "chunks"}) j.erase(key);
  json& stage = j["stages"][0];
  for (const char* key : {"name", "device", "units", "fwd_macs_per_batch", "fwd_work_per_batch",
                          "param_count", "peak_memory_bytes", "fwd_s_per_batch", "timed_from"})
    stage.erase(key);
  json& fwd = j["boundaries"][0]["forward"];
  for (const char* key : {"method", "description", "wire_bytes_per_batch", "encode_s_per_batch",
                          "wire_messages_per_microbatch"})
    fwd.erase(key);
  const Plan p = parse_plan(j);
  EXPECT_EQ(p.stages[0].name, "stage0");
  EXPECT_EQ(p.stages[0].param_count, 0);
  EXPECT_EQ(p.boundaries[0].forward.codec.method, CodecMethod::kQuantize);
  EXPECT_EQ(p.boundaries[0].forward.wire_bytes_per_batch, 4096 + 4096 + 2731);
  EXPECT_EQ(p.boundaries[0].forward.wire_messages, 1);  // plans written before it
}

struct Mutation {
  std::string name;
  std::function<void(json&)> edit;
  std::string where;
  std::string phrase;
};

TEST(PlanFileTest, BrokenPlansAreRefusedAtTheirPath) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Mutation> mutations = {
      {"other schema", [](json& j) { j["schema"] = "splitsim.plan/2"; }, "$.schema",
       "unsupported schema"},
      {"unknown key", [](json& j) { j["stages"][1]["fwd_s"] = json::array(); }, "$.stages[1].fwd_s",
       "fwd_s_per_microbatch"},
      {"negative seconds", [](json& j) { j["stages"][1]["fwd_s_per_microbatch"][0] = -1e-3; },
       "$.stages[1].fwd_s_per_microbatch[0]", "expected a number in [0, "},
      {"not finite", [nan](json& j) { j["stages"][1]["bwd_s_per_microbatch"][2] = nan; },
       "$.stages[1].bwd_s_per_microbatch[2]", "finite"},
      {"seconds as text", [](json& j) { j["stages"][0]["update_s_per_batch"] = "0.1"; },
       "$.stages[0].update_s_per_batch", "got \"0.1\""},
      {"too few per micro-batch", [](json& j) { j["stages"][2]["bwd_s_per_microbatch"].erase(0); },
       "$.stages[2].bwd_s_per_microbatch", "one per micro-batch (3"},
      {"micro-batches vs batch",
       [](json& j) {
         j["microbatch_sizes"] = {3, 3, 3};
       },
       "$.microbatch_sizes", "expected batch_size 8"},
      {"chunks vs micro-batches", [](json& j) { j["chunks"] = 2; }, "$.chunks", "3 entries"},
      {"non-adjacent boundary", [](json& j) { j["boundaries"][1]["to_stage"] = 0; },
       "$.boundaries[1].to_stage", "adjacent"},
      {"stage index past int", [](json& j) { j["boundaries"][0]["from_stage"] = int64_t{1} << 32; },
       "$.boundaries[0].from_stage", "adjacent"},
      {"missing boundary", [](json& j) { j["boundaries"].erase(1); }, "$.boundaries",
       "3 stages need 2"},
      {"negative wire bytes",
       [](json& j) { j["boundaries"][0]["backward"]["wire_bytes_per_microbatch"][1] = -5; },
       "$.boundaries[0].backward.wire_bytes_per_microbatch[1]", "integer from 0 to"},
      {"fractional wire bytes",
       [](json& j) { j["boundaries"][0]["forward"]["wire_bytes_per_microbatch"][0] = 1.5; },
       "$.boundaries[0].forward.wire_bytes_per_microbatch[0]", "got 1.5"},
      {"total disagrees with parts",
       [](json& j) { j["boundaries"][0]["forward"]["wire_bytes_per_batch"] = 1; },
       "$.boundaries[0].forward.wire_bytes_per_batch", "wire_bytes_per_microbatch gives 10923"},
      {"last tensor past the message",
       [](json& j) { j["boundaries"][0]["forward"]["last_tensor_bytes_per_microbatch"][2] = 2732; },
       "$.boundaries[0].forward.last_tensor_bytes_per_microbatch[2]",
       "wire_bytes_per_microbatch (2731)"},
      {"seconds total disagrees", [](json& j) { j["stages"][1]["fwd_s_per_batch"] = 1.0; },
       "$.stages[1].fwd_s_per_batch", "sum to"},
      {"method vs codec", [](json& j) { j["boundaries"][0]["forward"]["method"] = "none"; },
       "$.boundaries[0].forward.method", "quantize"},
      {"bad codec", [](json& j) { j["boundaries"][0]["forward"]["codec"]["bits"] = 0; },
       "$.boundaries[0].forward.codec.bits", ""},
      {"unknown schedule", [](json& j) { j["schedule"] = "zigzag"; }, "$.schedule", "gpipe"},
      {"interleaving a U-shape", [](json& j) { j["schedule"] = "interleaved_1f1b"; },
       "$.virtual_stages", "take turns"},
      {"virtual stages out of range", [](json& j) { j["virtual_stages"] = 0; }, "$.virtual_stages",
       "from 1 to"},
      {"warmup past iterations", [](json& j) { j["warmup"] = 10; }, "$.warmup", "from 0 to"},
      {"zero iterations", [](json& j) { j["iterations"] = 0; }, "$.iterations", "from 1 to"},
      {"missing warmup", [](json& j) { j.erase("warmup"); }, "$.warmup", "splitsim plan --json"},
      {"unknown compute precision", [](json& j) { j["compute_precision"] = "fp8"; },
       "$.compute_precision", "bf16"},
      {"no clients", [](json& j) { j["clients"] = 0; }, "$.clients", "from 1 to"},
      {"missing network", [](json& j) { j.erase("network"); }, "$.network", "splitsim plan --json"},
      {"bad network", [](json& j) { j["network"]["latency_s"] = -1; }, "$.network.latency_s", ""},
      {"unknown platform key", [](json& j) { j["platform"]["cores"] = 2; }, "$.platform.cores", ""},
      {"empty party", [](json& j) { j["stages"][0]["party"] = ""; }, "$.stages[0].party",
       "non-empty"},
      {"stage not an object", [](json& j) { j["stages"][1] = 7; }, "$.stages[1]", "stage object"},
      {"timed_from", [](json& j) { j["stages"][0]["timed_from"] = "guessed"; },
       "$.stages[0].timed_from", "measured"},
      {"shares not summing to 1",
       [](json& j) { j["stages"][0]["fwd_op_class_shares_per_microbatch"][1]["conv"] = 0.1; },
       "$.stages[0].fwd_op_class_shares_per_microbatch[1]", "sum to"},
      {"share missing a class",
       [](json& j) { j["stages"][0]["bwd_op_class_shares_per_microbatch"][0].erase("per_op"); },
       "$.stages[0].bwd_op_class_shares_per_microbatch[0].per_op", "missing required key"},
      {"shares per micro-batch",
       [](json& j) { j["stages"][0]["fwd_op_class_shares_per_microbatch"].erase(0); },
       "$.stages[0].fwd_op_class_shares_per_microbatch", "one per micro-batch"},
  };
  const json good = to_j(sample_plans()[6]);  // the U-shape: 3 stages, 3 micro-batches
  ASSERT_NO_THROW(parse_plan(good));
  for (const Mutation& m : mutations) {
    SCOPED_TRACE(m.name);
    json j = good;
    m.edit(j);
    try {
      parse_plan(j);
      ADD_FAILURE() << "no InputError; expected one at " << m.where;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), m.where) << e.what();
      EXPECT_NE(std::string(e.what()).find(m.phrase), std::string::npos)
          << "\"" << m.phrase << "\" not in: " << e.what();
    }
  }
}

TEST(PlanFileTest, ErrorsInAnArrayNameTheElement) {
  json all = json::array({to_j(sample_plans()[0]), to_j(sample_plans()[1])});
  all[1]["stages"][0]["fwd_s_per_microbatch"][0] = -1;
  try {
    parse_plans(all);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$[1].stages[0].fwd_s_per_microbatch[0]");
  }
}

TEST(PlanFileTest, LoadPlanFileNamesTheFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("splitsim_plan_file_test_" + std::to_string(::getpid()) + ".json");
  json j = to_j(sample_plans()[0]);
  std::ofstream(path) << j.dump(2);
  ASSERT_EQ(load_plan_file(path.string()).size(), 1u);
  j["iterations"] = 0;
  std::ofstream(path) << j.dump(2);
  try {
    load_plan_file(path.string());
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$.iterations");
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace splitsim
