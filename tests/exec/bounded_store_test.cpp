// Issue #39: exec's rendezvous store (BoundedTcpStore) against hostile
// peers, raw sockets on 127.0.0.1: silent and partial peers, announced
// lengths and key counts beyond the limits, held connections, wrong tokens.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <random>
#include <thread>

#include "exec_test_util.h"
#include "splitsim/exec/bounded_tcp_store.h"

namespace splitsim {
namespace {

using splitsim::testing::connects;
using std::chrono::milliseconds;
using StoreClock = std::chrono::steady_clock;
namespace st = splitsim::store;

constexpr char kToken[] = "s3cret";

double seconds_since(StoreClock::time_point t0) {
  return std::chrono::duration<double>(StoreClock::now() - t0).count();
}

c10::intrusive_ptr<BoundedTcpStore> server(milliseconds timeout, st::StoreLimits limits = {}) {
  limits.peer_deadline = timeout;
  return BoundedTcpStore::serve("127.0.0.1", 0, kToken, limits, timeout);
}

c10::intrusive_ptr<BoundedTcpStore> client(int port, milliseconds timeout,
                                           const std::string& token = kToken) {
  return BoundedTcpStore::connect("127.0.0.1", port, token, st::StoreLimits{}, timeout);
}

// A blocking TCP connection to 127.0.0.1:port.
int raw_peer(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

void send_text(int fd, const std::string& bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
}

// Whether the server closed `fd` within `limit_s` (replies before it are read and dropped).
bool closed_within(int fd, double limit_s) {
  const auto t0 = StoreClock::now();
  char buf[4096];
  while (seconds_since(t0) < limit_s) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;
  }
  return false;
}

// The first reply on `fd`: its status, or -1 when none came within 5 s.
int reply_status(int fd) {
  pollfd p{fd, POLLIN, 0};
  char head[5];
  if (::poll(&p, 1, 5000) != 1 || ::recv(fd, head, sizeof head, MSG_WAITALL) != 5) return -1;
  return static_cast<uint8_t>(head[0]);
}

// A request header: op, argument count.
std::string header(st::Op op, uint32_t args) {
  std::string h(1, static_cast<char>(op));
  st::put_u32(&h, args);
  return h;
}

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

TEST(BoundedStoreTest, ServesEveryOperationOfAStore) {
  auto s = server(milliseconds(5000));
  auto c = client(s->port(), milliseconds(5000));
  c->set("a", {1, 2, 3});
  EXPECT_EQ(s->get("a"), (std::vector<uint8_t>{1, 2, 3}));
  s->set("b", {4});
  EXPECT_EQ(c->get("b"), std::vector<uint8_t>{4});
  EXPECT_EQ(c->add("n", 5), 5);
  EXPECT_EQ(s->add("n", -2), 3);
  EXPECT_TRUE(c->check({"a", "b"}));
  EXPECT_FALSE(c->check({"a", "zz"}));
  EXPECT_EQ(c->compareSet("a", {9}, {7}), (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(c->compareSet("a", {1, 2, 3}, {7}), std::vector<uint8_t>{7});
  EXPECT_EQ(c->getNumKeys(), 3);
  EXPECT_TRUE(c->deleteKey("b"));
  EXPECT_FALSE(s->deleteKey("b"));
  // A wait ends when another side sets the key, and at its timeout otherwise.
  auto later = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(milliseconds(200));
    s->set("late", {1});
  });
  c->wait({"late"});
  later.get();
  const auto t0 = StoreClock::now();
  EXPECT_THROW(c->wait({"never"}, milliseconds(300)), std::runtime_error);
  EXPECT_THROW(s->wait({"never"}, milliseconds(300)), std::runtime_error);
  EXPECT_LT(seconds_since(t0), 3.0);
}

TEST(BoundedStoreTest, SilentOrPartialPeerIsDroppedWithinTheTimeout) {
  auto s = server(milliseconds(1500));
  const int one_byte = raw_peer(s->port());
  send_text(one_byte, std::string(1, static_cast<char>(st::Op::kAuth)));
  const int authenticated = raw_peer(s->port());
  send_text(authenticated, st::encode_request(st::Op::kAuth, {kToken}));
  EXPECT_EQ(reply_status(authenticated), 0);
  send_text(authenticated, header(st::Op::kSet, 2));  // and nothing more
  // A real client is served meanwhile.
  auto c = client(s->port(), milliseconds(5000));
  c->set("rank1", {1});
  EXPECT_EQ(s->get("rank1"), std::vector<uint8_t>{1});
  const auto t0 = StoreClock::now();
  EXPECT_TRUE(closed_within(one_byte, 3.0));
  EXPECT_TRUE(closed_within(authenticated, 3.0));
  EXPECT_LT(seconds_since(t0), 3.0);
  EXPECT_EQ(s->server_stats().timed_out, 2);
  EXPECT_EQ(c->get("rank1"), std::vector<uint8_t>{1});  // the real client stays
  ::close(one_byte);
  ::close(authenticated);
}

TEST(BoundedStoreTest, AnnouncedLengthBeyondTheLimitIsRefusedWithoutAllocating) {
  auto s = server(milliseconds(5000));
  const int64_t before = resident_bytes();
  // 3e9 bytes announced for a token, and (authenticated) for a value.
  const int stranger = raw_peer(s->port());
  std::string auth = header(st::Op::kAuth, 1);
  st::put_u32(&auth, 3000000000u);
  send_text(stranger, auth);
  const int peer = raw_peer(s->port());
  send_text(peer, st::encode_request(st::Op::kAuth, {kToken}));
  EXPECT_EQ(reply_status(peer), 0);
  std::string set = header(st::Op::kSet, 2);
  st::put_u32(&set, 3);
  set += "key";
  st::put_u32(&set, 3000000000u);
  send_text(peer, set + std::string(4096, 'x'));
  EXPECT_TRUE(closed_within(stranger, 2.0));
  EXPECT_TRUE(closed_within(peer, 2.0));
  const st::StoreStats stats = s->server_stats();
  EXPECT_EQ(stats.malformed, 2);
  EXPECT_LT(stats.peak_buffered_bytes, size_t{1} << 20);
  EXPECT_EQ(s->getNumKeys(), 0);
  EXPECT_LT(resident_bytes() - before, int64_t{64} << 20);
  ::close(stranger);
  ::close(peer);
}

TEST(BoundedStoreTest, RequestForMillionsOfKeysIsRefused) {
  auto s = server(milliseconds(5000));
  for (const st::Op op : {st::Op::kWait, st::Op::kCheck, st::Op::kGet}) {
    const int peer = raw_peer(s->port());
    send_text(peer, st::encode_request(st::Op::kAuth, {kToken}));
    EXPECT_EQ(reply_status(peer), 0);
    send_text(peer, header(op, 100000000u));
    EXPECT_EQ(reply_status(peer), static_cast<int>(st::Status::kRefused));
    EXPECT_TRUE(closed_within(peer, 2.0));
    ::close(peer);
  }
  EXPECT_EQ(s->server_stats().malformed, 3);
  EXPECT_LT(s->server_stats().peak_buffered_bytes, size_t{1} << 20);
}

TEST(BoundedStoreTest, StoredKeysAndBytesAreBounded) {
  st::StoreLimits limits;
  limits.keys = 4;
  auto s = server(milliseconds(5000), limits);
  auto c = client(s->port(), milliseconds(5000));
  for (int i = 0; i < 4; ++i) c->set("k" + std::to_string(i), {1});
  EXPECT_THROW(c->set("k4", {1}), std::runtime_error);
  EXPECT_THROW(s->set("k4", {1}), std::runtime_error);
  EXPECT_EQ(s->getNumKeys(), 4);
  EXPECT_THROW(s->set("big", std::vector<uint8_t>(limits.value_bytes + 1)), std::runtime_error);
}

TEST(BoundedStoreTest, HeldConnectionsDoNotStopARealClient) {
  auto s = server(milliseconds(20000));
  std::vector<int> held;
  for (int i = 0; i < 200; ++i) held.push_back(raw_peer(s->port()));
  std::this_thread::sleep_for(milliseconds(200));
  const auto t0 = StoreClock::now();
  auto c = client(s->port(), milliseconds(20000));
  c->set("rank1", {1});
  s->wait({"rank1"}, milliseconds(1000));
  EXPECT_LT(seconds_since(t0), 5.0);
  const st::StoreStats stats = s->server_stats();
  EXPECT_LE(stats.open, 64);
  EXPECT_GE(stats.evicted, 200 - 63);
  for (int fd : held) ::close(fd);
}

TEST(BoundedStoreTest, WrongTokenIsClosedBeforeAnythingIsStored) {
  auto s = server(milliseconds(10000));
  const int stranger = raw_peer(s->port());
  send_text(stranger, st::encode_request(st::Op::kAuth, {"wrong"}) +
                          st::encode_request(st::Op::kSet, {"0/1", "address"}));
  EXPECT_EQ(reply_status(stranger), static_cast<int>(st::Status::kRefused));
  EXPECT_TRUE(closed_within(stranger, 2.0));
  const int no_token = raw_peer(s->port());
  send_text(no_token, st::encode_request(st::Op::kSet, {"0/1", "address"}));
  EXPECT_TRUE(closed_within(no_token, 2.0));
  EXPECT_EQ(s->getNumKeys(), 0);
  EXPECT_EQ(s->server_stats().refused_tokens, 1);
  // A client with another token is told at once, not at its timeout.
  const auto t0 = StoreClock::now();
  try {
    client(s->port(), milliseconds(10000), "beta");
    ADD_FAILURE() << "connected with a wrong token";
  } catch (const StoreRefused& e) {
    EXPECT_NE(std::string(e.what()).find("wrong or missing token"), std::string::npos) << e.what();
  }
  EXPECT_LT(seconds_since(t0), 3.0);
  ::close(stranger);
  ::close(no_token);
}

TEST(BoundedStoreTest, ListensOnTheGivenAddressOnlyAndStopsWithPeersHeld) {
  auto s = server(milliseconds(30000));
  EXPECT_TRUE(connects("127.0.0.1", s->port()));
  EXPECT_FALSE(connects("127.0.0.2", s->port()));
  const int peer = raw_peer(s->port());
  send_text(peer, header(st::Op::kAuth, 1));  // a partial request
  const auto t0 = StoreClock::now();
  s.reset();
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_TRUE(closed_within(peer, 1.0));
  ::close(peer);
}

TEST(BoundedStoreTest, ClientGivesUpAfterItsTimeout) {
  const int port = splitsim::testing::free_port();
  const auto t0 = StoreClock::now();
  EXPECT_THROW(client(port, milliseconds(800)), std::runtime_error);
  EXPECT_LT(seconds_since(t0), 3.0);
  EXPECT_GE(seconds_since(t0), 0.7);
}

// A fixed-seed fuzz of the port: 60 peers each send a mutation of a valid
// conversation (the token, a set, a get: bytes changed, cut, repeated, a
// length field replaced) or random bytes, then close or stay silent. The
// server keeps its memory and its connection limit, serves a real client
// meanwhile and stops at once.
TEST(BoundedStoreTest, MutatedConversationsNeverStopARealClient) {
  auto s = server(milliseconds(3000));
  const int64_t before = resident_bytes();
  const std::string valid = st::encode_request(st::Op::kAuth, {kToken}) +
                            st::encode_request(st::Op::kSet, {"0/1", "address"}) +
                            st::encode_request(st::Op::kGet, {"0/1"});
  std::mt19937 rng(3939);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  std::vector<int> silent;
  for (int i = 0; i < 60; ++i) {
    std::string b = valid;
    switch (i % 5) {
      case 0: b[pick(b.size())] = static_cast<char>(pick(256)); break;
      case 1: b.resize(pick(b.size())); break;
      case 2: b += b.substr(pick(b.size())); break;
      case 3: {  // a length field (4 bytes after an op and a count) set to garbage
        const size_t at = 5 + pick(b.size() - 9);
        for (int k = 0; k < 4; ++k) b[at + k] = static_cast<char>(pick(256));
        break;
      }
      default:
        b.clear();
        for (size_t k = 1 + pick(512); k > 0; --k) b += static_cast<char>(pick(256));
    }
    const int fd = raw_peer(s->port());
    ::send(fd, b.data(), b.size(), MSG_NOSIGNAL);
    if (pick(2) == 0) {
      ::close(fd);
    } else {
      silent.push_back(fd);
    }
  }
  const auto t0 = StoreClock::now();
  auto c = client(s->port(), milliseconds(3000));
  c->set("rank1", {1});
  s->wait({"rank1"}, milliseconds(1000));
  EXPECT_LT(seconds_since(t0), 4.0);
  EXPECT_LT(resident_bytes() - before, int64_t{64} << 20);
  EXPECT_LE(s->server_stats().open, 64);
  c.reset();
  const auto t1 = StoreClock::now();
  s.reset();  // stops with the silent peers still connected
  EXPECT_LT(seconds_since(t1), 2.0);
  for (int fd : silent) ::close(fd);
}

}  // namespace
}  // namespace splitsim
