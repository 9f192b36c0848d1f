#pragma once
// Schedules as pure functions: the ordered operations each stage runs.
// No globals, no I/O, no SimGrid: the simulator executes these lists, and the
// real execution can follow the same ones. Tested against literal tables in
// tests/sim/schedule_test.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "splitsim/costmodel/scenario.h"

namespace splitsim {

enum class OpKind {
  kForward,   // forward of (batch, microbatch); needs the activation from stage k-1
  kBackward,  // backward of (batch, microbatch); needs the gradient from stage k+1
  kUpdate,    // optimizer step of `batch` (microbatch = -1)
  kBarrier,   // ddg/fr: wait until every stage reached the end of iteration `batch`
};

struct Op {
  OpKind kind = OpKind::kForward;
  int64_t batch = 0;
  int64_t microbatch = 0;  // -1 for kUpdate and kBarrier

  bool operator==(const Op& o) const {
    return kind == o.kind && batch == o.batch && microbatch == o.microbatch;
  }
};

// Shorthands for tables: F(b, i), B(b, i), U(b), Sync(t).
inline Op F(int64_t b, int64_t i) { return {OpKind::kForward, b, i}; }
inline Op B(int64_t b, int64_t i) { return {OpKind::kBackward, b, i}; }
inline Op U(int64_t b) { return {OpKind::kUpdate, b, -1}; }
inline Op Sync(int64_t t) { return {OpKind::kBarrier, t, -1}; }

// "F0.1", "B2.0", "U3", "S4" (batch.microbatch).
std::string to_string(const Op& op);
std::string to_string(const std::vector<Op>& ops);

// The operations stage k (0-based) of K runs, in order, for `batches`
// batches of m micro-batches each:
//  - sequential: per batch, F(i) B(i) for each micro-batch, then U.
//  - gpipe: per batch, F(0..m-1), B(m-1..0) (reverse, as GPipe), then U.
//  - 1f1b (PipeDream-flush): per batch, w = min(K-k, m) forwards, then
//    B(i) followed by F(i+w) while any forward is left, then U.
//  - pipedream (asynchronous 1F1B, no flush): the micro-batches of all
//    batches form one stream j = b*m+i; w = min(K-k, total) forwards, then
//    B(j) [U(b) after the last micro-batch of b] F(j+w) ...
//  - ddg and fr: iteration t runs F(t, all i), then the backward of batch
//    t-(K-1-k) (delayed gradient; fr replays the forward inside it), its U,
//    then a barrier Sync(t) across stages; K-1 extra iterations drain the
//    delayed backwards. Per batch with K equal stages and free links:
//    ddg T_F + T_B/K, fr T_F + (T_F + T_B)/K.
// Every F and B of every (batch, microbatch) appears exactly once, every U once
// per batch, after that batch's backwards. REQUIRES 0 <= k < K, m >= 1, batches >= 0.
std::vector<Op> stage_ops(Schedule schedule, int k, int K, int64_t m, int64_t batches);

// Forwards whose activations stage k keeps at most, for the order above.
// Equals the planner's stashed_microbatches() for every schedule, except ddg
// and fr with m > 1: this order keeps (K-k)*m, the planner counts K-k.
int64_t peak_in_flight(const std::vector<Op>& ops);

// Batches to run after the last measured one so that it, too, ends in
// steady state (the pipeline still full behind it): ddg and fr K-1,
// pipedream ceil((K-1)/m), the synchronous schedules 0. The simulator runs
// them and drops their events (sim/README.md "Execution model").
int64_t cooldown_batches(Schedule schedule, int K, int64_t m);

// True iff the schedule ends each iteration with a barrier (ddg, fr).
bool has_iteration_barrier(Schedule schedule);

}  // namespace splitsim
