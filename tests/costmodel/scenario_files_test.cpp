// The scenario files the product ships: each loads, sweeps what its
// description says, and partitions its model in order.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <vector>
#include <string>

#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/model_zoo.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {
namespace {

const char* const kDevicesDir = SPLITSIM_SOURCE_DIR "/scenarios/devices";

TEST(ScenarioFiles, ShippedScenariosLoadWithExpectedVariantCounts) {
  const std::map<std::string, size_t> expected = {
      {"mobilenet_v2_ushape.json", 15},
      {"roberta_cola_ushape.json", 6},
      {"mobilenet_v2_cifar_5stage.json", 2},
      {"roberta_rte_5stage.json", 7},
      {"resnet20_kstage.json", 20},
      {"bert_small_schedules.json", 4},
      {"validation_matrix.json", 36},
      {"validation_thin_client.json", 12},
      {"resnet20_many_clients.json", 2},
      {"roberta_cola_lora.json", 6},
      {"llama_ushape.json", 4},
      {"resnet20_4stage_schedules.json", 12},
      {"roberta_small_lora_frozen_client.json", 2},
      {"resnet20_training_modes.json", 4},
      {"resnet20_lossy_home_link.json", 10},
      {"resnet20_lossy_validation.json", 10},
  };
  std::map<std::string, size_t> found;
  for (const auto& entry : std::filesystem::directory_iterator(SPLITSIM_SOURCE_DIR "/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    const std::string name = entry.path().filename().string();
    std::vector<ScenarioVariant> variants;
    ASSERT_NO_THROW(variants = load_scenario_file(entry.path().string())) << name;
    found[name] = variants.size();
    for (const auto& v : variants) {
      EXPECT_EQ(v.scenario.name + ".json", name);
      for (const auto& [party, device] : v.scenario.devices) {
        EXPECT_NO_THROW(load_device(device, {kDevicesDir}, "$.devices." + party)) << name;
      }
    }
  }
  EXPECT_EQ(found, expected) << "every shipped scenario is listed here with its variant count";
}

// scenarios/big_models/: planned on the meta device, beyond what a whole
// build may hold (exec refuses them).
TEST(ScenarioFiles, BigModelsLoadWithTheirSweeps) {
  const auto llama =
      load_scenario_file(SPLITSIM_SOURCE_DIR "/scenarios/big_models/llama_7b_ushape.json");
  ASSERT_EQ(llama.size(), 2u);
  EXPECT_EQ(llama[0].scenario.model.layers, 32);
  EXPECT_EQ(llama[0].scenario.model.finetune.method, "lora");
  EXPECT_EQ(llama[1].scenario.model.finetune.method, "full");
  const auto enc =
      load_scenario_file(SPLITSIM_SOURCE_DIR "/scenarios/big_models/roberta_1_3b_split.json");
  ASSERT_EQ(enc.size(), 2u);
  EXPECT_EQ(enc[0].scenario.model.hidden, 2048);
  for (const auto& v : {llama[0], enc[0]})
    for (const auto& [party, device] : v.scenario.devices)
      EXPECT_NO_THROW(load_device(device, {kDevicesDir}, "$.devices." + party));
}

// scenarios/accuracy/: what `splitsim train` sweeps for exec/TRAINING.md,
// six codecs x chunks 1, 4 on Fashion-MNIST.
// The scenarios of the many-clients measurements: alike clients (exec runs
// them), a server link slower than the clients' own, link-bound rates.
// The reports' fine-tuning sweep: full, LoRA rank 8 on query and value,
// full with the embeddings frozen.
TEST(ScenarioFiles, LoraScenarioSweepsTheFineTuningMethod) {
  const auto variants = load_scenario_file(SPLITSIM_SOURCE_DIR "/scenarios/roberta_cola_lora.json");
  ASSERT_EQ(variants.size(), 6u);  // x compute precision fp32, fp16
  EXPECT_EQ(variants[0].scenario.model.finetune.method, "full");
  EXPECT_EQ(variants[0].scenario.compute_precision, "fp32");
  EXPECT_EQ(variants[1].scenario.compute_precision, "fp16");
  const FinetuneSpec& lora = variants[2].scenario.model.finetune;
  EXPECT_EQ(lora.method, "lora");
  EXPECT_EQ(lora.rank, 8);
  EXPECT_EQ(lora.targets, (std::vector<std::string>{"query", "value"}));
  EXPECT_EQ(variants[4].scenario.model.finetune.frozen, std::vector<std::string>{"embeddings"});
  EXPECT_EQ(variants[2].scenario.batch_size, 16);
  EXPECT_EQ(variants[2].scenario.optimizer.name, "adamw");
}

TEST(ScenarioFiles, ManyClientsScenariosShareAServerLinkSlowerThanTheClients) {
  const auto variants =
      load_scenario_file(SPLITSIM_SOURCE_DIR "/scenarios/many_clients/resnet20_thin_3clients.json");
  ASSERT_EQ(variants.size(), 3u);
  for (const auto& v : variants) {
    EXPECT_EQ(v.scenario.clients, 3);
    EXPECT_TRUE(v.scenario.client_groups.empty());
    EXPECT_GT(v.scenario.network.server_bandwidth_bit_per_s, 0);
    EXPECT_LT(v.scenario.network.server_bandwidth_bit_per_s,
              v.scenario.network.bandwidth_bit_per_s / 5);
  }
  // The training modes for real: four modes x two server links, alike clients.
  const auto modes = load_scenario_file(
      SPLITSIM_SOURCE_DIR "/scenarios/many_clients/resnet20_thin_3clients_modes.json");
  ASSERT_EQ(modes.size(), 8u);
  std::set<std::string> trainings;
  for (const auto& v : modes) {
    EXPECT_EQ(v.scenario.clients, 3);
    EXPECT_TRUE(v.scenario.client_groups.empty());
    trainings.insert(v.scenario.training);
  }
  EXPECT_EQ(trainings.size(), 4u);
  // What `splitsim train` runs for the accuracy of several clients: the
  // modes with rounds, Fashion-MNIST, a schedule train evaluates between.
  const auto accuracy = load_scenario_file(
      SPLITSIM_SOURCE_DIR "/scenarios/many_clients/resnet20_fashion_mnist_clients.json");
  ASSERT_EQ(accuracy.size(), 6u);  // x averaging every 1 or 32 batches
  for (const auto& v : accuracy) {
    EXPECT_EQ(v.scenario.clients, 4);
    EXPECT_NE(v.scenario.training, "unsynchronised");
    EXPECT_EQ(v.scenario.dataset, "fashion_mnist");
    EXPECT_EQ(v.scenario.schedule, Schedule::kGpipe);
  }
  // The same at the linear scaling rule's rate: four clients' mean gradient,
  // four times one client's learning rate.
  const auto scaled = load_scenario_file(SPLITSIM_SOURCE_DIR
                                         "/scenarios/many_clients/"
                                         "resnet20_fashion_mnist_splitfed_scaled_lr.json");
  ASSERT_EQ(scaled.size(), 1u);
  EXPECT_EQ(scaled[0].scenario.training, "splitfed_v1");
  EXPECT_EQ(scaled[0].scenario.aggregate_every, 1);
  EXPECT_DOUBLE_EQ(scaled[0].scenario.optimizer.lr, accuracy[0].scenario.optimizer.lr * 4);
  // Heterogeneous clients for real: two groups of two, on links of their own.
  const auto groups =
      load_scenario_file(SPLITSIM_SOURCE_DIR "/scenarios/many_clients/resnet20_two_groups.json");
  ASSERT_EQ(groups.size(), 2u);
  ASSERT_EQ(groups[0].scenario.client_groups.size(), 2u);
  for (const auto& g : groups[0].scenario.client_groups) {
    EXPECT_EQ(g.count, 2);
    EXPECT_TRUE(g.has_bandwidth) << g.name;  // a rate of its own, which validate shapes
  }
  const auto many = load_scenario_file(SPLITSIM_SOURCE_DIR "/scenarios/resnet20_many_clients.json");
  ASSERT_EQ(many.size(), 2u);
  EXPECT_EQ(many.front().scenario.clients, 100);
  ASSERT_EQ(many.front().scenario.client_groups.size(), 2u);
  EXPECT_EQ(many.front().scenario.client_groups[0].device, "raspberry_pi4");
}

// scenarios/validation/: what `validate` measures the predictions on (issue
// of breadth: at least 5 families and 100 variants, chunks 1 to 8).
TEST(ScenarioFiles, TheValidationSetHasFiveFamiliesOfTwoPartitionsEach) {
  std::map<std::string, std::set<std::string>> partitions;  // family -> first cut
  std::set<int64_t> chunks;
  size_t variants = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(SPLITSIM_SOURCE_DIR "/scenarios/validation")) {
    if (entry.path().extension() != ".json") continue;
    const auto vs = load_scenario_file(entry.path().string());
    EXPECT_EQ(vs.size(), 12u) << entry.path();
    variants += vs.size();
    for (const auto& v : vs) {
      EXPECT_EQ(v.scenario.name, "validation_" + entry.path().stem().string());
      EXPECT_EQ(v.scenario.devices.at("client"), "cpu_this_machine") << entry.path();
      partitions[v.scenario.model.name].insert(v.scenario.partition.front().to);
      chunks.insert(v.scenario.chunks);
    }
  }
  EXPECT_EQ(variants, 120u);
  ASSERT_EQ(partitions.size(), 5u);
  for (const auto& [family, cuts] : partitions) EXPECT_EQ(cuts.size(), 2u) << family;
  EXPECT_EQ(partitions.count("llama"), 1u);
  EXPECT_EQ(partitions.count("torchscript"), 1u);
  EXPECT_EQ(*chunks.begin(), 1);
  EXPECT_EQ(*chunks.rbegin(), 8);
}

TEST(ScenarioFiles, AccuracyScenariosSweepSixCodecsAndTwoChunkCountsOnFashionMnist) {
  size_t files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(SPLITSIM_SOURCE_DIR "/scenarios/accuracy")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const auto variants = load_scenario_file(entry.path().string());
    ASSERT_EQ(variants.size(), 12u) << entry.path();
    EXPECT_EQ(variants.front().label, "compression=none chunks=1");
    for (const auto& v : variants) {
      EXPECT_EQ(v.scenario.dataset, "fashion_mnist");
      EXPECT_EQ(v.scenario.schedule, Schedule::kGpipe);  // train evaluates between batches
      EXPECT_EQ(v.scenario.name, "accuracy_" + entry.path().stem().string());
    }
  }
  EXPECT_EQ(files, 2u);
}

