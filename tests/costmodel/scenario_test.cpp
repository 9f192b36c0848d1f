// Scenario files: strict parsing and the sweep section (codec objects:
// codec_parse_test.cpp; the shipped files: scenario_files_test.cpp).
#include "splitsim/costmodel/scenario.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "expect_input_error.h"
#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/model_zoo.h"
#include "temp_file.h"

namespace splitsim {
namespace {

using nlohmann::json;
using testing::TempFile;

// A small valid scenario: resnet20 split in three parts.
json base() {
  return json::parse(R"({
    "schema": "splitsim.scenario/1",
    "name": "t",
    "model": {"name": "resnet20"},
    "batch_size": 8,
    "partition": [{"party": "client", "from": "conv1", "to": "layer1.0"},
                  {"party": "server", "from": "layer1.1", "to": "layer3.2"},
                  {"party": "client", "from": "head", "to": "head"}],
    "devices": {"client": "xeon_40core", "server": "gtx1080"}
  })");
}

void expect_parse_error(const json& j, const std::string& where, const std::string& phrase) {
  expect_error([&] { expand_scenario(j); }, where, phrase);
}

TempFile write_temp(const std::string& name, const std::string& text) {
  return TempFile("scenario_test_" + name, text);
}

json codec(const std::string& text) { return json::parse(text); }

TEST(ScenarioParse, TrainingModesAndTheirSchedules) {
  EXPECT_EQ(parse_scenario(base()).training, "unsynchronised");
  json j = base();
  j["training"] = "splitfed_v1";
  j["aggregate_every"] = 4;
  const Scenario s = parse_scenario(j);
  EXPECT_EQ(s.training, "splitfed_v1");
  EXPECT_EQ(s.aggregate_every, 4);
  j["training"] = "fedavg";
  expect_parse_error(j, "$.training", "training mode");
  j["training"] = "vanilla";
  j["schedule"] = "pipedream";  // overlaps batches: no round between them
  expect_parse_error(j, "$.training", "pipedream");
  j["schedule"] = "gpipe";
  j["aggregate_every"] = 0;
  expect_parse_error(j, "$.aggregate_every", "");
}

TEST(ScenarioParse, MinimalScenarioGetsDefaults) {
  const Scenario s = parse_scenario(base());
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.model.name, "resnet20");
  EXPECT_EQ(s.model.image_size, 32);  // resolved by resolve_model_defaults
  EXPECT_EQ(s.batch_size, 8);
  ASSERT_EQ(s.partition.size(), 3u);
  EXPECT_EQ(s.partition[1].party, "server");
  EXPECT_EQ(s.partition[1].from, "layer1.1");
  EXPECT_EQ(s.partition[1].to, "layer3.2");
  ASSERT_EQ(s.compression.size(), 2u);
  EXPECT_EQ(s.compression[1].backward.method, CodecMethod::kNone);
  EXPECT_EQ(s.schedule, Schedule::kSequential);
  EXPECT_EQ(s.chunks, 1);
  EXPECT_EQ(s.devices.at("server"), "gtx1080");
  EXPECT_EQ(s.optimizer.state_copies(), 0);
}

TEST(ScenarioParse, ReadsEveryKey) {
  json j = base();
  j["description"] = "d";
  j["precision"] = "bf16";
  j["compression"] = json::parse(R"([{"forward": {"method": "quantize", "bits": 4}},
                                     {"backward": {"method": "topk", "keep_ratio": 0.5}}])");
  j["chunks"] = 4;
  j["schedule"] = "1f1b";
  j["optimizer"] = {{"name", "adamw"}, {"lr", 1e-4}, {"weight_decay", 0.01}, {"eps", 1e-6}};
  j["network"] = json::parse(R"({"bandwidth_bit_per_s": 1e9, "up_bandwidth_bit_per_s": 2e8,
    "down_bandwidth_bit_per_s": 3e8, "latency_s": 0.001, "bandwidth_trace": "t.txt",
    "per_message_overhead_s": 1e-5, "bandwidth_factor": 0.9})");
  j["iterations"] = 30;
  j["warmup"] = 5;
  j["clients"] = 2;
  j["dataset"] = "cifar10";
  j["seed"] = 7;
  const Scenario s = parse_scenario(j);
  EXPECT_EQ(s.description, "d");
  EXPECT_EQ(s.precision, "bf16");
  EXPECT_EQ(s.compression[0].forward.bits, 4);
  EXPECT_EQ(s.compression[0].backward.method, CodecMethod::kNone);
  EXPECT_EQ(s.compression[1].backward.keep_ratio, 0.5);
  EXPECT_EQ(s.chunks, 4);
  EXPECT_EQ(s.schedule, Schedule::k1F1B);
  EXPECT_EQ(s.optimizer.name, "adamw");
  EXPECT_EQ(s.optimizer.state_copies(), 2);
  EXPECT_EQ(s.optimizer.eps, 1e-6);
  EXPECT_DOUBLE_EQ(s.network.up_bandwidth_bit_per_s, 2e8);
  EXPECT_DOUBLE_EQ(s.network.down_bandwidth_bit_per_s, 3e8);
  EXPECT_DOUBLE_EQ(s.network.latency_s, 0.001);
  EXPECT_EQ(s.network.bandwidth_trace, "t.txt");
  EXPECT_DOUBLE_EQ(s.network.bandwidth_factor, 0.9);
  EXPECT_EQ(s.iterations, 30);
  EXPECT_EQ(s.warmup, 5);
  EXPECT_EQ(s.clients, 2);
  EXPECT_EQ(s.dataset, "cifar10");
  EXPECT_EQ(s.seed, 7u);
}

