#pragma once
// Schedules: the enum and its names, the ordered operations each stage runs,
// and the facts derived from that order (activations kept, weight copies,
// cool-down batches). Pure functions: no globals, no I/O, no SimGrid. The
// planner takes its stash counts from here, the simulator executes these
// lists, and the real execution follows the same ones. Tested against literal
// tables in tests/costmodel/schedule_test.cpp.
#include <cstdint>
#include <string>
#include <vector>

namespace splitsim {

enum class Schedule { kSequential, kGpipe, k1F1B, kPipeDream, kDdg, kFr, kZbH1, kInterleaved1F1B };

// Every schedule, in the order of schedule_names().
const std::vector<Schedule>& all_schedules();
// "sequential", "gpipe", "1f1b", "pipedream", "ddg", "fr", "zb_h1",
// "interleaved_1f1b" (the scenario's "schedule" values).
const char* schedule_name(Schedule s);
std::vector<std::string> schedule_names();
// The schedule called `name`; false (and *s unchanged) for an unknown name.
bool schedule_from_name(const std::string& name, Schedule* s);

enum class OpKind {
  kForward,   // forward of (batch, microbatch); needs the activation from stage k-1
  kBackward,  // backward of (batch, microbatch); needs the gradient from stage k+1
              // (zb_h1: the input gradient only; the rest is its kWeight)
  kWeight,    // zb_h1: the weight gradients of (batch, microbatch), after its kBackward
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

// "F0.1", "B2.0", "W2.0", "U3", "S4" (batch.microbatch).
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
//    then a barrier S(t) across stages; K-1 extra iterations drain the
//    delayed backwards. Per batch with K equal stages and free links:
//    ddg T_F + T_B/K, fr T_F + (T_F + T_B)/K.
//  - zb_h1 (zero bubble H1, Qi et al. 2023, arXiv 2401.10241, with its
//    exact semantics): the backward split into B (input gradient, sent at
//    once) and W (weight gradients). Per batch: min(K-k-1, m) forwards; k
//    times F B (W deferred); then F B W while forwards are left, B W while
//    backwards are left, the deferred Ws, U. Ws in the order of their Bs;
//    stage 0 (no input gradient to send) runs each W right after its B.
//  - interleaved_1f1b (Megatron-LM's interleaved 1F1B, Narayanan et al.
//    2021, arXiv 2104.04473): p parties hold v stages each (K = p v, stage
//    s on party s mod p, `virtual_stages` v); each party runs its stages'
//    ops in one order, device_ops; a stage's own order is its part of it.
// Every F and B (and zb_h1's W) of every (batch, microbatch) appears exactly
// once, every U once per batch, after that batch's backwards. REQUIRES 0 <=
// k < K, m >= 1, batches >= 0; interleaved_1f1b: virtual_stages divides K
// and m is a multiple of K / virtual_stages.
std::vector<Op> stage_ops(Schedule schedule, int k, int K, int64_t m, int64_t batches,
                          int virtual_stages = 1);

// interleaved_1f1b's stages per party: the stages' parties (in stage order)
// repeat a turn of p distinct parties v times (stage s on the party of
// stage s mod p); v = K / p, or 0 when they do not take turns so.
int virtual_stages_of(const std::vector<std::string>& stage_parties);

// What keeps interleaved_1f1b from running `stage_parties` with m
// micro-batches and v stages per party ("" when nothing): the parties must
// take turns v >= 2 times (virtual_stages_of), and m be a multiple of p.
std::string interleaving_problem(const std::vector<std::string>& stage_parties, int64_t m,
                                 int virtual_stages);

// One op of a party's order and the stage it runs on.
struct StageOp {
  int stage = 0;
  Op op;
};

// interleaved_1f1b: the order of party d of p holding v stages each (d,
// d + p, ..., d + (v-1) p), per batch as Megatron-LM's
// forward_backward_pipelining_with_interleaving: w = 2 (p-d-1) + (v-1) p
// forwards (all m v when m = p), then F B pairs while forwards are left,
// then the other Bs, then its stages' Us. The party's j-th forward runs on
// chunk c = (j mod p v) div p (stage c p + d) over micro-batch (j div p v) p
// + j mod p; its j-th backward on chunk v-1-c, the same micro-batch. With
// K equal stages of t_f, t_b per micro-batch and free links a batch takes
// (m v + p - 1)(t_f + t_b): bubble (p-1)/(v m). REQUIRES 0 <= d < p, v >= 1,
// m a multiple of p.
std::vector<StageOp> device_ops(int d, int p, int v, int64_t m, int64_t batches);

// Forwards whose activations are kept at most along `ops` (a forward's
// activation is kept until its backward, or its weight pass where the
// order has them: zb_h1).
int64_t peak_in_flight(const std::vector<Op>& ops);

// Peak micro-batches whose activations stage k (0-based) of K keeps for
// backward, with m micro-batches per batch: peak_in_flight of the stage's
// order, run long enough to reach steady state (K batches). That is:
// sequential 1, gpipe m, 1f1b min(m, K-k), pipedream K-k, ddg and fr (K-k)*m
// (they delay whole batches; fr keeps only the stage inputs), zb_h1
// min(m, K) (each stage as 1f1b's first: the deferred Ws hold theirs),
// interleaved_1f1b read off its order (virtual_stages v).
// REQUIRES 0 <= k < K, m >= 1.
int64_t stashed_microbatches(Schedule schedule, int k, int K, int64_t m, int virtual_stages = 1);

// Versions of the weights alive at once along `ops`, at most: the live
// weights and each older version that a forward still waiting for its
// backward ran with (a forward's version = the updates before it). exec's
// weight stashing keeps exactly these (a version nobody holds is never
// copied).
int64_t peak_weight_versions(const std::vector<Op>& ops);

// zb_h1: micro-batches whose B ran and whose W waits, at most, along stage
// k's order (k + 1 for m >= K: the k deferred and the one between its B
// and W; fewer when the warm-up takes every forward); 0 for the schedules
// that do not split the backward.
// REQUIRES 0 <= k < K, m >= 1.
int64_t waiting_weight_passes(Schedule schedule, int k, int K, int64_t m);

// Copies of the weights stage k of K keeps with m micro-batches per batch:
// peak_weight_versions of its order in steady state. pipedream: the K-k
// micro-batches in flight span 1 + ceil((K-k-1)/m) versions (K-k at m = 1;
// micro-batches of one batch share theirs); the others 1 (ddg and fr run
// their delayed backwards with the current weights: no stashing).
// REQUIRES 0 <= k < K, m >= 1.
int64_t weight_versions(Schedule schedule, int k, int K, int64_t m);

// Batches to run after the last measured one so that it, too, ends in
// steady state (the pipeline still full behind it): ddg and fr K-1,
// pipedream ceil((K-1)/m), the synchronous schedules 0. The simulator runs
// them and drops their events (sim/README.md "Execution model").
int64_t cooldown_batches(Schedule schedule, int K, int64_t m);

// True iff the schedule ends each iteration with a barrier (ddg, fr).
bool has_iteration_barrier(Schedule schedule);

// True iff the schedule splits each backward into B and W ops (zb_h1).
bool splits_backward(Schedule schedule);

// True iff every batch ends before the next begins, with the weights
// updated in between (sequential, gpipe, 1f1b, zb_h1, interleaved_1f1b: the
// model between two
// batches is a model to evaluate); false for those that overlap batches
// (pipedream, ddg, fr).
bool is_synchronous(Schedule schedule);

}  // namespace splitsim
