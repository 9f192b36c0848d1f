#pragma once
// Plan: a scenario variant resolved against a measured model and devices:
// ordered stages with their placement and costs, and per-boundary wire bytes.
// A plain value type; JSON schema "splitsim.plan/1" (cli/README.md "Output formats").
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/model_profile.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {

struct PlanStage {
  std::string name;    // "stage0", ...
  std::string party;   // "client", "server", "gpu1", ...
  std::string device;  // device profile name
  std::vector<std::string> units;
  int first_unit = 0, last_unit = 0;
  OpCounts fwd_per_batch, bwd_per_batch;  // model units only (codecs: see boundaries)
  int64_t param_count = 0;
  int64_t param_bytes = 0;
  int64_t optimizer_state_bytes = 0;
  int64_t stash_bytes_per_microbatch = 0;  // largest micro-batch
  int64_t stashed_microbatches = 0;        // peak, for the schedule
  int64_t weight_versions = 1;             // pipedream keeps several
  int64_t replay_bytes = 0;                // fr: one micro-batch recomputed in backward
  int64_t peak_memory_bytes = 0;           // params+grads+state+versions+stash
  std::vector<double> fwd_s;               // per micro-batch, incl. codec work on this stage
  std::vector<double> bwd_s;               // per micro-batch, incl. codec work on this stage
  double update_s = 0;                     // optimizer step, once per batch
  bool timed_from_measurement = false;     // true: unit timings from a profile
};

struct PlanTransfer {
  CodecSpec codec;
  std::vector<int64_t> carried_shape;  // per sample
  std::vector<int64_t> wire_bytes;     // per micro-batch
  int64_t wire_bytes_per_batch = 0;
  std::vector<double> encode_s;  // sender, per micro-batch (in stage costs too)
  std::vector<double> decode_s;  // receiver, per micro-batch (in stage costs too)
};

struct PlanBoundary {
  int from_stage = 0, to_stage = 0;
  std::vector<int64_t> activation_shape;  // per batch: [B, ...]
  PlanTransfer forward;                   // from_stage -> to_stage
  PlanTransfer backward;                  // to_stage -> from_stage
};

struct Plan {
  std::string scenario;
  std::string variant;
  std::string model;
  int64_t batch_size = 0;
  std::vector<int64_t> microbatch_sizes;  // chunks entries summing to batch_size
  Schedule schedule = Schedule::kSequential;
  std::vector<PlanStage> stages;
  std::vector<PlanBoundary> boundaries;
  NetworkSpec network;
  PlatformSpec platform;
  int64_t iterations = 0, warmup = 0, clients = 1;

  int64_t chunks() const { return static_cast<int64_t>(microbatch_sizes.size()); }
  // Bytes per batch that `party` sends / receives.
  int64_t bytes_sent(const std::string& party) const;
  int64_t bytes_received(const std::string& party) const;
};

void to_json(nlohmann::json& j, const Plan& p);
// A human table: stages, then boundaries.
void print_plan(std::ostream& os, const Plan& p);

}  // namespace splitsim
