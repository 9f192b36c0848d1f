// `splitsim train --checkpoint-dir --checkpoint-every --resume` end to end
// (issue #44): parties killed with SIGKILL mid-run resume to the weights of
// an uninterrupted run bit for bit; a full disk keeps the previous
// checkpoint; foreign, corrupted and mismatched checkpoints are refused with
// exit code 2. Every process runs under `timeout` or is killed by the test.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <random>

#include "exec_cli_testing.h"
#include "splitsim/exec/checkpoint.h"
#include "splitsim/exec/dataset.h"

namespace splitsim::testing {
namespace {

constexpr int64_t kBatches = 40;  // 640 samples of 16: one epoch

// A U-shape of ResNet20 on Fashion-MNIST (the client holds two stages),
// SGD with momentum (state to carry), two micro-batches.
std::string write_u_scenario(const std::string& dir) {
  nlohmann::json s = {{"schema", "splitsim.scenario/1"},
                      {"name", "checkpoints"},
                      {"model", {{"name", "resnet20"}}},
                      {"batch_size", 16},
                      {"dataset", "fashion_mnist"},
                      {"partition",
                       {{{"party", "client"}, {"from", "conv1"}, {"to", "layer1.2"}},
                        {{"party", "server"}, {"from", "layer2.0"}, {"to", "layer3.2"}},
                        {{"party", "client"}, {"from", "head"}, {"to", "head"}}}},
                      {"chunks", 2},
                      {"schedule", "1f1b"},
                      {"optimizer", {{"name", "sgd"}, {"lr", 0.05}, {"momentum", 0.9}}},
                      {"devices", {{"client", "xeon_40core"}, {"server", "v100"}}},
                      {"seed", 3}};
  const std::string file = dir + "/u.json";
  std::ofstream(file) << s.dump(2);
  return file;
}

struct CheckpointCliTest : ExecCliTest {
  void SetUp() override {
    ExecCliTest::SetUp();
    if (installed_fashion_mnist_dir().empty())
      GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    scenario_u = write_u_scenario(dir);
  }
  std::vector<std::string> args(const std::string& ckpt, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"train",
                                  scenario_u,
                                  "--train-samples",
                                  samples,
                                  "--test-samples",
                                  "64",
                                  "--checkpoint-dir",
                                  ckpt,
                                  "--checkpoint-every",
                                  "4",
                                  "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::vector<std::string> party(const std::string& ckpt, bool server, int port,
                                 std::vector<std::string> extra = {}) {
    extra.insert(extra.end(),
                 {"--role", server ? "server" : "client", server ? "--listen" : "--connect",
                  "127.0.0.1:" + std::to_string(port)});
    return args(ckpt, extra);
  }
  std::string scenario_u;
  std::string samples = "640";  // training samples (of 16 a batch)
};

// Each stage's final checkpoint (step 40): its tensors, bytes and all.
std::vector<CheckpointFile> final_state(const std::string& ckpt) {
  std::vector<CheckpointFile> out;
  for (int stage = 0; stage < 3; ++stage)
    out.push_back(read_checkpoint_file(checkpoint_path(ckpt, kBatches, stage, 0), 1 << 28));
  return out;
}

void expect_same_state(const std::vector<CheckpointFile>& a, const std::vector<CheckpointFile>& b,
                       const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t s = 0; s < a.size(); ++s) {
    ASSERT_EQ(a[s].tensors.size(), b[s].tensors.size()) << what;
    for (size_t t = 0; t < a[s].tensors.size(); ++t)
      EXPECT_EQ(a[s].tensors[t].name, b[s].tensors[t].name) << what;
    EXPECT_TRUE(a[s].payload == b[s].payload) << what << ": stage " << s << "'s tensors differ";
  }
}

// kill -9 of either party at random checkpoints of a 40-batch run over
// Gloo, then both resumed: every run completes with the uninterrupted
// run's batch losses and, to the bit, its final weights, momentum and
// batch-norm statistics. The survivor of a kill ends at once (its transport
// aborted), not at the transfer timeout.
TEST_F(CheckpointCliTest, PartiesKilledMidRunResumeToTheUninterruptedWeightsBitForBit) {
  const std::string whole = dir + "/whole";
  {
    const int port = free_port();
    Child server(dir, "whole_server", party(whole, true, port));
    Child client(dir, "whole_client", party(whole, false, port));
    ASSERT_EQ(client.wait(100), 0) << client.err();
    ASSERT_EQ(server.wait(30), 0) << server.err();
  }
  const nlohmann::json reference = nlohmann::json::parse(slurp(dir + "/whole_server.out"));
  ASSERT_EQ(reference["batch_losses"].size(), static_cast<size_t>(kBatches));
  EXPECT_EQ(reference["resumed_from_batch"], 0);
  const std::vector<CheckpointFile> reference_state = final_state(whole);

  const int kills =
      std::getenv("SPLITSIM_KILL_POINTS") ? std::atoi(std::getenv("SPLITSIM_KILL_POINTS")) : 2;
  std::random_device device;
  const unsigned seed = device();
  std::mt19937 rng(seed);
  std::cerr << "kill points seeded " << seed << "\n";
  for (int i = 0; i < kills; ++i) {
    const bool kill_server = i % 2 == 1;
    const int64_t after = 4 * std::uniform_int_distribution<int64_t>(1, 8)(rng);  // a step file
    const std::string ckpt = dir + "/run" + std::to_string(i);
    const std::string what = std::string("kill -9 of the ") + (kill_server ? "server" : "client") +
                             " after step " + std::to_string(after);
    const int port = free_port();
    Child server(dir, "server" + std::to_string(i), party(ckpt, true, port));
    Child client(dir, "client" + std::to_string(i), party(ckpt, false, port));
    const std::string mark = checkpoint_path(ckpt, after, kill_server ? 1 : 0, 0);
    const auto t0 = Clock::now();
    while (!std::filesystem::exists(mark) &&
           std::chrono::duration<double>(Clock::now() - t0).count() < 100)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 40)(rng)));
    Child& victim = kill_server ? server : client;
    Child& survivor = kill_server ? client : server;
    ASSERT_TRUE(victim.kill_program()) << what << ": it had already ended";
    const auto t_kill = Clock::now();
    EXPECT_NE(survivor.wait(60), 0) << what;
    const double survived_s = std::chrono::duration<double>(Clock::now() - t_kill).count();
    EXPECT_LT(survived_s, 30) << what;
    std::cerr << what << ": the survivor exited " << survived_s << " s after the kill\n";
    victim.wait(10);

    const int port2 = free_port();
    Child server2(dir, "resumed_server" + std::to_string(i),
                  party(ckpt, true, port2, {"--resume"}));
    Child client2(dir, "resumed_client" + std::to_string(i),
                  party(ckpt, false, port2, {"--resume"}));
    ASSERT_EQ(client2.wait(100), 0) << what << ": " << client2.err();
    ASSERT_EQ(server2.wait(30), 0) << what << ": " << server2.err();
    const nlohmann::json resumed = nlohmann::json::parse(server2.out());
    std::cerr << what << ": resumed from batch " << resumed["resumed_from_batch"] << "\n";
    EXPECT_GE(resumed["resumed_from_batch"].get<int64_t>(), after - 4) << what;
    EXPECT_TRUE(resumed["complete"].get<bool>()) << what;
    EXPECT_EQ(resumed["batch_losses"], reference["batch_losses"]) << what;
    EXPECT_EQ(resumed["evaluations"][0]["test_accuracy"],
              reference["evaluations"][0]["test_accuracy"])
        << what;
    expect_same_state(final_state(ckpt), reference_state, what);
    // The newest two checkpoints are kept.
    EXPECT_EQ(complete_checkpoint_steps(ckpt, {{0, 0}, {1, 0}, {2, 0}}),
              (std::vector<int64_t>{kBatches - 4, kBatches}))
        << what;
  }
}

