// `splitsim plan` end to end: outputs, and exit code 2 with nothing written
// for each class of bad input.
#include <unistd.h>

#include <gtest/gtest.h>

#include "run_cli.h"

namespace splitsim::testing {
namespace {

nlohmann::json default_scenario_without_sweep() {
  nlohmann::json s = load_json("scenarios/mobilenet_v2_ushape.json");
  s.erase("sweep");
  return s;
}

TEST(PlanCliTest, DefaultScenarioPrintsAllFifteenVariants) {
  const CliResult r = run_cli("plan " + source_path("scenarios/mobilenet_v2_ushape.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t headers = 0;
  for (size_t pos = r.out.find("== mobilenet_v2_ushape ["); pos != std::string::npos;
       pos = r.out.find("== mobilenet_v2_ushape [", pos + 1))
    ++headers;
  EXPECT_EQ(headers, 15u);
  for (const char* codec : {"conv_insert(->32 k4 s4)", "conv_insert(->20 k4 s4)",
                            "power_iteration(rank 3)", "quantize(8 bit)"})
    EXPECT_NE(r.out.find(codec), std::string::npos) << codec;
}

TEST(PlanCliTest, JsonFollowsThePlanContractWithHandComputedBytes) {
  const CliResult r = run_cli("plan --json " + source_path("scenarios/mobilenet_v2_ushape.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto plans = nlohmann::json::parse(r.out);
  ASSERT_EQ(plans.size(), 15u);
  for (const auto& p : plans) {
    EXPECT_EQ(p.at("schema"), "splitsim.plan/1");
    ASSERT_EQ(p.at("stages").size(), 3u);
    EXPECT_EQ(p["stages"][0]["party"], "client");
    EXPECT_EQ(p["stages"][1]["party"], "server");
    EXPECT_EQ(p["stages"][0]["units"],
              (nlohmann::json{"features.0.conv", "features.0.bn"}));
    for (const char* key : {"fwd_macs_per_batch", "bwd_macs_per_batch", "param_bytes"})
      EXPECT_TRUE(p["stages"][1].contains(key)) << key;
    ASSERT_EQ(p.at("boundaries").size(), 2u);
    EXPECT_EQ(p["boundaries"][0]["activation_shape"], (nlohmann::json{64, 32, 112, 112}));
    EXPECT_EQ(p["boundaries"][1]["activation_shape"], (nlohmann::json{64, 1280, 7, 7}));
  }
  // Variants in file order: chunks outermost, then compression.
  const auto& none = plans[0]["boundaries"];
  EXPECT_EQ(plans[0]["variant"], "chunks=1 compression=none");
  EXPECT_EQ(none[0]["forward"]["wire_bytes_per_batch"], 64LL * 32 * 112 * 112 * 4);
  EXPECT_EQ(none[1]["backward"]["wire_bytes_per_batch"], 64LL * 1280 * 7 * 7 * 4);
  const auto& conv20 = plans[2]["boundaries"];  // 32->20 k4 s4: [20,28,28]; 1280->320 k1
  EXPECT_EQ(conv20[0]["forward"]["wire_bytes_per_batch"], 64LL * 20 * 28 * 28 * 4);
  EXPECT_EQ(conv20[0]["backward"]["wire_bytes_per_batch"], 64LL * 20 * 28 * 28 * 4);
  EXPECT_EQ(conv20[1]["forward"]["wire_bytes_per_batch"], 64LL * 320 * 7 * 7 * 4);
  const auto& pi = plans[3]["boundaries"];  // rank 3 on [32,12544], rank 7 on [1280,49]
  EXPECT_EQ(pi[0]["forward"]["wire_bytes_per_batch"], 64LL * 3 * (32 + 12544) * 4);
  EXPECT_EQ(pi[1]["forward"]["wire_bytes_per_batch"], 64LL * 7 * (1280 + 49) * 4);
  const auto& q8 = plans[4]["boundaries"];  // 8 bits + min and scale
  EXPECT_EQ(q8[0]["forward"]["wire_bytes_per_batch"], 64LL * 32 * 112 * 112 + 8);
  // chunks=8, q8: the 8-byte header travels once per micro-batch.
  EXPECT_EQ(plans[14]["variant"], "chunks=8 compression=q8");
  EXPECT_EQ(plans[14]["boundaries"][0]["forward"]["wire_bytes_per_batch"],
            64LL * 32 * 112 * 112 + 8 * 8);
  // The first client stage: 32 3x3x3 filters on 112x112 outputs, per image.
  EXPECT_EQ(plans[0]["stages"][0]["fwd_macs_per_batch"], 64LL * 112 * 112 * 32 * 27);
}

TEST(PlanCliTest, ListCutsAndUnits) {
  const CliResult cuts =
      run_cli("plan --list-cuts --json " + source_path("scenarios/resnet20_kstage.json"));
  ASSERT_EQ(cuts.exit_code, 0) << cuts.err;
  const auto j = nlohmann::json::parse(cuts.out);
  EXPECT_EQ(j["schema"], "splitsim.cuts/1");
  EXPECT_EQ(j["cuts"].size(), 10u);  // 11 units in a chain
  EXPECT_EQ(j["cuts"][0]["after"], "layer1.0");
  const CliResult units = run_cli("plan --units " + source_path("scenarios/resnet20_kstage.json"));
  ASSERT_EQ(units.exit_code, 0) << units.err;
  EXPECT_NE(units.out.find("layer3.2"), std::string::npos);
}

// The first thing a user runs on a model: a scenario that names only the
// model and the batch lists the cuts and the units; with a placeholder
// partition too (no compression for its boundaries).
TEST(PlanCliTest, ListCutsAndUnitsNeedOnlyTheModelAndTheBatch) {
  const nlohmann::json bare = {{"schema", "splitsim.scenario/1"},
                               {"name", "just_the_model"},
                               {"model", {{"name", "resnet20"}}},
                               {"batch_size", 8}};
  nlohmann::json placeholder = bare;
  placeholder["partition"] = {{{"party", "a"}, {"from", "x"}, {"to", "y"}},
                              {{"party", "b"}, {"from", "y"}, {"to", "z"}},
                              {{"party", "a"}, {"from", "z"}, {"to", "w"}}};
  placeholder["devices"] = {{"a", "v100"}, {"b", "v100"}};
  for (const auto& s : {bare, placeholder}) {
    const std::string file = write_temp_json(s, "model_only");
    const CliResult cuts = run_cli("plan --list-cuts --json " + file);
    ASSERT_EQ(cuts.exit_code, 0) << cuts.err;
    const auto j = nlohmann::json::parse(cuts.out);
    EXPECT_EQ(j["cuts"].size(), 10u);
    EXPECT_EQ(j["cuts"][0]["after"], "layer1.0");
    const CliResult units = run_cli("plan --units " + file);
    ASSERT_EQ(units.exit_code, 0) << units.err;
    EXPECT_NE(units.out.find("layer3.2"), std::string::npos);
    // A plan still needs the partition, and says so.
    const CliResult plan = run_cli("plan " + file);
    EXPECT_EQ(plan.exit_code, 2);
    std::filesystem::remove(file);
  }
  // What is there is still checked.
  nlohmann::json bad = bare;
  bad["batch_size"] = 0;
  const std::string file = write_temp_json(bad, "model_only_bad");
  const CliResult r = run_cli("plan --list-cuts " + file);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("$.batch_size"), std::string::npos) << r.err;
  std::filesystem::remove(file);
}

struct BadInput {
  const char* name;
  void (*mutate)(nlohmann::json&);
  const char* where;  // expected in stderr
};

void expect_refused(const std::string& file, const std::string& where) {
  const CliResult r = run_cli("plan " + file);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << "nothing may be written on error, got: " << r.out;
  EXPECT_NE(r.err.find(where), std::string::npos) << r.err;
}

TEST(PlanCliTest, EveryBadInputClassExitsTwoAndWritesNothing) {
  const BadInput cases[] = {
      {"typo", [](nlohmann::json& s) { s["chunk"] = 4; }, "$.chunk"},
      {"type", [](nlohmann::json& s) { s["batch_size"] = "64"; }, "$.batch_size"},
      {"nonpositive", [](nlohmann::json& s) { s["batch_size"] = 0; }, "$.batch_size"},
      {"bandwidth",
       [](nlohmann::json& s) { s["network"]["bandwidth_bit_per_s"] = -1; },
       "$.network.bandwidth_bit_per_s"},
      {"model", [](nlohmann::json& s) { s["model"]["name"] = "resnet21"; }, "$.model.name"},
      {"unit", [](nlohmann::json& s) { s["partition"][1]["to"] = "features.19"; },
       "$.partition[1].to"},
      {"gap", [](nlohmann::json& s) { s["partition"][1]["from"] = "features.1"; },
       "$.partition[1].from"},
      {"method",
       [](nlohmann::json& s) { s["compression"][0]["forward"] = {{"method", "zip"}}; },
       "$.compression[0].forward.method"},
      {"codec_shape",
       [](nlohmann::json& s) {
         s["compression"][0]["forward"] = {{"method", "linear_insert"}, {"out_features", 8}};
       },
       "$.compression[0].forward"},
      {"rank",
       [](nlohmann::json& s) {
         s["compression"][1]["forward"] = {{"method", "power_iteration"}, {"rank", 50}};
       },
       "$.compression[1].forward"},
      {"device", [](nlohmann::json& s) { s["devices"]["server"] = "gtx9999"; },
       "$.devices.server"},
      {"party", [](nlohmann::json& s) { s["partition"][1]["party"] = "cloud"; },
       "$.partition[1].party"},
      {"chunks", [](nlohmann::json& s) { s["chunks"] = 65; }, "$.chunks"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    nlohmann::json s = default_scenario_without_sweep();
    c.mutate(s);
    const std::string file = write_temp_json(s, c.name);
    expect_refused(file, c.where);
    std::filesystem::remove(file);
  }
}

TEST(PlanCliTest, UnreadableAndMalformedFilesExitTwo) {
  expect_refused("/nonexistent/scenario.json", "/nonexistent/scenario.json");
  const auto p = std::filesystem::temp_directory_path() /
                 ("splitsim_syntax_" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << "{\n  \"schema\": \"splitsim.scenario/1\",\n  \"name\": ,\n}";
  expect_refused(p.string(), ":3:");
  std::filesystem::remove(p);
}

TEST(PlanCliTest, UnknownFlagExitsTwo) {
  const CliResult r = run_cli("plan --no-such-flag x.json");
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace splitsim::testing
