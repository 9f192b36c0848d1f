// `splitsim exec` end to end: two real processes over loopback Gloo, the
// handshake, and the faults (server unreachable, peer killed mid-run). Every
// process is started under `timeout` or killed by the test; each test is
// bounded in time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "exec_test_util.h"
#include "splitsim/exec/dataset.h"

namespace splitsim::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::string slurp(const std::string& file) {
  std::ifstream f(file);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A child process running `args` (splitsim's), stdout/stderr to files.
class Child {
 public:
  Child(const std::string& dir, const std::string& name, const std::vector<std::string>& args)
      : out_(dir + "/" + name + ".out"), err_(dir + "/" + name + ".err") {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int o = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(o, 1);
      ::dup2(e, 2);
      std::vector<char*> argv;
      std::vector<std::string> all = {"timeout", "-s", "KILL", "120", SPLITSIM_BIN};
      all.insert(all.end(), args.begin(), args.end());
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execvp("timeout", argv.data());
      ::_exit(127);
    }
  }
  ~Child() { kill(); }
  // Exit status, or -1 when still running after `limit_s`.
  int wait(double limit_s) {
    const auto t0 = Clock::now();
    while (pid_ > 0) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::duration<double>(Clock::now() - t0).count() > limit_s) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return code_;
  }
  // SIGKILL to the `timeout` wrapper's child too: the whole process group.
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);  // timeout forwards it to splitsim
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  std::string out() const { return slurp(out_); }
  std::string err() const { return slurp(err_); }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
  int code_ = -1;
};

