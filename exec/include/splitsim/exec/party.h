#pragma once
// One party process of a real run, everything `splitsim exec` and
// `splitsim link-probe` do after parsing their flags: read the scenario,
// connect (c10d Gloo), run, write the metrics. No LibTorch in this header,
// so the CLI files that call it compile without it.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

#include "splitsim/exec/checkpoint.h"

namespace splitsim {

// How a party run ended. !complete: a transport failure, a refused
// handshake or a peer lost mid-run; `error` says which, in one line.
struct PartyOutcome {
  bool complete = true;
  std::string error;
};

struct ExecPartyOptions {
  std::string scenario;          // scenario file
  std::string variant;           // label filter; must leave exactly one variant
  std::string role;              // server (rank 0), client, or any party of the plan
  int client_index = 0;          // with several clients: which one (0-based)
  std::string listen;            // rank 0: ADDR:PORT to listen on
  std::string connect;           // other ranks: the server's ADDR:PORT
  std::string device = "cpu";    // "cpu" | "cuda"
  std::string data;              // dataset directory ("" synthetic data)
  std::string trace;             // write a Chrome trace of the run here ("" none)
  bool json = false;             // the metrics JSON on `out`, else one summary line
  int threads = 1;               // torch intra-op threads
  double timeout_s = 60;         // connect and per-transfer timeout
  int64_t iterations = 0;        // > 0: batches to run instead of the scenario's
  int64_t distinct_batches = 0;  // > 0: synthetic data repeats after this many batches
  std::string token;             // shared secret ("" none) and
  std::string version;           // program version, both checked in the handshake
  // TCP congestion control set on this process's connections ("" the
  // namespace's default); every party must pass the same (the handshake
  // compares it). The metrics JSON names what rank 0's connections used.
  std::string congestion_control;
  double compute_slowdown = 1;  // RunOptions::compute_slowdown (this process only)
  // This party's checkpoints (exec/TRAINING.md "Checkpoints and resume");
  // a resumed run's metrics are of the batches it ran.
  CheckpointOptions checkpoint;
};

// `splitsim exec`: loads the scenario (Workspace), plans the one selected
// variant, connects (rank 0 listens, the others connect), handshakes,
// synchronises the clocks, trains, and on rank 0 gathers every rank's
// events. Writes the metrics (exec_metrics_json: with `json` the JSON,
// else one line) to `out` and the trace to options.trace, also after a
// failed run (partial metrics, "complete": false). Progress lines go to
// `progress`. Throws InputError for bad input (nothing connected yet) and
// std::exception when it cannot connect.
PartyOutcome run_exec_party(const ExecPartyOptions& options, std::ostream& out,
                            const std::function<void(const std::string&)>& progress);

struct LinkProbePartyOptions {
  std::string role;     // "server" (rank 0, prints the report) or "client"
  std::string listen;   // server: ADDR:PORT
  std::string connect;  // client: the server's ADDR:PORT
  double megabytes = 64, message_kib = 1024, timeout_s = 60;
  double gap_ms = 0;  // the sender's pause after each large message
  int64_t small_messages = 300, small_message_bytes = 1024;  // the per-message phases
  double single_max_kib = 4096;  // the single messages' ladder, 1 KiB up to this
  double pair_max_kib = 256;     // the two-tensor transfers' ladder (0: none)
  int single_repeats = 3;
  double single_gap_ms = 20;
  bool json = false;               // the report as JSON (splitsim.link_probe/5), else one line
  std::string congestion_control;  // as ExecPartyOptions
};

// `splitsim link-probe`: connects and runs the link probe (link_probe.h);
// the server writes the report to `out`. Throws InputError for bad input.
PartyOutcome run_link_probe_party(const LinkProbePartyOptions& options, std::ostream& out);

}  // namespace splitsim
