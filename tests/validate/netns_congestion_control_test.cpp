// NetnsLink and TCP congestion control, as root: the algorithm is the
// namespaces' default where the host allows it, set per socket where it does
// not, and refused before anything is created where the kernel lacks it.
// Skipped without root.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "netns_testing.h"

namespace splitsim {
namespace {

using namespace netns_testing;

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
      if (one == name)
        had = true;
      else if (!one.empty())
        rest += (rest.empty() ? "" : " ") + one;
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
}  // namespace
}  // namespace splitsim
