// NetnsSwitch (as root): a namespace per client and for the server behind a
// bridge, the server's port and each client's shaped to their own rates,
// all of it gone afterwards.
#include "splitsim/validate/netns_switch.h"

#include <gtest/gtest.h>

#include "netns_testing.h"

namespace splitsim {
namespace {

using namespace netns_testing;

// Client i of a switch seen as a NetnsLink by timed_transfer.
struct ClientPort {
  const NetnsSwitch& sw;
  size_t i;
  const std::string& server_netns() const { return sw.server_netns(); }
  const std::string& client_netns() const { return sw.client_netns(i); }
  const std::string& server_address() const { return sw.server_address(); }
  const std::string& congestion_control() const { return sw.congestion_control(); }
};

TEST(NetnsSwitchTest, RefusesNoClientsAndRatesThatAreNotPositive) {
  EXPECT_THROW(NetnsSwitch(1e9, {}), std::invalid_argument);
  EXPECT_THROW(NetnsSwitch(0, {1e8}), std::invalid_argument);
  EXPECT_THROW(NetnsSwitch(1e9, {1e8, -1}), std::invalid_argument);
  EXPECT_THROW(NetnsSwitch(1e9, std::vector<double>(NetnsSwitch::kMaxClients + 1, 1e8)),
               std::invalid_argument);
}

TEST(NetnsSwitchTest, NamespacesExistWhileAliveAndAreGoneAfterwards) {
  SKIP_UNLESS_LINK_POSSIBLE();
  std::vector<std::string> names;
  {
    NetnsSwitch sw(1e9, {1e8, 2.5e7, 2.5e7});
    ASSERT_EQ(sw.clients(), 3u);
    names = {sw.server_netns(), sw.client_netns(0), sw.client_netns(1), sw.client_netns(2)};
    for (const std::string& ns : names) EXPECT_TRUE(netns_exists(ns)) << ns;
    const CommandResult cls =
        run_command({"tc", "-n", sw.client_netns(1), "class", "show", "dev", "ssv-port"});
    EXPECT_NE(cls.out.find("rate 25Mbit"), std::string::npos) << cls.out;
    EXPECT_EQ(sw.description().rfind("server port 1gbit each way, clients 100mbit x 1, 25mbit x 2, "
                                     "tc htb, TCP cubic",
                                     0),
              0u)
        << sw.description();
  }
  for (const std::string& ns : names) EXPECT_FALSE(netns_exists(ns)) << ns;
}

// Each transfer takes its bytes over the slower of its client's port and
// the server's: the server's port limits the fast client, its own the slow.
TEST(NetnsSwitchTest, ATransferRunsAtTheSlowerOfItsPortAndTheServers) {
  SKIP_UNLESS_LINK_POSSIBLE();
  NetnsSwitch sw(5e7, {2e8, 2.5e7});
  const size_t fast_bytes = 3'000'000, slow_bytes = 1'500'000;
  const double expected = 0.48;  // 3 MB at 50 Mbit/s, 1.5 MB at 25 Mbit/s
  double fast_up = 0, slow_up = 0, slow_down = 0;
  std::string disturbed = measure_undisturbed([&] {
    fast_up = fastest_transfer(ClientPort{sw, 0}, true, fast_bytes);
    slow_up = fastest_transfer(ClientPort{sw, 1}, true, slow_bytes);
    slow_down = fastest_transfer(ClientPort{sw, 1}, false, slow_bytes);
  });
  expect_at_rate(fast_up, expected, disturbed, "the fast client, behind the server's port");
  expect_at_rate(slow_up, expected, disturbed, "the slow client sending");
  expect_at_rate(slow_down, expected, disturbed, "the slow client receiving");
  sw.set_server_rate(2e8);  // now the fast client's own port: 3 MB at 200 Mbit/s
  double fast_down = 0;
  const std::string d = measure_undisturbed(
      [&] { fast_down = fastest_transfer(ClientPort{sw, 0}, false, fast_bytes); });
  expect_at_rate(fast_down, 0.12, d, "the fast client at its own port's rate");
  if (disturbed.empty()) disturbed = d;
  if (!disturbed.empty()) GTEST_SKIP() << upper_bounds_unchecked(disturbed);
}

// The signal handler detaches every namespace of a switch too: the switch,
// the server's and each client's.
TEST(NetnsSwitchTest, SigtermRemovesEveryNamespace) {
  SKIP_UNLESS_LINK_POSSIBLE();
  pid_t child = -1;
  const std::vector<std::string> namespaces = namespaces_of_paused_child(
      [] {
        static NetnsSwitch sw(1e9, {1e8, 1e8});  // alive until the signal
        return std::vector<std::string>{sw.server_netns(), sw.client_netns(0), sw.client_netns(1)};
      },
      &child);
  ASSERT_EQ(namespaces.size(), 3u);
  // The switch's own namespace is named like the server's.
  const std::string switch_ns = namespaces[0].substr(0, namespaces[0].rfind("-server")) + "-switch";
  EXPECT_TRUE(netns_exists(switch_ns));
  for (const std::string& ns : namespaces) EXPECT_TRUE(netns_exists(ns)) << ns;
  kill(child, SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  EXPECT_FALSE(netns_exists(switch_ns));
  for (const std::string& ns : namespaces) EXPECT_FALSE(netns_exists(ns)) << ns;
}

}  // namespace
}  // namespace splitsim
