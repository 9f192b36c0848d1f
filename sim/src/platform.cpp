#include "platform.h"

#include <set>
#include <simgrid/kernel/ProfileBuilder.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <sstream>
#include <string>
#include <utility>

namespace splitsim::sim_internal {

namespace sg4 = simgrid::s4u;

double up_bytes_per_s(const NetworkSpec& net) {
  const double bits =
      net.up_bandwidth_bit_per_s > 0 ? net.up_bandwidth_bit_per_s : net.bandwidth_bit_per_s;
  return bits / 8.0 * net.bandwidth_factor;
}

double down_bytes_per_s(const NetworkSpec& net) {
  const double bits =
      net.down_bandwidth_bit_per_s > 0 ? net.down_bandwidth_bit_per_s : net.bandwidth_bit_per_s;
  return bits / 8.0 * net.bandwidth_factor;
}

double client_up_bytes_per_s(const Plan& plan, int64_t c) {
  return plan.client_up_bit_per_s(c) / 8.0 * plan.network.bandwidth_factor;
}

double client_down_bytes_per_s(const Plan& plan, int64_t c) {
  return plan.client_down_bit_per_s(c) / 8.0 * plan.network.bandwidth_factor;
}

namespace {

// SimGrid 3.32 reads link bandwidth profile values as bytes/s (not as the
// fractions its header promises): scale the trace's factors by the link's
// bandwidth.
simgrid::kernel::profile::Profile* scaled_profile(const sg4::Link* link,
                                                  const std::string& factors) {
  std::istringstream in(factors);
  std::ostringstream out;
  out.precision(17);
  double t = 0, factor = 0;
  while (in >> t >> factor) out << t << " " << factor * link->get_bandwidth() << "\n";
  return simgrid::kernel::profile::ProfileBuilder::from_string("trace " + link->get_name(),
                                                               out.str(), -1);
}

}  // namespace

std::vector<sg4::Host*> build_platform(const Deployment& d, const Plan& plan,
                                       const std::string& bandwidth_trace,
                                       double co_compute_slowdown) {
  sg4::NetZone* zone = sg4::create_full_zone("splitsim");
  const NetworkSpec& net = plan.network;
  const double up = up_bytes_per_s(net), down = down_bytes_per_s(net);
  const double server = net.server_bandwidth_bit_per_s / 8.0 * net.bandwidth_factor;

  std::vector<sg4::Host*> hosts;
  std::vector<sg4::SplitDuplexLink*> links;
  for (size_t i = 0; i < d.parties.size(); ++i) {
    const RunParty& p = d.parties[i];
    if (co_compute_slowdown != 1.0)
      hosts.push_back(zone->create_host(
          p.name, std::vector<double>{kFlopsPerSecond, kFlopsPerSecond / co_compute_slowdown}));
    else
      hosts.push_back(zone->create_host(p.name, kFlopsPerSecond));
    sg4::SplitDuplexLink* link = zone->create_split_duplex_link("link_" + p.name, up);
    // UP = party -> switch, DOWN = switch -> party. The client role sends
    // client->server traffic (up), the others send server->client (down).
    // Party i < clients is client i's replica of the client role.
    const auto c = static_cast<int64_t>(i);
    const double out = p.client_role ? client_up_bytes_per_s(plan, c) : server > 0 ? server : down;
    const double in = p.client_role ? client_down_bytes_per_s(plan, c) : server > 0 ? server : up;
    link->get_link_up()->set_bandwidth(out);
    link->get_link_down()->set_bandwidth(in);
    for (sg4::Link* dir : {link->get_link_up(), link->get_link_down()}) {
      // Without a server link, with several clients, the shared parties'
      // links are fat pipes: each client's transfers are limited by its own
      // link only.
      if (d.clients > 1 && !p.client_role && !(server > 0))
        dir->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE);
      if (!bandwidth_trace.empty())
        dir->set_bandwidth_profile(scaled_profile(dir, bandwidth_trace));
    }
    links.push_back(link);
  }
  std::set<std::pair<int, int>> routed;
  using Dir = sg4::LinkInRoute::Direction;
  for (const auto& ch : d.channels) {
    if (ch.local) continue;
    const int a = d.instances[ch.from].party, b = d.instances[ch.to].party;
    if (!routed.insert({a, b}).second) continue;
    zone->add_route(hosts[a]->get_netpoint(), hosts[b]->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(links[a], Dir::UP), sg4::LinkInRoute(links[b], Dir::DOWN)},
                    false);
  }
  zone->seal();
  return hosts;
}

}  // namespace splitsim::sim_internal
