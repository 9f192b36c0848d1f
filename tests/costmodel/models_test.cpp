// The model zoo: unit names, shapes, published parameter counts, split
// transparency, losses, synthetic batches, TorchScript loading, and the
// model options of scenario files.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model_test_util.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/model_zoo.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {
namespace {

using namespace model_test;  // NOLINT: test helpers

// Small transformer configs so the tests run in well under a second.
ModelSpec small_roberta() {
  ModelSpec s = spec_of("roberta_base");
  s.layers = 2, s.hidden = 64, s.heads = 4, s.ffn = 128, s.seq_len = 16, s.vocab_size = 100;
  return s;
}
ModelSpec small_bert() {
  ModelSpec s = spec_of("bert_small");
  s.layers = 2, s.hidden = 32, s.heads = 4, s.ffn = 64, s.seq_len = 8, s.vocab_size = 50;
  return s;
}
ModelSpec small_mobilenet() {
  ModelSpec s = spec_of("mobilenet_v2");
  s.image_size = 32;
  return s;
}

// Every model in a configuration cheap enough to run forward and backward.
std::vector<ModelSpec> cheap_specs() {
  return {small_mobilenet(), spec_of("mobilenet_v2_cifar"), spec_of("resnet20"), small_roberta(),
          small_bert()};
}

InputError resolve_error(const ModelSpec& spec) {
  try {
    resolve_model_defaults(spec, "$.model");
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no InputError for model " << spec.name;
  return InputError("", "");
}

// ---- resolve_model_defaults -------------------------------------------------

TEST(ModelSpecTest, FillsDefaults) {
  ModelSpec mb = resolve_model_defaults(spec_of("mobilenet_v2"), "$.model");
  EXPECT_EQ(mb.image_size, 224);
  EXPECT_EQ(mb.num_classes, 10);
  EXPECT_EQ(model_input_shape(mb), (Shape{3, 224, 224}));
  EXPECT_EQ(resolve_model_defaults(spec_of("mobilenet_v2_cifar"), "$").image_size, 32);
  EXPECT_EQ(resolve_model_defaults(spec_of("resnet20"), "$").num_classes, 10);

  ModelSpec rb = resolve_model_defaults(spec_of("roberta_base"), "$.model");
  EXPECT_EQ(rb.vocab_size, 50265);
  EXPECT_EQ(rb.max_positions, 514);
  EXPECT_EQ(rb.hidden, 768);
  EXPECT_EQ(rb.layers, 12);
  EXPECT_EQ(rb.heads, 12);
  EXPECT_EQ(rb.ffn, 3072);
  EXPECT_EQ(rb.seq_len, 128);
  EXPECT_EQ(rb.num_classes, 2);
  EXPECT_EQ(model_input_shape(rb), (Shape{128}));

  ModelSpec bs = resolve_model_defaults(spec_of("bert_small"), "$.model");
  EXPECT_EQ(bs.vocab_size, 30522);
  EXPECT_EQ(bs.max_positions, 512);
  EXPECT_EQ(bs.layers, 3);
  EXPECT_EQ(bs.seq_len, 512);
  EXPECT_EQ(bs.num_classes, 0);  // NSP has 2 classes, not an option

  // Given values are kept.
  ModelSpec r = small_roberta();
  EXPECT_EQ(resolve_model_defaults(r, "$").hidden, 64);
}

TEST(ModelSpecTest, KnownModels) {
  EXPECT_EQ(known_models(),
            (std::vector<std::string>{"mobilenet_v2", "mobilenet_v2_cifar", "resnet20",
                                      "roberta_base", "bert_small", "llama", "torchscript"}));
}

TEST(ModelSpecTest, UnknownModelNamesPathAndListsModels) {
  InputError e = resolve_error(spec_of("resnet50"));
  EXPECT_EQ(e.where(), "$.model.name");
  EXPECT_NE(std::string(e.what()).find("resnet20"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("torchscript"), std::string::npos) << e.what();
}

TEST(ModelSpecTest, OptionNotTakenNamesPathAndListsOptions) {
  ModelSpec s = spec_of("resnet20");
  s.seq_len = 128;
  InputError e = resolve_error(s);
  EXPECT_EQ(e.where(), "$.model.seq_len");
  EXPECT_NE(std::string(e.what()).find("image_size"), std::string::npos) << e.what();

  ModelSpec b = spec_of("bert_small");
  b.num_classes = 3;
  EXPECT_EQ(resolve_error(b).where(), "$.model.num_classes");
  ModelSpec p = spec_of("mobilenet_v2");
  p.path = "x.pt";
  EXPECT_EQ(resolve_error(p).where(), "$.model.path");
  ModelSpec t = spec_of("torchscript");
  t.path = "x.pt", t.input_shape = {4}, t.image_size = 32;
  EXPECT_EQ(resolve_error(t).where(), "$.model.image_size");
  ModelSpec r = spec_of("resnet20");
  r.split_inside = {"layer1"};  // only TorchScript files are split by module path
  EXPECT_EQ(resolve_error(r).where(), "$.model.split_inside");
}

TEST(ModelSpecTest, BadValuesNamePath) {
  ModelSpec s = small_roberta();
  s.heads = 5;  // 64 % 5 != 0
  InputError e = resolve_error(s);
  EXPECT_EQ(e.where(), "$.model.heads");
  EXPECT_NE(std::string(e.what()).find("divisible"), std::string::npos) << e.what();

  ModelSpec img = spec_of("mobilenet_v2");
  img.image_size = -3;
  EXPECT_EQ(resolve_error(img).where(), "$.model.image_size");
  ModelSpec cifar = spec_of("mobilenet_v2_cifar");
  cifar.image_size = 30;
  EXPECT_EQ(resolve_error(cifar).where(), "$.model.image_size");
  ModelSpec longseq = spec_of("roberta_base");
  longseq.seq_len = 513;  // positions start at 2: 513 + 2 > 514
  EXPECT_EQ(resolve_error(longseq).where(), "$.model.seq_len");
  longseq.seq_len = 512;
  EXPECT_NO_THROW(resolve_model_defaults(longseq, "$.model"));
}

TEST(ModelSpecTest, TorchScriptNeedsPathShapeAndDtype) {
  ModelSpec t = spec_of("torchscript");
  t.input_shape = {4};
  EXPECT_EQ(resolve_error(t).where(), "$.model.path");
  t.path = "m.pt";
  t.input_shape.clear();
  EXPECT_EQ(resolve_error(t).where(), "$.model.input_shape");
  t.input_shape = {4, 0};
  EXPECT_EQ(resolve_error(t).where(), "$.model.input_shape[1]");
  t.input_shape = {4};
  t.input_dtype = "float16";
  EXPECT_EQ(resolve_error(t).where(), "$.model.input_dtype");
  t.input_dtype = "float32";
  t.vocab_size = 10;
  EXPECT_EQ(resolve_error(t).where(), "$.model.vocab_size");
  t.input_dtype = "int64";
  EXPECT_EQ(resolve_model_defaults(t, "$.model").vocab_size, 10);
  t.vocab_size = 0;
  EXPECT_EQ(resolve_model_defaults(t, "$.model").vocab_size, 2);
  EXPECT_EQ(model_input_shape(resolve_model_defaults(t, "$")), (Shape{4}));
}

// ---- units and shapes ---------------------------------------------------------

TEST(ModelZooTest, MobileNetV2Units) {
  SplitModel m = build_model(spec_of("mobilenet_v2"));
  ASSERT_EQ(m.size(), 22);
  expect_chain(m);
  EXPECT_EQ(m.names[0], "features.0.conv");
  EXPECT_EQ(m.names[1], "features.0.bn");
  EXPECT_EQ(m.names[2], "features.0.relu");
  for (int i = 1; i <= 18; ++i) EXPECT_EQ(m.names[i + 2], "features." + std::to_string(i));
  EXPECT_EQ(m.names[21], "classifier");
  EXPECT_EQ(m.task, TaskKind::kImageClassification);
  EXPECT_EQ(m.output_shape, (Shape{10}));
}

TEST(ModelZooTest, MobileNetV2ShapesAt224) {
  SplitModel m = build_model(spec_of("mobilenet_v2"));
  m.train(false);
  torch::NoGradGuard no_grad;
  torch::Tensor x = m.make_input(2, 1);
  EXPECT_EQ(shape_of(x), (Shape{2, 3, 224, 224}));
  torch::Tensor after_bn = m.forward(x, 0, 1);
  EXPECT_EQ(shape_of(after_bn), (Shape{2, 32, 112, 112}));
  EXPECT_LT(after_bn.min().item<float>(), 0.0f);  // the ReLU6 has not run yet
  torch::Tensor features = m.forward(after_bn, 2, 20);
  EXPECT_EQ(shape_of(features), (Shape{2, 1280, 7, 7}));
  EXPECT_GE(features.min().item<float>(), 0.0f);
  EXPECT_LE(features.max().item<float>(), 6.0f);
  EXPECT_EQ(shape_of(m.forward(features, 21, 21)), (Shape{2, 10}));
}

TEST(ModelZooTest, MobileNetV2CifarUnits) {
  SplitModel m = build_model(spec_of("mobilenet_v2_cifar"));
  ASSERT_EQ(m.size(), 22);
  expect_chain(m);
  EXPECT_EQ(m.names[0], "conv1");
  EXPECT_EQ(m.names[1], "bn1");
  for (int i = 0; i < 17; ++i) EXPECT_EQ(m.names[i + 2], "layers." + std::to_string(i));
  EXPECT_EQ(m.names[19], "conv2");
  EXPECT_EQ(m.names[20], "bn2");
  EXPECT_EQ(m.names[21], "linear");
  torch::NoGradGuard no_grad;
  m.train(false);
  torch::Tensor x = m.make_input(2, 0);
  EXPECT_EQ(shape_of(m.forward(x, 0, 18)), (Shape{2, 320, 4, 4}));
  EXPECT_EQ(shape_of(m.forward(x)), (Shape{2, 10}));
}

TEST(ModelZooTest, ResNet20Units) {
  SplitModel m = build_model(spec_of("resnet20"));
  EXPECT_EQ(m.names, (std::vector<std::string>{"conv1", "layer1.0", "layer1.1", "layer1.2",
                                               "layer2.0", "layer2.1", "layer2.2", "layer3.0",
                                               "layer3.1", "layer3.2", "head"}));
  expect_chain(m);
  torch::NoGradGuard no_grad;
  m.train(false);
  torch::Tensor x = m.make_input(2, 0);
  EXPECT_EQ(shape_of(m.forward(x, 0, 4)), (Shape{2, 32, 16, 16}));
  EXPECT_EQ(shape_of(m.forward(x, 0, 9)), (Shape{2, 64, 8, 8}));
  EXPECT_EQ(shape_of(m.forward(x)), (Shape{2, 10}));
}

TEST(ModelZooTest, RobertaSmallUnitsAndShapes) {
  SplitModel m = build_model(small_roberta());
  std::vector<std::string> expected = {"embeddings"};
  for (int i = 0; i < 2; ++i) {
    expected.push_back("layer." + std::to_string(i) + ".attention");
    expected.push_back("layer." + std::to_string(i) + ".ffn");
  }
  expected.push_back("head");
  EXPECT_EQ(m.names, expected);
  expect_chain(m);
  EXPECT_EQ(m.task, TaskKind::kSequenceClassification);
  torch::Tensor x = m.make_input(3, 0);
  EXPECT_EQ(x.scalar_type(), torch::kInt64);
  EXPECT_EQ(shape_of(x), (Shape{3, 16}));
  EXPECT_EQ(shape_of(m.forward(x, 0, 1)), (Shape{3, 16, 64}));
  EXPECT_EQ(shape_of(m.forward(x)), (Shape{3, 2}));
}

TEST(ModelZooTest, BertSmallUnitsAndShapes) {
  EXPECT_EQ(build_model(spec_of("bert_small")).names,
            (std::vector<std::string>{"embeddings", "layer.0.attention", "layer.0.ffn",
                                      "layer.1.attention", "layer.1.ffn", "layer.2.attention",
                                      "layer.2.ffn", "heads"}));
  SplitModel m = build_model(small_bert());
  ASSERT_EQ(m.size(), 6);
  expect_chain(m);
  EXPECT_EQ(m.task, TaskKind::kMaskedLmAndNsp);
  EXPECT_EQ(m.output_shape, (Shape{8 * 50 + 2}));
  torch::Tensor x = m.make_input(2, 0);
  EXPECT_EQ(shape_of(m.forward(x)), (Shape{2, 8 * 50 + 2}));
  EXPECT_EQ(shape_of(m.make_target(2, 0)), (Shape{2, 9}));
}

// ---- parameter counts ----------------------------------------------------------

TEST(ModelZooTest, PublishedParameterCounts) {
  ModelSpec mb = spec_of("mobilenet_v2");
  mb.num_classes = 1000;
  EXPECT_EQ(count_params(build_model(mb)), 3504872);  // torchvision mobilenet_v2
  EXPECT_EQ(count_params(build_model(spec_of("mobilenet_v2_cifar"))), 2296922);  // kuangliu
  SplitModel resnet = build_model(spec_of("resnet20"));
  // He et al.: 0.27M. Option A shortcuts have no parameters; the often-quoted
  // 272,474 is option B's, whose two 1x1 projections + BN add 576 + 2,176.
  EXPECT_EQ(count_params(resnet), 269722);
  EXPECT_EQ(count_params(resnet, 10, 10), 64 * 10 + 10);
  // Option A shortcut: a stage's first block has no extra parameters.
  EXPECT_EQ(count_params(resnet, 4, 4), count_params(resnet, 5, 5) - 32 * 32 * 9 + 16 * 32 * 9);
}

TEST(ModelZooTest, RobertaBaseFullSize) {
  SplitModel m = build_model(spec_of("roberta_base"));
  ASSERT_EQ(m.size(), 26);
  EXPECT_EQ(m.names[1], "layer.0.attention");
  EXPECT_EQ(m.names[24], "layer.11.ffn");
  const int64_t h = 768, f = 3072;
  // Embeddings: word 50265 x 768, positions 514 x 768, token type 1 x 768, LayerNorm.
  const int64_t embeddings = 50265 * h + 514 * h + 1 * h + 2 * h;
  // Attention: Q, K, V and output dense (weight + bias each), LayerNorm.
  const int64_t attention = 4 * (h * h + h) + 2 * h;
  // FFN: 768 -> 3072 -> 768 (weights + biases), LayerNorm.
  const int64_t ffn = (h * f + f) + (f * h + h) + 2 * h;
  // Classification head: dense 768 -> 768, out_proj 768 -> 2.
  const int64_t head = (h * h + h) + (h * 2 + 2);
  EXPECT_EQ(count_params(m, 0, 0), embeddings);
  EXPECT_EQ(count_params(m, 1, 1), attention);
  EXPECT_EQ(count_params(m, 2, 2), ffn);
  EXPECT_EQ(count_params(m, 25, 25), head);
  // 124,647,170: HuggingFace's RobertaForSequenceClassification (roberta-base,
  // 2 labels); the encoder alone is 124,055,040.
  EXPECT_EQ(count_params(m), embeddings + 12 * (attention + ffn) + head);
  EXPECT_EQ(count_params(m), 124647170);

  ModelSpec short_seq = spec_of("roberta_base");
  short_seq.seq_len = 16;
  SplitModel s = build_model(short_seq);
  torch::NoGradGuard no_grad;
  EXPECT_EQ(shape_of(s.forward(s.make_input(1, 0))), (Shape{1, 2}));
}

TEST(ModelZooTest, BertSmallFullSizeParameters) {
  SplitModel m = build_model(spec_of("bert_small"));
  const int64_t h = 768, f = 3072, v = 30522;
  const int64_t embeddings = v * h + 512 * h + 2 * h + 2 * h;
  const int64_t layer = 4 * (h * h + h) + 2 * h + (h * f + f) + (f * h + h) + 2 * h;
  // MLM transform + LayerNorm + decoder with bias; pooler; NSP classifier.
  const int64_t heads = (h * h + h) + 2 * h + (h * v + v) + (h * h + h) + (h * 2 + 2);
  EXPECT_EQ(count_params(m), embeddings + 3 * layer + heads);
}

// ---- running split ---------------------------------------------------------------

TEST(ModelZooTest, SplitForwardEqualsWholeForward) {
  torch::NoGradGuard no_grad;
  for (const ModelSpec& spec : cheap_specs()) {
    SplitModel m = build_model(spec, 3);
    m.train(false);
    torch::Tensor x = m.make_input(2, 5);
    torch::Tensor whole = m.forward(x);
    for (int k : {0, 1, m.size() / 2, m.size() - 2}) {
      torch::Tensor split = m.forward(m.forward(x, 0, k), k + 1, m.size() - 1);
      EXPECT_TRUE(torch::equal(split, whole)) << spec.name << " cut after " << m.names[k];
    }
  }
}

TEST(ModelZooTest, LossIsFiniteAndBackwardFillsGradients) {
  for (const ModelSpec& spec : cheap_specs()) {
    SplitModel m = build_model(spec);
    torch::Tensor loss = m.loss(m.forward(m.make_input(2, 0)), m.make_target(2, 0));
    ASSERT_EQ(loss.dim(), 0) << spec.name;
    EXPECT_TRUE(std::isfinite(loss.item<double>())) << spec.name;
    EXPECT_GT(loss.item<double>(), 0.0) << spec.name;
    loss.backward();
    const auto params = m.parameters(0, m.size() - 1);
    ASSERT_FALSE(params.empty());
    for (const auto& p : params) {
      ASSERT_TRUE(p.grad().defined()) << spec.name;
    }
    // Something reaches the first unit through every boundary.
    double first_grad = 0;
    for (const auto& p : m.parameters(0, 0)) first_grad += p.grad().abs().sum().item<double>();
    EXPECT_GT(first_grad, 0.0) << spec.name;
  }
}

TEST(ModelZooTest, MlmNspLossSplitsTheConcatenatedOutput) {
  SplitModel m = build_model(small_bert());
  const int64_t seq = 8, vocab = 50;
  // Uniform logits: log(V) for the MLM part plus log(2) for NSP.
  torch::Tensor uniform = torch::zeros({2, seq * vocab + 2});
  torch::Tensor target = m.make_target(2, 1);
  EXPECT_NEAR(m.loss(uniform, target).item<double>(), std::log(50.0) + std::log(2.0), 1e-5);
  // A confident, correct NSP prediction removes the log(2) term.
  torch::Tensor nsp_right = uniform.clone();
  for (int64_t b = 0; b < 2; ++b) {
    nsp_right[b][seq * vocab + target[b][seq].item<int64_t>()] = 100.0;
  }
  EXPECT_NEAR(m.loss(nsp_right, target).item<double>(), std::log(50.0), 1e-5);
}

TEST(ModelZooTest, InputsAndTargetsAreDeterministicPerSeed) {
  for (const ModelSpec& spec : cheap_specs()) {
    SplitModel m = build_model(spec);
    EXPECT_TRUE(torch::equal(m.make_input(2, 7), m.make_input(2, 7))) << spec.name;
    EXPECT_FALSE(torch::equal(m.make_input(2, 7), m.make_input(2, 8))) << spec.name;
    EXPECT_TRUE(torch::equal(m.make_target(4, 7), m.make_target(4, 7))) << spec.name;
    EXPECT_EQ(m.make_target(4, 7).scalar_type(), torch::kInt64) << spec.name;
  }
  SplitModel r = build_model(small_roberta());
  torch::Tensor ids = r.make_input(64, 1);
  EXPECT_GE(ids.min().item<int64_t>(), 0);
  EXPECT_LT(ids.max().item<int64_t>(), 100);
  torch::Tensor labels = r.make_target(64, 1);
  EXPECT_GE(labels.min().item<int64_t>(), 0);
  EXPECT_LT(labels.max().item<int64_t>(), 2);
  torch::Tensor images = build_model(spec_of("resnet20")).make_input(64, 1);
  EXPECT_NEAR(images.mean().item<double>(), 0.0, 0.05);
  EXPECT_NEAR(images.std().item<double>(), 1.0, 0.05);
}

TEST(ModelZooTest, WeightsAreDeterministicPerSeed) {
  auto first_weight = [](uint64_t seed) {
    return build_model(spec_of("resnet20"), seed).parameters(0, 0)[0];
  };
  EXPECT_TRUE(torch::equal(first_weight(1), first_weight(1)));
  EXPECT_FALSE(torch::equal(first_weight(1), first_weight(2)));
}

// exec builds only its own stages: a unit built alone has the weights it
// has in the whole model (each unit draws from its own seed), and a unit
// left out is null and refuses to run.
TEST(ModelZooTest, APartialBuildHasTheWholeBuildsUnits) {
  ModelSpec llama = spec_of("llama");
  llama.layers = 2, llama.hidden = 64, llama.heads = 4, llama.kv_heads = 2, llama.ffn = 96;
  llama.vocab_size = 100, llama.seq_len = 8;
  for (const ModelSpec& spec :
       {spec_of("resnet20"), spec_of("mobilenet_v2_cifar"), small_roberta(), llama}) {
    SCOPED_TRACE(spec.name);
    const SplitModel whole = build_model(spec, 7);
    std::vector<bool> odd(static_cast<size_t>(whole.size()));
    for (size_t i = 0; i < odd.size(); ++i) odd[i] = i % 2 == 1;
    const SplitModel part = build_model(spec, 7, &odd);
    ASSERT_EQ(part.names, whole.names);
    for (int i = 0; i < whole.size(); ++i) {
      if (!odd[static_cast<size_t>(i)]) {
        EXPECT_EQ(part.units[static_cast<size_t>(i)], nullptr) << whole.names[i];
        EXPECT_THROW(part.forward(whole.make_input(2, 0), i, i), std::logic_error);
        continue;
      }
      const auto a = whole.parameters(i, i), b = part.parameters(i, i);
      ASSERT_EQ(a.size(), b.size());
      for (size_t j = 0; j < a.size(); ++j)
        EXPECT_TRUE(torch::equal(a[j], b[j])) << whole.names[i] << " parameter " << j;
    }
  }
}

TEST(ModelZooTest, UnknownModelThrows) {
  try {
    build_model(spec_of("vgg16"));
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$.model.name");
  }
}

}  // namespace
}  // namespace splitsim
