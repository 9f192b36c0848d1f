// `splitsim explore` end to end on a shipped scenario with a small space.
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

// --spread: the shown rows get a predicted range and the ties with the
// first are counted; without it the shipped spec-sheet profiles measured
// none, and the table says so; a spread of 100% or more is refused.
TEST(ExploreCliTest, SpreadGivesTheRowsARangeAndCountsTiesWithTheFirst) {
  const std::string base = "explore " + source_path("scenarios/mobilenet_v2_ushape.json") +
                           " --kinds ushape --chunks 1 --max-simulations 20 --top 4";
  CliResult r = run_cli(base + " --spread 20 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j.at("spreads").at("*").get<double>(), 0.2);
  const auto& ranking = j.at("ranking");
  ASSERT_EQ(ranking.size(), 4u);
  const auto& first = ranking[0].at("time_per_batch_spread_s");
  size_t ties = 0;
  for (size_t k = 0; k < ranking.size(); ++k) {
    const auto& s = ranking[k].at("time_per_batch_spread_s");
    const double t = ranking[k].at("time_per_batch_s").get<double>();
    EXPECT_LT(s[0].get<double>(), t);
    EXPECT_GT(s[1].get<double>(), t);
    if (k > 0 && s[0].get<double>() <= first[1].get<double>()) ++ties;
  }
  EXPECT_EQ(j.at("tied_with_best"), ties);
  r = run_cli(base);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no device profile measured a timing spread"), std::string::npos) << r.out;
  r = run_cli(base + " --spread 100");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--spread"), std::string::npos) << r.err;
}

TEST(ExploreCliTest, UShapeJsonFrontRankingAndEmitBestRunsWithSimulate) {
  const std::string best = (std::filesystem::temp_directory_path() /
                            ("splitsim_explore_best_" + std::to_string(::getpid()) + ".json"))
                               .string();
  const CliResult r = run_cli("explore " + source_path("scenarios/mobilenet_v2_ushape.json") +
                              " --kinds ushape --chunks 1,4 --max-simulations 60 --top 5 --json"
                              " --emit-best " +
                              best);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("schema"), "splitsim.explore/1");
  EXPECT_EQ(j.at("objective"), "time");
  EXPECT_GT(j.at("enumerated").get<int>(), 0);
  EXPECT_LE(j.at("simulated").get<int>(), 60);
  ASSERT_FALSE(j.at("front").empty());
  ASSERT_EQ(j.at("ranking").size(), 5u);
  // No front member is dominated by another (time, bytes, client MACs, memory).
  const auto& front = j.at("front");
  auto le = [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["time_per_batch_s"].get<double>() <= b["time_per_batch_s"].get<double>() &&
           a["wire_bytes_per_batch"].get<double>() <= b["wire_bytes_per_batch"].get<double>() &&
           a["client_macs_per_batch"].get<double>() <= b["client_macs_per_batch"].get<double>() &&
           a["client_memory_bytes"].get<double>() <= b["client_memory_bytes"].get<double>();
  };
  for (const auto& a : front) {
    for (const auto& b : front) {
      if (a["label"] != b["label"] && le(a, b)) {
        EXPECT_FALSE(le(b, a) && a != b);
      }
    }
  }
  // The best by time is on the front, and the ranking is sorted by time.
  const auto& ranking = j.at("ranking");
  bool best_on_front = false;
  for (const auto& f : front) best_on_front |= f["label"] == ranking[0]["label"];
  EXPECT_TRUE(best_on_front);
  for (size_t i = 1; i < ranking.size(); ++i)
    EXPECT_LE(ranking[i - 1]["time_per_batch_s"].get<double>(),
              ranking[i]["time_per_batch_s"].get<double>());
  for (const auto& c : ranking) EXPECT_EQ(c["kind"], "ushape");

  const CliResult sim = run_cli("simulate " + best + " --json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const auto m = nlohmann::json::parse(sim.out);
  EXPECT_EQ(m.at("schema"), "splitsim.metrics/1");
  EXPECT_NEAR(m.at("time_per_batch_s").get<double>(), ranking[0]["time_per_batch_s"].get<double>(),
              1e-6 * ranking[0]["time_per_batch_s"].get<double>());
  std::filesystem::remove(best);
}

// A scenario that names only the model and the batch: explore cuts it
// between a client and a server on the default device (and says so), and
// its best plan is a scenario that plans and simulates to what it ranked.
TEST(ExploreCliTest, AScenarioOfOnlyTheModelIsExploredOnTheDefaultDevices) {
  const nlohmann::json bare = {{"schema", "splitsim.scenario/1"},
                               {"name", "just_the_model"},
                               {"model", {{"name", "resnet20"}}},
                               {"batch_size", 16}};
  const std::string file = write_temp_json(bare, "explore_model_only");
  const std::string best = file + ".best.json";
  const CliResult r = run_cli("explore " + file +
                              " --kinds ushape --chunks 1,2 --max-simulations 20 --top 3 --json"
                              " --emit-best " +
                              best);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("client and server both \"cpu_this_machine\""), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j.at("ranking").empty());
  const auto emitted = nlohmann::json::parse(slurp(best));
  EXPECT_EQ(emitted["devices"]["client"], "cpu_this_machine");
  EXPECT_EQ(emitted["partition"][0]["party"], "client");
  const CliResult sim = run_cli("simulate " + best + " --json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_NEAR(nlohmann::json::parse(sim.out).at("time_per_batch_s").get<double>(),
              j["ranking"][0]["time_per_batch_s"].get<double>(),
              1e-6 * j["ranking"][0]["time_per_batch_s"].get<double>());
  std::filesystem::remove(file);
  std::filesystem::remove(best);
}

