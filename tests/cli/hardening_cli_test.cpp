// Regression tests of issue #12 through the binary: every bad input is exit
// code 2 with one clear line on stderr, never a signal, a runaway or raw
// library text; a fuzzed subset runs through `simulate`.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "run_cli.h"

namespace splitsim::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* const kRawLibraryText[] = {
    "json.exception", "frame #",   "terminate called", "xbt",
    "basic_filebuf",  "bad_alloc", "Deadlock",         "vector::"};

void expect_clean(const CliResult& r, const std::string& what) {
  for (const char* raw : kRawLibraryText)
    EXPECT_EQ(r.err.find(raw), std::string::npos) << what << ": " << r.err;
}

// ResNet20 in two stages on V100s: parses and simulates in seconds.
json small() {
  return json::parse(R"({
    "schema": "splitsim.scenario/1", "name": "small", "model": {"name": "resnet20"},
    "batch_size": 8, "chunks": 2, "schedule": "gpipe",
    "partition": [{"party": "dev0", "from": "conv1", "to": "layer2.0"},
                  {"party": "dev1", "from": "layer2.1", "to": "head"}],
    "devices": {"dev0": "v100", "dev1": "v100"},
    "network": {"bandwidth_bit_per_s": 1e9, "latency_s": 1e-4},
    "iterations": 4, "warmup": 1})");
}

// Removes the scenario files the tests wrote (write_temp_json names them
// splitsim_<name>_<pid>.json).
class HardeningCliTest : public ::testing::Test {
 protected:
  void TearDown() override {
    const std::string suffix = "_" + std::to_string(getpid()) + ".json";
    for (const char* name :
         {"devdir", "zero", "fifo", "runaway", "bert", "edge", "flags", "val", "fuzz"}) {
      std::error_code ec;
      fs::remove(fs::temp_directory_path() / ("splitsim_" + std::string(name) + suffix), ec);
    }
  }
};

// Runs `args` and expects exit code 2 within `max_s` with `phrase` on stderr.
CliResult expect_exit_2(const std::string& args, const std::string& phrase, double max_s = 60) {
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = run_cli(args);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(phrase), std::string::npos) << args << "\n" << r.err;
  EXPECT_LT(s, max_s) << args;
  EXPECT_TRUE(r.out.empty()) << args;
  expect_clean(r, args);
  return r;
}

TEST_F(HardeningCliTest, DeepNestingIsExit2OnEverySubcommand) {
  const fs::path file =
      fs::temp_directory_path() / ("splitsim_deep_" + std::to_string(getpid()) + ".json");
  std::ofstream(file) << std::string(100000, '[') << std::string(100000, ']');
  for (const char* sub : {"plan", "simulate", "explore", "validate"})
    expect_exit_2(std::string(sub) + " " + file.string(), "nested deeper than 64");
  expect_exit_2("exec " + file.string() + " --role server --listen 127.0.0.1:1", "nested deeper");
  fs::remove(file);
}

TEST_F(HardeningCliTest, OverflowingNumberIsExit2WithoutLibraryText) {
  const fs::path file =
      fs::temp_directory_path() / ("splitsim_1e309_" + std::to_string(getpid()) + ".json");
  std::string text = small().dump();
  text.replace(text.find("0.0001"), 6, "1e309");
  std::ofstream(file) << text;
  expect_exit_2("simulate " + file.string(), "1e309 is out of the range of a double");
  fs::remove(file);
}

TEST_F(HardeningCliTest, DirectoryAsDeviceIsExit2) {
  const fs::path dir =
      fs::temp_directory_path() / ("splitsim_devdir_" + std::to_string(getpid()) + ".json");
  fs::create_directories(dir);
  json j = small();
  j["devices"]["dev1"] = dir.string();
  expect_exit_2("plan " + write_temp_json(j, "devdir"), "is a directory");
  fs::remove_all(dir);
}

TEST_F(HardeningCliTest, NonRegularTraceIsExit2AtOnce) {
  json j = small();
  j["network"]["bandwidth_trace"] = "/dev/zero";
  expect_exit_2("simulate " + write_temp_json(j, "zero"), "character device", 30);
  const fs::path fifo = fs::temp_directory_path() / ("splitsim_fifo_" + std::to_string(getpid()));
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  j["network"]["bandwidth_trace"] = fifo.string();
  expect_exit_2("simulate " + write_temp_json(j, "fifo"), "is a FIFO", 30);
  fs::remove(fifo);
}

TEST_F(HardeningCliTest, RunawaySizesAreExit2AtOnce) {
  const std::pair<const char*, json> cases[] = {
      {"/clients", 1e5},           {"/clients", 1e9},           {"/iterations", 1e7},
      {"/iterations", 1e9},        {"/batch_size", 1e12},       {"/chunks", int64_t{1} << 62},
      {"/model/image_size", 4096}, {"/model/num_classes", 1e9},
  };
  for (const auto& [pointer, value] : cases) {
    json j = small();
    j[json::json_pointer(pointer)] = value;
    // The JSON path of the value: "/model/image_size" -> "$.model.image_size".
    std::string path = std::string("$") + pointer;
    std::replace(path.begin(), path.end(), '/', '.');
    expect_exit_2("simulate " + write_temp_json(j, "runaway"), path + ": ", 30);
  }
  json j = small();
  j["model"] = {{"name", "bert_small"}, {"seq_len", 1e6}, {"max_positions", 1e6}};
  expect_exit_2("plan " + write_temp_json(j, "bert"), "$.model.seq_len", 30);
}

