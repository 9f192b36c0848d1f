// `splitsim explore` with training reports: --accuracy ranks by the time to a
// target accuracy, --leakage keeps the cuts and codecs within the limits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "run_cli.h"

namespace splitsim::testing {
namespace {

// --accuracy: a train sweep report (written here: none reaches 70% after 300
// batches, q8 after 100, pi4 never) ranks the candidates by batches to the
// target x simulated time; --emit-best writes the first of that ranking.
TEST(ExploreCliTest, AccuracyRanksByTimeToTheTargetAndEmitsItsBest) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("splitsim_explore_accuracy_" + std::to_string(::getpid())))
                              .string();
  std::filesystem::create_directories(dir);
  auto run = [](const std::string& variant, const nlohmann::json& codec, double at100,
                double at300) {
    return nlohmann::json{{"schema", "splitsim.train/1"},
                          {"variant", variant},
                          {"chunks", 1},
                          {"compression", {{{"forward", codec}, {"backward", codec}}}},
                          {"evaluations",
                           {{{"batches", 100}, {"test_accuracy", at100}},
                            {{"batches", 300}, {"test_accuracy", at300}}}}};
  };
  const nlohmann::json sweep = {
      {"schema", "splitsim.train_sweep/1"},
      {"runs",
       {run("none", {{"method", "none"}}, 0.6, 0.8),
        run("q8", {{"method", "quantize"}, {"bits", 8}}, 0.71, 0.79),
        run("pi4", {{"method", "power_iteration"}, {"rank", 4}, {"iters", 1}}, 0.5, 0.6)}}};
  const std::string report = dir + "/sweep.json", best = dir + "/best.json";
  std::ofstream(report) << sweep.dump();
  const std::string base = "explore " + source_path("scenarios/mobilenet_v2_ushape.json") +
                           " --kinds single --chunks 1 --max-simulations 80 --json";
  const CliResult r = run_cli(base + " --accuracy " + report +
                              " --target-accuracy 70 --max-accuracy-drop 5 --emit-best " + best);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto a = nlohmann::json::parse(r.out).at("accuracy");
  EXPECT_DOUBLE_EQ(a["reference_accuracy"].get<double>(), 0.8);
  EXPECT_GT(a["over_drop"].get<int>(), 0);  // pi4: 0.6 against 0.8
  ASSERT_FALSE(a["ranking"].empty());
  double last = 0;
  for (const auto& row : a["ranking"]) {
    const std::string v = row["measured_variant"];
    EXPECT_TRUE(v == "none" || v == "q8") << v;
    EXPECT_EQ(row["batches_to_target"], v == "q8" ? 100 : 300);
    EXPECT_NEAR(row["time_to_target_s"].get<double>(),
                row["batches_to_target"].get<double>() * row["time_per_batch_s"].get<double>(),
                1e-9 * row["time_to_target_s"].get<double>());
    EXPECT_GE(row["time_to_target_s"].get<double>(), last);
    last = row["time_to_target_s"].get<double>();
  }
  const auto emitted = nlohmann::json::parse(std::ifstream(best));
  EXPECT_EQ(emitted["compression"][0]["forward"]["method"],
            a["ranking"][0]["measured_variant"] == "q8" ? "quantize" : "none");
  // A target is needed, and the report must be one of train's.
  EXPECT_EQ(run_cli(base + " --accuracy " + report).exit_code, 2);
  EXPECT_EQ(run_cli(base + " --target-accuracy 70").exit_code, 2);
  EXPECT_EQ(run_cli(base + " --accuracy " + best + " --target-accuracy 70").exit_code, 2);
  std::filesystem::remove_all(dir);
}

