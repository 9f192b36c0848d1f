#pragma once
// Fixtures of the validate tests: a two-party run's metrics and plan.
#include <string>

#include "splitsim/costmodel/plan.h"
#include "splitsim/validate/comparison.h"

namespace splitsim::validation_runs {

// A client and a server: the time per batch, the client's bytes sent (the
// server's received) and busy time; 1000 B the other way, the server busy
// 0.1 s.
inline Metrics two_party(double time_per_batch, double client_sent, double client_busy) {
  Metrics m;
  m.time_per_batch_s = time_per_batch;
  m.computation_time_s = time_per_batch / 2;
  PartyMetrics c, s;
  c.name = "client";
  c.client = true;
  c.bytes_sent_per_batch = client_sent;
  c.bytes_received_per_batch = 1000;
  c.busy_s_per_batch = client_busy;
  s.name = "server";
  s.bytes_sent_per_batch = 1000;
  s.bytes_received_per_batch = client_sent;
  s.busy_s_per_batch = 0.1;
  m.parties = {c, s};
  return m;
}

// client -> server: 3000 B forward; server -> client: 1000 B backward
// (boundary 0), plus `ushape` a second boundary server -> client carrying
// 500 B forward and 250 B back.
inline Plan two_party_plan(Schedule schedule, bool ushape = false) {
  Plan plan;
  plan.schedule = schedule;
  plan.stages.resize(ushape ? 3 : 2);
  plan.stages[0].party = "client";
  plan.stages[1].party = "server";
  PlanBoundary b;
  b.from_stage = 0;
  b.to_stage = 1;
  b.forward.wire_bytes_per_batch = 3000;
  b.backward.wire_bytes_per_batch = 1000;
  plan.boundaries.push_back(b);
  if (ushape) {
    plan.stages[2].party = "client";
    b.from_stage = 1;
    b.to_stage = 2;
    b.forward.wire_bytes_per_batch = 500;
    b.backward.wire_bytes_per_batch = 250;
    plan.boundaries.push_back(b);
  }
  return plan;
}

}  // namespace splitsim::validation_runs
