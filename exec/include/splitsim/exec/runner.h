#pragma once
// The real execution of one process: the stages of one rank's party, with
// real forward / backward / optimizer steps in the order stage_ops() gives
// (the simulator's order), boundary codecs from the costmodel, tensors through
// a Transport. One thread per (stage, client) instance; compute of one
// process is serialised (one processor per party, as the simulator's host
// arbiter); transfers are asynchronous: receives are posted ahead, sends
// waited on lazily, so transfers overlap compute as the schedule allows.
//
// Schedules: sequential, gpipe, 1f1b exactly; pipedream with weight
// stashing (a backward runs with the weights its forward used, the update
// applies to the current ones); ddg with delayed gradients and the
// simulator's iteration barrier across every stage of a client (over the
// transport between processes); fr as ddg, with the forward replayed inside
// the backward (event kind "recompute").
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "splitsim/costmodel/run_spec.h"
#include "splitsim/exec/checkpoint.h"
#include "splitsim/exec/dataset.h"
#include "splitsim/exec/leakage.h"
#include "splitsim/exec/transport.h"
#include "splitsim/sim/timeline.h"

namespace splitsim {

// One held-out evaluation, scored by the last stage.
struct EvalStats {
  int64_t after_batches = 0;  // training batches done before it
  double loss = 0;            // mean loss per sample
  double correct = 0;         // correctly classified samples (classification)
  double samples = 0;
  // The training batches since the previous evaluation: mean batch loss and
  // the fraction of their samples classified right (before each step).
  double train_loss = 0, train_accuracy = 0;
  double trained_s = 0;  // when the evaluation began (seconds since the run's start)
  double eval_s = 0;     // how long it took
};

// What crosses the boundaries says about client 0's data (splitsim train
// --leakage; leakage.h): measured at the evaluations after these many
// training batches (each a multiple of RunOptions::eval_every).
struct LeakageOptions {
  std::vector<int64_t> after_batches;  // empty: none
  int attack_epochs = 10;              // the reconstruction decoder's passes
  uint64_t seed = 0;                   // the decoder's weights and sample order
  bool at(int64_t done) const;
  // Whether a training batch's gradients count: the batches since the
  // previous evaluation, when the next one measures leakage.
  bool window(int64_t batch, int64_t eval_every) const;
};

// One boundary's leakage at one evaluation, by what crossed it.
struct BoundaryLeakage {
  int64_t after_batches = 0;
  int boundary = 0;
  bool backward = false;
  // forward: the held-out samples' activations as the next stage decoded
  // them: the first half trains the attacker's decoder, the second half
  // scores it and the distance correlation.
  int64_t samples = 0, attacker_samples = 0;
  double distance_correlation = 0;
  Reconstruction reconstruction;
  // backward: the gradients the stage before the boundary received, decoded,
  // over the training batches since the previous evaluation.
  double label_auc_norm = 0, label_auc_direction = 0;
  double seconds = 0;  // computing it
};

struct RunOptions {
  std::chrono::milliseconds timeout{60000};  // per transfer
  std::string device = "cpu";                // "cpu" | "cuda"
  // Tests: no optimizer step; the gradients of the last batch are kept.
  bool keep_gradients = false;
  // Tests: the parameters of the local units after the run are kept.
  bool keep_parameters = false;
  // Training data; null = the scenario's dataset (make_batch_source with
  // `data_dir`, the --data flag).
  BatchSource* data = nullptr;
  std::string data_dir;
  // > 0: the scenario's synthetic data repeats after this many batches
  // (make_batch_source).
  int64_t distinct_batches = 0;
  // Held-out evaluation (splitsim train): after every `eval_every` batches
  // (> 0; sequential, gpipe and 1f1b with one client), `eval_batches`
  // batches of `eval_data` go forward through the stages in eval mode, no
  // gradients, the codecs as on the wire; the last stage scores them. Their
  // transfers are neither in the timeline nor in the wire byte counts.
  BatchSource* eval_data = nullptr;
  int64_t eval_every = 0;
  int64_t eval_batches = 0;
  LeakageOptions leakage;  // measured at some evaluations (train --leakage)
  // Called by the last stage after each evaluation (progress output).
  std::function<void(const EvalStats&)> on_eval;
  // Progress: called after each batch's update by one instance of this
  // process (its last local stage, lowest client) with the batches done so
  // far and that batch's loss where that stage computes it (NaN elsewhere).
  std::function<void(int64_t done, double loss)> on_batch;
  // >= 1: this process emulates a processor this many times slower (a slow
  // client on a fast machine): each computation (forward, backward, update,
  // codec work) holds the party's processor, idle, until it has lasted this
  // many times what it took. Transfers are not slowed.
  double compute_slowdown = 1;
  // Checkpoints (checkpoint.h; a synchronous schedule, one client): with a
  // dir, every local instance writes its stage's checkpoint after the
  // update (and evaluation) of every `every`-th batch, its files stamped
  // with `checkpoint_identity`. first_batch > 0 resumes: every local
  // instance first loads its checkpoint of that step (weights, optimizer,
  // records; InputError for a file that is not this run's) and runs the
  // batches from there.
  CheckpointOptions checkpoint;
  std::string checkpoint_identity;
  int64_t first_batch = 0;
};

struct BatchStats {
  int client = 0;
  int64_t batch = 0;
  double loss = 0;     // mean loss of the batch (sum over micro-batches)
  double correct = 0;  // correctly classified samples (classification)
  double samples = 0;
};

struct RunResult {
  Timeline timeline;              // this process's events, seconds since `start`
  std::vector<BatchStats> stats;  // batches whose last stage ran here
  bool complete = false;
  std::string error;         // the first failure when !complete
  int64_t batches_done = 0;  // batches every local stage finished (updated)
  int64_t first_batch = 0;   // resumed from a checkpoint: the batches before it ran earlier
  // Stage updates skipped over a non-finite gradient (loss scaling), summed
  // over the stages (and, after gathering, the ranks).
  int64_t skipped_updates = 0;
  std::vector<int> built_units;  // model units this rank built: its stages' (all: TorchScript)
  // The most LibTorch CPU tensor bytes live at once, from the model build to
  // the end of the run, by rank: this rank's, and after gather() on rank 0
  // every rank's (exec/README.md "Design": Memory).
  std::map<int, int64_t> peak_tensor_bytes;
  // keep_gradients: per model unit index, its parameters' gradients.
  std::map<int, std::vector<torch::Tensor>> gradients;
  // keep_parameters: per local model unit index, its parameters (copies).
  std::map<int, std::vector<torch::Tensor>> parameters;
  int64_t wire_bytes_sent = 0;  // counted at the transport, to other ranks
  int64_t wire_bytes_received = 0;
  std::vector<EvalStats> evals;  // on the rank holding the last stage, in order
  int64_t eval_bytes = 0;        // sent and received for the evaluations (not in wire_bytes_*)
  std::vector<BoundaryLeakage> leakage;  // this rank's, by the stage that received what crossed
};

// Runs `spec` on rank `rank` of `transport` for spec.plan.iterations
// batches (+ the schedule's cool-down batches, whose events are dropped as
// in the simulator). `start` is the process's time origin. Never throws for
// transport failures: returns complete = false with the events gathered so
// far. Throws InputError for an unsupported plan.
RunResult run_party(const RunSpec& spec, Transport& transport, int rank, const RunOptions& options,
                    ExecClock::time_point start);

}  // namespace splitsim