// A checkpoint that does not fit on the disk: the run stops at once with
// the reason (exit 1), the previous checkpoint stays whole and no
// temporary file is left; resumed where there is room, the run ends with
// an uninterrupted run's losses. Needs root for a small tmpfs.
TEST_F(CheckpointCliTest, AFullDiskKeepsThePreviousCheckpoint) {
  const std::string small = dir + "/small";
  std::filesystem::create_directories(small);
  // Step 4 (2.2 MB over the three stages) fits, step 8 beside it does not.
  if (::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=3m") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs (needs root): " << std::strerror(errno);
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{small};
  Child full(dir, "full", args(small));
  EXPECT_EQ(full.wait(100), 1) << full.err();
  EXPECT_NE(full.err().find("No space left on device"), std::string::npos) << full.err();
  EXPECT_NE(full.err().find("the checkpoint of step 4 is kept"), std::string::npos) << full.err();
  for (int stage = 0; stage < 3; ++stage)
    EXPECT_NO_THROW(read_checkpoint_file(checkpoint_path(small, 4, stage, 0), 1 << 28));
  for (const auto& entry : std::filesystem::directory_iterator(small))
    EXPECT_NE(entry.path().extension(), ".tmp") << entry.path();

  const std::string roomy = dir + "/roomy";
  std::filesystem::copy(small, roomy);
  Child resumed(dir, "resumed", args(roomy, {"--resume"}));
  ASSERT_EQ(resumed.wait(100), 0) << resumed.err();
  Child whole(dir, "whole", args(dir + "/whole"));
  ASSERT_EQ(whole.wait(100), 0) << whole.err();
  const nlohmann::json a = nlohmann::json::parse(resumed.out());
  const nlohmann::json b = nlohmann::json::parse(whole.out());
  EXPECT_EQ(a["resumed_from_batch"], 4);
  EXPECT_EQ(a["batch_losses"], b["batch_losses"]);
  expect_same_state(final_state(roomy), final_state(dir + "/whole"), "in one process");
}

// What is refused, each with exit code 2 and the reason: checkpoints of
// another run (another seed), a fresh run on a directory that holds
// checkpoints, a corrupted file, parties without a common step, and flags
// that do not go together.
TEST_F(CheckpointCliTest, RefusesCheckpointsThatAreNotThisRunsWithExitCode2) {
  const std::string ckpt = dir + "/ckpt";
  samples = "128";
  std::vector<std::string> first = args(ckpt, {"--seed", "5"});
  Child run(dir, "run", first);
  ASSERT_EQ(run.wait(100), 0) << run.err();  // steps 4 and 8 of 8

  auto refused = [&](const std::string& name, const std::vector<std::string>& a,
                     const std::string& reason) {
    Child c(dir, name, a);
    EXPECT_EQ(c.wait(60), 2) << name << ": " << c.err();
    EXPECT_NE(c.err().find(reason), std::string::npos) << name << ": " << c.err();
  };
  refused("fresh", first, "holds checkpoints (stage 0, step 8): pass --resume");
  refused("seed", args(ckpt, {"--seed", "6", "--resume"}), "written by another run");
  std::vector<std::string> again = first;
  again.push_back("--resume");
  {
    const std::string file = checkpoint_path(ckpt, 8, 1, 0);
    std::string bytes = slurp(file);
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
    refused("corrupted", again, file + ": not a usable checkpoint: its CRC-32 does not match");
  }
  refused("no_dir", {"train", scenario_u, "--resume"}, "--resume: needs --checkpoint-dir");
  refused("no_every", {"train", scenario_u, "--checkpoint-dir", ckpt},
          "--checkpoint-dir: needs --checkpoint-every");
  // Two processes, the server's directory with checkpoints, the client's empty.
  const int port = free_port();
  std::vector<std::string> srv = party(ckpt, true, port, {"--resume", "--seed", "5"});
  std::vector<std::string> cli = party(dir + "/empty", false, port, {"--resume", "--seed", "5"});
  Child server(dir, "srv", srv);
  Child client(dir, "cli", cli);
  EXPECT_EQ(client.wait(60), 2) << client.err();
  EXPECT_EQ(server.wait(30), 2) << server.err();
  EXPECT_NE(server.err().find("no checkpoint step that every party has (rank 0 (server) has 4, 8; "
                              "rank 1 has none)"),
            std::string::npos)
      << server.err();
}

}  // namespace
}  // namespace splitsim::testing