// --leakage: train reports with leakage (written here, in two files) for q8
// cut after conv1 (PSNR 10 dB), layer2.0 (14 dB) and layer3.0 (20 dB), the
// plans the screen leaves to simulate in a none/q8 space, and none after
// layer1.2, which the screen puts off the front (q8 at that cut is as fast
// with fewer bytes) but which is simulated all the same because its leakage
// was measured (and is over the limit). Within --max-psnr 15 the first two
// are ranked, fastest first; --emit-best writes the first.
// With --accuracy the table ranks them by the time to the target. The limits
// need --leakage, and a report without leakage is refused naming its path.
TEST(ExploreCliTest, LeakageKeepsTheMeasuredCutsAndCodecsWithinTheLimits) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("splitsim_explore_leakage_" + std::to_string(::getpid())))
                              .string();
  std::filesystem::create_directories(dir);
  const nlohmann::json none = {{"method", "none"}}, q8 = {{"method", "quantize"}, {"bits", 8}};
  auto run = [](const std::string& variant, const nlohmann::json& codec, const std::string& cut,
                double psnr) {
    const nlohmann::json forward = {{"samples", 496},
                                    {"attacker_samples", 496},
                                    {"distance_correlation", 0.7},
                                    {"reconstruction_mse", 0.01},
                                    {"reconstruction_psnr_db", psnr},
                                    {"baseline_mse", 0.09},
                                    {"baseline_psnr_db", 10.4}};
    const nlohmann::json backward = {
        {"samples", 4000}, {"label_auc_norm", 0.61}, {"label_auc_direction", 0.99}};
    return nlohmann::json{
        {"schema", "splitsim.train/1"},
        {"variant", variant},
        {"chunks", 1},
        {"cuts", {cut}},
        {"compression", {{{"forward", codec}, {"backward", codec}}}},
        {"evaluations",
         {{{"batches", 100}, {"test_accuracy", 0.72}}, {{"batches", 300}, {"test_accuracy", 0.8}}}},
        {"leakage",
         {{{"batches", 100},
           {"epoch", 1.0},
           {"boundary", 0},
           {"cut", cut},
           {"from", "client"},
           {"to", "server"},
           {"forward", forward},
           {"backward", backward},
           {"seconds", 3.2}}}}};
  };
  const std::map<std::string, double> psnr = {
      {"q8 conv1", 10}, {"q8 layer2.0", 14}, {"q8 layer3.0", 20}, {"none layer1.2", 25}};
  const std::string sweep = dir + "/sweep.json", deep = dir + "/conv1.json",
                    space = dir + "/space.json", best = dir + "/best.json";
  std::ofstream(sweep) << nlohmann::json{
      {"schema", "splitsim.train_sweep/1"},
      {"runs",
       {run("q8 layer2.0", q8, "layer2.0", 14), run("q8 layer3.0", q8, "layer3.0", 20),
        run("none layer1.2", none, "layer1.2", 25)}}};
  std::ofstream(deep) << run("q8 conv1", q8, "conv1", 10).dump();
  std::ofstream(space) << nlohmann::json{
      {"schema", "splitsim.explore/1"},
      {"codecs", {{{"label", "none"}, {"codec", none}}, {{"label", "q8"}, {"codec", q8}}}}};
  const std::string base = "explore " +
                           source_path("scenarios/accuracy/resnet20_fashion_mnist.json") +
                           " --space " + space + " --kinds single --chunks 1 --top 1000";
  const CliResult r = run_cli(base + " --json --leakage " + sweep + " --leakage " + deep +
                              " --max-psnr 15 --emit-best " + best);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto l = j.at("leakage");
  EXPECT_DOUBLE_EQ(l["limits"]["max_psnr_db"].get<double>(), 15);
  EXPECT_TRUE(l["limits"]["max_label_auc"].is_null());
  EXPECT_EQ(l["rank_by"], "time_per_batch");
  // The simulated candidates each run matches, by cut and codec.
  size_t matched = 0, over = 0;
  for (const auto& c : j["ranking"]) {
    const auto it =
        psnr.find(c["codec"].get<std::string>() + " " + c["partition"][0]["to"].get<std::string>());
    matched += it != psnr.end();
    over += it != psnr.end() && it->second > 15;
  }
  EXPECT_GE(matched, 2u) << j["ranking"].dump();
  bool measured_none = false;
  for (const auto& c : j["ranking"])
    measured_none =
        measured_none || (c["codec"] == "none" && c["partition"][0]["to"] == "layer1.2");
  EXPECT_TRUE(measured_none) << "the measured none after layer1.2 was not simulated";
  ASSERT_GT(matched, over);
  EXPECT_EQ(l["ranked"].get<size_t>(), matched - over);
  EXPECT_EQ(l["over_limit"].get<size_t>(), over);
  EXPECT_EQ(l["unmeasured"].get<size_t>(), j["simulated"].get<size_t>() - matched);
  double last = 0;
  for (const auto& row : l["ranking"]) {
    const std::string v = row["measured_variant"];
    ASSERT_TRUE(psnr.count(v)) << v;
    EXPECT_DOUBLE_EQ(row["reconstruction_psnr_db"].get<double>(), psnr.at(v));
    EXPECT_LE(psnr.at(v), 15);
    EXPECT_DOUBLE_EQ(row["label_auc_direction"].get<double>(), 0.99);
    EXPECT_GE(row["time_per_batch_s"].get<double>(), last);
    last = row["time_per_batch_s"].get<double>();
  }
  EXPECT_FALSE(l["front"].empty());
  const auto emitted = nlohmann::json::parse(std::ifstream(best));
  EXPECT_EQ(emitted["compression"][0]["forward"]["method"], "quantize");
  EXPECT_EQ("q8 " + emitted["partition"][0]["to"].get<std::string>(),
            l["ranking"][0]["measured_variant"]);
  // With --accuracy (the same reports: their evaluations), by time to 70%.
  const CliResult table = run_cli(base + " --leakage " + sweep + " " + deep +
                                  " --max-psnr 15 --accuracy " + sweep + " --target-accuracy 70");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("-- fastest plans with reconstruction PSNR <= 15 dB, by time to "
                           "70.00% test accuracy"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("-- leakage front (time per batch, reconstruction PSNR, test "
                           "accuracy)"),
            std::string::npos)
      << table.out;
  // The limits need --leakage; a report without leakage and a limit out of
  // range are refused (before the search).
  CliResult bad = run_cli(base + " --max-psnr 15");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--leakage"), std::string::npos) << bad.err;
  nlohmann::json plain = run("q8 conv1", q8, "conv1", 10);
  plain.erase("leakage");
  std::ofstream(deep) << plain.dump();
  bad = run_cli(base + " --leakage " + deep);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find(deep + ": $.leakage"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("without --leakage"), std::string::npos) << bad.err;
  bad = run_cli(base + " --leakage " + sweep + " --max-label-auc 1.5");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--max-label-auc"), std::string::npos) << bad.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace splitsim::testing
