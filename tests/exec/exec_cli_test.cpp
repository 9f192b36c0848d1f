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
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "exec_cli_testing.h"
#include "exec_test_util.h"
#include "splitsim/exec/dataset.h"

namespace splitsim::testing {
namespace {

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

// Issue #43: several client processes in two groups, in splitfed rounds,
// over Gloo: every process completes, the metrics name the groups, and each
// group's bytes per batch (activations, gradients and the client parts'
// uploads and averages) are the simulator's for the same scenario.
TEST_F(ExecCliTest, ClientGroupsInSplitfedRoundsMoveTheBytesTheSimulatorPredicts) {
  nlohmann::json s = nlohmann::json::parse(slurp(scenario));
  s["clients"] = {{{"name", "one"}, {"count", 1}}, {{"name", "two"}, {"count", 2}}};
  s["training"] = "splitfed_v1";
  s["aggregate_every"] = 2;
  s["iterations"] = 4;
  std::ofstream(scenario) << s.dump(2);
  const int port = free_port();
  Child server(dir, "server", server_args(port));
  std::vector<std::unique_ptr<Child>> clients;
  for (int c = 0; c < 3; ++c)
    clients.push_back(
        std::make_unique<Child>(dir, "client" + std::to_string(c),
                                client_args(port, {"--client-index", std::to_string(c)})));
  ASSERT_EQ(server.wait(110), 0) << server.err();
  for (auto& c : clients) ASSERT_EQ(c->wait(20), 0) << c->err();
  Child simulate(dir, "simulate", {"simulate", scenario, "--json"});
  ASSERT_EQ(simulate.wait(60), 0) << simulate.err();
  const nlohmann::json measured = nlohmann::json::parse(server.out());
  const nlohmann::json predicted = nlohmann::json::parse(simulate.out());
  EXPECT_EQ(measured["complete"], true);
  ASSERT_EQ(measured["client_groups"].size(), 2u);
  ASSERT_EQ(predicted["client_groups"].size(), 2u);
  const double activations = 2.0 * 4 * 16 * 32 * 32 * 4;  // both ways, per batch
  for (size_t g = 0; g < 2; ++g) {
    const auto& m = measured["client_groups"][g];
    const auto& p = predicted["client_groups"][g];
    EXPECT_EQ(m["name"], p["name"]);
    EXPECT_EQ(m["clients"], p["clients"]);
    const double sent = m["bytes_sent_per_batch"].get<double>();
    EXPECT_DOUBLE_EQ(sent, p["bytes_sent_per_batch"].get<double>()) << m["name"];
    EXPECT_DOUBLE_EQ(m["bytes_received_per_batch"].get<double>(),
                     p["bytes_received_per_batch"].get<double>())
        << m["name"];
    EXPECT_GT(sent, activations / 2) << "the client parts' uploads come on top";
  }
}

// Three machines in a line, the last holding the head alone: each holds the
// tensor bytes its plan counts, within the validation's 15%. Its party
// neither draws the batch's input (only stage 0 needs it) nor keeps a sent
// gradient past its transfer (before: the head's party 0.64, the first 0.88).
TEST_F(ExecCliTest, ThreePartiesInALineEachHoldWhatThePlanCounts) {
  nlohmann::json s = nlohmann::json::parse(slurp(scenario));
  s["batch_size"] = 32;
  s["partition"] = {{{"party", "client"}, {"from", "conv1"}, {"to", "conv1"}},
                    {{"party", "server"}, {"from", "layer1.0"}, {"to", "layer3.2"}},
                    {{"party", "gpu"}, {"from", "head"}, {"to", "head"}}};
  s["devices"]["gpu"] = "v100";
  std::ofstream(scenario) << s.dump(2);
  const int port = free_port();
  Child server(dir, "server", server_args(port));
  Child client(dir, "client", client_args(port, {"--json"}));
  std::vector<std::string> gpu_args = client_args(port, {"--json"});
  gpu_args[3] = "gpu";  // --role
  Child gpu(dir, "gpu", gpu_args);
  ASSERT_EQ(server.wait(110), 0) << server.err();
  ASSERT_EQ(client.wait(20), 0) << client.err();
  ASSERT_EQ(gpu.wait(20), 0) << gpu.err();
  const std::vector<std::pair<std::string, const Child*>> parties = {
      {"client", &client}, {"server", &server}, {"gpu", &gpu}};
  for (const auto& [party, child] : parties) {
    const nlohmann::json m = nlohmann::json::parse(child->out())["memory"][party];
    const double ratio =
        m["predicted_peak_bytes"].get<double>() / m["measured_peak_tensor_bytes"].get<double>();
    EXPECT_NEAR(ratio, 1.0, 0.15) << party << ": planned / measured";
  }
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
  Child server(dir, "server", server_args(port, {"--token", "alpha", "--timeout-s", "4"}));
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
  Child server(dir, "server", server_args(port, {"--timeout-s", "5"}));
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
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5 + 4);
  const std::string err = server.err();
  EXPECT_NE(err.find("did not complete within 5 s"), std::string::npos) << err;
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

}  // namespace
}  // namespace splitsim::testing