TEST(ExploreCliTest, CalibrationChangesWhatIsPredicted) {
  // A server 20x slower than its profile: every candidate predicts slower,
  // and the best moves work to the client (a larger client MAC share).
  const std::string cal = (std::filesystem::temp_directory_path() /
                           ("splitsim_explore_cal_" + std::to_string(::getpid()) + ".json"))
                              .string();
  std::ofstream(cal) << R"({"schema": "splitsim.calibration/1",
                            "parties": {"server": {"compute_scale": 20}}})";
  const std::string base = "explore " + source_path("scenarios/mobilenet_v2_ushape.json") +
                           " --kinds ushape --chunks 1 --max-simulations 40 --top 3 --json";
  const CliResult plain = run_cli(base);
  const CliResult slow = run_cli(base + " --calibration " + cal);
  std::filesystem::remove(cal);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(slow.exit_code, 0) << slow.err;
  const auto a = nlohmann::json::parse(plain.out).at("ranking")[0];
  const auto b = nlohmann::json::parse(slow.out).at("ranking")[0];
  EXPECT_GT(b["time_per_batch_s"].get<double>(), a["time_per_batch_s"].get<double>());
  EXPECT_GT(b["client_macs_per_batch"].get<double>(), a["client_macs_per_batch"].get<double>())
      << a["label"] << " vs " << b["label"];
  const CliResult bad = run_cli(base + " --calibration /nonexistent/c.json");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("/nonexistent/c.json"), std::string::npos) << bad.err;
}

TEST(ExploreCliTest, BadObjectiveAndConstraintsExitTwoNamingTheFlag) {
  const std::string sc = source_path("scenarios/mobilenet_v2_ushape.json");
  CliResult r = run_cli("explore " + sc + " --objective speed");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--objective"), std::string::npos) << r.err;
  r = run_cli("explore " + sc + " --max-client-mac-share 1.5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--max-client-mac-share"), std::string::npos) << r.err;
  r = run_cli("explore " + sc + " --chunks 1,x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--chunks"), std::string::npos) << r.err;
  const std::string space = write_temp_json(
      {{"schema", "splitsim.explore/1"}, {"constraints", {{"client_memory_bytes", -3}}}},
      "explore_space");
  r = run_cli("explore " + sc + " --space " + space);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("$.constraints.client_memory_bytes"), std::string::npos) << r.err;
  std::filesystem::remove(space);
}

// A scenario with a sweep: explore searches around its first variant unless
// --variant picks exactly one other.
TEST(ExploreCliTest, VariantPicksTheSweepVariantToExploreAround) {
  const std::string base = "explore " + source_path("scenarios/validation_matrix.json") +
                           " --kinds single --chunks 1 --max-simulations 20 --top 3 --json";
  auto bandwidths = [](const CliResult& r) {
    const auto j = nlohmann::json::parse(r.out);  // kept alive for the loop
    std::vector<double> out;
    for (const auto& c : j.at("ranking")) out.push_back(c.at("bandwidth_bit_per_s").get<double>());
    return out;
  };
  const CliResult first = run_cli(base);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find(
                "first variant \"network.bandwidth_bit_per_s=50mbit compression=none chunks=1\""),
            std::string::npos)
      << first.err;
  EXPECT_NE(first.err.find("--variant"), std::string::npos) << first.err;
  ASSERT_EQ(bandwidths(first).size(), 3u);
  for (double b : bandwidths(first)) EXPECT_EQ(b, 5e7);

  const CliResult picked = run_cli(base + " --variant \"1gbit compression=none chunks=1\"");
  ASSERT_EQ(picked.exit_code, 0) << picked.err;
  EXPECT_EQ(picked.err.find("first variant"), std::string::npos) << picked.err;
  ASSERT_EQ(bandwidths(picked).size(), 3u);
  for (double b : bandwidths(picked)) EXPECT_EQ(b, 1e9);

  const CliResult several = run_cli(base + " --variant 1gbit");
  EXPECT_EQ(several.exit_code, 2);
  EXPECT_NE(several.err.find("--variant"), std::string::npos) << several.err;
  EXPECT_NE(several.err.find("explore searches around exactly one variant"), std::string::npos)
      << several.err;
  const CliResult none = run_cli(base + " --variant 10gbit");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no variant label contains \"10gbit\""), std::string::npos) << none.err;
}

