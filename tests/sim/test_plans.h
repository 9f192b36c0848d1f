#pragma once
// Plans built by hand for the simulator tests (no LibTorch, no model).
#include <string>
#include <utility>
#include <vector>

#include "splitsim/costmodel/plan.h"

namespace splitsim::testing {

// K stages on parties p0..p{K-1} (or `parties`), m micro-batches, each stage
// tf / tb seconds per micro-batch, no update cost, free links (0 wire
// bytes, no latency). Stash 100 bytes per micro-batch.
inline Plan equal_stages(int K, int64_t m, double tf, double tb, Schedule schedule,
                         int64_t iterations = 12, int64_t warmup = 4,
                         std::vector<std::string> parties = {}) {
  Plan p;
  p.scenario = "test";
  p.variant = "base";
  p.model = "toy";
  p.batch_size = 8 * m;
  p.microbatch_sizes.assign(static_cast<size_t>(m), 8);
  p.schedule = schedule;
  p.iterations = iterations;
  p.warmup = warmup;
  p.network.bandwidth_bit_per_s = 8e9;  // 1e9 bytes/s
  for (int k = 0; k < K; ++k) {
    PlanStage s;
    s.name = "stage" + std::to_string(k);
    s.party = parties.empty() ? "p" + std::to_string(k) : parties[static_cast<size_t>(k)];
    s.fwd_s.assign(static_cast<size_t>(m), tf);
    s.bwd_s.assign(static_cast<size_t>(m), tb);
    s.stash_bytes_per_microbatch = 100;
    p.stages.push_back(s);
  }
  for (int k = 0; k + 1 < K; ++k) {
    PlanBoundary b;
    b.from_stage = k;
    b.to_stage = k + 1;
    for (PlanTransfer* t : {&b.forward, &b.backward}) {
      t->wire_bytes.assign(static_cast<size_t>(m), 0);
      t->encode_s.assign(static_cast<size_t>(m), 0.0);
      t->decode_s.assign(static_cast<size_t>(m), 0.0);
    }
    p.boundaries.push_back(b);
  }
  return p;
}

// Sets every micro-batch of boundary `b` to carry `fwd` / `bwd` bytes.
inline void set_wire_bytes(Plan* p, int b, int64_t fwd, int64_t bwd) {
  PlanBoundary& bd = p->boundaries[static_cast<size_t>(b)];
  bd.forward.wire_bytes.assign(p->microbatch_sizes.size(), fwd);
  bd.backward.wire_bytes.assign(p->microbatch_sizes.size(), bwd);
  bd.forward.wire_bytes_per_batch = fwd * p->chunks();
  bd.backward.wire_bytes_per_batch = bwd * p->chunks();
}

// A U-shape plan: client | server | client, one micro-batch per batch.
inline Plan ushape(double client_f, double client_b, double server_f, double server_b,
                   Schedule schedule = Schedule::kSequential, int64_t m = 1) {
  Plan p = equal_stages(3, m, 0, 0, schedule, 10, 2, {"client", "server", "client"});
  for (size_t i = 0; i < static_cast<size_t>(m); ++i) {
    p.stages[0].fwd_s[i] = p.stages[2].fwd_s[i] = client_f;
    p.stages[0].bwd_s[i] = p.stages[2].bwd_s[i] = client_b;
    p.stages[1].fwd_s[i] = server_f;
    p.stages[1].bwd_s[i] = server_b;
  }
  return p;
}

// A client group's own costs on `stage`: model seconds per micro-batch and
// the update; its codec work the plan's (empty lists).
inline PlanStageCosts group_costs(int stage, std::vector<double> fwd_s, std::vector<double> bwd_s,
                                  double update_s) {
  PlanStageCosts c;
  c.stage = stage;
  c.fwd_s = std::move(fwd_s);
  c.bwd_s = std::move(bwd_s);
  c.update_s = update_s;
  return c;
}

}  // namespace splitsim::testing
