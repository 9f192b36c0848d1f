#pragma once
// Plan: a scenario variant resolved against a measured model and devices:
// ordered stages with their placement and costs, and per-boundary wire bytes.
// A plain value type; JSON schema "splitsim.plan/1" (costmodel/README.md
// "Plan files"), written by to_json and read back by parse_plan, so that
// `splitsim simulate` runs plan files without LibTorch.
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/device.h"
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
  int64_t frozen_param_count = 0;          // without gradients and optimizer state
  int64_t frozen_param_bytes = 0;
  int64_t buffer_bytes = 0;  // floating-point buffers (running statistics)
  int64_t optimizer_state_bytes = 0;
  // Activation bytes at the compute precision (activation_memory_factor).
  int64_t stash_bytes_per_microbatch = 0;  // largest micro-batch
  int64_t stashed_microbatches = 0;        // peak, for the schedule
  int64_t weight_versions = 1;             // pipedream keeps several
  int64_t replay_bytes = 0;                // fr: one micro-batch recomputed in backward
  int64_t work_bytes = 0;                  // a backward's working memory above the stash
  int64_t input_bytes = 0;                 // stage 0: the batch's input
  int64_t recv_bytes = 0;                  // receives posted ahead: their wire tensors
  int64_t step_bytes = 0;                  // the optimizer step's temporaries (FP32)
  // params + trainable grads and versions + state + input + recv, and the
  // larger of activation_bytes() and step_bytes
  // (costmodel/README.md "How the cost model counts": Memory)
  int64_t peak_memory_bytes = 0;
  // Per micro-batch, the model's seconds on this stage: its units' (and in
  // backward a trainable codec's layers'); the codec work it does is its
  // boundaries' encode_s / decode_s (Plan::forward_pass adds them up).
  std::vector<double> fwd_s;
  std::vector<double> bwd_s;
  // zb_h1: per micro-batch, the part of bwd_s that is the weight gradients
  // (its W op; the rest is its B). Empty: none.
  std::vector<double> bwd_weight_s;
  double update_s = 0;                     // optimizer step, once per batch
  bool timed_from_measurement = false;     // true: unit timings from a profile
  // Per micro-batch: the share of each op class in fwd_s / bwd_s, fractions
  // summing to 1, by the device's
  // formula with its efficiencies (fitted ones for a measured profile).
  // Empty in plan files written without them; a calibration's per-class
  // scales need them.
  std::vector<OpClassParts> fwd_op_class_shares, bwd_op_class_shares;
  int64_t trainable_param_count() const { return param_count - frozen_param_count; }
  int64_t trainable_param_bytes() const { return param_bytes - frozen_param_bytes; }
  // What its backwards hold: the stash of the micro-batches in flight, fr's
  // replay and one working memory. The optimizer step comes after them.
  int64_t activation_bytes() const {
    return stash_bytes_per_microbatch * stashed_microbatches + replay_bytes + work_bytes;
  }
};

struct PlanTransfer {
  CodecSpec codec;
  std::vector<int64_t> carried_shape;  // per sample
  std::vector<int64_t> wire_bytes;     // per micro-batch
  int64_t wire_messages = 1;           // tensors on the wire per micro-batch, one message each
  // Per micro-batch, the bytes of the last of several tensors (the one a
  // shaper lets through last); empty: one tensor, the whole wire_bytes.
  std::vector<int64_t> last_tensor_bytes;
  int64_t wire_bytes_per_batch = 0;
  std::vector<double> encode_s;  // sender, per micro-batch
  std::vector<double> decode_s;  // receiver, per micro-batch
};

struct PlanBoundary {
  int from_stage = 0, to_stage = 0;
  std::vector<int64_t> activation_shape;  // per batch: [B, ...]
  PlanTransfer forward;                   // from_stage -> to_stage
  PlanTransfer backward;                  // to_stage -> from_stage
  // False when no stage up to from_stage trains (drop_unneeded_gradients):
  // the gradient is neither computed nor sent; `backward` carries 0 bytes.
  bool needs_gradient = true;
};