// --emit-best writes a temporary file beside FILE and renames it over FILE:
// when that fails, exit 2 naming the flag, FILE as it was, no temporary file.
TEST(ExploreCliTest, EmitBestFailsWithoutTouchingFileOrLeavingATemporaryOne) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("splitsim_emit_best_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "folder");
  const std::string best = (dir / "best.json").string();
  std::ofstream(best) << "old\n";
  std::ofstream(dir / "folder" / "inside") << "kept\n";
  auto entries = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  };
  const std::vector<std::string> before = {"best.json", "folder"};
  ASSERT_EQ(entries(), before);
  const std::string scenario = source_path("scenarios/validation_matrix.json");
  const std::string args =
      "explore " + scenario + " --kinds single --chunks 4 --max-simulations 3 --emit-best ";

  // FILE is a directory: refused before the search.
  CliResult r = run_cli(args + (dir / "folder").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--emit-best"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(dir / "folder" / "inside"), "kept\n");
  EXPECT_EQ(entries(), before);

  // A missing folder.
  r = run_cli(args + (dir / "missing" / "best.json").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--emit-best"), std::string::npos) << r.err;
  EXPECT_EQ(entries(), before);

  // A directory this user cannot write to, holding a FILE it could write
  // (so writing FILE in place would succeed): FILE stays as it was. Root
  // writes anywhere, so as root the command runs as nobody.
  const std::string as_user =
      ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  using fs::perms;
  fs::permissions(best, perms::owner_read | perms::owner_write | perms::group_read |
                            perms::group_write | perms::others_read | perms::others_write);
  fs::permissions(dir, perms::owner_read | perms::owner_exec | perms::group_read |
                           perms::group_exec | perms::others_read | perms::others_exec);
  const std::string probe = as_user + "test -x " + SPLITSIM_BIN + " -a -r " + scenario;
  const bool can_run = std::system(probe.c_str()) == 0;
  if (can_run) {
    r = run_cli(args + best, as_user);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--emit-best"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(best), "old\n");
    EXPECT_EQ(entries(), before);
  }
  fs::permissions(dir, perms::owner_all);

  // And it replaces FILE when it can.
  r = run_cli(args + best);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(best)).at("schema"), "splitsim.scenario/1");
  EXPECT_EQ(entries(), before);
  fs::remove_all(dir);
  if (!can_run) GTEST_SKIP() << "the read-only directory: nobody cannot run " << probe;
}

TEST(ExploreCliTest, EmitBestRunsForRealWithExecAndValidateTopComparesTheOrder) {
  const std::string best = (std::filesystem::temp_directory_path() /
                            ("splitsim_best_exec_" + std::to_string(::getpid()) + ".json"))
                               .string();
  const std::string sc = source_path("scenarios/validation_matrix.json");
  CliResult r = run_cli("explore " + sc + " --kinds single --chunks 4 --emit-best " + best);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Server and client of the emitted scenario, two real processes over loopback Gloo.
  const std::string port = std::to_string(20000 + ::getpid() % 20000);
  const std::string bin = SPLITSIM_BIN;
  const std::string json = best + ".metrics";
  const std::string cmd =
      "(timeout 120 " + bin + " exec " + best +
      " --iterations 4 --timeout-s 60 --role server --listen 127.0.0.1:" + port + " --json >" +
      json + " 2>/dev/null & sleep 1; timeout 120 " + bin + " exec " + best +
      " --iterations 4 --timeout-s 60 --role client" + " --connect 127.0.0.1:" + port +
      " >/dev/null 2>&1; wait $!)";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(json);
  const auto m = nlohmann::json::parse(in);
  EXPECT_EQ(m["source"], "exec");
  EXPECT_TRUE(m["complete"].get<bool>());
  EXPECT_GT(m["time_per_batch_s"].get<double>(), 0);
  std::filesystem::remove(json);
  std::filesystem::remove(best);
  if (::geteuid() != 0) GTEST_SKIP() << "--validate-top needs root for the network namespaces";
  r = run_cli("explore " + sc +
              " --kinds single --chunks 4 --validate-top 3 --validate-repeat 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto v = nlohmann::json::parse(r.out)["validation"];
  ASSERT_EQ(v["plans"].size(), 3u) << v.dump(2);
  EXPECT_EQ(v["repeat"], 2);
  for (const auto& p : v["plans"]) {
    EXPECT_GT(p["measured_time_per_batch_s"].get<double>(), 0) << p.dump();
    EXPECT_LE(p["measured_spread_s"][0].get<double>(),
              p["measured_time_per_batch_s"].get<double>());
    EXPECT_GE(p["measured_spread_s"][1].get<double>(),
              p["measured_time_per_batch_s"].get<double>());
  }
  const int measured_best = v["measured_best_rank"];
  EXPECT_GE(measured_best, 1);
  EXPECT_LE(measured_best, 3);
  EXPECT_TRUE(v["measured_best_is_predicted_best"].is_boolean());
  EXPECT_EQ(v["summary"]["runs"], 3);
}

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
