// Regression tests of issue #12: every bad scenario input is an InputError
// naming its path and the limit, never a crash, a library message or a
// result computed from an overflow.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "expect_input_error.h"
#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/input_file.h"
#include "splitsim/costmodel/planner.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("splitsim_limits_" + std::to_string(getpid()) + "_" + name);
}

// Removes every file the tests wrote (one is 16 MiB).
class InputLimitsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    const std::string prefix = temp_path("").filename().string();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::temp_directory_path(), ec)) {
      if (e.path().filename().string().rfind(prefix, 0) == 0) fs::remove_all(e.path(), ec);
    }
  }
};

std::string write_text(const std::string& name, const std::string& text) {
  const fs::path p = temp_path(name);
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

json base() {
  return json::parse(R"({
    "schema": "splitsim.scenario/1", "name": "t", "model": {"name": "resnet20"},
    "batch_size": 8,
    "partition": [{"party": "client", "from": "conv1", "to": "layer1.2"},
                  {"party": "server", "from": "layer2.0", "to": "fc"}],
    "devices": {"client": "xeon_40core", "server": "gtx1080"}})");
}

// Loads `j` from a file as the CLI does; expects InputError at `where`.
void expect_refused(const json& j, const std::string& where, const std::string& phrase) {
  const std::string file = write_text("s.json", j.dump());
  expect_error([&] { load_scenario_file(file); }, where, phrase);
}

TEST_F(InputLimitsTest, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string file = write_text("deep.json", deep);
  expect_error([&] { load_scenario_file(file); }, file + ":1:65", "nested deeper than 64");
  expect_error([&] { parse_json_file(file, "device profile"); }, file + ":1:65",
               "nested deeper than 64");
  // Brackets inside strings do not count.
  json j = base();
  j["description"] = std::string(1000, '[');
  const std::string ok = write_text("brackets.json", j.dump());
  EXPECT_EQ(load_scenario_file(ok).size(), 1u);
}

TEST_F(InputLimitsTest, NumberOverflowingADoubleNamesItsPosition) {
  const std::string text = R"({"schema": "splitsim.scenario/1", "network": {"latency_s": 1e309}})";
  const std::string file = write_text("overflow.json", text);
  expect_error([&] { load_scenario_file(file); }, file + ":1:60", "1e309 is out of the range");
  const std::string negative = write_text("neg.json", R"([-2e400])");
  expect_error([&] { parse_json_file(negative, "x"); }, negative + ":1:2", "out of the range");
}

TEST_F(InputLimitsTest, LongStringsAndLargeFilesAreRefused) {
  json j = base();
  j["name"] = std::string(kMaxJsonStringBytes + 1, 'x');
  const std::string file = write_text("long.json", j.dump());
  try {
    load_scenario_file(file);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the limit is 65536 bytes"), std::string::npos)
        << e.what();
  }
  const std::string big = write_text("big.json", std::string(kMaxInputFileBytes + 1, ' '));
  expect_error([&] { read_input_file(big, "scenario file"); }, big, "the limit is 16777216");
}

TEST_F(InputLimitsTest, OnlyRegularFilesAreRead) {
  const fs::path dir = temp_path("dir.json");
  fs::create_directories(dir);
  expect_error([&] { load_scenario_file(dir.string()); }, dir.string(), "is a directory");
  // A directory named like a device profile: no "basic_filebuf" text.
  expect_error([&] { load_device(dir.string(), {}, "$.devices.client"); }, dir.string(),
               "is a directory");
  expect_error([&] { load_scenario_file("/dev/zero"); }, "/dev/zero", "character device");
  const fs::path fifo = temp_path("fifo.json");
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Returns at once: the FIFO is opened without waiting for a writer.
  expect_error([&] { load_scenario_file(fifo.string()); }, fifo.string(), "is a FIFO");
  fs::remove(fifo);
  fs::remove_all(dir);
}