TEST(ScenarioParse, ScheduleNamesAndStateCopies) {
  EXPECT_EQ(schedule_names(), (std::vector<std::string>{"sequential", "gpipe", "1f1b", "pipedream",
                                                        "ddg", "fr", "zb_h1", "interleaved_1f1b"}));
  EXPECT_STREQ(schedule_name(Schedule::kPipeDream), "pipedream");
  OptimizerSpec o;
  o.momentum = 0.1;
  EXPECT_EQ(o.state_copies(), 1);
  o.name = "adam";
  o.momentum = 0;
  EXPECT_EQ(o.state_copies(), 2);
}

TEST(ScenarioErrors, UnknownKeySuggestsClosest) {
  json j = base();
  j["chunk"] = 2;
  expect_parse_error(j, "$.chunk", "did you mean \"chunks\"?");
  j = base();
  j["network"] = {{"latency", 0.1}};
  expect_parse_error(j, "$.network.latency", "did you mean \"latency_s\"?");
}

TEST(ScenarioErrors, WrongType) {
  json j = base();
  j["batch_size"] = "4";
  expect_parse_error(j, "$.batch_size", "expected an integer from 1 to 1048576, got \"4\"");
  j["batch_size"] = 2.5;
  expect_parse_error(j, "$.batch_size", "expected an integer from 1 to 1048576, got 2.5");
  j = base();
  j["partition"] = "conv1";
  expect_parse_error(j, "$.partition", "a list of at least 2 parts");
  j = base();
  j["schedule"] = "gpip";
  expect_parse_error(j, "$.schedule", "did you mean \"gpipe\"?");
  j = base();
  j["model"] = {
      {"name", "torchscript"}, {"path", "m.pt"}, {"input_shape", {4}}, {"split_inside", "encoder"}};
  expect_parse_error(j, "$.model.split_inside", "module paths such as [\"encoder\"]");
  j["model"]["split_inside"] = {"encoder", 3};
  expect_parse_error(j, "$.model.split_inside[1]", "expected a string");
  j = base();
  j["model"] = {{"name", "roberta_base"}, {"finetune", {{"rank", 8}}}};
  expect_parse_error(j, "$.model.finetune.rank", "only with \"method\": \"lora\"");
  j["model"]["finetune"] = {{"method", "lora"}, {"targets", {"value", "querry"}}};
  expect_parse_error(j, "$.model.finetune.targets[1]", "did you mean \"query\"?");
  j["model"]["finetune"] = {{"method", "lora"}, {"targets", {"value", "value"}}};
  expect_parse_error(j, "$.model.finetune.targets[1]", "listed twice");
  j["model"]["finetune"] = {{"method", "lora"}, {"dropout", 1}};
  expect_parse_error(j, "$.model.finetune.dropout", "");
  j = base();
  j["compute_precision"] = "fp8";
  expect_parse_error(j, "$.compute_precision", "fp32, fp16, bf16");
  j["compute_precision"] = "bf16";
  EXPECT_EQ(parse_scenario(j).compute_precision, "bf16");
  // loss_scale: by default 128 under fp16 compute and 1 otherwise; a
  // positive number FP32 can hold.
  EXPECT_EQ(parse_scenario(j).effective_loss_scale(), 1.0);
  j["compute_precision"] = "fp16";
  EXPECT_EQ(parse_scenario(j).effective_loss_scale(), 128.0);
  j["loss_scale"] = 1024;
  EXPECT_EQ(parse_scenario(j).effective_loss_scale(), 1024.0);
  j["loss_scale"] = 0;
  expect_parse_error(j, "$.loss_scale", "a number in (0, ");
  j["loss_scale"] = 1e39;
  expect_parse_error(j, "$.loss_scale", "got 1e+39");
  j.erase("loss_scale");
  j["optimizer"] = {{"name", "sgd"}, {"eps", 1e-6}};
  expect_parse_error(j, "$.optimizer.eps", "applies to adam and adamw");
  j["optimizer"] = {{"name", "adam"}, {"eps", 0}};
  expect_parse_error(j, "$.optimizer.eps", "a number in (0, 1]");
  j.erase("optimizer");
  j = base();
  j["model"] = {{"name", "roberta_base"}};
  j["model"]["finetune"] = {{"method", "qlora"}};
  expect_parse_error(j, "$.model.finetune.method", "full, lora");
  j["model"]["finetune"] = {{"method", "lora"}, {"rank", 4}, {"alpha", 8}, {"targets", {"key"}}};
  const FinetuneSpec f = parse_scenario(j).model.finetune;
  EXPECT_EQ(f.rank, 4);
  EXPECT_EQ(f.alpha, 8);
  EXPECT_EQ(f.targets, std::vector<std::string>{"key"});
  j = base();
  j["model"] = {{"name", "torchscript"},
                {"path", "m.pt"},
                {"input_shape", {4}},
                {"split_inside", {"encoder", "blocks.0"}}};
  EXPECT_EQ(parse_scenario(j).model.split_inside,
            (std::vector<std::string>{"encoder", "blocks.0"}));
}

