// Measuring two blocks of a transformer and repeating the second gives
// exactly the profile of measuring every block: MACs, element counts,
// shapes, parameters (trainable and frozen), stashed bytes, unit names and
// graph, for each repeated-block model and fine-tuning setting.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "model_test_util.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/measure.h"
#include "splitsim/costmodel/model_zoo.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {
namespace {

using namespace model_test;  // NOLINT: test helpers

void expect_same_profile(const ModelSpec& spec) {
  const nlohmann::json whole = measure_model(spec, 2, false);
  const nlohmann::json replicated = measure_model(spec, 2, true);
  EXPECT_EQ(whole.at("units").size(), replicated.at("units").size());
  EXPECT_EQ(whole, replicated) << "first difference: "
                               << nlohmann::json::diff(whole, replicated).dump().substr(0, 400);
}

TEST(MeasureReplicatedTest, RobertaBaseFullSizeIsExact) {
  ModelSpec s = spec_of("roberta_base");
  expect_same_profile(s);
}

TEST(MeasureReplicatedTest, EveryRepeatedBlockModelAndFineTuningIsExact) {
  for (const std::string name : {"roberta_base", "bert_small", "llama"}) {
    SCOPED_TRACE(name);
    ModelSpec s = small_transformer(name, 5);
    expect_same_profile(s);  // full fine-tuning
    s.finetune.method = "lora";
    expect_same_profile(s);  // adapters in every block, frozen bases
    s.finetune.method = "full";
    s.finetune.frozen = {name == "llama" ? "embed_tokens" : "embeddings"};
    expect_same_profile(s);  // the first block's input needs no gradient
    s.finetune.frozen = {name == "llama" ? "layers" : "layer"};
    expect_same_profile(s);  // every block frozen alike
  }
}

// A model planning takes from two blocks is too large to build whole: the
// builds that need all of it (exec, train, profile) say so.
TEST(MeasureReplicatedTest, AWholeBuildBeyondTheLimitIsRefused) {
  ModelSpec s = spec_of("roberta_base");
  s.layers = 24, s.hidden = 2048, s.heads = 16, s.ffn = 8192, s.seq_len = 512;
  try {
    build_model(s);
    ADD_FAILURE() << "built a 1.3B-parameter model";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$.model");
    EXPECT_NE(std::string(e.what()).find("building the whole model"), std::string::npos);
  }
}

// Blocks that train differently are measured whole, and still right.
TEST(MeasureReplicatedTest, BlocksFrozenApartAreMeasuredWhole) {
  ModelSpec s = small_transformer("roberta_base", 4);
  s.finetune.frozen = {"layer.0", "layer.2.ffn"};
  expect_same_profile(s);
  const ModelProfile p = measure_model(s);
  EXPECT_EQ(p.units[p.index_of("layer.2.ffn")].trainable_param_count(), 0);
  EXPECT_GT(p.units[p.index_of("layer.3.ffn")].trainable_param_count(), 0);
}

}  // namespace
}  // namespace splitsim
