// Regression tests of issue #12 for exec's network surface: the shared
// secret, the bounded handshake text and the bounded final gather (the
// rendezvous store: bounded_store_test.cpp).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "exec_test_util.h"
#include "splitsim/exec/gloo_transport.h"
#include "splitsim/exec/loopback_transport.h"
#include "splitsim/exec/session.h"

namespace splitsim {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kTimeout{5000};
// session.cpp's tags for the hello and the gathered sizes and events.
constexpr int kTagHello = (1 << 26) + 1;
constexpr int kTagSizes = (1 << 26) + 6;
constexpr int kTagEvents = (1 << 26) + 7;

RunIdentity identity(const std::string& token) {
  return {"chunks=4", "{\"batch_size\": 8}", "1.0", token};
}

// Runs the handshake on ranks 0 and 1; returns each side's error ("" when none).
std::pair<std::string, std::string> handshake_pair(const RunIdentity& server,
                                                   const RunIdentity& client) {
  auto hub = std::make_shared<LoopbackHub>(2);
  LoopbackTransport t0(hub, 0), t1(hub, 1);
  std::string e0, e1;
  std::thread peer([&] {
    try {
      handshake(t1, client, kTimeout);
    } catch (const HandshakeError& e) {
      e1 = e.what();
    }
  });
  try {
    handshake(t0, server, kTimeout);
  } catch (const HandshakeError& e) {
    e0 = e.what();
  }
  peer.join();
  return {e0, e1};
}

// Two ranks of one host read one steady clock: rank 0's offset for the
// other is the difference of their time origins, exactly, not the
// ping-pong's estimate (off by up to half a round trip).
TEST(SynchroniseTest, RanksOnOneHostGetTheExactOffset) {
  auto hub = std::make_shared<LoopbackHub>(2);
  LoopbackTransport t0(hub, 0), t1(hub, 1);
  ExecClock::time_point other;
  std::vector<double> unused;
  std::thread peer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // a later origin
    other = synchronise(t1, kTimeout, &unused);
  });
  std::vector<double> offsets;
  const ExecClock::time_point start = synchronise(t0, kTimeout, &offsets);
  peer.join();
  ASSERT_EQ(offsets.size(), 2u);
  EXPECT_TRUE(unused.empty());
  const double exact = std::chrono::duration<double>(start - other).count();
  EXPECT_NEAR(offsets[1], exact, 1e-12);
}

TEST(HardeningExecTest, HandshakeNeedsTheSameToken) {
  EXPECT_EQ(handshake_pair(identity("s3cret"), identity("s3cret")),
            std::make_pair(std::string(), std::string()));
  for (const auto& [a, b] : {std::make_pair("s3cret", "other"), std::make_pair("s3cret", ""),
                             std::make_pair("", "s3cret")}) {
    const auto [e0, e1] = handshake_pair(identity(a), identity(b));
    for (const std::string& e : {e0, e1}) {
      EXPECT_NE(e.find("wrong or missing token"), std::string::npos) << e;
      // Nothing about the server's run reaches a peer without the secret.
      EXPECT_EQ(e.find("chunks=4"), std::string::npos) << e;
    }
  }
  // A token refusal wins over an identity mismatch.
  RunIdentity other = identity("x");
  other.label = "chunks=8";
  EXPECT_NE(handshake_pair(identity("s3cret"), other).second.find("token"), std::string::npos);
}

// A peer may fill the whole 4096-byte hello without a NUL: read within it.
TEST(HardeningExecTest, HelloWithoutTerminatorIsReadWithinItsBuffer) {
  auto hub = std::make_shared<LoopbackHub>(2);
  LoopbackTransport t0(hub, 0), t1(hub, 1);
  torch::Tensor hello = torch::full({4096}, 'A', torch::kUInt8);
  torch::Tensor token = torch::zeros({4096}, torch::kUInt8);
  auto sent = t1.send({hello, token}, 0, kTagHello);
  try {
    handshake(t0, identity(""), kTimeout);
    ADD_FAILURE() << "accepted a hello of 4096 'A's";
  } catch (const HandshakeError& e) {
    EXPECT_NE(std::string(e.what()).find("handshake refused"), std::string::npos) << e.what();
  }
  sent->wait(kTimeout);
}

RunResult rank0_result() {
  RunResult r;
  r.complete = true;
  r.batches_done = 4;
  r.timeline.parties = {"server", "client"};
  r.timeline.clients = 1;
  return r;
}

TEST(HardeningExecTest, GatherRefusesAnnouncedSizesBeyondTheRun) {
  for (const int64_t n : {int64_t{1} << 40, int64_t{-5}, int64_t{1001}}) {
    auto hub = std::make_shared<LoopbackHub>(2);
    LoopbackTransport t0(hub, 0), t1(hub, 1);
    // events, batch records, batches done, skipped updates, peak tensor bytes
    auto sent =
        t1.send({torch::tensor({n, int64_t{0}, int64_t{4}, int64_t{0}, int64_t{0}}, torch::kInt64)},
                0, kTagSizes);
    RunResult r = rank0_result();
    try {
      gather(t0, {0.0, 0.0}, &r, kTimeout, 1000);
      ADD_FAILURE() << "accepted " << n << " events";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("at most 1000"), std::string::npos) << e.what();
    }
    sent->wait(kTimeout);
  }
}

TEST(HardeningExecTest, GatherRefusesEventsOutsideTheRun) {
  auto hub = std::make_shared<LoopbackHub>(2);
  LoopbackTransport t0(hub, 0), t1(hub, 1);
  TimelineEvent e;
  e.party = 99;  // rank 0 knows 2 parties
  torch::Tensor bytes = torch::empty({static_cast<int64_t>(sizeof e)}, torch::kUInt8);
  std::memcpy(bytes.data_ptr<uint8_t>(), &e, sizeof e);
  auto s1 =
      t1.send({torch::tensor({int64_t{1}, int64_t{0}, int64_t{4}}, torch::kInt64)}, 0, kTagSizes);
  auto s2 = t1.send({bytes}, 0, kTagEvents);
  RunResult r = rank0_result();
  EXPECT_THROW(gather(t0, {0.0, 0.0}, &r, kTimeout, 1000), std::runtime_error);
  s1->wait(kTimeout);
  s2->wait(kTimeout);
}

}  // namespace
}  // namespace splitsim
