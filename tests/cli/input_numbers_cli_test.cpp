// Issue #39 item 6 through the binary: every measured or reported number,
// label and key is checked on the way in; a bad one is exit 2 naming the
// file and its line or JSON path, never exit 0 with a nonsense figure or
// exit 1 with library text.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>

#include "run_cli.h"

namespace splitsim::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// ResNet20 in two stages: plans and simulates in seconds. `dev0` names the
// first party's device.
json numbers_scenario(const std::string& dev0 = "v100") {
  json j = json::parse(R"({
    "schema": "splitsim.scenario/1", "name": "small", "model": {"name": "resnet20"},
    "batch_size": 8, "chunks": 2, "schedule": "gpipe",
    "partition": [{"party": "dev0", "from": "conv1", "to": "layer2.0"},
                  {"party": "dev1", "from": "layer2.1", "to": "head"}],
    "devices": {"dev1": "v100"},
    "network": {"bandwidth_bit_per_s": 1e9, "latency_s": 1e-4},
    "iterations": 4, "warmup": 1})");
  j["devices"]["dev0"] = dev0;
  return j;
}

std::string numbers_temp(const std::string& name) {
  return (fs::temp_directory_path() /
          ("splitsim_numbers_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string numbers_write(const std::string& name, const std::string& text) {
  const std::string p = numbers_temp(name);
  std::ofstream(p) << text;
  return p;
}

class InputNumbersCliTest : public ::testing::Test {
 protected:
  void TearDown() override {
    const std::string prefix = "splitsim_numbers_" + std::to_string(::getpid()) + "_";
    for (const auto& e : fs::directory_iterator(fs::temp_directory_path()))
      if (e.path().filename().string().rfind(prefix, 0) == 0) fs::remove(e.path());
  }
};

// Runs `args`; expects exit 2 within 60 s, nothing on stdout, and every one
// of `phrases` on stderr.
void expect_exit_2_naming(const std::string& args, const std::vector<std::string>& phrases) {
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = run_cli(args);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60)
      << args;
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << args << "\n" << r.out;
  for (const auto& p : phrases) EXPECT_NE(r.err.find(p), std::string::npos) << p << "\n" << r.err;
  EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
}

TEST_F(InputNumbersCliTest, CalibrateRefusesMeasuredRowsNamingFileAndLine) {
  const std::string scenario = numbers_write("calibrate_scenario.json", numbers_scenario().dump(2));
  const std::string out = numbers_temp("calibration.json");
  const std::string calibrate = "calibrate " + scenario + " -o " + out + " --measured ";
  const std::string tiny = numbers_write("tiny.csv", "variant,time_per_batch_s\nbase,1e-300\n");
  expect_exit_2_naming(calibrate + tiny, {tiny + ":2", "from 1e-06 to 86400 seconds, got 1e-300"});
  const std::string half = numbers_write("half.csv", "variant,time_per_batch_s\nbase\xc3,0.5\n");
  expect_exit_2_naming(calibrate + half, {half + ":2", "not valid UTF-8 at byte 4"});
  const std::string str = numbers_write(
      "str.json",
      R"({"schema": "splitsim.metrics/1", "variant": "base", "time_per_batch_s": "0.5"})");
  expect_exit_2_naming(calibrate + str, {"$.time_per_batch_s", "[in " + str + "]", "got \"0.5\""});
  std::string rows = "variant,time_per_batch_s\n";
  for (int i = 0; i < 5000; ++i) rows += "base,0.5\n";
  const std::string many = numbers_write("many.csv", rows);
  expect_exit_2_naming(calibrate + many, {many + ":258", "the limit is 256"});
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(InputNumbersCliTest, ExploreAccuracyReportValuesAreChecked) {
  const std::string scenario = numbers_write("accuracy_scenario.json", numbers_scenario().dump(2));
  json run = {{"schema", "splitsim.train/1"},
              {"variant", "none"},
              {"chunks", 1},
              {"compression", json::array()},
              {"evaluations", {{{"batches", 0}, {"test_accuracy", 0.8}}}}};
  const std::string report = numbers_write("accuracy.json", run.dump());
  const std::string explore = "explore " + scenario + " --target-accuracy 70 --accuracy " + report;
  expect_exit_2_naming(explore, {report + ": $.evaluations[0].batches", "from 1 to"});
  run["evaluations"][0] = {{"batches", 100}, {"test_accuracy", 80}};
  std::ofstream(report) << run.dump();
  expect_exit_2_naming(explore, {"$.evaluations[0].test_accuracy", "not percentages"});
  run["evaluations"][0] = {{"batches", 100}, {"test_accuracy", "high"}};
  std::ofstream(report) << run.dump();
  expect_exit_2_naming(explore, {"$.evaluations[0].test_accuracy", "got \"high\""});
}

TEST_F(InputNumbersCliTest, DeviceProfileTimingsAreCheckedByPlanAndSimulate) {
  json device = load_json("scenarios/devices/v100.json");
  device["measured"] = {{"model", "resnet20"},
                        {"input_shape", {3, 32, 32}},
                        {"batch", 8},
                        {"units", {{{"unit", "conv1"}, {"fwd_s", -5}, {"bwd_s", 1e-4}}}}};
  const std::string dev = numbers_temp("device.json");
  std::ofstream(dev) << device.dump();
  const std::string scenario = numbers_write("device_scenario.json", numbers_scenario(dev).dump(2));
  for (const char* sub : {"plan", "simulate"})
    expect_exit_2_naming(std::string(sub) + " " + scenario,
                         {dev + ":$.measured.units[0].fwd_s", "got -5"});
  std::ofstream(dev) << R"({"schema": "splitsim.device/1", "name": "d", "peak_flops": 1e12,
                             "peak_flops": 1e13, "memory_bandwidth_Bps": 1e11})";
  expect_exit_2_naming("plan " + scenario, {"$.peak_flops", "duplicate key", dev});
}

