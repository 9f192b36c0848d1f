#pragma once
// `splitsim validate` of a scenario with several clients
// (exec/validate/README.md "Several clients"): the server and one `splitsim
// exec` process per client, each client in a network namespace of its own
// behind a switch (NetnsSwitch: the server's port shaped to the shared
// server link, each client's to its group's rate), a client group's
// processes optionally emulating a slower processor (exec
// --compute-slowdown F); the prediction is the simulator's on this
// machine's measured profile, F times slower for such a group. Compared per
// variant: the time per round, the wait of a round for its last client,
// each group's time per batch and bytes, and the straggler.
// Report: "splitsim.validation_clients/1".
#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "splitsim/sim/metrics.h"
#include "splitsim/validate/comparison.h"

namespace splitsim {

struct ClientsValidationRun {
  std::string scenario, variant;
  std::string link;                         // NetnsSwitch::description()
  std::string profile;                      // where this machine's profile came from
  std::map<std::string, double> slowdowns;  // client group -> exec --compute-slowdown (> 1 only)
  Metrics predicted;
  std::vector<Metrics> repetitions;  // in the order they ran
  std::vector<RunConditions> conditions;
  // Per party that reported it, from the first repetition; a party that
  // serves the clients planned with the simulated stash of all of them
  // (served_party_peak_memory_bytes).
  std::vector<MemoryCheck> memory;
  std::string failure;              // non-empty: the run failed
};

// One compared figure: the prediction against the median of the
// repetitions, and their min..max.
struct ClientsRow {
  MetricError median;
  double min = 0, max = 0;
};

// The compared figures, in this order: "time_per_round_s"; "round_wait_s"
// (the median over a run's rounds of the wait for the last client); per
// client group G: "G.time_per_batch_s" (the median over its clients of each
// one's steady time per batch), "G.bytes_sent_per_batch",
// "G.bytes_received_per_batch" (one client's, averaged over the group).
// Groups are matched by name. REQUIRES: !run.repetitions.empty().
std::vector<ClientsRow> clients_rows(const ClientsValidationRun& run);

// The group whose client ends the most rounds last, with that share:
// "slow (100% of rounds)"; "" with fewer than two groups.
std::string straggler(const Metrics& m);

// Per variant: the set-up, the rows, the straggler predicted and measured,
// the steal.
void print_clients_run(std::ostream& os, const ClientsValidationRun& run);
// Median |error| of the time per round and of every group's time per batch
// over the runs that did not fail (NaN when none).
struct ClientsSummary {
  double round_median_abs_error = 0, group_median_abs_error = 0, group_max_abs_error = 0;
  int bytes_exact = 0, bytes_compared = 0;      // bytes rows whose median equals the prediction
  int straggler_named = 0, straggler_runs = 0;  // repetitions naming the predicted straggler
};
ClientsSummary summarize_clients(const std::vector<ClientsValidationRun>& runs);
void print_clients_summary(std::ostream& os, const ClientsSummary& s);
nlohmann::json clients_validation_json(const std::vector<ClientsValidationRun>& runs);

}  // namespace splitsim
