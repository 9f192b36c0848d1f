#pragma once
// NetnsSwitch: several clients behind one server port, for `splitsim
// validate` of a scenario with several clients (exec/validate/README.md
// "Several clients"). A namespace holds a bridge (the switch); the server
// and each client have a namespace of their own joined to it by a veth
// pair, at 10.214.X.1 and 10.214.X.(11 + i) in a private /24 (X from this
// process's pid). The server's port is shaped on both of its ends to the
// server rate (in each direction the link all clients' flows share), each
// client's port to its own rate, with the same shaper, TCP set-up and
// cleanup (the signal handler too) as NetnsLink.
#include <string>
#include <vector>

#include "splitsim/validate/netns_link.h"

namespace splitsim {

class NetnsSwitch {
 public:
  static constexpr int kMaxClients = 32;

  // REQUIRES: NetnsLink::unavailable_reason() == "". Throws
  // std::invalid_argument for a rate <= 0, no client or more than
  // kMaxClients, an unavailable congestion control; std::runtime_error
  // naming a failed command (anything already created is removed first).
  NetnsSwitch(double server_rate_bit_per_s, const std::vector<double>& client_rates_bit_per_s,
              Shaper shaper = Shaper::kHtb,
              const std::string& congestion_control = NetnsLink::kCongestionControl);
  ~NetnsSwitch();
  NetnsSwitch(const NetnsSwitch&) = delete;
  NetnsSwitch& operator=(const NetnsSwitch&) = delete;

  // Re-shapes the server's port (both ends).
  void set_server_rate(double rate_bit_per_s);

  size_t clients() const { return client_ns_.size(); }
  const std::string& server_netns() const { return server_ns_; }
  const std::string& client_netns(size_t i) const { return client_ns_.at(i); }
  const std::string& server_address() const { return server_addr_; }
  double server_rate_bit_per_s() const { return server_rate_; }
  const std::string& congestion_control() const { return congestion_control_; }
  // "server port 1gbit each way, clients 100mbit x 2, 25mbit x 2, tc htb,
  // TCP cubic (netns splitsim-...)".
  std::string description() const;

 private:
  void add_port(const std::string& ns, const std::string& peer, const std::string& address,
                double rate);
  void remove() noexcept;

  std::string switch_ns_, server_ns_, server_addr_;
  std::vector<std::string> client_ns_;
  std::vector<double> client_rates_;
  double server_rate_;
  Shaper shaper_;
  std::string congestion_control_;
  std::vector<int> slots_;  // the namespaces' in the signal handler's registry
};

}  // namespace splitsim