TEST_F(InputNumbersCliTest, ExploreSpaceFileValuesNameTheFileAndTheSpaceIsBounded) {
  const std::string scenario = numbers_write("space_scenario.json", numbers_scenario().dump(2));
  const std::string space = numbers_write(
      "space.json", R"({"schema": "splitsim.explore/1", "kinds": ["single"], "chunks": [5000]})");
  const CliResult r = run_cli("explore " + scenario + " --space " + space);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(space + " $.chunks[0]"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--chunks"), std::string::npos) << r.err;
  json big = {{"schema", "splitsim.explore/1"},
              {"kinds", {"single"}},
              {"schedules", {"sequential", "gpipe", "1f1b", "pipedream", "ddg", "fr"}},
              {"bandwidths_bit_per_s", json::array()}};
  for (int i = 0; i < 2000; ++i) big["bandwidths_bit_per_s"].push_back(1e6 + i);
  std::ofstream(space) << big.dump();
  expect_exit_2_naming("explore " + scenario + " --space " + space + " --chunks 1,2,3,4,5,6,7,8",
                       {space, "8 chunk counts (--chunks)", "2000 bandwidths",
                        "= 480000 combinations per cut; the limit is 1024"});
  std::ofstream(space) << R"({"schema": "splitsim.explore/1", "chunks": [1], "chunks": [2]})";
  expect_exit_2_naming("explore " + scenario + " --space " + space,
                       {"$.chunks", "duplicate key", space});
}

TEST_F(InputNumbersCliTest, NumbersOnTheCommandLineAreDecimalAndTimeoutsAtLeastAMillisecond) {
  const std::string scenario = numbers_write("flags_scenario.json", numbers_scenario().dump(2));
  expect_exit_2_naming("explore " + scenario + " --chunks 0x10", {"--chunks", "\"0x10\""});
  expect_exit_2_naming("exec " + scenario + " --role server --timeout-s 0x10", {"--timeout-s"});
  for (const char* sub : {"exec", "train"})
    expect_exit_2_naming(std::string(sub) + " " + scenario + " --role server --timeout-s 0.0001",
                         {"--timeout-s", "[0.001, 86400]"});
  expect_exit_2_naming("train " + scenario + " --one-vs-rest 10",
                       {"--one-vs-rest", "from 0 to 9", "\"10\""});
  expect_exit_2_naming("link-probe --role server --timeout-s 0.0001",
                       {"--timeout-s", "[0.001, 86400]"});
  expect_exit_2_naming("validate " + scenario + " --timeout-s 0.0001",
                       {"--timeout-s", "[0.001, 86400]"});
}

TEST_F(InputNumbersCliTest, ControlCharactersInLabelsAreRefusedBeforeTheyReachTheTerminal) {
  json j = numbers_scenario();
  j["sweep"] = {{"chunks", {{{"label", "two\u001b[2J"}, {"value", 2}}}}};
  const std::string scenario = numbers_write("labels_scenario.json", j.dump(2));
  expect_exit_2_naming("simulate --csv " + scenario,
                       {"$.sweep.chunks[0].label", "U+001B", scenario});
  // A plan file: what `plan --json` writes (one object for one variant), its
  // variant label edited.
  const CliResult plan =
      run_cli("plan --json " + numbers_write("plan_scenario.json", numbers_scenario().dump(2)));
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  json plans = json::parse(plan.out);
  plans["variant"] = "base\u001b]0;title\u0007";
  const std::string file = numbers_write("plans.json", plans.dump());
  expect_exit_2_naming("simulate --csv " + file, {"$.variant", "U+001B", file});
  // A valid plan file still simulates.
  plans["variant"] = "base caf\u00e9";
  std::ofstream(file) << plans.dump();
  const CliResult ok = run_cli("simulate --csv " + file);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("base caf\u00e9"), std::string::npos) << ok.out;
}

}  // namespace
}  // namespace splitsim::testing
