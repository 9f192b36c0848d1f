// TorchScript models built in C++: units from the forward graph, parameters,
// training, int64 inputs and refusals. Scripted torchvision models:
// tests/torchscript/.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "expect_input_error.h"
#include "model_test_util.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/measure.h"
#include "splitsim/costmodel/memory_account.h"
#include "splitsim/costmodel/model_zoo.h"
#include "splitsim/costmodel/planner.h"
#include "splitsim/costmodel/scenario.h"
#include "temp_file.h"

namespace splitsim {
namespace {

using namespace model_test;  // NOLINT: test helpers
using testing::TempFile;

// ---- TorchScript ------------------------------------------------------------------

// A scripted module built in C++ (what torch.jit.script would give):
// encoder (with a nested submodule) then decoder; [B,4] -> [B,3].
// `chain` false adds 1 after the children (glue in forward).
torch::jit::Module scripted_net(bool chain) {
  // One compilation unit for every class, as torch.jit.script makes.
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module inner("Inner", cu);
  inner.register_parameter("weight", torch::randn({4, 8}).requires_grad_(), /*is_buffer=*/false);
  inner.define("def forward(self, x):\n  return torch.matmul(x, self.weight)\n");
  torch::jit::Module encoder("Encoder", cu);
  encoder.register_module("inner", inner);
  encoder.register_parameter("bias", torch::zeros({8}).requires_grad_(), /*is_buffer=*/false);
  encoder.define("def forward(self, x):\n  return torch.relu(self.inner.forward(x) + self.bias)\n");
  torch::jit::Module decoder("Decoder", cu);
  decoder.register_parameter("weight", torch::randn({8, 3}).requires_grad_(), /*is_buffer=*/false);
  decoder.define("def forward(self, x):\n  return torch.matmul(x, self.weight)\n");
  torch::jit::Module net("Net", cu);
  net.register_module("encoder", encoder);
  net.register_module("decoder", decoder);
  net.define(chain
                 ? "def forward(self, x):\n  return self.decoder.forward(self.encoder.forward(x))\n"
                 : "def forward(self, x):\n  return self.decoder.forward(self.encoder.forward(x)) "
                   "+ 1.0\n");
  return net;
}

ModelSpec torchscript_spec(const std::string& path) {
  ModelSpec s = spec_of("torchscript");
  s.path = path;
  s.input_shape = {4};
  return s;
}

// build_model(spec) throws InputError at $.model.path whose message holds `text`.
void expect_path_refused(const ModelSpec& spec, const std::string& text) {
  expect_error([&] { build_model(spec); }, "$.model.path", text);
}

TEST(ModelTorchScriptTest, ChildrenAreUnits) {
  TempFile file("chain.pt");
  scripted_net(true).save(file.path());
  SplitModel m = build_model(torchscript_spec(file.path()));
  EXPECT_EQ(m.names, (std::vector<std::string>{"encoder", "decoder"}));
  expect_chain(m);
  EXPECT_EQ(m.task, TaskKind::kRegression);
  EXPECT_EQ(m.output_shape, (Shape{3}));
  EXPECT_EQ(count_params(m, 0, 0), 4 * 8 + 8);
  EXPECT_EQ(count_params(m, 1, 1), 8 * 3);
  // Registered under their paths in the root module, '.' -> '_'.
  EXPECT_NE(m.units[0]->named_parameters().find("encoder_inner_weight"), nullptr);

  torch::Tensor x = m.make_input(5, 0);
  torch::Tensor y = m.forward(x);
  EXPECT_EQ(shape_of(y), (Shape{5, 3}));
  EXPECT_TRUE(torch::equal(m.forward(m.forward(x, 0, 0), 1, 1), y));
  torch::Tensor target = m.make_target(5, 0);
  EXPECT_EQ(shape_of(target), (Shape{5, 3}));
  m.loss(y, target).backward();
  // The registered tensors are the scripted module's own: gradients land on them.
  for (const auto& p : m.parameters(0, 1)) EXPECT_TRUE(p.grad().defined());
}

TEST(ModelTorchScriptTest, Int64InputsAreTokenIds) {
  // embed: ids [B,T] -> [B,T,4] from a 7-row table; pool: mean over T.
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module embed("Embed", cu);
  embed.register_parameter("weight", torch::randn({7, 4}).requires_grad_(), false);
  embed.define("def forward(self, x):\n  return torch.embedding(self.weight, x)\n");
  torch::jit::Module pool("Pool", cu);
  pool.define("def forward(self, x):\n  return torch.mean(x, 1)\n");
  torch::jit::Module net("TokenNet", cu);
  net.register_module("embed", embed);
  net.register_module("pool", pool);
  net.define("def forward(self, x):\n  return self.pool.forward(self.embed.forward(x))\n");
  TempFile file("tokens.pt");
  net.save(file.path());

  ModelSpec s = torchscript_spec(file.path());
  s.input_shape = {5};
  s.input_dtype = "int64";
  s.vocab_size = 7;
  SplitModel m = build_model(s);
  EXPECT_EQ(m.names, (std::vector<std::string>{"embed", "pool"}));
  EXPECT_EQ(m.output_shape, (Shape{4}));
  torch::Tensor ids = m.make_input(64, 0);
  EXPECT_EQ(ids.scalar_type(), torch::kInt64);
  EXPECT_EQ(shape_of(ids), (Shape{64, 5}));
  EXPECT_GE(ids.min().item<int64_t>(), 0);
  EXPECT_LT(ids.max().item<int64_t>(), 7);
  EXPECT_EQ(shape_of(m.forward(ids)), (Shape{64, 4}));

  // A float model given int64 inputs fails at build time, and says why.
  TempFile float_file("float.pt");
  scripted_net(true).save(float_file.path());
  s.path = float_file.path();
  expect_path_refused(s, "input_dtype");
}

// The net with requires_grad switched off on `encoder`'s parameters, or on all.
torch::jit::Module frozen_net(bool all) {
  torch::jit::Module net = scripted_net(true);
  for (const auto& child : net.named_children()) {
    if (!all && child.name != "encoder") continue;
    for (const auto& p : child.value.parameters()) p.requires_grad_(false);
  }
  return net;
}

TEST(ModelTorchScriptTest, AFrozenFirstUnitHasNoBackward) {
  TempFile file("frozen_first.pt");
  frozen_net(false).save(file.path());
  const ModelProfile p = measure_model(torchscript_spec(file.path()));
  ASSERT_EQ(p.units.size(), 2u);
  EXPECT_GT(p.units[0].fwd.macs(), 0);
  EXPECT_EQ(p.units[0].bwd.macs(), 0);  // frozen, and nothing before it trains
  EXPECT_GT(p.units[1].bwd.macs(), 0);
}

TEST(ModelTorchScriptTest, RejectsAModelWithNothingToTrain) {
  TempFile file("frozen_all.pt");
  frozen_net(true).save(file.path());
  expect_path_refused(torchscript_spec(file.path()), "requires_grad");
}

// Glue after the last submodule call (here `+ 1.0`) joins the last unit.
TEST(ModelTorchScriptTest, GlueInForwardJoinsTheUnitBeforeIt) {
  TempFile file("glue.pt");
  scripted_net(false).save(file.path());
  SplitModel m = build_model(torchscript_spec(file.path()));
  EXPECT_EQ(m.names, (std::vector<std::string>{"encoder", "decoder"}));
  m.train(false);
  torch::NoGradGuard no_grad;
  const torch::Tensor x = m.make_input(3, 0);
  const torch::Tensor decoded = torch::matmul(m.forward(x, 0, 0), m.units[1]->parameters()[0]);
  EXPECT_TRUE(torch::allclose(m.forward(x), decoded + 1.0));
}

// lin -> act (ReLU in place, so the unit runs on a copy of its input) ->
// dec, [B,4] -> [B,3]: act keeps its own result, not its input, so lin's
// output is freed after act's forward when both run in one stage.
TEST(ModelTorchScriptTest, AStageHoldsTheOutputOfAUnitOnlyWhereTheNextUnitKeepsIt) {
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module lin("Lin", cu), act("Act", cu), dec("Dec", cu), net("InPlace", cu);
  lin.register_parameter("weight", torch::randn({4, 64}).requires_grad_(), false);
  lin.define("def forward(self, x):\n  return torch.matmul(x, self.weight)\n");
  act.define("def forward(self, x):\n  return torch.relu_(x)\n");
  dec.register_parameter("weight", torch::randn({64, 3}).requires_grad_(), false);
  dec.define("def forward(self, x):\n  return torch.matmul(x, self.weight)\n");
  net.register_module("lin", lin);
  net.register_module("act", act);
  net.register_module("dec", dec);
  net.define(
      "def forward(self, x):\n  return self.dec.forward(self.act.forward(self.lin.forward(x)))\n");
  TempFile file("in_place.pt");
  net.save(file.path());

  Scenario sc;
  sc.name = "in_place";
  sc.batch_size = 8;
  sc.model = torchscript_spec(file.path());
  sc.partition = {{"client", "lin", "act"}, {"server", "dec", "dec"}};
  sc.compression.resize(1);
  sc.devices = {{"client", "d"}, {"server", "d"}};
  DeviceProfile dev;
  dev.name = "d";
  dev.peak_flops = 1e12;
  dev.memory_bandwidth_Bps = 1e10;
  const ModelProfile profile = measure_model(sc.model, sc.batch_size);
  ASSERT_EQ(profile.units.size(), 3u);
  EXPECT_FALSE(profile.units[1].keeps_input);  // act: relu_ on its own copy
  EXPECT_TRUE(profile.units[2].keeps_input);   // dec: its weight's gradient needs it
  EXPECT_EQ(profile.units[0].output_stash_bytes_per_sample, 64 * 4);
  const Plan plan = make_plan(sc, profile, {{"client", dev}, {"server", dev}});

  // What the client's chain holds after its forward, as exec runs it.
  SplitModel m = build_model(sc.model);
  m.train(true);
  const torch::Tensor x = m.make_input(sc.batch_size, 0);
  MemoryAccount memory;
  torch::Tensor y;
  {
    MemoryAccount::Join joined(memory);
    y = m.forward(x, 0, 1);
  }
  EXPECT_EQ(memory.live_bytes(), sc.batch_size * 64 * 4);
  EXPECT_EQ(plan.stages[0].stash_bytes_per_microbatch, memory.live_bytes());
}

TEST(ModelTorchScriptTest, UnreadableFilesThrowInputError) {
  const std::string missing =
      (std::filesystem::temp_directory_path() / "splitsim_no_such_model.pt").string();
  expect_path_refused(torchscript_spec(missing), "No such file");
  TempFile garbage("garbage.pt");
  std::ofstream(garbage.path()) << "not a zip archive";
  expect_path_refused(torchscript_spec(garbage.path()), "");
}

}  // namespace
}  // namespace splitsim
