// `splitsim simulate` end to end: every shipped scenario and variant runs,
// respects physical bounds, agrees with the plan's bytes, and keeps its
// regression figures (tests/cli/expected_simulate.json, 1% tolerance).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <sstream>

#include "run_cli.h"

namespace splitsim::testing {
namespace {

class ShippedScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedScenarioTest, EveryVariantSimulatesWithinPhysicalBounds) {
  const std::string file = "scenarios/" + GetParam();
  const CliResult r = run_cli("simulate --json " + source_path(file));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json all = nlohmann::json::parse(r.out);
  if (all.is_object()) all = nlohmann::json::array({all});
  const CliResult p = run_cli("plan --json " + source_path(file));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  nlohmann::json plans = nlohmann::json::parse(p.out);
  if (plans.is_object()) plans = nlohmann::json::array({plans});
  ASSERT_EQ(all.size(), plans.size());

  const nlohmann::json scenario = load_json(file);
  const double link_Bps = scenario["network"]["bandwidth_bit_per_s"].get<double>() / 8;
  const auto expected = load_json("tests/cli/expected_simulate.json").at(GetParam());
  int checked = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& m = all[i];
    SCOPED_TRACE(m["variant"].get<std::string>());
    EXPECT_EQ(m["schema"], "splitsim.metrics/1");
    EXPECT_EQ(m["source"], "sim");
    EXPECT_EQ(m["variant"], plans[i]["variant"]);
    const double t = m["time_per_batch_s"].get<double>();
    ASSERT_GT(t, 0);
    double busy_sum = 0, send_sum = 0;
    for (const auto& [party, pm] : m["parties"].items()) {
      const double busy = pm["busy_s_per_batch"].get<double>();
      const double sent = pm["bytes_sent_per_batch"].get<double>();
      // Lower bounds: a party computes one thing at a time; a link moves link_Bps.
      EXPECT_LE(busy, t * (1 + 1e-9)) << party;
      EXPECT_LE(sent / link_Bps, t * (1 + 1e-9)) << party;
      busy_sum += busy;
      send_sum += sent;
    }
    // Upper bound: nothing overlapping at all (fr replays forwards: at most 2x compute).
    const double latency = scenario["network"].value("latency_s", 0.0);
    const double messages = 2.0 * plans[i]["chunks"].get<double>() * plans[i]["boundaries"].size();
    EXPECT_LE(t, 2 * busy_sum + send_sum / link_Bps + messages * latency + 1e-9);
    // The simulator moves exactly the Plan's wire bytes.
    int64_t plan_bytes = 0;
    for (const auto& b : plans[i]["boundaries"]) {
      const auto& stages = plans[i]["stages"];
      if (stages[b["from_stage"].get<int>()]["party"] == stages[b["to_stage"].get<int>()]["party"])
        continue;
      plan_bytes += b["forward"]["wire_bytes_per_batch"].get<int64_t>() +
                    b["backward"]["wire_bytes_per_batch"].get<int64_t>();
    }
    EXPECT_NEAR(send_sum, static_cast<double>(plan_bytes), 0.5);
    if (expected.contains(m["variant"].get<std::string>())) {
      const double want = expected[m["variant"].get<std::string>()].get<double>();
      EXPECT_NEAR(t / want, 1.0, 0.01) << "time_per_batch_s " << t << " vs expected " << want;
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(expected.size())) << "expected variants not found";
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ShippedScenarioTest,
                         ::testing::Values("mobilenet_v2_ushape.json", "roberta_cola_ushape.json",
                                           "mobilenet_v2_cifar_5stage.json",
                                           "roberta_rte_5stage.json", "resnet20_kstage.json",
                                           "bert_small_schedules.json"),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.find('.'));
                           for (char& c : n) c = std::isalnum(c) ? c : '_';
                           return n;
                         });

