// NetnsLink as root: the namespaces exist while the link lives, traffic
// flows between the two addresses, a shaped transfer takes bytes / rate in
// each direction, and every namespace is gone afterwards (destructor,
// SIGTERM, stale pids). Skipped without root.
#include "splitsim/validate/netns_link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "splitsim/exec/tcp_sockets.h"
#include "splitsim/validate/subprocess.h"

namespace splitsim {
namespace {

constexpr int kPort = 5301;

bool netns_exists(const std::string& name) {
  return access(("/var/run/netns/" + name).c_str(), F_OK) == 0;
}

#define SKIP_UNLESS_LINK_POSSIBLE()                                           \
  do {                                                                        \
    const std::string reason = NetnsLink::unavailable_reason();               \
    if (!reason.empty())                                                      \
      GTEST_SKIP() << "needs network namespaces (" << reason                  \
                   << "); run as root with iproute2 to test the shaped link"; \
  } while (0)

// Forks a child that joins namespace `ns` (setns on /var/run/netns/NAME) and
// exits with fn()'s result.
pid_t fork_in_netns(const std::string& ns, const std::function<int()>& fn) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int fd = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) _exit(90);
  close(fd);
  _exit(fn());
}

sockaddr_in address(const std::string& ip) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(kPort);
  inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

// The connection's congestion control, as exec sets it on its sockets:
// `cc` ("" leaves the namespace's default).
bool use_congestion_control(int fd, const std::string& cc) {
  return cc.empty() ||
         setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc.data(), static_cast<socklen_t>(cc.size())) == 0;
}

int listen_once(const std::string& ip, const std::string& cc = "") {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (!use_congestion_control(fd, cc)) return -1;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = address(ip);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 1) != 0) return -1;
  const int conn = accept(fd, nullptr, nullptr);
  close(fd);
  return conn;
}

int connect_retrying(const std::string& ip, const std::string& cc = "") {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (!use_congestion_control(fd, cc)) return -1;
    sockaddr_in a = address(ip);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

bool send_all(int fd, size_t n) {
  std::vector<char> buf(1 << 16, 'x');
  while (n > 0) {
    const ssize_t w = send(fd, buf.data(), std::min(n, buf.size()), 0);
    if (w <= 0) return false;
    n -= w;
  }
  return true;
}

bool recv_all(int fd, size_t n) {
  std::vector<char> buf(1 << 16);
  while (n > 0) {
    const ssize_t r = recv(fd, buf.data(), std::min(n, buf.size()), 0);
    if (r <= 0) return false;
    n -= r;
  }
  return true;
}

// Waits (at most 20 s) for the two ends of a timed transfer and returns
// the seconds the sender wrote to the pipe `times`, or -1 when either end
// failed.
double seconds_from(pid_t server, pid_t client, int times[2]) {
  close(times[1]);
  const std::vector<int> codes = wait_all({server, client}, 20);
  double s = -1;
  if (codes[0] != 0 || codes[1] != 0 || read(times[0], &s, sizeof s) != sizeof s) s = -1;
  close(times[0]);
  return s;
}

// Seconds for `bytes` to go from the sender's namespace to the receiver's
// (from the first send to a 1-byte acknowledgement of the last byte), or
// a negative value on failure. Bounded by wait_all's 20 s.
double timed_transfer(const NetnsLink& link, bool client_sends, size_t bytes) {
  int times[2];
  if (pipe(times) != 0) return -1;
  const bool server_sends = !client_sends;
  auto run = [&](bool sends, int fd) {
    if (!sends) return recv_all(fd, bytes) && send(fd, "k", 1, 0) == 1 ? 0 : 1;
    const auto t0 = std::chrono::steady_clock::now();
    char ack;
    if (!send_all(fd, bytes) || recv(fd, &ack, 1, MSG_WAITALL) != 1) return 1;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return write(times[1], &s, sizeof s) == sizeof s ? 0 : 1;
  };
  const std::string cc = link.congestion_control();
  const pid_t server = fork_in_netns(link.server_netns(), [&] {
    const int fd = listen_once(link.server_address(), cc);
    return fd < 0 ? 2 : run(server_sends, fd);
  });
  const pid_t client = fork_in_netns(link.client_netns(), [&] {
    const int fd = connect_retrying(link.server_address(), cc);
    return fd < 0 ? 3 : run(client_sends, fd);
  });
  return seconds_from(server, client, times);
}

// The seconds `bytes` take from the client to the server (first send to a
// 1-byte acknowledgement), each time after `idle_s` of silence, `rounds`
// times on one connection that first carried 2 MB (so that its congestion
// window no longer limits a burst), TCP_NODELAY set as Gloo's: the median
// of the later half (the earlier ones bring TCP's smoothed round trip down
// from what the 2 MB left). Negative on failure; bounded by wait_all's 20 s.
double median_transfer_after_idle(const NetnsLink& link, size_t bytes, double idle_s, int rounds) {
  int times[2];
  if (pipe(times) != 0) return -1;
  const size_t warm_up = 2'000'000;
  auto no_delay = [](int fd) {
    const int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0;
  };
  const std::string cc = link.congestion_control();
  const pid_t server = fork_in_netns(link.server_netns(), [&] {
    const int fd = listen_once(link.server_address(), cc);
    if (fd < 0 || !no_delay(fd)) return 2;
    for (int r = 0; r <= rounds; ++r)
      if (!recv_all(fd, r == 0 ? warm_up : bytes) || send(fd, "k", 1, 0) != 1) return 1;
    return 0;
  });
  const pid_t client = fork_in_netns(link.client_netns(), [&] {
    const int fd = connect_retrying(link.server_address(), cc);
    if (fd < 0 || !no_delay(fd)) return 3;
    std::vector<double> seconds;
    char ack;
    for (int r = 0; r <= rounds; ++r) {
      std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));
      const auto t0 = std::chrono::steady_clock::now();
      if (!send_all(fd, r == 0 ? warm_up : bytes) || recv(fd, &ack, 1, MSG_WAITALL) != 1) return 1;
      if (r > 0)
        seconds.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    seconds.erase(seconds.begin(), seconds.begin() + static_cast<long>(seconds.size() / 2));
    std::sort(seconds.begin(), seconds.end());
    const double s = seconds[seconds.size() / 2];
    return write(times[1], &s, sizeof s) == sizeof s ? 0 : 1;
  });
  return seconds_from(server, client, times);
}

