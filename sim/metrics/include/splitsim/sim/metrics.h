#pragma once
// Metrics: the per-batch figures of one run, computed from its Timeline.
// The same function serves the simulator and the real execution, so both
// report one schema: "splitsim.metrics/1" (every field is written up in
// sim/README.md "Metrics", with their definitions).
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/plan.h"
#include "splitsim/sim/timeline.h"

namespace splitsim {

struct PartyMetrics {
  std::string name;
  bool client = false;  // owns the data (client role)
  double bytes_sent_per_batch = 0;
  double bytes_received_per_batch = 0;
  double bandwidth_avg_send_Bps = 0;  // bytes sent / computation_time (the reports' definition)
  double bandwidth_avg_recv_Bps = 0;
  double send_Bps_over_time_per_batch = 0;  // bytes sent / time_per_batch
  double recv_Bps_over_time_per_batch = 0;
  double peak_send_Bps = 0;     // largest bytes/duration of one transfer sent
  double peak_recv_Bps = 0;     // same, received
  double busy_s_per_batch = 0;  // union of its compute intervals
  double utilisation = 0;       // busy / time_per_batch
};

// One direction between two parties (a path through the network).
struct LinkMetrics {
  std::string from, to;
  double bytes_per_batch = 0;
  double busy_s_per_batch = 0;  // union of its transfer intervals
  double utilisation = 0;       // busy / time_per_batch
  double peak_Bps = 0;          // largest rate of one transfer
};

struct StageMetrics {
  int stage = 0;
  std::string party;                      // as in the Plan (replicated: the busiest replica)
  double busy_s_per_batch = 0;            // one replica's compute
  int64_t peak_stashed_microbatches = 0;  // most micro-batches between F start and B end,
                                          // on one party (a shared server counts all clients)
  int64_t peak_stash_bytes = 0;           // x Plan stash_bytes_per_microbatch (+ fr replay)
};

struct Spread {
  double min_s = 0, median_s = 0, max_s = 0;
};

// With several clients: one group of them (the plan's client groups, else
// one group "clients" of them all).
struct ClientGroupMetrics {
  std::string name;
  int64_t clients = 0;
  Spread time_per_batch;            // over its clients: each one's own steady time per batch
  double busy_s_per_batch = 0;      // one client's compute, averaged over the group
  double bytes_sent_per_batch = 0;  // one client's, averaged over the group
  double bytes_received_per_batch = 0;
  // The share of the steady rounds whose last client to end its own batch
  // (its compute and tensors; a mode's weights are the round's) is one of
  // this group's: the straggler is the group with the largest.
  double last_in_round = 0;
};

struct Metrics {
  std::string source = "sim";  // "sim" | "exec"
  std::string scenario, variant, schedule;
  int64_t batches = 0;  // per client, warm-up included
  int64_t warmup_batches = 0;
  int64_t clients = 1;
  double time_per_batch_s = 0;           // steady state; with several clients: per round (each
                                         // client one batch)
  Spread time_per_batch_spread;          // over the steady-state batches (rounds)
  double computation_time_s = 0;         // union of all compute intervals of a batch, averaged
  double makespan_s = 0;                 // the whole run, warm-up included
  double throughput_batches_per_s = 0;   // clients / time_per_batch
  std::vector<PartyMetrics> parties;     // in Timeline::parties order
  double bandwidth_peak_client_Bps = 0;  // largest single-transfer send rate of a client
  double bandwidth_peak_server_Bps = 0;  // largest single-transfer receive rate of a non-client
  std::vector<LinkMetrics> links;        // directions that carried bytes, sorted by name
  std::vector<StageMetrics> stages;
  double bubble_fraction = 0;    // 1 - sum busy / (parties x time_per_batch)
  std::string busiest_resource;  // a party name, or "link A->B" ("link clients->server": the
                                 // server's access link, see links)
  double busiest_utilisation = 0;
  // With several clients: per group, and over the steady rounds how long
  // the round waited after its first client finished its batch for the last
  // (stragglers).
  std::vector<ClientGroupMetrics> client_groups;
  Spread round_wait_spread;

  const PartyMetrics* party(const std::string& name) const;
};

// Computes the metrics of `timeline`, a run of `plan` (for names and stash
// bytes). Batches [0, warmup) are left out of every per-batch figure; the
// steady-state window runs from the end of batch warmup-1 (time 0 when
// warmup is 0) to the end of the last batch. A batch (round) ends with the
// last event of that batch index over all clients.
// REQUIRES: 0 <= warmup < number of batches in the timeline.
Metrics compute_metrics(const Timeline& timeline, const Plan& plan, int64_t warmup);

// The most tensor memory a party serving `clients` clients at once holds
// (a server; party_peak_memory_bytes is one client's), from the plan's
// stages and the stash this simulation of it kept (m.stages): each of
// `stages`' weights, gradients and optimizer state `copies` times
// (splitfed_v1 keeps a server part per client, else 1), its posted
// receives once per client, the most micro-batches the simulation stashed
// on the party at once over all clients (StageMetrics::peak_stash_bytes),
// and one working memory or optimizer step, the larger.
int64_t served_party_peak_memory_bytes(const Plan& plan, const Metrics& m,
                                       const std::vector<int>& stages, int64_t clients,
                                       int64_t copies);

// JSON per the metrics contract: {"schema": "splitsim.metrics/1", "source", ...}.
void to_json(nlohmann::json& j, const Metrics& m);
void from_json(const nlohmann::json& j, Metrics& m);

// The CSV's columns of `m`, in order, at full precision: what the CSV writes
// and what the Python package's DataFrames hold. The per-party columns are
// one client (the mean over the client parties) and the rest summed.
nlohmann::ordered_json csv_record(const Metrics& m);
// CSV: one header line (csv_record's keys), and one row per metrics object.
void write_csv_header(std::ostream& os);
void write_csv_row(std::ostream& os, const Metrics& m);

}  // namespace splitsim
