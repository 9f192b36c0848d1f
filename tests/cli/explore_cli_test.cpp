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
              " --kinds single --chunks 4 --validate-top 2 --validate-repeat 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto v = nlohmann::json::parse(r.out)["validation"];
  ASSERT_EQ(v["plans"].size(), 2u) << v.dump(2);
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
  EXPECT_LE(measured_best, 2);
  EXPECT_TRUE(v["measured_best_is_predicted_best"].is_boolean());
  EXPECT_EQ(v["summary"]["runs"], 2);
}

}  // namespace
}  // namespace splitsim::testing