TEST_F(InputLimitsTest, HugeModelOptionsAreRefusedAtTheirPath) {
  struct Case {
    json model;
    std::string where;
  };
  const Case cases[] = {
      {{{"name", "resnet20"}, {"num_classes", 1e9}}, "$.model.num_classes"},
      {{{"name", "resnet20"}, {"image_size", 1e5}}, "$.model.image_size"},
      {{{"name", "mobilenet_v2"}, {"image_size", 4096}}, "$.model.image_size"},
      {{{"name", "bert_small"}, {"vocab_size", 1e12}}, "$.model.vocab_size"},
      {{{"name", "bert_small"}, {"hidden", 1e6}}, "$.model.hidden"},
      {{{"name", "bert_small"}, {"ffn", 1e9}}, "$.model.ffn"},
      {{{"name", "bert_small"}, {"seq_len", 1e6}, {"max_positions", 1e6}}, "$.model.seq_len"},
  };
  for (const Case& c : cases) {
    json j = base();
    j["model"] = c.model;
    expect_refused(j, c.where, "is out of range; allowed: ");
  }
  // Each option within its bound, one unit too large to build at once: the
  // embeddings, or a block.
  json j = base();
  j["model"] = {{"name", "bert_small"}, {"hidden", 4096}, {"vocab_size", 262144}, {"heads", 64}};
  expect_refused(j, "$.model", "its largest unit has about ");
  j["model"] = {
      {"name", "llama"}, {"hidden", 8192}, {"heads", 64}, {"kv_heads", 8}, {"ffn", 28672}};
  expect_refused(j, "$.model", "the limit is 268435456");
  // Planning builds one unit at a time: a 1.3B encoder (24 blocks of hidden
  // 2048, FFN 8192), with blocks frozen apart too, and a 7B decoder plan.
  j["model"] = {
      {"name", "roberta_base"}, {"layers", 24}, {"hidden", 2048}, {"heads", 16}, {"ffn", 8192},
      {"seq_len", 512}};
  EXPECT_EQ(expand_scenario(j).size(), 1u);
  j["model"]["finetune"] = {{"frozen", {"layer.0"}}};
  EXPECT_EQ(expand_scenario(j).size(), 1u);
  j["model"] = {{"name", "llama"}, {"layers", 32}, {"hidden", 4096}, {"heads", 32},
                {"kv_heads", 32},  {"ffn", 11008}, {"seq_len", 2048}};
  EXPECT_EQ(expand_scenario(j).size(), 1u);
}

TEST_F(InputLimitsTest, RunSizesAreBounded) {
  struct Case {
    const char* key;
    json value;
    std::string phrase;
  };
  const Case cases[] = {
      {"batch_size", 1e12, "from 1 to 1048576, got 1000000000000"},
      {"batch_size", int64_t{1} << 62, "from 1 to 1048576"},
      {"iterations", 1e9, "from 1 to 100000"},
      {"iterations", 1e7, "from 1 to 100000"},
      {"clients", 1e5, "from 1 to 1024"},
      {"clients", 1e9, "from 1 to 1024"},
      {"chunks", int64_t{1} << 62, "from 1 to 1024"},
  };
  for (const Case& c : cases) {
    json j = base();
    j[c.key] = c.value;
    expect_refused(j, std::string("$.") + c.key, c.phrase);
  }
  json j = base();
  j["batch_size"] = 1024;
  j["chunks"] = 1024;
  j["clients"] = 1024;
  j["iterations"] = 100;
  expect_refused(j, "$.iterations",
                 "x 2 = 209715200 stage passes to simulate; the limit is 1000000");
  // Within the limit: 5000 x 100 x 1 x 2.
  j["batch_size"] = 100;
  j["chunks"] = 100;
  j["clients"] = 1;
  j["iterations"] = 5000;
  EXPECT_EQ(load_scenario_file(write_text("passes.json", j.dump())).size(), 1u);
}

TEST_F(InputLimitsTest, NetworkEdgeValuesAreRefused) {
  struct Case {
    const char* key;
    double value;
    std::string phrase;
  };
  const Case cases[] = {
      {"latency_s", 1e308, "[0, 3600]"},
      {"per_message_overhead_s", 1e308, "[0, 3600]"},
      {"bandwidth_bit_per_s", 1e-300, "[1000, 1e+15]"},
      {"up_bandwidth_bit_per_s", 1e300, "[1000, 1e+15]"},
      {"bandwidth_factor", 1e-9, "[0.001, 1]"},
      {"burst_bytes", -1, "integer from 0"},
      {"burst_bytes", 1.5, "got 1.5"},
      {"burst_packet_bytes", -1, "integer from 0"},
  };
  for (const Case& c : cases) {
    json j = base();
    j["network"] = {{c.key, c.value}};
    expect_refused(j, std::string("$.network.") + c.key, c.phrase);
  }
}