TEST(NetnsLinkTest, HtbSendsAWholeGsoPacketOnCredit) {
  // What network.burst_packet_bytes stands for (sim/README.md
  // "Platform"), on the real link: a message that TCP hands htb as one packet
  // leaves whole while the class is out of debt, though it holds more than
  // the bucket. TCP sizes its packets to about 1 ms of its pacing rate
  // (cwnd / smoothed RTT), so they are whole GSO packets only while the
  // round trips stay short, as here: small messages that never queue
  // (exec/validate/README.md "The shaper's burst").
  SKIP_UNLESS_LINK_POSSIBLE();
  NetnsLink link(5e7);  // htb: 6.25 MB/s, a bucket of 6,250 B
  const int64_t packet = link.burst_packet_bytes();
  EXPECT_EQ(packet, NetnsLink::gso_packet_bytes(65536, 1500));  // a veth's defaults
  EXPECT_NE(link.description().find("packets up to " + std::to_string(packet) + " B"),
            std::string::npos)
      << link.description();
  const size_t bytes = 16000;
  const double without_credit = (bytes - NetnsLink::burst_bytes(5e7)) / (5e7 / 8);  // 1.56 ms
  const double s = median_transfer_after_idle(link, bytes, 0.02, 20);
  ASSERT_GT(s, 0);
  EXPECT_LT(s, 0.5 * without_credit);
  EXPECT_EQ(NetnsLink(5e7, Shaper::kTbf).burst_packet_bytes(), 0);  // tbf waits for tokens
}

