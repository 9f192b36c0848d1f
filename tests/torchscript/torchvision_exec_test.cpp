// A scripted torchvision ResNet18 trained for real and through every command:
// exec's gradients against the scripted module's own forward (transparency),
// and plan --list-cuts, simulate, explore and validate end to end.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "exec_test_util.h"
#include "run_cli.h"
#include "splitsim/exec/dataset.h"
#include "torchscript_test_util.h"

namespace splitsim::testing {
namespace {

// torchvision names its parameters with dots; a unit registers them with '_'.
std::string underscored(std::string name) {
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
}

// Client conv1..bn1, server relu..layer4.1, client avgpool..fc: the server's
// first op is torchvision's ReLU(inplace=True) on the tensor it received.
TEST(TorchvisionExecTest, UShapeResNet18GivesTheGradientsOfTheScriptedModule) {
  Scenario sc = small_scenario("resnet20", 4);
  sc.model = resolve_model_defaults(script_spec("resnet18", {3, 32, 32}), "$.model");
  const Plan plan =
      make_test_plan(sc, {1, 11}, CodecSpec{}, CodecSpec{}, 1, Schedule::kSequential, 1);
  ASSERT_EQ(plan.stages[1].units.front(), "relu");
  RunOptions o;
  o.keep_gradients = true;
  o.timeout = std::chrono::milliseconds(60000);
  std::map<std::string, torch::Tensor> split;
  const SplitModel model = build_model(sc.model, sc.seed);
  for (const RunResult& r : run_loopback(sc, plan, o)) {
    ASSERT_TRUE(r.complete) << r.error;
    for (const auto& [unit, grads] : r.gradients) {
      const auto names = model.units[unit]->named_parameters().keys();
      ASSERT_EQ(names.size(), grads.size());
      for (size_t i = 0; i < grads.size(); ++i) split[names[i]] = grads[i];
    }
  }
  // The reference: the file's own forward on the same batch, MSE as exec's loss.
  torch::jit::Module whole = torch::jit::load(model_path("resnet18"));
  whole.train();
  auto [x, y] = make_synthetic_source(model, sc.seed)->batch(0, 0, sc.batch_size);
  torch::mse_loss(whole.forward({x}).toTensor(), y).backward();
  size_t compared = 0;
  for (const auto& p : whole.named_parameters(/*recurse=*/true)) {
    const auto it = split.find(underscored(p.name));
    ASSERT_NE(it, split.end()) << p.name;
    EXPECT_TRUE(torch::allclose(it->second, p.value.grad(), 1e-4, 1e-6))
        << p.name << " max diff " << (it->second - p.value.grad()).abs().max().item<double>();
    ++compared;
  }
  EXPECT_EQ(compared, split.size());
  EXPECT_EQ(compared, 62u);  // 20 convolutions, 20 batch norms x 2, fc x 2
}

// A scenario on the scripted file, as a user writes one.
std::string resnet18_scenario() {
  nlohmann::json s = {
      {"schema", "splitsim.scenario/1"},
      {"name", "resnet18_torchvision"},
      {"model",
       {{"name", "torchscript"}, {"path", model_path("resnet18")}, {"input_shape", {3, 32, 32}}}},
      {"batch_size", 8},
      {"iterations", 4},
      {"partition",
       {{{"party", "client"}, {"from", "conv1"}, {"to", "bn1"}},
        {{"party", "server"}, {"from", "relu"}, {"to", "layer4.1"}},
        {{"party", "client"}, {"from", "avgpool"}, {"to", "fc"}}}},
      {"chunks", 1},
      {"schedule", "gpipe"},
      {"network", {{"bandwidth_bit_per_s", 100e6}, {"latency_s", 0.001}}},
      {"devices", {{"client", "cpu_this_machine"}, {"server", "cpu_this_machine"}}}};
  return write_temp_json(s, "resnet18_torchvision");
}

TEST(TorchvisionExecTest, EveryCommandRunsOnTheScriptedResNet18) {
  const std::string scenario = resnet18_scenario();
  const CliResult cuts = run_cli("plan --list-cuts " + scenario);
  ASSERT_EQ(cuts.exit_code, 0) << cuts.err;
  for (const char* line :
       {"  maxpool | layer1.0  [64,8,8]  16384 B/sample",
        "  layer1.1 | layer2.0  [64,8,8]  16384 B/sample",
        "  layer3.1 | layer4.0  [256,2,2]  4096 B/sample", "  avgpool | fc  [512]  2048 B/sample"})
    EXPECT_NE(cuts.out.find(line), std::string::npos) << line << " not in\n" << cuts.out;

  const CliResult sim = run_cli("simulate " + scenario);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_NE(sim.out.find("== resnet18_torchvision"), std::string::npos) << sim.out;

  const CliResult explore = run_cli("explore " + scenario + " --kinds single,ushape");
  ASSERT_EQ(explore.exit_code, 0) << explore.err;
  EXPECT_NE(explore.out.find("ushape layer"), std::string::npos) << explore.out;

  // profile times every unit, the in-place relu (first after bn1) included.
  const std::string device = scenario + ".device.json";
  const CliResult prof =
      run_cli("profile --scenario " + scenario + " --batch 4 --repeats 1 -o " + device);
  ASSERT_EQ(prof.exit_code, 0) << prof.err;
  const nlohmann::json profile = nlohmann::json::parse(slurp(device));
  std::filesystem::remove(device);
  ASSERT_EQ(profile["measured"]["units"].size(), 14u) << profile["measured"].dump();
  EXPECT_EQ(profile["measured"]["units"][2]["unit"], "relu");
  EXPECT_GT(profile["measured"]["units"][2]["fwd_s"].get<double>(), 0);

  // One real run (validate's exec: server and client processes), predicted
  // against measured; the bytes on the wire are exact. Without the platform
  // model: its link probe (20 s of both cores) is ValidateCliTest's.
  const auto cache = std::filesystem::temp_directory_path() /
                     ("splitsim_torchvision_cache_" + std::to_string(::getpid()));
  const CliResult v =
      run_cli("validate " + scenario +
              " --repeat 1 --iterations 3 --timeout-s 120 --no-platform-model --profile-cache " +
              cache.string() + " --json");
  std::filesystem::remove_all(cache);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const nlohmann::json report = nlohmann::json::parse(v.out);
  const auto& sent = report["measured"]["parties"]["client"]["bytes_sent_per_batch"];
  EXPECT_EQ(sent, report["predicted"]["parties"]["client"]["bytes_sent_per_batch"]);
  EXPECT_EQ(sent.get<double>(), 8 * (64 * 16 * 16 + 512) * 4.0);
  std::filesystem::remove(scenario);
}

// The shipped scenarios/torchscript/*.json, as README.md "Bring your own
// model" runs them: the scripted file under its own name in the directory
// splitsim runs in.
TEST(TorchvisionExecTest, ShippedScenariosRunBesideTheirScriptedFiles) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("splitsim_torchvision_cwd_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const std::string model : {"resnet18", "mobilenet_v2"}) {
    SCOPED_TRACE(model);
    std::filesystem::copy_file(model_path(model), dir / (model + ".pt"));
    const std::string scenario = source_path("scenarios/torchscript/" + model + ".json");
    const CliResult cuts = run_cli("plan --list-cuts " + scenario, "cd " + dir.string() + " && ");
    ASSERT_EQ(cuts.exit_code, 0) << cuts.err;
    EXPECT_NE(cuts.out.find(model == "resnet18" ? "  layer2.1 | layer3.0  [128,4,4]"
                                                : "  features.6 | features.7  [32,4,4]"),
              std::string::npos)
        << cuts.out;
    const CliResult sim = run_cli("simulate " + scenario, "cd " + dir.string() + " && ");
    ASSERT_EQ(sim.exit_code, 0) << sim.err;
    EXPECT_NE(sim.out.find("chunks=4"), std::string::npos) << sim.out;
  }
  // Without the file: exit 2 naming $.model.path, and what to do. The
  // scenario is read from the directory too: beside the shipped one a
  // resnet18.pt may lie (README's command writes it where it runs), and a
  // scenario finds its file beside itself.
  std::filesystem::remove(dir / "resnet18.pt");
  std::filesystem::copy_file(source_path("scenarios/torchscript/resnet18.json"),
                             dir / "resnet18.json");
  const CliResult missing = run_cli("plan " + (dir / "resnet18.json").string(),
                                    "cd " + dir.string() + " && ");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("$.model.path"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("relative to the directory splitsim runs in, " + dir.string()),
            std::string::npos)
      << missing.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace splitsim::testing