TEST_F(HardeningCliTest, SimulatorEdgeValuesAreExit2) {
  const std::pair<const char*, double> cases[] = {
      {"latency_s", 1e308}, {"per_message_overhead_s", 1e308}, {"bandwidth_bit_per_s", 1e-300}};
  for (const auto& [key, value] : cases) {
    json j = small();
    j["network"][key] = value;
    expect_exit_2("simulate " + write_temp_json(j, "edge"), std::string("$.network.") + key);
  }
}

TEST_F(HardeningCliTest, UnknownSubcommandNamesItselfAndTheValidOnes) {
  for (const char* args : {"trian", "trian --help", "simulat x.json"}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err.find("unknown subcommand"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("valid: plan, profile, simulate"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  EXPECT_EQ(run_cli("--help").exit_code, 0);
  // A command that exists prints its own help.
  const CliResult help = run_cli("calibrate --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--measured"), std::string::npos) << help.out;
}

TEST_F(HardeningCliTest, NumericFlagsHaveShortRanges) {
  const std::string scenario = write_temp_json(small(), "flags");
  const std::pair<std::string, std::string> cases[] = {
      {"exec " + scenario + " --role server --threads 0", "--threads"},
      {"validate " + scenario + " --threads 0", "--threads"},
      {"simulate " + scenario + " --jobs 0", "--jobs"},
      {"simulate " + scenario + " --jobs -1", "--jobs"},
      {"explore " + scenario + " --jobs 0", "--jobs"},
      {"bench --jobs 0", "--jobs"},
      {"exec " + scenario + " --role server --timeout-s 1e400", "--timeout-s"},
      {"exec " + scenario + " --role server --iterations 1e9", "--iterations"},
  };
  for (const auto& [args, flag] : cases) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("must be"), std::string::npos) << r.err;
    // One short line, not CLI11's 300-digit bound.
    EXPECT_LT(r.err.find('\n'), 200u) << r.err;
  }
}

TEST_F(HardeningCliTest, ValidateRefusesBadLinkRateAndReportBeforeRunning) {
  const std::string scenario = write_temp_json(small(), "val");
  expect_exit_2("validate " + scenario + " --link-rate 1e30gbit", "100gbit", 30);
  expect_exit_2("validate " + scenario + " --link-rate 1kbit", "8kbit", 30);
  expect_exit_2("validate " + scenario + " --report " + fs::temp_directory_path().string(),
                "is a directory", 30);
}

// A sweep where a command needs one variant: exit 2 before any socket opens,
// naming --variant and a dozen of the labels that match, then how many more.
TEST_F(HardeningCliTest, SweepWithoutOneVariantIsExit2ListingADozenLabels) {
  const std::string sweep = source_path("scenarios/validation_matrix.json");  // 36 variants
  const CliResult exec = expect_exit_2("exec " + sweep + " --role server --listen 127.0.0.1:1",
                                       "exec runs exactly one variant, 36 match", 30);
  EXPECT_NE(exec.err.find("\"network.bandwidth_bit_per_s=50mbit compression=none chunks=1\""),
            std::string::npos)
      << exec.err;
  EXPECT_NE(exec.err.find(" and 24 more"), std::string::npos) << exec.err;
  EXPECT_EQ(exec.err.find("1gbit compression=fp16 chunks=8"), std::string::npos) << exec.err;
  expect_exit_2("train " + sweep + " --role server --listen 127.0.0.1:1 --variant 200mbit",
                "two processes train exactly one variant, 12 match", 30);
}

// Random edge values in the small scenario's numeric and string leaves, run
// through `simulate`: exit 0 with positive times, or exit 2; never a signal.
TEST_F(HardeningCliTest, FuzzedScenariosThroughSimulate) {
  const json base = small();
  const std::vector<json> values = {0,    -1, 1e308, 1e-300,  1e12,          int64_t{1} << 62,
                                    4096, 3,  "x",   nullptr, json::array(), 0.25};
  const char* const pointers[] = {"/batch_size",
                                  "/chunks",
                                  "/iterations",
                                  "/warmup",
                                  "/network/bandwidth_bit_per_s",
                                  "/network/latency_s",
                                  "/model/num_classes",
                                  "/partition/0/to",
                                  "/schedule",
                                  "/clients"};
  std::mt19937_64 rng(12);
  int ok = 0, refused = 0;
  for (int i = 0; i < 16; ++i) {
    json j = base;
    j[json::json_pointer(pointers[rng() % std::size(pointers)])] = values[rng() % values.size()];
    const std::string args = "simulate --json " + write_temp_json(j, "fuzz");
    const CliResult r = run_cli(args);
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << j.dump() << "\n" << r.err;
    expect_clean(r, j.dump());
    if (r.exit_code == 0) {
      ++ok;
      EXPECT_GT(json::parse(r.out).at("time_per_batch_s").get<double>(), 0) << j.dump();
    } else {
      ++refused;
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace splitsim::testing