// One client-role stage's costs on a client group's device.
struct PlanStageCosts {
  int stage = 0;
  std::vector<double> fwd_s, bwd_s;  // per micro-batch, the model's, as PlanStage's
  double update_s = 0;
  // Per micro-batch, the codec work of its boundaries on this device: its
  // forward decodes what it receives and encodes what it sends, its
  // backward the same for gradients (0 where the stage has no such side).
  // An empty list: the plan's own (its boundaries').
  std::vector<double> fwd_decode_s, fwd_encode_s, bwd_decode_s, bwd_encode_s;
};

// A stage's pass over one micro-batch: decode what it received, the
// model's work, encode what it sends.
struct PassSeconds {
  double decode = 0, model = 0, encode = 0;
};

// A group of clients (scenarios/FORMAT.md "Clients"): its clients are the
// next `count` client indices, in group order.
struct PlanClientGroup {
  std::string name;
  std::string device;  // the client role's device for these clients
  int64_t count = 1;
  // Per client of the group (count entries), or empty: the network's.
  std::vector<double> bandwidth_bit_per_s;  // both directions of its link
  std::vector<double> latency_s;
  // The client-role stages on `device`; empty: the plan's stages.
  std::vector<PlanStageCosts> stage_costs;
};

struct Plan {
  std::string scenario;
  std::string variant;
  std::string model;
  int64_t batch_size = 0;
  std::vector<int64_t> microbatch_sizes;  // chunks entries summing to batch_size
  Schedule schedule = Schedule::kSequential;
  int virtual_stages = 1;                  // interleaved_1f1b: stages per party
  std::string compute_precision = "fp32";  // the scenario's (fp16 / bf16: mixed)
  std::vector<PlanStage> stages;
  std::vector<PlanBoundary> boundaries;
  NetworkSpec network;
  PlatformSpec platform;
  int64_t iterations = 0, warmup = 0, clients = 1;
  std::vector<PlanClientGroup> client_groups;  // empty, or counts summing to clients
  // The scenario's training mode and aggregation period (Scenario::training),
  // and the aggregating party's seconds per byte it averages (one read of
  // each copy and one write of the average at its memory bandwidth).
  std::string training = "unsynchronised";
  int64_t aggregate_every = 1;
  double average_s_per_byte = 0;

  int64_t chunks() const { return static_cast<int64_t>(microbatch_sizes.size()); }
  // A client index for the plan's own costs, whatever its groups say.
  static constexpr int64_t kOwnCosts = -1;
  // The group of client `c` (nullptr without groups, or for kOwnCosts).
  const PlanClientGroup* group_of(int64_t c) const;
  // Client c's link: its group's figures, else the network's.
  double client_up_bit_per_s(int64_t c) const;    // client -> others
  double client_down_bit_per_s(int64_t c) const;  // others -> client
  double client_latency_s(int64_t c) const;       // the server link's latency included
  // Stage k's passes over micro-batch i and its update for client c (its
  // group's costs on a client-role stage).
  PassSeconds forward_pass(int stage, int64_t c, size_t i) const;
  PassSeconds backward_pass(int stage, int64_t c, size_t i) const;
  // zb_h1 (splits_backward): the part of backward_pass's model seconds
  // that stage k's weight-gradient pass (W) over micro-batch i runs for
  // client c, the rest being its B (a group's costs split as the plan's
  // own); else 0.
  double weight_pass_s(int stage, int64_t c, size_t i) const;
  double update_s(int stage, int64_t c) const;
  // A pass's seconds in all, summed as plan files state them: a forward as
  // (model + decode) + encode, a backward as (model + encode) + decode.
  static double forward_total(const PassSeconds& p) { return (p.model + p.decode) + p.encode; }
  static double backward_total(const PassSeconds& p) { return (p.model + p.encode) + p.decode; }
  // Stage k's compute per batch (the plan's own costs): its passes, codec
  // work included, and its update.
  double stage_compute_s(int stage) const;
  // Bytes per batch that `party` sends / receives.
  int64_t bytes_sent(const std::string& party) const;
  int64_t bytes_received(const std::string& party) const;
  // The training modes (Scenario::training): true iff clients wait for each
  // other between batches (every mode but "unsynchronised").
  bool synchronised() const { return training != "unsynchronised"; }
  // Bytes of the weights that travel between the clients and the server in
  // an aggregation or a hand-over: the trainable parameters and the
  // floating-point buffers (running statistics) of the client role's stages
  // (those on stage 0's party).
  int64_t client_part_bytes() const;
  // The same of the other stages (splitfed_v1 averages them too, on the
  // server).
  int64_t server_part_bytes() const;
};