namespace splitsim::testing {
namespace {

// `exec` takes the same flags: a client killed after a checkpoint, both
// resumed, ends with the uninterrupted run's weights; the metrics are of
// the batches run after the checkpoint and say where it resumed.
TEST_F(ExecCliTest, ExecResumesAKilledRunToTheUninterruptedWeights) {
  const std::vector<std::string> every = {"--iterations", "24", "--checkpoint-every", "4"};
  auto with = [&](const std::string& ckpt, std::vector<std::string> extra) {
    extra.insert(extra.end(), every.begin(), every.end());
    extra.insert(extra.end(), {"--checkpoint-dir", ckpt});
    return extra;
  };
  const std::string whole = dir + "/whole";
  {
    const int port = free_port();
    Child server(dir, "whole_server", server_args(port, with(whole, {})));
    Child client(dir, "whole_client", client_args(port, with(whole, {})));
    ASSERT_EQ(client.wait(100), 0) << client.err();
    ASSERT_EQ(server.wait(30), 0) << server.err();
  }
  const std::string ckpt = dir + "/killed";
  {
    const int port = free_port();
    Child server(dir, "server", server_args(port, with(ckpt, {})));
    Child client(dir, "client", client_args(port, with(ckpt, {})));
    const auto t0 = Clock::now();
    while (!std::filesystem::exists(checkpoint_path(ckpt, 8, 0, 0)) &&
           std::chrono::duration<double>(Clock::now() - t0).count() < 100)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_TRUE(client.kill_program());
    EXPECT_EQ(server.wait(30), 1) << server.err();
  }
  const int port = free_port();
  Child server(dir, "resumed_server", server_args(port, with(ckpt, {"--resume"})));
  Child client(dir, "resumed_client", client_args(port, with(ckpt, {"--resume"})));
  ASSERT_EQ(client.wait(100), 0) << client.err();
  ASSERT_EQ(server.wait(30), 0) << server.err();
  const nlohmann::json metrics = nlohmann::json::parse(server.out());
  EXPECT_TRUE(metrics["complete"].get<bool>());
  const int64_t from = metrics["resumed_from_batch"].get<int64_t>();
  EXPECT_GE(from, 8);
  EXPECT_GT(metrics["time_per_batch_s"].get<double>(), 0);
  for (int stage = 0; stage < 2; ++stage) {
    const CheckpointFile a = read_checkpoint_file(checkpoint_path(whole, 24, stage, 0), 1 << 28);
    const CheckpointFile b = read_checkpoint_file(checkpoint_path(ckpt, 24, stage, 0), 1 << 28);
    EXPECT_TRUE(a.payload == b.payload) << "stage " << stage;
  }
}

}  // namespace
}  // namespace splitsim::testing