TEST(ScenarioErrors, UnknownModel) {
  json j = base();
  j["model"]["name"] = "mobilenet";
  expect_parse_error(j, "$.model.name", "unknown model \"mobilenet\"");
  j["model"] = {{"name", "resnet20"}, {"seq_len", 128}};
  expect_parse_error(j, "$.model.seq_len", "not taken");
}

TEST(ScenarioErrors, NonPositiveSizesAndBandwidths) {
  json j = base();
  j["batch_size"] = 0;
  expect_parse_error(j, "$.batch_size", "expected an integer from 1 to 1048576, got 0");
  j = base();
  j["network"] = {{"bandwidth_bit_per_s", 0}};
  expect_parse_error(j, "$.network.bandwidth_bit_per_s",
                     "expected a number in [1000, 1e+15], got 0");
  j["network"] = {{"latency_s", -1e-3}};
  expect_parse_error(j, "$.network.latency_s", "expected a number in [0, 3600]");
  j["network"] = {{"bandwidth_factor", 1.5}};
  expect_parse_error(j, "$.network.bandwidth_factor", "a number in [0.001, 1]");
  j = base();
  j["optimizer"] = {{"name", "sgd"}, {"lr", 0}};
  expect_parse_error(j, "$.optimizer.lr", "positive number");
  j = base();
  j["iterations"] = 2;
  j["warmup"] = 2;
  expect_parse_error(j, "$.warmup", "warmup < iterations");
}

TEST(ScenarioErrors, ChunksOverBatch) {
  json j = base();
  j["chunks"] = 9;
  expect_parse_error(j, "$.chunks", "chunks 9 > batch_size 8");
}

TEST(ScenarioErrors, CompressionLengthMismatch) {
  json j = base();
  j["compression"] = json::array({{{"forward", codec(R"({"method": "fp16"})")}}});
  expect_parse_error(j, "$.compression",
                     "has 1 entries but the partition has 3 parts, so 2 "
                     "boundaries");
}

TEST(ScenarioErrors, CodecErrorsNameTheirPath) {
  json j = base();
  j["compression"] = json::array({json::object(), json::object()});
  j["compression"][1]["forward"] = codec(R"({"method": "quantise", "bits": 8})");
  expect_parse_error(j, "$.compression[1].forward.method", "did you mean \"quantize\"?");
  j["compression"][1]["forward"] = codec(R"({"method": "conv_insert", "kernel": 2, "rank": 3})");
  expect_parse_error(j, "$.compression[1].forward.rank", "belongs to power_iteration");
}

TEST(ScenarioErrors, TrainableInsertAsBackwardMethod) {
  json j = base();
  j["compression"] = json::array({json::object(), json::object()});
  j["compression"][0]["backward"] = codec(R"({"method": "linear_insert", "out_features": 8})");
  expect_parse_error(j, "$.compression[0].backward.method", "cannot be a backward method");
}