TEST(NetnsLinkTest, NamespacesExistWhileAliveAndAreGoneAfterwards) {
  SKIP_UNLESS_LINK_POSSIBLE();
  std::string server_ns, client_ns;
  {
    NetnsLink link(2e8);
    server_ns = link.server_netns();
    client_ns = link.client_netns();
    EXPECT_EQ(server_ns.rfind(std::string(NetnsLink::kPrefix) + std::to_string(getpid()) + "-", 0),
              0u);
    EXPECT_TRUE(netns_exists(server_ns));
    EXPECT_TRUE(netns_exists(client_ns));
    const CommandResult qdisc = run_command({"tc", "-n", client_ns, "qdisc", "show"});
    EXPECT_NE(qdisc.out.find("htb"), std::string::npos) << qdisc.out;  // the default
    EXPECT_NE(link.description().find("200mbit"), std::string::npos);
    EXPECT_EQ(link.congestion_control(), NetnsLink::kCongestionControl);
    // TCP keeps no congestion state between connections (between runs).
    for (const auto& ns : {server_ns, client_ns})
      EXPECT_EQ(run_command({"ip", "netns", "exec", ns, "cat",
                             "/proc/sys/net/ipv4/tcp_no_metrics_save"})
                    .out,
                "1\n");
  }
  EXPECT_FALSE(netns_exists(server_ns));
  EXPECT_FALSE(netns_exists(client_ns));
  EXPECT_EQ(run_command({"ip", "netns", "list"}).out.find(server_ns), std::string::npos);
}

TEST(NetnsLinkTest, EchoBetweenTheTwoAddresses) {
  SKIP_UNLESS_LINK_POSSIBLE();
  NetnsLink link(1e9);
  const pid_t server = fork_in_netns(link.server_netns(), [&] {
    const int fd = listen_once(link.server_address());
    char buf[5] = {};
    if (fd < 0 || recv(fd, buf, 4, MSG_WAITALL) != 4) return 2;
    return send(fd, buf, 4, 0) == 4 ? 0 : 3;
  });
  const pid_t client = fork_in_netns(link.client_netns(), [&] {
    const int fd = connect_retrying(link.server_address());
    char buf[5] = {};
    if (fd < 0 || send(fd, "ping", 4, 0) != 4 || recv(fd, buf, 4, MSG_WAITALL) != 4) return 4;
    return std::string(buf) == "ping" ? 0 : 5;
  });
  EXPECT_EQ(wait_all({server, client}, 10), (std::vector<int>{0, 0}));
}

TEST(NetnsLinkTest, TcpSocketsInEitherNamespaceStartWithTheLargeReceiveBuffer) {
  SKIP_UNLESS_LINK_POSSIBLE();
  NetnsLink link(1e9);
  // Outside the namespaces the default is left alone; inside, a new TCP
  // socket's receive buffer starts at kReceiveBufferBytes.
  const auto rcvbuf_ok = [] {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    int size = 0;
    socklen_t len = sizeof size;
    if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, &len) != 0) return 2;
    close(fd);
    return size >= NetnsLink::kReceiveBufferBytes ? 0 : 3;
  };
  const pid_t server = fork_in_netns(link.server_netns(), rcvbuf_ok);
  const pid_t client = fork_in_netns(link.client_netns(), rcvbuf_ok);
  EXPECT_EQ(wait_all({server, client}, 10), (std::vector<int>{0, 0}));
  EXPECT_NE(link.description().find("receive buffers from 4194304 B"), std::string::npos)
      << link.description();
}

TEST(NetnsLinkTest, TcpCongestionControlIsSetInBothNamespacesOnly) {
  SKIP_UNLESS_LINK_POSSIBLE();
  const auto sysctl = [](const std::vector<std::string>& prefix) {
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(), {"cat", "/proc/sys/net/ipv4/tcp_congestion_control"});
    return run_command(argv).out;
  };
  const std::string host = sysctl({});
  // reno is built into every kernel; the machine's default is left alone.
  NetnsLink link(1e9, Shaper::kTbf, "reno");
  EXPECT_EQ(link.congestion_control(), "reno");
  for (const auto& ns : {link.server_netns(), link.client_netns()})
    EXPECT_EQ(sysctl({"ip", "netns", "exec", ns}), "reno\n");
  EXPECT_EQ(sysctl({}), host);
  EXPECT_NE(link.description().find("TCP reno,"), std::string::npos) << link.description();
  // Without a name, the namespaces keep what they inherit, and say which.
  NetnsLink inherited(1e9, Shaper::kHtb, "");
  EXPECT_FALSE(inherited.congestion_control().empty());
  EXPECT_EQ(inherited.congestion_control() + "\n",
            sysctl({"ip", "netns", "exec", inherited.server_netns()}));
}

