// The Transport seam: loopback and Gloo (two ranks in one process) move
// tensors, count bytes, and fail clearly; every codec's bytes at the wire
// equal the cost model's formula.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "exec_test_util.h"
#include "splitsim/exec/gloo_transport.h"

namespace splitsim::testing {
namespace {

void exchange_and_check(Transport& a, Transport& b) {
  torch::Tensor x = torch::arange(12, torch::kFloat).reshape({3, 4});
  torch::Tensor idx = torch::arange(5, torch::kInt64);
  torch::Tensor gx = torch::zeros({3, 4}), gidx = torch::zeros({5}, torch::kInt64);
  auto r = b.recv({gx, gidx}, 0, 7);
  auto s = a.send({x, idx}, 1, 7);
  r->wait(std::chrono::milliseconds(10000));
  s->wait(std::chrono::milliseconds(10000));
  EXPECT_TRUE(torch::equal(gx, x));
  EXPECT_TRUE(torch::equal(gidx, idx));
  EXPECT_EQ(a.bytes_sent(), 12 * 4 + 5 * 8);
  EXPECT_EQ(b.bytes_received(), 12 * 4 + 5 * 8);
}

TEST(TransportTest, LoopbackMovesTensorsAndCountsBytes) {
  auto hub = std::make_shared<LoopbackHub>(2);
  LoopbackTransport a(hub, 0), b(hub, 1);
  exchange_and_check(a, b);
}

TEST(TransportTest, LoopbackReceiveTimesOutWithAClearError) {
  auto hub = std::make_shared<LoopbackHub>(2);
  LoopbackTransport b(hub, 1);
  torch::Tensor t = torch::zeros({2});
  try {
    b.recv({t}, 0, 3)->wait(std::chrono::milliseconds(50));
    FAIL() << "no timeout";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("raise --timeout-s"), std::string::npos) << e.what();
  }
}

// Ranks 0 and 1 of a Gloo group over 127.0.0.1, both in this process.
auto gloo_pair() {
  GlooOptions o;
  o.host = "127.0.0.1";
  o.port = free_port();
  o.timeout = std::chrono::milliseconds(20000);
  auto client = std::async(std::launch::async, [o] {
    GlooOptions c = o;
    c.rank = 1;
    return GlooTransport::connect(c);
  });
  auto server = GlooTransport::connect(o);
  return std::make_pair(std::move(server), client.get());
}

TEST(TransportTest, GlooTwoRanksInOneProcess) {
  auto [server, peer] = gloo_pair();
  exchange_and_check(*server, *peer);
}

// ready() answers without blocking whether wait() would return: false for
// a receive whose message has not come, true once it came and after wait().
void ready_follows_the_transfer(Transport& a, Transport& b) {
  torch::Tensor into = torch::zeros({64});
  auto r = b.recv({into}, 0, 9);
  EXPECT_FALSE(r->ready());
  auto s = a.send({torch::ones({64})}, 1, 9);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!r->ready() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(r->ready());
  r->wait(std::chrono::milliseconds(10000));
  s->wait(std::chrono::milliseconds(10000));
  EXPECT_TRUE(r->ready());
  EXPECT_TRUE(s->ready());
  EXPECT_TRUE(torch::equal(into, torch::ones({64})));
}

TEST(TransportTest, ReadyTellsWithoutWaitingWhetherATransferCompleted) {
  {
    auto hub = std::make_shared<LoopbackHub>(2);
    LoopbackTransport a(hub, 0), b(hub, 1);
    ready_follows_the_transfer(a, b);
  }
  auto [server, peer] = gloo_pair();
  ready_follows_the_transfer(*server, *peer);
}

TEST(TransportTest, GlooConnectToNobodyFailsAfterTheTimeout) {
  GlooOptions o;
  o.host = "127.0.0.1";
  o.port = free_port();
  o.rank = 1;
  o.timeout = std::chrono::milliseconds(1500);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    GlooTransport::connect(o);
    FAIL() << "connected to nobody";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(o.port)), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30);
}

CodecSpec codec(CodecMethod m) {
  CodecSpec c;
  c.method = m;
  return c;
}

// Bytes counted at the transport over one batch equal the Plan's formula,
// for every codec of the catalogue that applies to an image activation.
TEST(TransportTest, BytesAtTheWireEqualTheCostModelForEveryCodec) {
  const Scenario sc = small_scenario("resnet20", 4);
  std::vector<std::pair<std::string, CodecSpec>> codecs = {{"none", codec(CodecMethod::kNone)},
                                                           {"fp16", codec(CodecMethod::kFp16)},
                                                           {"bf16", codec(CodecMethod::kBf16)}};
  CodecSpec conv = codec(CodecMethod::kConvInsert);
  conv.out_channels = 8;
  conv.kernel = conv.stride = 2;
  codecs.push_back({"conv_insert", conv});
  CodecSpec pi = codec(CodecMethod::kPowerIteration);
  pi.rank = 3;
  pi.iters = 1;
  codecs.push_back({"power_iteration", pi});
  for (int64_t bits : {2, 8, 10, 12}) {
    CodecSpec q = codec(CodecMethod::kQuantize);
    q.bits = bits;
    codecs.push_back({"quantize" + std::to_string(bits), q});
  }
  CodecSpec topk = codec(CodecMethod::kTopK);
  topk.keep_ratio = 0.3;
  codecs.push_back({"topk", topk});
  for (const auto& [name, c] : codecs) {
    SCOPED_TRACE(name);
    // The gradient goes back with the same method, except the trainable insert.
    const CodecSpec back = c.method == CodecMethod::kConvInsert ? codec(CodecMethod::kNone) : c;
    const Plan plan = make_test_plan(sc, {3}, c, back, 2, Schedule::kGpipe, 2);
    RunOptions o;
    o.timeout = std::chrono::milliseconds(20000);
    auto results = run_loopback(sc, plan, o);
    ASSERT_TRUE(results[0].complete) << results[0].error;
    ASSERT_TRUE(results[1].complete) << results[1].error;
    const RunResult& client = results[1];
    EXPECT_EQ(client.wire_bytes_sent, 2 * plan.bytes_sent("client"));
    EXPECT_EQ(client.wire_bytes_received, 2 * plan.bytes_received("client"));
    int64_t send_event_bytes = 0;
    for (const auto& e : client.timeline.events)
      if (e.kind == EventKind::kSend) send_event_bytes += e.bytes;
    EXPECT_EQ(send_event_bytes, 2 * plan.bytes_sent("client"));
  }
}

}  // namespace
}  // namespace splitsim::testing