TEST(ScenarioFiles, DefaultScenarioMatchesTheReports) {
  const auto v = load_scenario_file(SPLITSIM_SOURCE_DIR "/scenarios/mobilenet_v2_ushape.json");
  ASSERT_EQ(v.size(), 15u);
  EXPECT_EQ(v.front().label, "chunks=1 compression=none");
  EXPECT_EQ(v[7].label, "chunks=4 compression=conv20");
  EXPECT_EQ(v.back().label, "chunks=8 compression=q8");
  const Scenario& conv20 = v[7].scenario;
  EXPECT_EQ(conv20.chunks, 4);
  EXPECT_EQ(describe(conv20.compression[0].forward), "conv_insert(->20 k4 s4)");
  EXPECT_EQ(describe(conv20.compression[1].forward), "conv_insert(->320 k1 s1)");
  EXPECT_EQ(conv20.compression[0].backward.method, CodecMethod::kNone);
  const Scenario& pi = v[8].scenario;
  EXPECT_EQ(v[8].label, "chunks=4 compression=pi_3_7");
  EXPECT_EQ(pi.compression[0].forward.rank, 3);
  EXPECT_EQ(pi.compression[1].backward.rank, 7);
  EXPECT_EQ(conv20.batch_size, 64);
  EXPECT_EQ(conv20.model.image_size, 224);
  EXPECT_EQ(conv20.optimizer.state_copies(), 1);
  EXPECT_EQ(conv20.partition[0].to, "features.0.bn");
  EXPECT_EQ(conv20.partition[1].from, "features.0.relu");
  EXPECT_DOUBLE_EQ(conv20.network.bandwidth_bit_per_s, 4e9);
}

// The partitions cover every unit of the real model once, in order (the
// planner checks this too, but needs a measured model).
TEST(ScenarioFiles, ShippedPartitionsCoverTheModelInOrder) {
  std::map<std::string, std::vector<std::string>> units;  // model JSON -> unit names
  for (const auto& entry : std::filesystem::directory_iterator(SPLITSIM_SOURCE_DIR "/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    for (const auto& v : load_scenario_file(entry.path().string())) {
      const std::string key = v.json["model"].dump();
      if (units.count(key) == 0) units[key] = build_model(v.scenario.model).names;
      const std::vector<std::string>& names = units[key];
      auto index = [&](const std::string& unit) {
        return std::find(names.begin(), names.end(), unit) - names.begin();
      };
      ptrdiff_t next = 0;
      for (const PartSpec& p : v.scenario.partition) {
        EXPECT_EQ(index(p.from), next) << entry.path() << " " << v.label << " " << p.from;
        EXPECT_LE(index(p.from), index(p.to)) << entry.path() << " " << v.label << " " << p.to;
        next = index(p.to) + 1;
      }
      EXPECT_EQ(next, static_cast<ptrdiff_t>(names.size())) << entry.path() << " " << v.label;
    }
  }
}

}  // namespace
}  // namespace splitsim
