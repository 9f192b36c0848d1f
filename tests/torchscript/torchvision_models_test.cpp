// Scripted torchvision models and a transformer encoder, written at test time
// by tests/torchscript/write_models.py with Debian's python3-torchvision:
// their units, cut points and bytes against what PyTorch itself reports, MACs
// and parameters against the built-in mobilenet_v2, in-place ReLU at a
// unit's input, and the refusals.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/measure.h"
#include "splitsim/costmodel/memory_account.h"
#include "splitsim/costmodel/model_zoo.h"
#include "splitsim/costmodel/scenario.h"
#include "splitsim/costmodel/unit_graph.h"
#include "torchscript_test_util.h"

namespace splitsim::testing {
namespace {

using Names = std::vector<std::string>;

Names resnet18_units() {
  Names n{"conv1", "bn1", "relu", "maxpool"};
  for (int layer = 1; layer <= 4; ++layer)
    for (int block = 0; block < 2; ++block)
      n.push_back("layer" + std::to_string(layer) + "." + std::to_string(block));
  n.insert(n.end(), {"avgpool", "fc"});
  return n;
}

Names mobilenet_v2_units() {
  Names n;
  for (int i = 0; i <= 18; ++i) n.push_back("features." + std::to_string(i));
  n.insert(n.end(), {"classifier.0", "classifier.1"});
  return n;
}

int64_t numel(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

// Every point between two units is a valid cut; the tensor crossing it is
// what PyTorch's forward hook saw leave the unit's module (flattened where
// forward flattens it as glue), and its bytes are 4 per element.
void expect_cuts_as_pytorch_says(const std::string& model, const std::vector<int64_t>& input,
                                 const std::map<std::string, std::vector<int64_t>>& flattened) {
  SCOPED_TRACE(model);
  const ModelProfile p = measure_model(script_spec(model, input));
  const nlohmann::json facts = model_facts(model);
  const std::vector<CutPoint> cuts = valid_cuts(p);
  ASSERT_EQ(cuts.size() + 1, p.units.size());
  for (size_t i = 0; i < cuts.size(); ++i) {
    const std::string& unit = p.units[i].name;
    EXPECT_EQ(cuts[i].before, unit);
    std::vector<int64_t> want = facts["shapes"].at(unit).get<std::vector<int64_t>>();
    if (flattened.count(unit)) want = flattened.at(unit);
    EXPECT_EQ(cuts[i].shape, want) << unit;
    EXPECT_EQ(p.units[i].output_bytes(), 4 * numel(want)) << unit;
  }
  EXPECT_EQ(p.units.back().output_shape, facts["output_shape"].get<std::vector<int64_t>>());
}

// Each unit holds exactly the parameters of the module it is named after.
void expect_parameters_as_pytorch_says(const std::string& model, const std::vector<int64_t>& input,
                                       const std::map<std::string, int64_t>& extra = {}) {
  SCOPED_TRACE(model);
  const ModelProfile p = measure_model(script_spec(model, input));
  const nlohmann::json facts = model_facts(model);
  int64_t total = 0;
  for (const UnitProfile& u : p.units) {
    const int64_t want = facts["parameters"].at(u.name).get<int64_t>() +
                         (extra.count(u.name) ? extra.at(u.name) : 0);
    EXPECT_EQ(u.param_count, want) << u.name;
    EXPECT_EQ(u.param_bytes, 4 * want) << u.name;
    total += u.param_count;
  }
  EXPECT_EQ(total, facts["total_parameters"].get<int64_t>());
}

TEST(TorchvisionModelsTest, ResNet18IsCutBetweenItsBlocks) {
  const SplitModel m = build_model(script_spec("resnet18", {3, 32, 32}));
  EXPECT_EQ(m.names, resnet18_units());
  expect_cuts_as_pytorch_says("resnet18", {3, 32, 32}, {{"avgpool", {512}}});
  expect_parameters_as_pytorch_says("resnet18", {3, 32, 32});
}

TEST(TorchvisionModelsTest, MobileNetV2IsCutBetweenItsBlocks) {
  const SplitModel m = build_model(script_spec("mobilenet_v2", {3, 32, 32}));
  EXPECT_EQ(m.names, mobilenet_v2_units());
  expect_cuts_as_pytorch_says("mobilenet_v2", {3, 32, 32}, {{"features.18", {1280}}});
  expect_parameters_as_pytorch_says("mobilenet_v2", {3, 32, 32});
}

// Residual adds written in forward stay inside a block; the learned position
// table, used by glue after the embedding, belongs to the embedding's unit.
TEST(TorchvisionModelsTest, EncoderWithResidualsIsCutBetweenBlocks) {
  ModelSpec spec = script_spec("encoder", {16});
  spec.input_dtype = "int64";
  spec.vocab_size = 100;
  const SplitModel m = build_model(spec);
  EXPECT_EQ(m.names, (Names{"embed", "blocks.0", "blocks.1", "blocks.2", "norm", "head"}));
  const ModelProfile p = measure_model(spec);
  const std::vector<CutPoint> cuts = valid_cuts(p);
  ASSERT_EQ(cuts.size(), 5u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(cuts[i].shape, (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(cuts[4].shape, (std::vector<int64_t>{32}));  // the mean over tokens is glue of norm
  const nlohmann::json facts = model_facts("encoder");
  int64_t total = 0;
  for (const UnitProfile& u : p.units) {
    const int64_t extra = u.name == "embed" ? 16 * 32 : 0;  // the position table
    EXPECT_EQ(u.param_count, facts["parameters"].at(u.name).get<int64_t>() + extra) << u.name;
    EXPECT_GT(u.fwd.macs() + u.fwd.elementwise_elems, 0) << u.name;
    total += u.param_count;
  }
  EXPECT_EQ(total, facts["total_parameters"].get<int64_t>());
}

// Blocks inside a module that is not a container: one unit by default,
// split between the blocks when the scenario names the module (and a
// path that names no submodule is refused at $.model.split_inside[i]).
TEST(TorchvisionModelsTest, SplitInsideOpensTheNamedModule) {
  ModelSpec spec = script_spec("wrapped_encoder", {16});
  spec.input_dtype = "int64";
  spec.vocab_size = 100;
  EXPECT_EQ(build_model(spec).names, (Names{"embed", "encoder", "head"}));
  spec.split_inside = {"encoder"};
  EXPECT_EQ(build_model(spec).names,
            (Names{"embed", "encoder.layers.0", "encoder.layers.1", "encoder.norm", "head"}));
  // Opens the encoder too; inside the block, one tensor crosses between the
  // attention's residual add and the MLP's.
  spec.split_inside = {"encoder.layers.0"};
  const Names halves{"embed",
                     "encoder.layers.0.ln1+attn",
                     "encoder.layers.0.ln2+mlp",
                     "encoder.layers.1",
                     "encoder.norm",
                     "head"};
  EXPECT_EQ(build_model(spec).names, halves);
  spec.split_inside = {"encoder.layers.0.mlp"};  // a Sequential under a residual: no cut in it
  EXPECT_EQ(build_model(spec).names, halves);
  spec.split_inside = {"encoder", "decoder"};
  try {
    build_model(spec);
    ADD_FAILURE() << "decoder was taken";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$.model.split_inside[1]");
    EXPECT_NE(std::string(e.what()).find("no submodule \"decoder\""), std::string::npos)
        << e.what();
  }
}

// A party builds its own units only (exec): the file is loaded whole, the
// other units are dropped and their weights freed, so the party holds what
// the plan counts for it; the kept units still train.
TEST(TorchvisionModelsTest, APartialBuildHoldsTheAskedUnitsWeightsOnly) {
  const ModelSpec spec = script_spec("resnet18", {3, 32, 32});
  const SplitModel whole = build_model(spec);
  std::vector<bool> local(whole.names.size(), false);
  local[0] = local[1] = local.back() = true;  // conv1, bn1 and fc: a U-shape's client
  MemoryAccount memory;
  int64_t held = 0;
  SplitModel part;
  {
    MemoryAccount::Join joined(memory);
    part = build_model(spec, 0, &local);
    held = memory.live_bytes();
  }
  int64_t own = 0, all = 0;
  for (size_t i = 0; i < local.size(); ++i) {
    EXPECT_EQ(part.units[i] != nullptr, local[i]) << whole.names[i];
    for (const auto& p : whole.units[i]->parameters()) {
      all += p.nbytes();
      if (local[i]) own += p.nbytes();
    }
  }
  EXPECT_GT(all, 40 * own);  // resnet18's blocks are most of it
  EXPECT_GE(held, own);
  EXPECT_LT(held, own + all / 20);  // buffers and a little more, not the blocks
  const torch::Tensor y = part.units.back()->forward(torch::randn({2, 512}));
  y.sum().backward();
  EXPECT_TRUE(part.units.back()->parameters()[0].grad().defined());
}

// A module used twice (tied weights) keeps both uses in one unit: its
// gradient is the sum over both, which one party must own.
TEST(TorchvisionModelsTest, AModuleUsedTwiceIsNeverCutApart) {
  const ModelProfile p = measure_model(script_spec("tied", {8}));
  ASSERT_EQ(p.unit_names(), (Names{"a+mid", "head"}));
  EXPECT_EQ(p.units[0].param_count, 2 * (8 * 8 + 8));  // a and mid, a counted once
  EXPECT_EQ(p.units[1].param_count, 8 * 3 + 3);
}

// torchvision's mobilenet_v2 and the built-in one are the same network: the
// same parameters and MACs (forward and backward, per op class), block by
// block where their units coincide and in total.
TEST(TorchvisionModelsTest, MobileNetV2CountsEqualTheBuiltInModel) {
  ModelSpec builtin;
  builtin.name = "mobilenet_v2";
  builtin.image_size = 32;
  builtin.num_classes = 10;
  const ModelProfile ours = measure_model(builtin);
  const ModelProfile theirs = measure_model(script_spec("mobilenet_v2", {3, 32, 32}));
  for (int i = 1; i <= 17; ++i) {
    const std::string name = "features." + std::to_string(i);
    const UnitProfile& a = ours.units.at(ours.index_of(name));
    const UnitProfile& b = theirs.units.at(theirs.index_of(name));
    EXPECT_EQ(a.param_count, b.param_count) << name;
    EXPECT_EQ(a.fwd.conv_macs, b.fwd.conv_macs) << name;
    EXPECT_EQ(a.fwd.depthwise_macs, b.fwd.depthwise_macs) << name;
    EXPECT_EQ(a.bwd.macs(), b.bwd.macs()) << name;
    EXPECT_EQ(a.output_shape, b.output_shape) << name;
  }
  auto sum = [](const ModelProfile& p, auto field) {
    int64_t s = 0;
    for (const UnitProfile& u : p.units) s += field(u);
    return s;
  };
  for (auto field : std::vector<std::function<int64_t(const UnitProfile&)>>{
           [](const UnitProfile& u) { return u.param_count; },
           [](const UnitProfile& u) { return u.fwd.conv_macs; },
           [](const UnitProfile& u) { return u.fwd.depthwise_macs; },
           [](const UnitProfile& u) { return u.fwd.matmul_macs; },
           [](const UnitProfile& u) { return u.bwd.macs(); }})
    EXPECT_EQ(sum(ours, field), sum(theirs, field));
  EXPECT_EQ(sum(ours, [](const UnitProfile& u) { return u.param_count; }), 2236682);
}

// torchvision's ReLU(inplace=True) first in a unit: the unit's input is a
// leaf that requires grad when units are measured one by one, and on the
// receiving side of a cut. The unit works on a copy: the caller's tensor is
// left as it was and the gradient reaches it.
TEST(TorchvisionModelsTest, InPlaceReluFirstInAUnitTrains) {
  SplitModel m = build_model(script_spec("sequential_inplace", {3, 32, 32}));
  EXPECT_EQ(m.names, (Names{"0", "1", "2", "3", "4", "5", "6", "7", "8"}));
  EXPECT_NO_THROW(measure_model(script_spec("sequential_inplace", {3, 32, 32})));
  for (int unit : {2, 4}) {
    SCOPED_TRACE(unit);
    const torch::Tensor x = torch::randn({2, 8, 32, 32}).requires_grad_();
    const torch::Tensor before = x.detach().clone();
    const torch::Tensor y = m.forward(x, unit, unit);
    EXPECT_TRUE(torch::equal(x.detach(), before));
    EXPECT_TRUE(torch::equal(y, torch::relu(before)));
    y.sum().backward();
    ASSERT_TRUE(x.grad().defined());
    EXPECT_TRUE(torch::equal(x.grad(), (before > 0).to(torch::kFloat32)));
  }
  // Dropout(inplace=True), in training: the caller's tensor is left alone.
  m.train(true);
  const torch::Tensor x7 = torch::randn({4, 8}).requires_grad_();
  const torch::Tensor before7 = x7.detach().clone();
  const torch::Tensor y7 = m.forward(x7, 7, 7);
  EXPECT_TRUE(torch::equal(x7.detach(), before7));
  EXPECT_TRUE(torch::equal(y7 == 0, (y7 == 0) & (before7 != 0)));  // zeros dropped
  EXPECT_GT((y7 == 0).sum().item<int64_t>(), 0);
  y7.sum().backward();
  EXPECT_TRUE(x7.grad().defined());
  // resnet18's `relu` unit (after bn1) is the same case in a torchvision model.
  const SplitModel r = build_model(script_spec("resnet18", {3, 32, 32}));
  const torch::Tensor x = torch::randn({2, 64, 16, 16}).requires_grad_();
  r.forward(x, 2, 2).sum().backward();
  EXPECT_TRUE(x.grad().defined());
}

// A branch on the values cannot be traced, and need not be: the `if` stays
// whole in one unit (named by both modules it may call) and runs either way.
TEST(TorchvisionModelsTest, DataDependentBranchStaysInOneUnit) {
  SplitModel m = build_model(script_spec("data_dependent", {8}));
  EXPECT_EQ(m.names, (Names{"stem", "pos+neg", "head"}));
  torch::jit::Module whole = torch::jit::load(model_path("data_dependent"));
  whole.eval();
  m.train(false);
  torch::NoGradGuard no_grad;
  bool took[2] = {false, false};
  for (int seed = 0; seed < 20; ++seed) {
    const torch::Tensor x = torch::randn({1, 8}, at::detail::createCPUGenerator(seed)) * 3;
    const torch::Tensor h = m.forward(x, 0, 0);
    took[h.sum().item<double>() > 0] = true;
    EXPECT_TRUE(torch::allclose(m.forward(x), whole.forward({x}).toTensor()));
  }
  EXPECT_TRUE(took[0] && took[1]);
}

TEST(TorchvisionModelsTest, WhatCannotBeSplitIsRefusedNamingThePath) {
  expect_refused(script_spec("whole_residual", {8}), "cannot be split anywhere");
  expect_refused(script_spec("two_inputs", {8}), "its forward takes 2 arguments");
  expect_refused(script_spec("tuple_output", {8}), "returns Tuple[Tensor, Tensor]");
}

// What fails inside the interpreter says what failed, and in which unit,
// without the TorchScript traceback.
TEST(TorchvisionModelsTest, InterpreterErrorsComeWithoutTheTraceback) {
  try {
    build_model(script_spec("resnet18", {1, 32, 32}));  // one channel, conv1 wants three
    ADD_FAILURE() << "one channel was taken";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.where(), "$.model.path");
    EXPECT_NE(what.find("fails on one sample of input_shape [1, 32, 32] float32"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("unit conv1 of the TorchScript model: RuntimeError: "), std::string::npos)
        << what;
    EXPECT_NE(what.find("to have 3 channels"), std::string::npos) << what;
    EXPECT_EQ(what.find("Traceback"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  // Batch norm on a 1x1 map with one sample, in training (a micro-batch of
  // one): PyTorch's own refusal, raised in the scripted code.
  SplitModel m = build_model(script_spec("resnet18", {3, 32, 32}));
  try {
    m.forward(m.make_input(1, 0));
    ADD_FAILURE() << "batch norm took one value per channel";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unit layer4.0 of the TorchScript model: ValueError: Expected more than 1 "
                        "value per channel when training"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find("Traceback"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace splitsim::testing
