#pragma once
// The link probe: how much compute moving bytes takes from the processes at
// the ends of a link, measured with the same Transport as exec (fresh
// receive tensors, a couple of messages in flight) while each process also
// computes, as exec's compute thread does beside its transfers.
// `splitsim validate` runs it once per link rate and hands the result to the
// simulator as the scenario's `platform.cpu_s_per_byte_sent/_received` and
// `platform.cpu_s_per_message_sent/_received`
// (exec/validate/README.md "Host work per byte and per message").
//
// Two ranks: rank 0 (server) and rank 1 (client), each pinned (by its
// caller) to its own CPUs. Each runs a compute loop (single-threaded
// matrix products) for the whole probe and counts the products done in each
// of six phases, separated by barriers: idle, client -> server,
// server -> client (large messages), the same two ways in small messages,
// idle again. The loop's rate over the two idle phases is
// the baseline; what a traffic phase falls short of it, in seconds, is the
// compute the bytes cost that process: the CPU time of its own network work
// and the interrupts on its CPUs, plus what they do to its caches and its
// scheduling, which CPU time alone misses (on the development VM the loss
// was about twice the CPU time). Each side also records that CPU time: its
// own threads but the loop, its CPUs' irq + softirq and ksoftirqd/N.
// The small messages give the cost per message (`platform.
// cpu_s_per_message_sent/_received`): what one of them loses beyond its
// bytes at the large messages' cost per byte.
//
// Then, with the loops stopped, single messages: for each size of a ladder
// (from 1 KiB, four per octave, up to `single_max_bytes`), a few times each way, one
// message after the link has idled `single_gap_s`, timed as exec times a
// transfer: from its send being posted to its receive's completion, the
// two clocks joined by exec's handshake (session.h: synchronise). The
// receiver answers with its completion time before the next message.
// Then the same for transfers of two tensors (a ladder up to
// `pair_max_bytes`, each followed by a tensor of `pair_tail_bytes`, as
// exec sends a quantizer's data and scale). The medians per size give the
// link model the simulator uses for one transfer (splitsim/costmodel/link_fit.h: the fixed cost per
// message, the shaper's bucket and the peak rate it passes at).
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "splitsim/costmodel/link_fit.h"
#include "splitsim/exec/transport.h"

namespace splitsim {

struct LinkProbeOptions {
  int64_t bytes_per_direction = 64 << 20;  // sent each way, in messages of:
  int64_t message_bytes = 1 << 20;
  // The sender waits for each large message to be sent and then pauses this
  // long before the next (0: messages back to back, kInFlight at a time).
  double gap_s = 0;
  int64_t small_messages = 300;  // sent each way, of:
  int64_t small_message_bytes = 1024;
  double idle_s = 1.0;  // the first idle phase; the second is half as long
  int64_t single_max_bytes = 4 << 20;  // the ladder: 1 KiB, 4 sizes per octave, up to this
  int single_repeats = 3;              // each size, each way
  double single_gap_s = 0.02;          // the link idles this long before each
  // Then transfers of two tensors, as exec sends a quantizer's data and
  // scale: the ladder up to this (0: none), each followed by a tensor of
  // `pair_tail_bytes`. Its second packet shows the shaper's bucket.
  int64_t pair_max_bytes = 256 << 10;
  int64_t pair_tail_bytes = 8;
  std::chrono::milliseconds timeout{60000};  // per transfer
};

// One process's view of one phase.
struct LinkProbeSide {
  double wall_s = 0;
  double busy_s = 0;  // CPU seconds of its network work (not the loop's) and its CPUs' interrupts
  double work = 0;    // matrix products the compute loop finished
};

struct LinkProbePhase {
  int64_t bytes = 0;
  LinkProbeSide server, client;
};

struct LinkProbeResult {
  LinkProbePhase idle, up, down, idle_after;  // up: client -> server
  LinkProbePhase small_up, small_down;         // in small messages
  int64_t small_messages = 0;                  // each way
  // Compute seconds lost per byte: (wall - work / idle rate) / bytes, >= 0.
  double client_send_s_per_byte = 0, server_recv_s_per_byte = 0;
  double server_send_s_per_byte = 0, client_recv_s_per_byte = 0;
  // The means of both ends: what the simulator applies to every party.
  double cpu_s_per_byte_sent = 0, cpu_s_per_byte_received = 0;
  // For comparison: CPU seconds per byte beyond the idle phases' rate, the
  // means of both ends (what the probe measured before it ran a compute loop).
  double busy_s_per_byte_sent = 0, busy_s_per_byte_received = 0;
  // Compute seconds lost per small message beyond its bytes' cost, >= 0,
  // and the means of both ends.
  double client_send_s_per_message = 0, server_recv_s_per_message = 0;
  double server_send_s_per_message = 0, client_recv_s_per_message = 0;
  double cpu_s_per_message_sent = 0, cpu_s_per_message_received = 0;
  // The large messages' bytes over their phase's wall time (the longer
  // end's), each way: what the link carries of a long transfer. Under a
  // shaper that counts each packet's headers (htb: 66 B of Ethernet, IP and
  // TCP per 1,448 B segment) it is that much below the rate.
  double goodput_up_Bps = 0, goodput_down_Bps = 0;
  // Single messages after idle: the median seconds per size, each way, and
  // the client's clock less the server's (joined by the handshake); the fit
  // of both ways together.
  std::vector<TransferSample> single_up, single_down;
  std::vector<TransferSample> pair_up, pair_down;  // two tensors (tail_bytes set)
  double clock_offset_s = 0;
  LinkFit link;
};

// Runs the probe over `transport` (world size 2). Rank 0 returns both sides
// and the derived costs; rank 1 returns its own side only (the costs 0).
// Throws TransportError when a transfer fails or times out.
LinkProbeResult run_link_probe(Transport& transport, const LinkProbeOptions& options);

// Fills the per-byte and per-message costs and the goodput of `r` from its
// phases, and its link fit from its single messages.
void derive_link_costs(LinkProbeResult* r);

// The share of a link of `rate_bit_per_s` that a long transfer got, the
// slower way's goodput over the rate: what validate passes the simulator
// as network.bandwidth_factor. At most 1; 1 when the probe has no goodput.
double goodput_share(const LinkProbeResult& r, double rate_bit_per_s);

// {"schema": "splitsim.link_probe/5", "phases": {...}, "cpu_s_per_byte_sent", ...,
//  "goodput_Bps": {"client_to_server", "server_to_client"},
//  "single_transfers": {"clock_offset_s", "client_to_server": [[bytes, s], ...],
//  "server_to_client": [...]}, "pair_transfers": {"tail_bytes", "client_to_server",
//  "server_to_client"}, "link": {"latency_s", "rate_Bps", "peak_Bps",
//  "burst_bytes", "packet_bytes", "rms_rel_error"}}
nlohmann::json link_probe_json(const LinkProbeResult& r);
// Reads what link_probe_json wrote. Throws std::runtime_error naming the field.
LinkProbeResult link_probe_from_json(const nlohmann::json& j);

}  // namespace splitsim