// Sets the host's tcp_allowed_congestion_control to its list less `name`
// for the object's lifetime (only when the list holds it), then restores it:
// a host on which a namespace may not choose `name` as its default.
class HostDisallows {
 public:
  explicit HostDisallows(const std::string& name)
      : before_(read_ipv4_sysctl("tcp_allowed_congestion_control")) {
    std::string rest;
    bool had = false;
    size_t start = 0;
    while (start < before_.size()) {
      const size_t end = std::min(before_.find(' ', start), before_.size());
      const std::string one = before_.substr(start, end - start);
      if (one == name) had = true;
      else if (!one.empty()) rest += (rest.empty() ? "" : " ") + one;
      start = end + 1;
    }
    if (had) changed_ = write(rest.empty() ? "reno" : rest);
  }
  ~HostDisallows() {
    if (changed_) write(before_);
  }
  bool ok() const { return changed_ || !before_.empty(); }
  const std::string& before() const { return before_; }

 private:
  static bool write(const std::string& list) {
    FILE* f = std::fopen("/proc/sys/net/ipv4/tcp_allowed_congestion_control", "w");
    if (f == nullptr) return false;
    const bool ok = std::fputs(list.c_str(), f) >= 0;
    return std::fclose(f) == 0 && ok;
  }
  std::string before_;
  bool changed_ = false;
};

TEST(NetnsLinkTest, AHostThatDisallowsTheAlgorithmAsADefaultStillGetsItPerSocket) {
  // Kernels that let a namespace default only to "reno bbr": the link is
  // built all the same, says so, and a socket in it set as exec sets its
  // own (set_congestion_control) runs the algorithm; the host's list is
  // left as it was.
  SKIP_UNLESS_LINK_POSSIBLE();
  const std::string cc = NetnsLink::kCongestionControl;
  if (!NetnsLink::congestion_control_available(cc)) GTEST_SKIP() << "this kernel has no " << cc;
  std::string host_list;
  {
    HostDisallows disallow(cc);
    ASSERT_TRUE(disallow.ok());
    host_list = disallow.before();
    NetnsLink link(1e9, Shaper::kHtb, cc);
    EXPECT_EQ(link.congestion_control(), cc);
    EXPECT_NE(link.namespace_default(), cc);
    EXPECT_NE(link.description().find("TCP " + cc + " set per socket (namespace default " +
                                      link.namespace_default() + ")"),
              std::string::npos)
        << link.description();
    // In the server's namespace: a connection over its loopback, both ends
    // switched by one call, read back per socket.
    const pid_t child = fork_in_netns(link.server_netns(), [&] {
      const pid_t peer = fork();
      if (peer == 0) {
        const int fd = listen_once("127.0.0.1");
        char done = 0;
        _exit(fd >= 0 && recv(fd, &done, 1, MSG_WAITALL) == 1 ? 0 : 1);
      }
      const int fd = connect_retrying("127.0.0.1");
      if (fd < 0) return 2;
      if (congestion_control_of(fd) != link.namespace_default()) return 3;
      const CongestionControlResult r = set_congestion_control(cc);
      if (r.sockets < 1 || r.set != r.sockets || !r.refusal.empty() || r.in_use != cc) return 4;
      if (congestion_control_of(fd) != cc) return 5;
      if (send(fd, "k", 1, 0) != 1) return 6;
      return wait_all({peer}, 10) == std::vector<int>{0} ? 0 : 7;
    });
    EXPECT_EQ(wait_all({child}, 20), std::vector<int>{0});
  }
  EXPECT_EQ(read_ipv4_sysctl("tcp_allowed_congestion_control"), host_list);
}

TEST(NetnsLinkTest, AnUnavailableCongestionControlIsRefusedBeforeAnythingIsCreated) {
  SKIP_UNLESS_LINK_POSSIBLE();
  EXPECT_THROW(NetnsLink(1e9, Shaper::kTbf, "no_such_cc"), std::invalid_argument);
  EXPECT_THROW(NetnsLink(1e9, Shaper::kTbf, "cubic; reboot"), std::invalid_argument);
  const std::string mine = std::string(NetnsLink::kPrefix) + std::to_string(getpid()) + "-";
  EXPECT_EQ(run_command({"ip", "netns", "list"}).out.find(mine), std::string::npos);
}