TEST(SimulateCliTest, CsvHasOneRowPerVariant) {
  const CliResult r =
      run_cli("simulate --csv " + source_path("scenarios/mobilenet_v2_ushape.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int lines = 0;
  for (char c : r.out) lines += c == '\n';
  EXPECT_EQ(lines, 1 + 15);
  EXPECT_NE(r.out.substr(0, r.out.find('\n')).find("scenario,variant"), std::string::npos)
      << r.out.substr(0, 80);
}

// The main job (`./bootstrap.sh`): only splitsim's own words on stderr (no
// LibTorch log line), a table within 120 columns that still has every
// variant with its time, compute, bandwidths and bottleneck; --wide the rest.
TEST(SimulateCliTest, TheMainJobFitsATerminalAndPrintsOnlyItsOwnWords) {
  const std::string s = source_path("scenarios/mobilenet_v2_ushape.json");
  const CliResult r = run_cli("simulate " + s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);) {
    EXPECT_EQ(line.find("InitGoogleLogging"), std::string::npos) << line;
    EXPECT_EQ(line.find(".cpp:"), std::string::npos) << line;  // glog's "file.cpp:231] "
    EXPECT_FALSE(line.size() > 5 && std::string("IWEF").find(line[0]) != std::string::npos &&
                 std::isdigit(static_cast<unsigned char>(line[1])))
        << "a glog line: " << line;
  }
  std::istringstream out(r.out);
  int rows = 0;
  for (std::string line; std::getline(out, line);) {
    EXPECT_LE(line.size(), 120u) << line;
    if (line.rfind("chunks=", 0) == 0) {
      ++rows;
      for (const char* column : {" ms ", "/", "(" /* the bottleneck's utilisation */})
        EXPECT_NE(line.find(column), std::string::npos) << line;
    }
  }
  EXPECT_EQ(rows, 15);
  EXPECT_NE(r.out.find("bottleneck"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("chunks=8 compression=conv20"), std::string::npos) << r.out;
  const CliResult wide = run_cli("simulate --wide " + s);
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  EXPECT_NE(wide.out.find("peak stash per stage"), std::string::npos) << wide.out;
  EXPECT_NE(wide.out.find("spread (min..max)"), std::string::npos) << wide.out;
  EXPECT_EQ(run_cli("simulate --wide --json " + s).exit_code, 2);
}

// A label longer than the table leaves room for wraps at its spaces onto
// the next line instead of widening every row.
TEST(SimulateCliTest, LongVariantLabelsWrapWithinTheTable) {
  nlohmann::json s = load_json("scenarios/mobilenet_v2_ushape.json");
  s["sweep"] = {{"chunks", {1, 4}},
                {"devices.client", {"xeon_40core", "raspberry_pi4"}},
                {"devices.server", {"gtx1080", "v100"}}};
  const std::string file = write_temp_json(s, "long_labels");
  const CliResult r = run_cli("simulate " + file);
  std::filesystem::remove(file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream out(r.out);
  int continued = 0;
  for (std::string line; std::getline(out, line);) {
    EXPECT_LE(line.size(), 120u) << line;
    continued += line.rfind("  devices.server=", 0) == 0;
  }
  // "chunks=1 devices.client=xeon_40core" fills the label column: every
  // label's server goes on a line of its own.
  EXPECT_EQ(continued, 8) << r.out;
}

TEST(SimulateCliTest, TraceNeedsOneVariantAndWritesChromeJson) {
  const std::string s = source_path("scenarios/mobilenet_v2_ushape.json");
  const auto trace = std::filesystem::temp_directory_path() /
                     ("splitsim_trace_" + std::to_string(::getpid()) + ".json");
  CliResult r = run_cli("simulate --trace " + trace.string() + " " + s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--variant"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(trace));
  r = run_cli("simulate --variant 'chunks=8 compression=conv20' --trace " + trace.string() + " " +
              s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(trace);
  const auto j = nlohmann::json::parse(in);
  const auto& events = j.is_array() ? j : j.at("traceEvents");
  bool forward = false, transfer = false;
  for (const auto& e : events) {
    const std::string name = e.value("name", "");
    forward |= name == "F s1 mb7";
    transfer |= name == "xfer fwd b0 mb7";
  }
  EXPECT_TRUE(forward);
  EXPECT_TRUE(transfer);
  std::filesystem::remove(trace);
}

// A binary copied out of its build or install tree finds no shipped device
// profiles: the error names the profile and says how to point at them.
TEST(SimulateCliTest, WithoutTheShippedDevicesTheErrorSaysWhereToPointSplitsim) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("splitsim_no_data_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto copy = dir / "ushape.json";
  std::filesystem::copy_file(source_path("scenarios/mobilenet_v2_ushape.json"), copy);
  CliResult r = run_cli("simulate " + copy.string(), "SPLITSIM_DATA_DIR=" + dir.string() + " ");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no device profile \"xeon_40core\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("$SPLITSIM_DATA_DIR " + dir.string() + " has no devices/"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("set SPLITSIM_DATA_DIR to the repository's scenarios/ directory"),
            std::string::npos)
      << r.err;
  // With the shipped profiles where it looks, the same copy runs.
  r = run_cli("simulate " + copy.string(), "SPLITSIM_DATA_DIR=" + source_path("scenarios") + " ");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace splitsim::testing
