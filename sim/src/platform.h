#pragma once
// The SimGrid platform of a Deployment (see sim/README.md "Platform"):
// one host per party, each joined to a central switch by its own
// full-duplex access link; a transfer A->B crosses A's link up and B's link
// down (so every client's flows to the server share the server's link). The links carry bandwidth
// only: the Plan's latency is added per message by the runtime after its bytes have crossed
// (runtime.h, PairSender), so a lone N-byte transfer takes exactly latency_s + N / bandwidth and
// back-to-back messages overlap their latencies as on one TCP stream.
#include <simgrid/s4u/Host.hpp>
#include <string>
#include <vector>

#include "deployment.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim::sim_internal {

// Host speed: an execution of s seconds is s * kFlopsPerSecond flops.
constexpr double kFlopsPerSecond = 1e9;

// Bytes per second of the client->server (up) and server->client (down) directions.
double up_bytes_per_s(const NetworkSpec& net);
double down_bytes_per_s(const NetworkSpec& net);

// Bytes per second of client c's link, up (client -> others) and down.
double client_up_bytes_per_s(const Plan& plan, int64_t c);
double client_down_bytes_per_s(const Plan& plan, int64_t c);

// Builds the platform and returns one host per party, in Deployment order.
// A client's link runs at its own rates (Plan::client_up_bit_per_s). The
// other parties' links: with network.server_bandwidth_bit_per_s, that rate
// each way, shared by every flow through them (the server's access link);
// else the network's rates, and with several clients a fat pipe (each
// client's transfers limited by its own link only).
// `bandwidth_trace`: empty, or SimGrid profile text ("TIME FACTOR" lines)
// applied to every link direction. With `co_compute_slowdown` != 1 every
// host has two pstates: 0 at kFlopsPerSecond, 1 at kFlopsPerSecond /
// co_compute_slowdown (SimContext::set_computing switches them).
// REQUIRES: the process's Engine exists, configured (see simulator.cpp), and
// no platform was built yet.
std::vector<simgrid::s4u::Host*> build_platform(const Deployment& d, const Plan& plan,
                                                const std::string& bandwidth_trace,
                                                double co_compute_slowdown = 1.0);

}  // namespace splitsim::sim_internal
