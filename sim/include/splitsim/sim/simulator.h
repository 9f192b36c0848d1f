#pragma once
// The SimGrid simulator: Plan -> Timeline (then compute_metrics, write_chrome_trace).
//
// SimGrid allows one Engine per process (a second one keeps the first one's
// clock, configuration and callbacks), so every simulation runs in a process
// of its own: simulate, simulate_many and simulate_metrics hand plans to
// simulation workers (small processes that fork a child per simulation);
// simulate_in_process is the body those children run. See sim/README.md
// "Many simulations".
#include <string>
#include <vector>

#include "splitsim/costmodel/plan.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/timeline.h"

namespace splitsim {

// Which waiting client the server computes for next, when several wait.
enum class ServerOrder {
  kFifo,        // the one that asked first
  kRoundRobin,  // the next client index after the one served last (cyclic)
};
const char* server_order_name(ServerOrder order);  // "fifo", "round-robin"
// Throws InputError naming `where` unless `name` is "fifo" or "round-robin".
ServerOrder parse_server_order(const std::string& name, const std::string& where);

struct SimOptions {
  ServerOrder server_order = ServerOrder::kFifo;
};

// Throws InputError (naming the JSON path under "$.") when the Plan cannot be
// simulated: no stages, a non-positive bandwidth, an unreadable
// bandwidth_trace, warm-up not below iterations; std::invalid_argument when
// the Plan is inconsistent (per-micro-batch vectors of the wrong length).
void check_simulatable(const Plan& plan);

// Simulates `plan` (Plan.iterations batches per client, then the schedule's
// cooldown_batches(), whose events are dropped) in this process and returns
// its timeline, events in sort_events() order.
// REQUIRES: no SimGrid Engine was created in this process before; a second
// call throws std::logic_error.
Timeline simulate_in_process(const Plan& plan, const SimOptions& options = {});

// Same result, computed in a process of its own: callable any number of
// times. Throws what check_simulatable throws, or std::runtime_error when
// the simulation fails (with its message).
Timeline simulate(const Plan& plan, const SimOptions& options = {});

// simulate() for every plan, at most `jobs` at a time (jobs >= 1). Results
// in input order, identical for any `jobs`. Throws for the first plan that
// fails, naming its variant.
std::vector<Timeline> simulate_many(const std::vector<Plan>& plans, const SimOptions& options,
                                    int jobs);

// compute_metrics(simulate(plan), plan, plan.warmup) for every plan, the
// metrics computed where the simulation ran so that only they travel back:
// what sweeps and searches need. Same contract as simulate_many.
std::vector<Metrics> simulate_metrics(const std::vector<Plan>& plans, const SimOptions& options,
                                      int jobs);

// A Plan as the bytes a simulation worker receives, and back, exactly: how
// plans travel to other processes and machines (the Python package pickles
// its Plans with them, for Dask). The bytes hold no version: read them with
// the build that wrote them. plan_from_bytes throws std::runtime_error for
// bytes plan_to_bytes did not write.
std::string plan_to_bytes(const Plan& plan);
Plan plan_from_bytes(const std::string& bytes);

}  // namespace splitsim
