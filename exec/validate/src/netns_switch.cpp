#include "splitsim/validate/netns_switch.h"

#include <unistd.h>

#include <map>
#include <stdexcept>

#include "netns_registry.h"
#include "splitsim/costmodel/subprocess.h"
#include "splitsim/validate/comparison.h"

namespace splitsim {

using namespace netns_internal;

namespace {
constexpr const char* kPortDev = "ssv-port";  // each namespace's end (inside it)
constexpr const char* kBridge = "ssv-br";
constexpr const char* kServerPeer = "ssv-srv";  // the server port's end in the switch
}  // namespace

NetnsSwitch::NetnsSwitch(double server_rate_bit_per_s, const std::vector<double>& client_rates,
                         Shaper shaper, const std::string& congestion_control)
    : client_rates_(client_rates), server_rate_(server_rate_bit_per_s), shaper_(shaper) {
  if (!(server_rate_bit_per_s > 0)) throw std::invalid_argument("NetnsSwitch: rate must be > 0");
  for (double r : client_rates)
    if (!(r > 0)) throw std::invalid_argument("NetnsSwitch: a client's rate must be > 0");
  if (client_rates.empty() || client_rates.size() > static_cast<size_t>(kMaxClients))
    throw std::invalid_argument("NetnsSwitch: 1 to " + std::to_string(kMaxClients) +
                                " clients, not " + std::to_string(client_rates.size()));
  NetnsLink::check_congestion_control(congestion_control);
  const std::string base = std::string(NetnsLink::kPrefix) + std::to_string(getpid()) + "-" +
                           std::to_string(next_sequence());
  const std::string net = "10.214." + std::to_string(getpid() % 250) + ".";
  switch_ns_ = base + "-switch";
  server_ns_ = base + "-server";
  server_addr_ = net + "1";
  congestion_control_ = congestion_control;  // "": each namespace's inherited default
  try {
    slots_.push_back(arm_namespace(switch_ns_));
    run_checked({"ip", "netns", "add", switch_ns_});
    run_checked({"ip", "-n", switch_ns_, "link", "set", "lo", "up"});
    run_checked({"ip", "-n", switch_ns_, "link", "add", kBridge, "type", "bridge"});
    run_checked({"ip", "-n", switch_ns_, "link", "set", kBridge, "up"});
    add_port(server_ns_, kServerPeer, server_addr_, server_rate_);
    for (size_t i = 0; i < client_rates.size(); ++i) {
      client_ns_.push_back(base + "-client" + std::to_string(i));
      add_port(client_ns_.back(), "ssv-c" + std::to_string(i), net + std::to_string(11 + i),
               client_rates[i]);
    }
    if (congestion_control_.empty()) congestion_control_ = default_congestion_control(server_ns_);
  } catch (...) {
    remove();
    throw;
  }
}

NetnsSwitch::~NetnsSwitch() { remove(); }

// A namespace at `address` whose veth's other end, `peer`, is a port of
// the bridge, both ends shaped to `rate`.
void NetnsSwitch::add_port(const std::string& ns, const std::string& peer,
                           const std::string& address, double rate) {
  slots_.push_back(arm_namespace(ns));
  run_checked({"ip", "netns", "add", ns});
  run_checked({"ip", "-n", ns, "link", "add", kPortDev, "type", "veth", "peer", "name", peer,
               "netns", switch_ns_});
  run_checked({"ip", "-n", switch_ns_, "link", "set", peer, "master", kBridge, "up"});
  run_checked({"ip", "-n", ns, "addr", "add", address + "/24", "dev", kPortDev});
  run_checked({"ip", "-n", ns, "link", "set", kPortDev, "up"});
  configure_tcp(ns, congestion_control_);
  shape_device(ns, kPortDev, rate, shaper_, true);
  shape_device(switch_ns_, peer, rate, shaper_, true);
}

void NetnsSwitch::set_server_rate(double rate_bit_per_s) {
  if (!(rate_bit_per_s > 0)) throw std::invalid_argument("NetnsSwitch: rate must be > 0");
  server_rate_ = rate_bit_per_s;
  shape_device(server_ns_, kPortDev, rate_bit_per_s, shaper_, false);
  shape_device(switch_ns_, kServerPeer, rate_bit_per_s, shaper_, false);
}

std::string NetnsSwitch::description() const {
  std::map<double, int> rates;
  for (double r : client_rates_) ++rates[r];
  std::string clients;
  for (auto it = rates.rbegin(); it != rates.rend(); ++it)
    clients += (clients.empty() ? "" : ", ") + format_link_rate(it->first) + " x " +
               std::to_string(it->second);
  return "server port " + format_link_rate(server_rate_) + " each way, clients " + clients +
         ", tc " + shaper_name(shaper_) + ", TCP " + congestion_control_ + " (netns " + switch_ns_ +
         " and its ports)";
}

void NetnsSwitch::remove() noexcept {
  for (int slot : slots_) disarm_namespace(slot);
  slots_.clear();
  for (const std::string& ns : client_ns_) delete_namespace(ns);
  delete_namespace(server_ns_);
  delete_namespace(switch_ns_);
}

}  // namespace splitsim