struct ExecCliTest : ::testing::Test {
  void SetUp() override {
    dir = (std::filesystem::temp_directory_path() /
           ("splitsim_exec_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name()))
              .string();
    std::filesystem::create_directories(dir);
    nlohmann::json s = {{"schema", "splitsim.scenario/1"},
                        {"name", "exec_cli"},
                        {"model", {{"name", "resnet20"}}},
                        {"batch_size", 4},
                        {"partition",
                         {{{"party", "client"}, {"from", "conv1"}, {"to", "layer1.2"}},
                          {{"party", "server"}, {"from", "layer2.0"}, {"to", "head"}}}},
                        {"optimizer", {{"name", "sgd"}, {"lr", 0.05}, {"momentum", 0.9}}},
                        {"devices", {{"client", "xeon_40core"}, {"server", "v100"}}},
                        {"iterations", 3},
                        {"warmup", 1},
                        {"seed", 3}};
    scenario = dir + "/s.json";
    std::ofstream(scenario) << s.dump(2);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::vector<std::string> server_args(int port, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"exec",   scenario,   "--role",
                                  "server", "--listen", "127.0.0.1:" + std::to_string(port),
                                  "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::vector<std::string> client_args(int port, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"exec",   scenario,    "--role",
                                  "client", "--connect", "127.0.0.1:" + std::to_string(port)};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::string dir, scenario;
};

// The losses of three SGD steps of the unsplit model on the same data.
std::vector<double> unsplit_losses() {
  Scenario sc = small_scenario("resnet20", 4);
  SplitModel model = build_model(sc.model, sc.seed);
  model.train(true);
  auto params = model.parameters(0, model.size() - 1);
  torch::optim::SGD opt(params, torch::optim::SGDOptions(0.05).momentum(0.9));
  auto source = make_synthetic_source(model, sc.seed);
  std::vector<double> out;
  for (int b = 0; b < 3; ++b) {
    auto [x, y] = source->batch(0, b, 4);
    opt.zero_grad();
    torch::Tensor loss = model.loss(model.forward(x), y);
    loss.backward();
    opt.step();
    out.push_back(loss.item<double>());
  }
  return out;
}

TEST_F(ExecCliTest, TwoProcessesOverGlooTrainLikeTheUnsplitModel) {
  const int port = free_port();
  const std::string trace = dir + "/trace.json";
  Child server(dir, "server", server_args(port, {"--trace", trace}));
  Child client(dir, "client", client_args(port));
  ASSERT_EQ(server.wait(110), 0) << server.err();
  ASSERT_EQ(client.wait(20), 0) << client.err();
  const nlohmann::json j = nlohmann::json::parse(server.out());
  EXPECT_EQ(j["schema"], "splitsim.metrics/1");
  EXPECT_EQ(j["source"], "exec");
  EXPECT_EQ(j["complete"], true);
  EXPECT_GT(j["time_per_batch_s"].get<double>(), 0);
  // Activation [4,16,32,32] fp32 forward, its gradient back.
  EXPECT_EQ(j["parties"]["client"]["bytes_sent_per_batch"].get<double>(), 4 * 16 * 32 * 32 * 4);
  EXPECT_EQ(j["parties"]["server"]["bytes_sent_per_batch"].get<double>(), 4 * 16 * 32 * 32 * 4);
  const auto losses = j["training"]["loss_per_batch"].get<std::vector<double>>();
  const auto want = unsplit_losses();
  ASSERT_EQ(losses.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(losses[i], want[i], 1e-4) << "batch " << i;
  EXPECT_EQ(j["training"]["skipped_updates"], 0);
  // Both parties' tensor peaks gathered, beside the plan's.
  for (const char* party : {"client", "server"}) {
    EXPECT_GT(j["memory"][party]["measured_peak_tensor_bytes"].get<int64_t>(), 0) << party;
    EXPECT_GT(j["memory"][party]["predicted_peak_bytes"].get<int64_t>(), 0) << party;
  }
  // Progress at the end at least: the server holds the loss, the client not.
  EXPECT_NE(server.err().find("exec: 3/3 batches, loss "), std::string::npos) << server.err();
  EXPECT_NE(client.err().find("exec: 3/3 batches\n"), std::string::npos) << client.err();
  const std::string t = slurp(trace);
  EXPECT_NE(t.find("\"F s0 mb0\""), std::string::npos);
  EXPECT_NE(t.find("\"xfer fwd b0 mb0\""), std::string::npos);
}

TEST_F(ExecCliTest, HandshakeMismatchIsRefused) {
  const int port = free_port();
  Child server(dir, "server", server_args(port, {"--iterations", "3"}));
  Child client(dir, "client", client_args(port, {"--iterations", "4"}));
  EXPECT_EQ(server.wait(110), 1);
  EXPECT_EQ(client.wait(20), 1);
  for (const std::string& err : {server.err(), client.err()}) {
    EXPECT_NE(err.find("handshake refused"), std::string::npos) << err;
    EXPECT_NE(err.find("scenario hash"), std::string::npos) << err;
  }
}

// Parties drawing different batches would pair one side's inputs with the
// other's labels: --distinct-batches is part of what the handshake compares.
TEST_F(ExecCliTest, DistinctBatchesMustBeTheSameOnEveryParty) {
  const int port = free_port();
  Child server(dir, "server", server_args(port, {"--distinct-batches", "1"}));
  Child client(dir, "client", client_args(port));
  EXPECT_EQ(server.wait(110), 1);
  EXPECT_EQ(client.wait(20), 1);
  EXPECT_NE(server.err().find("handshake refused"), std::string::npos) << server.err();
}

// Every connection of both processes runs the congestion control asked for
// (reno: allowed to anyone, and not what a host defaults to), the report
// says which, and both sides must ask for the same.
TEST_F(ExecCliTest, TcpCongestionControlIsSetOnEveryConnectionAndReported) {
  int port = free_port();
  {
    Child server(dir, "server", server_args(port, {"--tcp-congestion-control", "reno"}));
    Child client(dir, "client", client_args(port, {"--tcp-congestion-control", "reno"}));
    ASSERT_EQ(server.wait(110), 0) << server.err();
    ASSERT_EQ(client.wait(20), 0) << client.err();
    const nlohmann::json j = nlohmann::json::parse(server.out());
    EXPECT_EQ(j["tcp_congestion_control"], "reno");
    EXPECT_NE(client.err().find("exec: TCP congestion control reno\n"), std::string::npos)
        << client.err();
  }
  port = free_port();
  Child server(dir, "server", server_args(port, {"--tcp-congestion-control", "reno"}));
  Child client(dir, "client", client_args(port));
  EXPECT_EQ(server.wait(110), 1);
  EXPECT_NE(server.err().find("handshake refused"), std::string::npos) << server.err();
  // Not a name the kernel could have: exit 2 naming the flag.
  Child bad(dir, "bad", server_args(free_port(), {"--tcp-congestion-control", "cubic;reboot"}));
  EXPECT_EQ(bad.wait(30), 2);
  EXPECT_NE(bad.err().find("--tcp-congestion-control"), std::string::npos) << bad.err();
}

// Issue #12: a peer without the server's shared secret is refused, and
// learns nothing of the server's run.
TEST_F(ExecCliTest, WrongTokenIsRefused) {
  const int port = free_port();
  // The server keeps waiting for a peer with its token until --timeout-s.
  Child server(dir, "server", server_args(port, {"--token", "alpha", "--timeout-s", "10"}));
  Child client(dir, "client", client_args(port, {"--token", "beta"}));
  EXPECT_EQ(server.wait(110), 1);
  EXPECT_EQ(client.wait(20), 1);
  for (const std::string& err : {server.err(), client.err()}) {
    EXPECT_NE(err.find("wrong or missing token"), std::string::npos) << err;
    EXPECT_EQ(err.find("scenario hash"), std::string::npos) << err;
  }
}

// Issue #12: the rendezvous store is reachable on the --listen address only
// (127.0.0.2 is another address of loopback).
TEST_F(ExecCliTest, StoreIsReachableOnTheListenAddressOnly) {
  const int port = free_port();
  Child server(dir, "server", server_args(port, {"--timeout-s", "20"}));
  const auto t0 = Clock::now();
  bool up = false;
  while (!up && std::chrono::duration<double>(Clock::now() - t0).count() < 60) {
    up = connects("127.0.0.1", port);
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(up) << server.err();
  EXPECT_FALSE(connects("127.0.0.2", port)) << "the store answers on another address";
}

// Issue #39: a peer that sends one byte to the server's port and stays
// silent no longer holds the server: it fails within --timeout-s, naming
// the peer its store holds.
TEST_F(ExecCliTest, SilentPeerOnTheServerPortEndsItWithinTheTimeout) {
  const int port = free_port();
  Child server(dir, "server", server_args(port, {"--timeout-s", "8"}));
  int fd = -1;
  const auto t_start = Clock::now();
  while (fd < 0 && std::chrono::duration<double>(Clock::now() - t_start).count() < 60) {
    if (connects("127.0.0.1", port)) {
      fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        fd = -1;
      }
    }
    if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(fd, 0) << server.err();
  ASSERT_EQ(::send(fd, "\x01", 1, MSG_NOSIGNAL), 1);
  const auto t0 = Clock::now();
  EXPECT_EQ(server.wait(30), 1) << server.err();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 8 + 4);
  const std::string err = server.err();
  EXPECT_NE(err.find("did not complete within 8 s"), std::string::npos) << err;
  // Still open when the rendezvous gave up, or closed a moment before (both
  // deadlines are --timeout-s).
  EXPECT_TRUE(err.find("1 connected and sent no complete token yet") != std::string::npos ||
              err.find("1 stayed silent or left a request unfinished") != std::string::npos)
      << err;
  ::close(fd);
}

TEST_F(ExecCliTest, UnreachableServerFailsAfterTheConnectTimeout) {
  const int port = free_port();
  const auto t0 = Clock::now();
  Child client(dir, "client", client_args(port, {"--timeout-s", "2"}));
  EXPECT_EQ(client.wait(100), 1);
  const std::string err = client.err();
  EXPECT_NE(err.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << err;
  EXPECT_NE(err.find("connect timeout of 2 s"), std::string::npos) << err;
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 100);
}

TEST_F(ExecCliTest, PeerKilledMidRunEndsTheOtherSideWithPartialMetrics) {
  const int port = free_port();
  Child server(dir, "server", server_args(port, {"--iterations", "100000", "--timeout-s", "3"}));
  Child client(dir, "client", client_args(port, {"--iterations", "100000", "--timeout-s", "3"}));
  const auto t_start = Clock::now();
  while (server.err().find("training") == std::string::npos &&
         std::chrono::duration<double>(Clock::now() - t_start).count() < 90)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_NE(server.err().find("training"), std::string::npos) << server.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  client.kill();
  const auto t_kill = Clock::now();
  EXPECT_EQ(server.wait(30), 1) << server.err();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t_kill).count(), 3 + 5);
  EXPECT_NE(server.err().find("error:"), std::string::npos) << server.err();
  const nlohmann::json j = nlohmann::json::parse(server.out());
  EXPECT_EQ(j["complete"], false);
  EXPECT_TRUE(j.contains("error"));
}

// `splitsim train`: a scenario on the installed Fashion-MNIST, q8 on the
// wire, two micro-batches.
std::string write_train_scenario(const std::string& dir, const std::string& dataset,
                                 const std::string& schedule = "gpipe") {
  nlohmann::json s = {
      {"schema", "splitsim.scenario/1"},
      {"name", "train_cli"},
      {"model", {{"name", "resnet20"}}},
      {"batch_size", 16},
      {"dataset", dataset},
      {"partition",
       {{{"party", "client"}, {"from", "conv1"}, {"to", "layer1.2"}},
        {{"party", "server"}, {"from", "layer2.0"}, {"to", "head"}}}},
      {"compression",
       {{{"forward", {{"method", "quantize"}, {"bits", 8}}}, {"backward", {{"method", "none"}}}}}},
      {"chunks", 2},
      {"schedule", schedule},
      {"optimizer", {{"name", "sgd"}, {"lr", 0.05}, {"momentum", 0.9}}},
      {"devices", {{"client", "xeon_40core"}, {"server", "v100"}}},
      {"iterations", 4},
      {"warmup", 1},
      {"seed", 3}};
  const std::string file = dir + "/train_" + dataset + "_" + schedule + ".json";
  std::ofstream(file) << s.dump(2);
  return file;
}

// In one process and in two over Gloo: the same losses, batch by batch, and
// the same evaluations; the accuracy rises well above chance (10 classes).
TEST_F(ExecCliTest, TrainInOneProcessAndInTwoGivesTheSameLossesAndLearns) {
  if (installed_fashion_mnist_dir().empty())
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::string file = write_train_scenario(dir, "fashion_mnist");
  const std::vector<std::string> common = {
      "train",          file,  "--epochs",          "2",  "--train-samples", "768",
      "--test-samples", "256", "--target-accuracy", "20", "--eval-every",    "24",
      "--json"};
  Child alone(dir, "alone", common);
  ASSERT_EQ(alone.wait(100), 0) << alone.err();
  const int port = free_port();
  std::vector<std::string> srv = common, cli = common;
  for (const char* a : {"--role", "server", "--listen"}) srv.push_back(a);
  srv.push_back("127.0.0.1:" + std::to_string(port));
  for (const char* a : {"--role", "client", "--connect"}) cli.push_back(a);
  cli.push_back("127.0.0.1:" + std::to_string(port));
  Child server(dir, "server", srv);
  Child client(dir, "client", cli);
  ASSERT_EQ(client.wait(100), 0) << client.err();
  ASSERT_EQ(server.wait(30), 0) << server.err();
  const nlohmann::json a = nlohmann::json::parse(alone.out());
  const nlohmann::json b = nlohmann::json::parse(server.out());
  EXPECT_EQ(a["schema"], "splitsim.train/1");
  EXPECT_EQ(a["mode"], "in_process");
  EXPECT_EQ(b["mode"], "two_process");
  ASSERT_EQ(a["batch_losses"].size(), 96u);  // 2 epochs x 768 / 16
  EXPECT_EQ(a["batch_losses"], b["batch_losses"]);
  // --eval-every 24: four evaluations, two per epoch.
  ASSERT_EQ(a["evaluations"].size(), 4u);
  for (size_t e = 0; e < 4; ++e) {
    EXPECT_EQ(a["evaluations"][e]["test_accuracy"], b["evaluations"][e]["test_accuracy"]);
    EXPECT_EQ(a["evaluations"][e]["test_loss"], b["evaluations"][e]["test_loss"]);
    EXPECT_EQ(a["evaluations"][e]["batches"], 24 * (e + 1));
    EXPECT_DOUBLE_EQ(a["evaluations"][e]["epoch"].get<double>(), 0.5 * static_cast<double>(e + 1));
  }
  EXPECT_EQ(a["test_samples"], 256);
  EXPECT_GT(a["best_test_accuracy"].get<double>(), 0.3);
  EXPECT_GT(a["evaluations"][0]["train_loss"].get<double>(),
            a["evaluations"][3]["train_loss"].get<double>());
  // The evaluations' transfers are not counted: the training's bytes alike.
  EXPECT_EQ(a["wire_bytes_per_batch"], b["wire_bytes_per_batch"]);
  EXPECT_GT(a["predicted_time_per_batch_s"].get<double>(), 0);
  // Time to 20%: the batches measured x the simulator's time per batch; the
  // real (two-process) run adds its own training time.
  const auto& t = b["time_to_accuracy"];
  ASSERT_GT(t["batches"].get<int64_t>(), 0);
  EXPECT_DOUBLE_EQ(t["predicted_s"].get<double>(),
                   t["batches"].get<double>() * b["predicted_time_per_batch_s"].get<double>());
  EXPECT_GT(t["measured_s"].get<double>(), 0);
  EXPECT_FALSE(a["time_to_accuracy"].contains("measured_s"));
}

TEST_F(ExecCliTest, TrainRefusesWhatItCannotTrainOn) {
  const std::string synthetic = write_train_scenario(dir, "synthetic");
  Child no_images(dir, "synthetic", {"train", synthetic});
  EXPECT_EQ(no_images.wait(60), 2);
  EXPECT_NE(no_images.err().find("$.dataset"), std::string::npos) << no_images.err();
  Child nowhere(dir, "nowhere", {"train", synthetic, "--report", dir + "/missing/r.json"});
  EXPECT_EQ(nowhere.wait(60), 2);
  EXPECT_NE(nowhere.err().find("--report"), std::string::npos) << nowhere.err();
  Child zero(dir, "zero", {"train", synthetic, "--epochs", "0"});
  EXPECT_EQ(zero.wait(60), 2);
  EXPECT_NE(zero.err().find("--epochs"), std::string::npos) << zero.err();
  if (installed_fashion_mnist_dir().empty()) return;
  // The evaluation needs a point between batches where every stage holds
  // the same weights: not with an asynchronous schedule.
  Child async(dir, "async", {"train", write_train_scenario(dir, "fashion_mnist", "pipedream")});
  EXPECT_EQ(async.wait(60), 2);
  EXPECT_NE(async.err().find("$.schedule"), std::string::npos) << async.err();
  Child few(dir, "few", {"train", synthetic, "--dataset", "fashion_mnist", "--test-samples", "5"});
  EXPECT_EQ(few.wait(60), 2);
  EXPECT_NE(few.err().find("--test-samples"), std::string::npos) << few.err();
}

// Issue #39: a bad dataset file is exit code 2 naming it, at once: a FIFO
// (no writer: the reader must not wait), a label out of range, and a model
// with fewer classes than the dataset.
TEST_F(ExecCliTest, TrainRefusesBadDataFilesNamingThem) {
  const std::string data = dir + "/data";
  std::filesystem::create_directories(data);
  const std::string images = data + "/train-images-idx3-ubyte";
  const std::string labels = data + "/train-labels-idx1-ubyte";
  // Two images of 1x1 pixel; the test split's labels 0 and 1, the training split's 255 and 1.
  const std::string two_images("\0\0\x08\x03\0\0\0\x02\0\0\0\x01\0\0\0\x01\x10\x20", 18);
  std::ofstream(data + "/t10k-images-idx3-ubyte", std::ios::binary) << two_images;
  std::ofstream(data + "/t10k-labels-idx1-ubyte", std::ios::binary)
      << std::string("\0\0\x08\x01\0\0\0\x02\0\x01", 10);
  ASSERT_EQ(::mkfifo(images.c_str(), 0600), 0);
  std::ofstream(labels, std::ios::binary) << std::string("\0\0\x08\x01\0\0\0\x02\xff\x01", 10);
  const std::string file = write_train_scenario(dir, "fashion_mnist");
  const auto t0 = Clock::now();
  Child fifo(dir, "fifo", {"train", file, "--data", data});
  EXPECT_EQ(fifo.wait(60), 2);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 30);
  EXPECT_NE(fifo.err().find(images + ": is a FIFO"), std::string::npos) << fifo.err();
  std::filesystem::remove(images);
  std::ofstream(images, std::ios::binary) << two_images;
  Child label(dir, "label", {"train", file, "--data", data});
  EXPECT_EQ(label.wait(60), 2);
  EXPECT_NE(label.err().find(labels + ": sample 0 has label 255"), std::string::npos)
      << label.err();
  nlohmann::json few = nlohmann::json::parse(slurp(file));
  few["model"]["num_classes"] = 5;
  const std::string five = dir + "/five.json";
  std::ofstream(five) << few.dump();
  Child classes(dir, "classes", {"train", five, "--data", data});
  EXPECT_EQ(classes.wait(60), 2);
  EXPECT_NE(classes.err().find("$.model.num_classes: 5 classes"), std::string::npos)
      << classes.err();
}

}  // namespace
}  // namespace splitsim::testing