TEST_F(InputLimitsTest, PlatformHostWorkPerPartyIsReadAndChecked) {
  json j = base();
  j["platform"] = {{"cpu_s_per_byte_sent", 1e-9},
                   {"parties", {{"server", {{"cpu_s_per_byte_received", 2e-9}}}}}};
  const auto v = load_scenario_file(write_text("platform.json", j.dump()));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_DOUBLE_EQ(v[0].scenario.platform.received_s_per_byte("server"), 2e-9);
  EXPECT_DOUBLE_EQ(v[0].scenario.platform.sent_s_per_byte("server"), 1e-9);
  j["platform"]["parties"]["server"]["cpu_s_per_byte_received"] = -1;
  expect_refused(j, "$.platform.parties.server.cpu_s_per_byte_received", "[0, ");
  j["platform"]["parties"]["server"] = {{"copies_s", 1}};
  expect_refused(j, "$.platform.parties.server.copies_s", "cpu_s_per_byte_sent");
}

TEST_F(InputLimitsTest, PlatformWakeCostIsReadCheckedAndInterpolated) {
  json j = base();
  j["platform"] = {
      {"wake_cost", {{{"gap_s", 1e-3}, {"seconds", 1e-4}}, {{"gap_s", 1e-2}, {"seconds", 4e-4}}}}};
  const auto v = load_scenario_file(write_text("wake.json", j.dump()));
  ASSERT_EQ(v.size(), 1u);
  const PlatformSpec& p = v[0].scenario.platform;
  ASSERT_EQ(p.wake_cost.size(), 2u);
  EXPECT_DOUBLE_EQ(p.wake_cost_s(0), 0);
  EXPECT_DOUBLE_EQ(p.wake_cost_s(-1), 0);
  EXPECT_DOUBLE_EQ(p.wake_cost_s(0.5e-3), 0.5e-4);  // from (0, 0)
  EXPECT_DOUBLE_EQ(p.wake_cost_s(1e-3), 1e-4);
  EXPECT_NEAR(p.wake_cost_s(5.5e-3), 1e-4 + 3e-4 * 0.5, 1e-12);  // between the points
  EXPECT_DOUBLE_EQ(p.wake_cost_s(1), 4e-4);                      // the last one's past it
  EXPECT_DOUBLE_EQ(PlatformSpec{}.wake_cost_s(1), 0);
  json bad = j;
  bad["platform"]["wake_cost"][1]["gap_s"] = 1e-3;
  expect_refused(bad, "$.platform.wake_cost[1].gap_s", "must increase");
  bad = j;
  bad["platform"]["wake_cost"][0]["seconds"] = -1e-4;
  expect_refused(bad, "$.platform.wake_cost[0].seconds", "[0, ");
  bad = j;
  bad["platform"]["wake_cost"][0]["gap_s"] = 0;
  expect_refused(bad, "$.platform.wake_cost[0].gap_s", "(0, ");
  bad = j;
  bad["platform"]["wake_cost"][0] = {{"gap_s", 1e-3}};
  expect_refused(bad, "$.platform.wake_cost[0].seconds", "after it");
  bad["platform"]["wake_cost"] = 1e-4;
  expect_refused(bad, "$.platform.wake_cost", "wake-cost points");
}

// A model whose per-sample counts times the batch would pass 2^62: the
// planner refuses it instead of wrapping around (a TorchScript model is not
// bounded by the model options).
TEST_F(InputLimitsTest, PlannerRefusesCountsThatWouldOverflow) {
  ModelProfile m;
  m.model = "huge";
  m.input_shape = {4};
  m.measured_batch = 1;
  for (int i = 0; i < 2; ++i) {
    UnitProfile u;
    u.name = "u" + std::to_string(i);
    u.inputs = {i - 1};
    u.output_shape = {4};
    u.fwd.matmul_macs = int64_t{1} << 40;
    u.bwd.matmul_macs = int64_t{1} << 41;
    m.units.push_back(u);
  }
  Scenario s;
  s.name = "t";
  s.batch_size = 1 << 20;
  s.partition = {{"client", "u0", "u0"}, {"server", "u1", "u1"}};
  s.compression.resize(1);
  s.devices = {{"client", "c"}, {"server", "s"}};
  DeviceProfile d;
  d.name = "d";
  d.peak_flops = 1e12;
  d.memory_bandwidth_Bps = 1e10;
  const std::map<std::string, DeviceProfile> devices = {{"client", d}, {"server", d}};
  expect_error([&] { make_plan(s, m, devices); }, "$.batch_size", "would overflow");
  s.batch_size = 2;
  const Plan plan = make_plan(s, m, devices);
  EXPECT_GT(plan.stages[0].fwd_per_batch.matmul_macs, 0);
}

}  // namespace
}  // namespace splitsim
