#pragma once
// What `train` derives from its options before anything trains, alike in
// every process: the checks, the data, the variant's run for the whole
// training and its evaluation and leakage points (train.cpp runs it).
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/run_spec.h"
#include "splitsim/costmodel/workspace.h"
#include "splitsim/exec/client_data.h"
#include "splitsim/exec/dataset.h"
#include "splitsim/exec/train.h"

namespace splitsim {

// What every process derives alike from the options: the variant's run for
// the whole training, its plan as deployed, and the data.
struct Setup {
  RunSpec run;              // the training: iterations = epochs x batches per epoch, no warm-up
  Plan deploy;              // the variant's plan as the scenario has it (what simulate sees)
  nlohmann::json identity;  // what the handshake compares
  LabeledImages train, test;
  ClientPartition partition;  // several clients: each one's training samples
  std::vector<int64_t> input_shape;
  int64_t batches_per_epoch = 0, test_batches = 0;
  int64_t eval_every = 0;              // training batches between evaluations
  int64_t evaluations = 0;             // in the whole training
  std::vector<int64_t> leakage_after;  // the evaluations (batches done) that measure leakage
  std::string checkpoint_identity;  // what a checkpoint file must carry (its run's identity hash)
};

// The train and test splits by dataset, read once for every variant.
using SplitCache = std::map<std::string, std::pair<LabeledImages, LabeledImages>>;

// Throws InputError (naming the options field) for options no scenario
// could train with.
void check_options(const TrainOptions& o);

// The variant's Setup; its data from `cache` (read into it once per
// dataset). Throws InputError where the scenario or the options do not fit.
Setup prepare(const TrainOptions& o, Workspace& ws, const ScenarioVariant& v, SplitCache* cache);

}  // namespace splitsim
