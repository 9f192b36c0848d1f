#pragma once
// The parts of a real run around the training itself, over the Transport:
// the handshake (same scenario variant, same program version), the start
// barrier and clock offsets, gathering every rank's Timeline on rank 0, and
// the metrics JSON ("splitsim.metrics/1", "source": "exec").
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/run_spec.h"
#include "splitsim/exec/runner.h"
#include "splitsim/exec/transport.h"

namespace splitsim {

// A refused handshake: the message names both sides' labels, hashes and versions.
class HandshakeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RunIdentity {
  std::string label;         // the variant's label
  std::string variant_json;  // what is hashed: the variant with the effective iterations
  std::string version;       // PROJECT_VERSION
  std::string token;         // shared secret (--token / SPLITSIM_TOKEN); "" for none
};

// Longest token: the handshake carries it in a 4096-byte buffer.
constexpr size_t kMaxTokenBytes = 4095;
// The shared secret: `flag_value` (--token), else $SPLITSIM_TOKEN
// (preferred: a command line is visible to every user in ps), else none.
// Throws InputError naming its source when it is longer than kMaxTokenBytes.
std::string shared_token(const std::string& flag_value);
// FNV-1a 64 of `text`, as 16 hex digits.
std::string stable_hash(const std::string& text);

// Rank 0 receives every other rank's identity and token and answers with a
// verdict; throws HandshakeError on every side when any token or identity
// differs. Tokens are compared in constant time; a peer with a wrong token
// learns nothing of rank 0's identity. The token travels in clear: it keeps
// strangers from joining, it does not hide the traffic.
void handshake(Transport& transport, const RunIdentity& me, std::chrono::milliseconds timeout);

// --resume, after the handshake: every rank tells rank 0 the checkpoint
// steps it holds whole (its newest 64); rank 0 picks the newest step all of
// them hold (common_checkpoint_step, checkpoint.h: 0 when none holds any)
// and tells everyone, who return it. When some hold steps but none in
// common, every rank throws InputError("resume"), rank 0's naming what
// each rank holds.
int64_t agree_resume_step(Transport& transport, const std::vector<int64_t>& mine,
                          std::chrono::milliseconds timeout);

// Start barrier and clock offsets. Returns this process's time origin (rank
// 0: when it released the others; others: when released). On rank 0
// `offsets_s` gets, per rank, that rank's clock minus rank 0's (seconds):
// exact for a rank on the same host (the same boot id: one steady clock,
// the difference of the time origins), else by ping-pong with the
// smallest round trip; elsewhere it is left empty.
ExecClock::time_point synchronise(Transport& transport, std::chrono::milliseconds timeout,
                                  std::vector<double>* offsets_s);

// Ranks > 0 send their timeline and stats to rank 0, which merges them into
// `result` (shifted onto its clock, then join_transfer_ends). Only for
// complete runs.
// A peer announcing more than `max_events` events or batch records, or an
// event that indexes outside the run, is refused (std::runtime_error) before
// anything is allocated for it.
void gather(Transport& transport, const std::vector<double>& offsets_s, RunResult* result,
            std::chrono::milliseconds timeout, int64_t max_events = int64_t{1} << 22);

// One transfer, seen from both ends, becomes one interval on the common
// clock, the same for its send and its receive event: from the send being
// posted to its last byte being in the receiver's buffers (a transfer's peak
// rate, sim/README.md "Metrics"). The last byte: the receive's completion (a
// send completes locally once Gloo has handed the bytes to the socket, which
// would make a send rate the speed of a local copy); a receive posted late
// does not shorten the interval. Not the arrival of the message before it:
// on one connection the next message's bytes are already crossing then, in
// the same packets. Events are matched by (boundary, direction, client,
// batch, micro-batch); unmatched ones are kept.
void join_transfer_ends(Timeline* timeline);

// The metrics contract of `result` (batches [0, batches_done) when partial),
// plus "complete", "error", "training" {loss/accuracy per batch, first,
// last}, "wire" {bytes counted at the transport vs the Plan's formula} and
// "memory" {party: predicted_peak_bytes (the plan's stages), and
// measured_peak_tensor_bytes where the rank reported it}.
nlohmann::json exec_metrics_json(const RunSpec& spec, const RunResult& result);

}  // namespace splitsim
