#pragma once
// What NetnsLink and NetnsSwitch share (netns_link.cpp): the signal
// handler's registry of namespaces to detach, and how a port is set up and
// shaped. Internal to splitsim_validate.
#include <string>

#include "splitsim/validate/netns_link.h"

namespace splitsim::netns_internal {

// Installs the SIGINT/SIGTERM/SIGHUP handler (once per process).
void install_handlers();
// Claims a registry slot for namespace `name` and arms it: the handler
// detaches it. Throws std::runtime_error when every slot is taken.
int arm_namespace(const std::string& name);
void disarm_namespace(int slot);  // slot < 0: nothing
// `ip netns del name` when it exists; a failure is a warning on stderr.
void delete_namespace(const std::string& name) noexcept;

// Inside namespace `ns`: lo up, TCP without saved per-destination metrics,
// receive buffers from NetnsLink::kReceiveBufferBytes, `congestion_control`
// as the default where the host allows it (nothing when "").
void configure_tcp(const std::string& ns, const std::string& congestion_control);
// The namespace's default TCP congestion control ("cubic", ...).
std::string default_congestion_control(const std::string& ns);
// Shapes the egress of `dev` in `ns` at `rate` (tbf, or one htb class that
// takes all traffic, with NetnsLink::burst_bytes) and gives the device
// packets of `segments` segments at most (gso_max_segs; 0: the rate's
// NetnsLink::packet_segments); `adding`: the first time, else a change.
void shape_device(const std::string& ns, const std::string& dev, double rate_bit_per_s,
                  Shaper shaper, bool adding, int segments = 0);
// The largest GSO packet `dev` in `ns` hands a qdisc (NetnsLink::gso_packet_bytes).
int64_t device_gso_packet_bytes(const std::string& ns, const std::string& dev);

}  // namespace splitsim::netns_internal
