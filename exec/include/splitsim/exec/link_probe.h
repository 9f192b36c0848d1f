#pragma once
// The link probe: what moving bytes costs the CPUs of the two processes at
// the ends of a link, measured with the same Transport as exec (fresh
// receive tensors, a couple of messages in flight) while nothing computes.
// `splitsim validate` runs it once per link rate and hands the result to the
// simulator as the scenario's `platform.cpu_s_per_byte_sent/_received`
// (cli/VALIDATE.md "Host work per byte").
//
// Two ranks: rank 0 (server) and rank 1 (client). Each measures what
// competes with compute on the CPUs it is pinned to (its affinity mask):
// its own CPU time, every thread, plus the interrupt time of those CPUs
// (/proc/stat irq + softirq, and ksoftirqd/N), over three phases separated
// by barriers: idle, client -> server, server -> client. Other processes'
// time is left out, so a busy machine does not inflate the result.
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "splitsim/exec/transport.h"

namespace splitsim {

struct LinkProbeOptions {
  int64_t bytes_per_direction = 64 << 20;  // sent each way, in messages of:
  int64_t message_bytes = 1 << 20;
  double idle_s = 0.5;                       // the idle phase (baseline)
  std::chrono::milliseconds timeout{60000};  // per transfer
};

// One process's view of one phase.
struct LinkProbeSide {
  double wall_s = 0;
  double busy_s = 0;  // its own CPU seconds plus its CPUs' interrupt seconds
};

struct LinkProbePhase {
  int64_t bytes = 0;
  LinkProbeSide server, client;
};

struct LinkProbeResult {
  LinkProbePhase idle, up, down;  // up: client -> server
  // CPU seconds per byte beyond the idle baseline (>= 0).
  double client_send_s_per_byte = 0, server_recv_s_per_byte = 0;
  double server_send_s_per_byte = 0, client_recv_s_per_byte = 0;
  // The means of both ends: what the simulator applies to every party.
  double cpu_s_per_byte_sent = 0, cpu_s_per_byte_received = 0;
};

// Runs the probe over `transport` (world size 2). Rank 0 returns both sides
// and the derived costs; rank 1 returns its own side only (the costs 0).
// Throws TransportError when a transfer fails or times out.
LinkProbeResult run_link_probe(Transport& transport, const LinkProbeOptions& options);

// Fills the per-byte costs of `r` from its phases.
void derive_link_costs(LinkProbeResult* r);

// {"schema": "splitsim.link_probe/1", "phases": {...}, "cpu_s_per_byte_sent", ...}
nlohmann::json link_probe_json(const LinkProbeResult& r);
// Reads what link_probe_json wrote. Throws std::runtime_error naming the field.
LinkProbeResult link_probe_from_json(const nlohmann::json& j);

}  // namespace splitsim
