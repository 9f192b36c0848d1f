#pragma once
// `splitsim train`: the split model trained for real on labeled images (the
// scenario's codecs on the wire, trainable inserts included) with top-1
// accuracy and loss on the dataset's held-out test split after every epoch.
// The same runner as `splitsim exec` (runner.h), so the same numerics: in
// process, every party runs here over LoopbackTransport; with a role, this
// process is one party over c10d Gloo, as exec. No LibTorch in this header.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/plan.h"
#include "splitsim/exec/checkpoint.h"

namespace splitsim {

struct TrainOptions {
  std::string scenario;  // scenario file
  std::string variant;   // label filter: every variant it leaves (one with a role)
  int64_t epochs = 1;
  int64_t eval_every = 0;     // training batches between evaluations (0: one epoch)
  std::string dataset;        // "" the scenario's; fashion_mnist | cifar10
  std::string data;           // dataset directory ("" the installed Fashion-MNIST)
  int64_t train_samples = 0;  // the first N training samples (0: all)
  int64_t test_samples = 0;   // the first N test samples, whole batches (0: all)
  int64_t seed = -1;          // >= 0: in place of the scenario's seed (weights, data order, codecs)
  // Several clients: their samples IID (0) or skewed in labels, each class
  // shared out in Dirichlet(alpha) proportions (client_data.h).
  double alpha = 0;
  // >= 0: the labels become 1 for this class and 0 for the rest, a binary,
  // imbalanced task (1 in 10 positive): the setting of Li et al.'s norm
  // attack (exec/TRAINING.md "Leakage"). -1: the dataset's own labels.
  int64_t one_vs_rest = -1;
  int threads = 1;            // torch intra-op threads (per process)
  double timeout_s = 600;     // per transfer (and connect, two processes)
  // Two processes: "server" (rank 0, listens) or another party (connects);
  // "" trains every party in this process.
  std::string role;
  std::string listen, connect;  // ADDR:PORT
  std::string token;            // shared secret ("" none; else $SPLITSIM_TOKEN)
  std::string version;          // program version, checked in the handshake
  // Leakage of what crosses each boundary (leakage.h, exec/TRAINING.md
  // "Leakage"), measured at these evaluations (1-based; -1: the last); empty:
  // none. One process only.
  std::vector<int64_t> leakage;
  int leakage_attack_epochs = 10;  // the reconstruction decoder's passes over the attacker set
  // Checkpoints of every party's stages (exec/TRAINING.md "Checkpoints and
  // resume"): one variant, one client. A run without resume refuses a
  // directory that already holds this party's checkpoints.
  CheckpointOptions checkpoint;
};

struct TrainOutcome {
  // splitsim.train/1 (train_report schema in exec/README.md); on a client
  // process of a two-process run only {"schema", "role", "complete"}.
  nlohmann::json report;
  Plan plan;  // the variant's plan as the scenario has it (for the simulator)
  bool complete = true;
  std::string error;
};

// Trains every selected variant in turn, as `options` says (with a role:
// the one variant). Progress lines (one per epoch) go to `progress`. Stops
// after a failed variant (its outcome last). Throws InputError for bad input
// (naming the options field, e.g. "epochs", or the JSON path) before anything trains.
std::vector<TrainOutcome> run_train(const TrainOptions& options,
                                    const std::function<void(const std::string&)>& progress);

// Batches to reach `target` test accuracy (a fraction) by the report's
// evaluations: the training batches done before the first evaluation at or
// above it; -1 when none reached it.
int64_t batches_to_accuracy(const nlohmann::json& report, double target);

}  // namespace splitsim