// The gradient nobody needs (a frozen first part, a client that only
// embeds): boundary b needs its backward transfer iff some stage up to b
// trains (trainable_param_count() > 0, a codec's layers counting as their
// stage's). For each that does not: needs_gradient false, the backward
// transfer's bytes and codec seconds 0 (last_tensor_bytes empty); and a
// stage with nothing to train and no gradient to pass back has no backward
// work (bwd_s 0, its group costs' too). Idempotent.
void drop_unneeded_gradients(Plan& plan);

// Stage costs.stage's codec work in `p`'s own costs, per micro-batch, into
// `costs` (a client group's costs on the device `p` was priced on).
void set_codec_seconds(PlanStageCosts& costs, const Plan& p);

// What mixed precision does to the activations a stage keeps and works on
// (the stash and working memory the Plan records are at the compute
// precision): half-precision (x0.5); 1 under "fp32".
double activation_memory_factor(const std::string& compute_precision);

// The most tensor memory a party running `stages` of `plan` holds: their
// peaks summed, but one working memory (the largest), since the party runs
// one backward at a time (a U-shape's client holds both of its stages'
// weights and stashes, never both backwards at once); or, if larger, one
// stage's optimizer step beside the other stages' stash.
int64_t party_peak_memory_bytes(const Plan& plan, const std::vector<int>& stages);

inline constexpr const char* kPlanSchema = "splitsim.plan/1";

// Everything the simulator and the metrics use, and the informational
// fields (units, MACs, memory, codecs). A stage's seconds in the file are
// its whole passes (forward_total / backward_total): what a reader of the
// file sees a stage cost; parse_plan takes the codec parts out again.
void to_json(nlohmann::json& j, const Plan& p);

// True when `j` is a plan document: an object whose "schema" is
// kPlanSchema, or a non-empty array whose first element is one.
bool is_plan_json(const nlohmann::json& j);
// Reads one plan object at JSON path `path`. Strict like the scenario
// parser: unknown keys, wrong types, negative or non-finite numbers,
// per-micro-batch lists whose length is not the micro-batch count, totals
// that disagree with their parts, boundaries that do not join stages k and
// k+1, another schema: InputError naming the JSON path
// ("$.stages[1].fwd_s_per_microbatch[0]"). Values only the table shows
// (units, MACs, memory) are optional. to_json(parse_plan(to_json(p))) ==
// to_json(p); the model seconds read back are p's, or where a pass's sum
// rounds, ones that sum to the same whole pass (they differ in the last bit).
Plan parse_plan(const nlohmann::json& j, const std::string& path = "$");
// One plan object, or an array of them (`splitsim plan --json` for several
// variants; paths "$[2].stages..."). Throws InputError.
std::vector<Plan> parse_plans(const nlohmann::json& j);
// Reads a plan file (bounded like every input file) and parses it. Throws
// InputError naming the file.
std::vector<Plan> load_plan_file(const std::string& file);
// A human table: stages, then boundaries.
void print_plan(std::ostream& os, const Plan& p);

}  // namespace splitsim