TEST(ScenarioErrors, PartyWithoutDevice) {
  json j = base();
  j["partition"][1]["party"] = "sever";
  expect_parse_error(j, "$.partition[1].party", "party \"sever\" has no device");
  expect_parse_error(j, "$.partition[1].party", "did you mean \"server\"?");
  // A device no part uses is fine (sweeps share one "devices" map).
  j = base();
  j["devices"]["spare"] = "v100";
  EXPECT_EQ(parse_scenario(j).devices.size(), 3u);
  j["devices"]["server"] = "dir/v100";
  expect_parse_error(j, "$.devices.server", "path ending in .json");
}

TEST(ScenarioErrors, BadSchema) {
  json j = base();
  j["schema"] = "splitsim.scenario/2";
  expect_parse_error(j, "$.schema", "unsupported schema \"splitsim.scenario/2\"");
  j.erase("schema");
  expect_parse_error(j, "$.schema", "missing required key \"schema\"");
  expect_parse_error(json::array(), "$", "expected a scenario object");
}

TEST(ScenarioErrors, BadSweepAxis) {
  json j = base();
  j["sweep"] = {{"chunk", {1, 2}}};
  expect_parse_error(j, "$.sweep.chunk", "did you mean \"chunks\"?");
  j["sweep"] = {{"network.latency", {0.1}}};
  expect_parse_error(j, "$.sweep[\"network.latency\"]", "did you mean \"latency_s\"?");
  j["sweep"] = {{"name", {"a", "b"}}};
  expect_parse_error(j, "$.sweep.name", "unknown sweep axis");
  j["sweep"] = {{"chunks", json::array()}};
  expect_parse_error(j, "$.sweep.chunks", "non-empty list");
  j["sweep"] = {{"network", {json::object()}}, {"network.latency_s", {0.1}}};
  expect_parse_error(j, "$.sweep[\"network.latency_s\"]", "overlaps axis \"network\"");
  j["sweep"] = {{"chunks", {{{"label", "a"}, {"value", 1}}, {{"label", "a"}, {"value", 2}}}}};
  expect_parse_error(j, "$.sweep.chunks[1]", "duplicate label \"a\"");
}

TEST(ScenarioErrors, ErrorInSweepValueNamesSweepPath) {
  json j = base();
  j["sweep"]["chunks"] = {1, 0};
  expect_parse_error(j, "$.sweep.chunks[1]", "expected an integer from 1 to 1024, got 0");
  j = base();
  json pi = json::array(
      {{{"forward", codec(R"({"method": "power_iteration", "rank": 0})")}}, json::object()});
  j["sweep"]["compression"] = {json::array({json::object(), json::object()}),
                               {{"label", "pi"}, {"value", pi}}};
  expect_parse_error(j, "$.sweep.compression[1].value[0].forward.rank", "positive integer");
  j = base();
  j["sweep"]["network.bandwidth_bit_per_s"] = {1e9, -1};
  expect_parse_error(j, "$.sweep[\"network.bandwidth_bit_per_s\"][1]",
                     "expected a number in [1000, 1e+15], got -1");
}

TEST(ScenarioErrors, ErrorOutsideSweepValueNamesVariant) {
  json j = base();
  j["chunks"] = 4;
  j["sweep"]["batch_size"] = {8, 2};
  expect_parse_error(j, "$.chunks", "(in sweep variant \"batch_size=2\")");
}

TEST(ScenarioErrors, JsonSyntaxErrorGivesLineAndColumn) {
  const auto file =
      write_temp("syntax.json", "{\n  \"schema\": \"splitsim.scenario/1\",\n  \"name\": ,\n}\n");
  expect_error([&] { load_scenario_file(file.path()); }, file.path() + ":3:11",
               "JSON syntax error");
}

TEST(ScenarioErrors, FileErrorsNameTheFile) {
  expect_error([] { load_scenario_file("/nonexistent/x.json"); }, "/nonexistent/x.json",
               "cannot read scenario file");
  const auto dup = write_temp("dup.json", R"({"network": {"latency_s": 1, "latency_s": 2}})");
  expect_error([&] { load_scenario_file(dup.path()); }, "$.network.latency_s", "duplicate key");
  json j = base();
  j["chunks"] = 9;
  const auto bad = write_temp("bad.json", j.dump());
  expect_error([&] { load_scenario_file(bad.path()); }, "$.chunks", "[in " + bad.path() + "]");
}

TEST(ScenarioSweep, NoSweepGivesBase) {
  const auto v = expand_scenario(base());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].label, "base");
  EXPECT_EQ(v[0].json, base());
}