class NetnsLinkShaperTest : public testing::TestWithParam<Shaper> {};

TEST_P(NetnsLinkShaperTest, ShapedTransfersTakeBytesOverRateInBothDirections) {
  SKIP_UNLESS_LINK_POSSIBLE();
  NetnsLink link(5e7, GetParam());  // 6.25 MB/s
  const std::string name = shaper_name(GetParam());
  for (const auto& ns : {link.server_netns(), link.client_netns()}) {
    const CommandResult qdisc = run_command({"tc", "-n", ns, "qdisc", "show"});
    EXPECT_NE(qdisc.out.find(name), std::string::npos) << qdisc.out;
  }
  EXPECT_NE(link.description().find("tc " + name + " burst 6250 B"), std::string::npos)
      << link.description();
  const size_t bytes = 3'000'000;
  const double expected = bytes * 8 / 5e7;  // 0.48 s
  const double up = timed_transfer(link, /*client_sends=*/true, bytes);
  const double down = timed_transfer(link, /*client_sends=*/false, bytes);
  EXPECT_NEAR(up, expected, 0.15 * expected) << "client -> server";
  EXPECT_NEAR(down, expected, 0.15 * expected) << "server -> client";

  link.set_rate(2e8);  // re-shaped in place: 25 MB/s
  const size_t more = 10'000'000;
  const double expected_fast = more * 8 / 2e8;  // 0.4 s
  EXPECT_NEAR(timed_transfer(link, true, more), expected_fast, 0.15 * expected_fast);
}

INSTANTIATE_TEST_SUITE_P(BothShapers, NetnsLinkShaperTest,
                         testing::Values(Shaper::kTbf, Shaper::kHtb),
                         [](const testing::TestParamInfo<Shaper>& i) {
                           return std::string(shaper_name(i.param));
                         });

TEST(NetnsLinkTest, ShaperNamesParseBackAndOthersAreRefused) {
  for (Shaper s : {Shaper::kTbf, Shaper::kHtb}) EXPECT_EQ(parse_shaper(shaper_name(s)), s);
  EXPECT_THROW(parse_shaper("netem"), std::invalid_argument);
}

TEST(NetnsLinkTest, SigtermRemovesTheNamespaces) {
  SKIP_UNLESS_LINK_POSSIBLE();
  int names[2];
  ASSERT_EQ(pipe(names), 0);
  const pid_t child = fork();
  if (child == 0) {
    NetnsLink link(1e8);
    const std::string text = link.server_netns() + " " + link.client_netns() + "\n";
    (void)!write(names[1], text.data(), text.size());
    pause();  // until SIGTERM
    _exit(0);
  }
  close(names[1]);
  char buf[512] = {};
  ASSERT_GT(read(names[0], buf, sizeof buf - 1), 0);
  close(names[0]);
  const std::string text = buf;
  const std::string server_ns = text.substr(0, text.find(' '));
  const std::string client_ns =
      text.substr(text.find(' ') + 1, text.find('\n') - text.find(' ') - 1);
  EXPECT_TRUE(netns_exists(server_ns));
  kill(child, SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  EXPECT_FALSE(netns_exists(server_ns));
  EXPECT_FALSE(netns_exists(client_ns));
}

TEST(NetnsLinkTest, RemovesStaleNamespacesOfDeadPids) {
  SKIP_UNLESS_LINK_POSSIBLE();
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const std::string stale = std::string(NetnsLink::kPrefix) + std::to_string(dead) + "-0-server";
  const std::string alive = std::string(NetnsLink::kPrefix) + std::to_string(getpid()) + "-99-x";
  run_checked({"ip", "netns", "add", stale});
  run_checked({"ip", "netns", "add", alive});
  // Not a count: a validate test running beside this one may sweep it first.
  NetnsLink::remove_stale();
  EXPECT_FALSE(netns_exists(stale));
  EXPECT_TRUE(netns_exists(alive));  // its pid (this test) is alive
  run_checked({"ip", "netns", "del", alive});
}

}  // namespace
}  // namespace splitsim
