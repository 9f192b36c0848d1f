#pragma once
// RunSpec: everything a real run (exec, train) needs, derived once from a
// scenario variant and its Plan (no LibTorch). The runner, the handshake and
// the metrics read this one value; none of them looks at the Scenario or
// derives the topology or a boundary's shapes again.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/exec_topology.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {

// What a run changes of its scenario (exec's and train's options).
struct RunChanges {
  int64_t iterations = 0;  // > 0: batches to run in place of the scenario's
  int64_t warmup = -1;     // >= 0: warm-up batches in place of the scenario's
  int64_t seed = -1;       // >= 0: in place of the scenario's seed
  std::string dataset;     // "": the scenario's
};

// One boundary's tensors, per sample (the Plan's shapes carry the batch).
struct RunBoundary {
  std::vector<int64_t> activation_shape;  // what the forward codec encodes
  // What the forward codec carries across at the run's first step: the
  // shape the backward codec is built for (codec.h carried_shape, step 0).
  std::vector<int64_t> carried_shape;
};

struct RunSpec {
  Plan plan;  // iterations and warmup are the run's
  ExecTopology topology;
  std::vector<RunBoundary> boundaries;  // by Plan boundary index
  // What the runner reads of the scenario.
  ModelSpec model;  // resolved (a Scenario's model is)
  std::string dataset;
  uint64_t seed = 0;
  OptimizerSpec optimizer;
  WireDType activation_dtype = WireDType::kF32;  // the scenario's precision
  std::string compute_precision = "fp32";
  double loss_scale = 1;  // Scenario::effective_loss_scale()
  // What the handshake compares: the variant's label and its JSON, with
  // "iterations" when the run changes them.
  std::string label;
  nlohmann::json identity;
};

// The run of `plan` (planned from `variant`) with `changes`: iterations and
// warm-up set on the plan (the warm-up kept below the iterations), the
// topology (make_topology: throws InputError for client groups), each
// boundary's per-sample shapes.
RunSpec make_run_spec(const ScenarioVariant& variant, const Plan& plan,
                      const RunChanges& changes = {});

}  // namespace splitsim