TEST(ScenarioSweep, CartesianProductInFileOrderWithLabels) {
  json j = base();
  j.erase("devices");
  // Written in this order on purpose: not alphabetical.
  const std::string text = j.dump().substr(0, j.dump().size() - 1) + R"(,
    "sweep": {
      "schedule": ["gpipe", "fr"],
      "network.bandwidth_bit_per_s": [1e9, {"label": "slow", "value": 1e6}],
      "devices": [{"client": "xeon_40core", "server": "v100"},
                  {"client": "xeon_40core", "server": "a100"}]
    }})";
  const auto order = write_temp("order.json", text);
  const auto v = load_scenario_file(order.path());
  ASSERT_EQ(v.size(), 8u);
  EXPECT_EQ(v[0].label, "schedule=gpipe network.bandwidth_bit_per_s=1000000000.0 devices=#0");
  EXPECT_EQ(v[1].label, "schedule=gpipe network.bandwidth_bit_per_s=1000000000.0 devices=#1");
  EXPECT_EQ(v[2].label, "schedule=gpipe network.bandwidth_bit_per_s=slow devices=#0");
  EXPECT_EQ(v[7].label, "schedule=fr network.bandwidth_bit_per_s=slow devices=#1");
  EXPECT_EQ(v[7].scenario.schedule, Schedule::kFr);
  EXPECT_DOUBLE_EQ(v[7].scenario.network.bandwidth_bit_per_s, 1e6);  // "network" was created
  EXPECT_EQ(v[7].scenario.devices.at("server"), "a100");
  EXPECT_FALSE(v[7].json.contains("sweep"));
  EXPECT_EQ(v[7].json["network"]["bandwidth_bit_per_s"], 1e6);
  // expand_scenario sees nlohmann's sorted keys: axes in alphabetical order.
  const auto sorted = expand_scenario(json::parse(text));
  EXPECT_EQ(sorted[1].label, "devices=#0 network.bandwidth_bit_per_s=1000000000.0 schedule=fr");
}

TEST(ScenarioFile, ATorchScriptPathNotFoundFromHereIsTakenFromBesideTheScenario) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("splitsim_scenario_test_beside_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "models");
  std::ofstream(dir / "models" / "beside_only.pt") << "not read while parsing";
  json j = base();
  j["model"] = {{"name", "torchscript"}, {"path", "models/beside_only.pt"},
                {"input_shape", {3, 8, 8}}};
  std::ofstream(dir / "s.json") << j.dump();
  auto v = load_scenario_file((dir / "s.json").string());
  const std::string resolved = (dir / "models" / "beside_only.pt").lexically_normal().string();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].scenario.model.path, resolved);
  EXPECT_EQ(v[0].json["model"]["path"], resolved);  // what exec's parties read
  // Found nowhere: left as written, for the model's loader to name.
  j["model"]["path"] = "models/nowhere.pt";
  std::ofstream(dir / "s.json") << j.dump();
  v = load_scenario_file((dir / "s.json").string());
  EXPECT_EQ(v[0].scenario.model.path, "models/nowhere.pt");
  std::filesystem::remove_all(dir);
}

TEST(ScenarioSweep, DottedAxisIntoDevicesAndModel) {
  json j = base();
  j["sweep"]["devices.server"] = {"v100", "h100"};
  j["sweep"]["model.image_size"] = {32, 64};
  const auto v = expand_scenario(j);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[3].label, "devices.server=h100 model.image_size=64");
  EXPECT_EQ(v[3].scenario.devices.at("server"), "h100");
  EXPECT_EQ(v[3].scenario.devices.at("client"), "xeon_40core");
  EXPECT_EQ(v[3].scenario.model.image_size, 64);
}

TEST(ScenarioTest, AVariantFilterThatMatchesNothingQuotesAFewLabels) {
  std::vector<std::string> labels;
  for (int i = 0; i < 30; ++i) labels.push_back("bw" + std::to_string(i));
  const InputError e = no_variant_matches("q9", labels);
  EXPECT_EQ(e.where(), "variant");
  const std::string m = e.message();
  EXPECT_NE(m.find("no variant label contains \"q9\""), std::string::npos) << m;
  EXPECT_NE(m.find("\"bw11\" and 18 more"), std::string::npos) << m;
  EXPECT_EQ(m.find("\"bw12\""), std::string::npos) << m;
  EXPECT_EQ(no_variant_matches("x", {"a", "b"}).message(),
            "no variant label contains \"x\"; labels: \"a\", \"b\"");
}

}  // namespace
}  // namespace splitsim
