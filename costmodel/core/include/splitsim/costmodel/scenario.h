#pragma once
// Scenario: one experiment, as read from a scenario JSON file (schema
// "splitsim.scenario/1", documented in scenarios/FORMAT.md).
// Parsing is strict: unknown keys, wrong types and out-of-range values throw
// InputError naming the JSON path and what is allowed. Checks that need the
// model's units (cut names, codec applicability) happen in make_plan().
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/schedule.h"

namespace splitsim {

struct Calibration;  // calibration.h

// How the model is fine-tuned (costmodel/README.md "Fine-tuning: LoRA and
// frozen units"). "full": every parameter trains (the default). "lora": the
// transformer's projections named in `targets` get adapters B·A of rank
// `rank`, scaled by alpha / rank, on dropout(x); every base weight is frozen
// but the last unit's (the task head). `frozen`: units (names, or prefixes
// ending a name part: "layer.0") whose parameters do not train.
struct FinetuneSpec {
  std::string method = "full";  // full | lora
  int64_t rank = 8;
  double alpha = 16;
  double dropout = 0.1;
  std::vector<std::string> targets = {"query", "value"};
  std::vector<std::string> frozen;
};
const std::vector<std::string>& lora_targets();  // query, key, value, dense, intermediate, output

struct ModelSpec {
  // mobilenet_v2 | mobilenet_v2_cifar | resnet20 | roberta_base | bert_small | llama |
  // torchscript
  std::string name;
  int64_t num_classes = 0;  // image classes / sequence labels (0 = model default)
  int64_t image_size = 0;   // image models: H = W (0 = model default)
  int64_t seq_len = 0;      // transformers (0 = model default), same for the rest
  int64_t hidden = 0, layers = 0, heads = 0, ffn = 0, vocab_size = 0, max_positions = 0;
  int64_t kv_heads = 0;              // llama: key/value heads (grouped-query attention)
  std::string path;                  // torchscript: the .pt file
  std::vector<int64_t> input_shape;  // torchscript: per-sample input shape
  std::string input_dtype = "float32";
  double dropout = -1;  // transformers: hidden and attention dropout (-1 = default 0.1)
  // torchscript: module paths to cut inside besides the containers
  // (costmodel/README.md "Bring your own model (TorchScript)").
  std::vector<std::string> split_inside;
  FinetuneSpec finetune;
};
std::vector<std::string> known_models();
// Fills every 0 field with the model's default (scenarios/FORMAT.md "Model"). Throws
// InputError at `path` for an unknown model or an option it does not take.
ModelSpec resolve_model_defaults(ModelSpec spec, const std::string& path);
// Per-sample input shape: [3,H,W] for images, [T] for token ids.
std::vector<int64_t> model_input_shape(const ModelSpec& spec);

struct PartSpec {
  std::string party;  // a key of Scenario::devices ("client", "server", "gpu0", ...)
  std::string from;   // first unit (inclusive)
  std::string to;     // last unit (inclusive)
};

struct BoundaryCodecs {
  CodecSpec forward;   // activation, from part i to part i+1
  CodecSpec backward;  // its gradient, back from part i+1 to part i
};

struct OptimizerSpec {
  std::string name = "sgd";  // sgd | adamw | adam
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
  double eps = 1e-8;  // adam / adamw: added to the second moment's root
  // Optimizer state per parameter, in parameter-sized copies (momentum: 1, adam: 2).
  int64_t state_copies() const;
  // Temporaries one step holds at once, in copies of the parameter tensor it
  // is updating (LibTorch's: adam's and adamw's root of the second moment
  // and its quotient; adam's weight decay and sgd's a decayed gradient).
  int64_t step_temporary_copies() const;
};

struct NetworkSpec {
  double bandwidth_bit_per_s = 1e9;     // both directions unless overridden
  double up_bandwidth_bit_per_s = 0;    // client->server (0 = bandwidth_bit_per_s)
  double down_bandwidth_bit_per_s = 0;  // server->client (0 = bandwidth_bit_per_s)
  double latency_s = 0.0;
  std::string bandwidth_trace;          // optional SimGrid profile file
  double per_message_overhead_s = 0.0;  // calibration knob (simulator)
  double bandwidth_factor = 1.0;        // calibration knob (simulator)
  // A token-bucket shaper's bucket (tc tbf's burst), per direction: after
  // the link has idled, up to this many bytes pass at once, the rest at the
  // rate. 0: a plain link, every byte at the rate.
  int64_t burst_bytes = 0;
  // How the bucket meets a packet larger than what it holds. 0: the packet
  // waits for the tokens (tc tbf, which cuts larger packets into frames), so
  // only the bytes the bucket holds pass at once. > 0: the largest packet
  // the shaper sends whole on credit (tc htb with TCP segmentation offload:
  // a GSO packet): a message goes as packets of this size, each one leaves
  // as soon as the bucket is out of debt, and the bucket may go into debt
  // by that packet. A message of one packet after an idle spell then
  // crosses at once, a longer one's last packet does.
  int64_t burst_packet_bytes = 0;
  // With burst_bytes and no packet size: the rate at which the bucket's
  // bytes pass (a shaper's peak rate, the wire under it); 0: at once.
  // `splitsim link-probe` measures it with the bucket (splitsim/costmodel/link_fit.h).
  double burst_peak_bit_per_s = 0;
  // The server's access link (scenarios/FORMAT.md "Clients"): every
  // client's flows to and from the parties other than the client role share
  // it, each direction at this rate. 0: no such link (each client is
  // limited by its own link only).
  double server_bandwidth_bit_per_s = 0;
  double server_latency_s = 0;  // added to every client's latency
  // Packets lost on the link, each direction (0 to 0.2). A TCP transfer
  // then loses tcp_loss_delay_s(bytes, this, loss_recovery_s) and moves at
  // most tcp_rate_under_loss(2 x its path's latency, this) (tcp_loss.h);
  // needs latency_s > 0.
  double loss_rate = 0;
  // Seconds one lost segment costs a connection on this link, as
  // `splitsim link-probe` measures it (0: tcp_loss_recovery_s's default
  // over the path's round trip); unused without loss.
  double loss_recovery_s = 0;
};

// A value per client: fixed, listed (one per client of the group), or drawn
// for each client from a distribution (with the scenario's seed).
struct DrawnValue {
  std::string distribution;  // "" (fixed: value; or values), "uniform" (min, max),
                             // "lognormal" (median, sigma)
  double value = 0, min = 0, max = 0, median = 0, sigma = 0;
  std::vector<double> values;  // listed: one per client
};

// A group of clients that share a device and an access link's figures
// ("clients": [{"count": 80, "device": ..., "bandwidth_bit_per_s": ...}]).
struct ClientGroupSpec {
  std::string name;
  int64_t count = 1;
  std::string device;  // "": the client role's device in "devices"
  bool has_bandwidth = false, has_latency = false;
  DrawnValue bandwidth_bit_per_s;  // both directions of each client's link
  DrawnValue latency_s;
};
// The key under which a group's device profile is looked up in make_plan's
// devices map (beside the parties').
std::string client_group_device_key(const ClientGroupSpec& group);

// One party's own host work per byte, on top of the platform's.
struct PartyHostWork {
  double cpu_s_per_byte_sent = 0.0;
  double cpu_s_per_byte_received = 0.0;
};

// One point of a machine's wake cost: a computation that starts `gap_s`
// after its party's previous computation ended takes `seconds` longer than
// the profile's back-to-back timing (the core comes back cold from the
// wait; exec/validate/README.md "Idle cores").
struct WakePoint {
  double gap_s = 0;
  double seconds = 0;
};

// What the machines running the parties add to the model's compute and the
// link's bytes (scenarios/FORMAT.md "Platform"; sim/README.md "Host work").
struct PlatformSpec {
  // CPU seconds a party spends per byte it sends / receives over the network
  // (kernel network stack, copies, the received tensor's allocation), on its
  // own processor while the transfer runs: it competes with the party's
  // compute. 0: free.
  double cpu_s_per_byte_sent = 0.0;
  double cpu_s_per_byte_received = 0.0;
  // By the Plan's party name: added to the two above for that party (a
  // host that copies or serializes more, e.g. fitted by calibrate).
  std::map<std::string, PartyHostWork> parties;
  // CPU seconds a party spends per message (one tensor on the wire) it sends
  // / per transfer it receives, on top of the per-byte work: the transport's
  // fixed cost (the send call, posting a receive, a thread hand-off), paid
  // by the stage between its computations (sim/README.md "Host work").
  double cpu_s_per_message_sent = 0.0;
  double cpu_s_per_message_received = 0.0;
  // The seconds `party` spends per byte it sends / receives.
  double sent_s_per_byte(const std::string& party) const;
  double received_s_per_byte(const std::string& party) const;
  // The parties run on one machine (each pinned to its own cores): while
  // two of them compute at once, each computes `co_compute_slowdown` times
  // slower (shared caches, memory bandwidth). Ignored unless shared_machine.
  bool shared_machine = false;
  double co_compute_slowdown = 1.0;
  // The seconds a computation pays after a wait, by the wait's length:
  // points with increasing gaps, linear between them and from (0, 0) to the
  // first, the last one's seconds past it. Empty: none.
  std::vector<WakePoint> wake_cost;
  double wake_cost_s(double gap_s) const;
  bool any() const;
};

struct Scenario {
  std::string name;
  std::string description;
  ModelSpec model;
  int64_t batch_size = 1;
  std::string precision = "fp32";  // fp32 | fp16 | bf16 (activations on the wire)
  // fp32 | fp16 | bf16: what the devices compute in (fp16 and bf16 mixed:
  // FP32 master weights beside half-precision copies).
  std::string compute_precision = "fp32";
  // exec multiplies the loss by it before the backward and divides every
  // gradient by it before the update, which a non-finite gradient skips
  // (fp16's small range: gradients that would underflow stay representable).
  // 0: effective_loss_scale()'s default.
  double loss_scale = 0;
  std::vector<PartSpec> partition;          // >= 2 parts, in model order
  std::vector<BoundaryCodecs> compression;  // one per boundary (partition.size()-1)
  int64_t chunks = 1;
  Schedule schedule = Schedule::kSequential;
  // interleaved_1f1b: stages per party; 0: the partition's
  // (virtual_stages_of, schedule.h).
  int64_t virtual_stages = 0;
  OptimizerSpec optimizer;
  std::map<std::string, std::string> devices;  // party -> device profile name or file
  NetworkSpec network;
  PlatformSpec platform;
  int64_t iterations = 20;                     // batches to run / simulate
  int64_t warmup = 2;                          // first batches left out of steady state
  int64_t clients = 1;                         // with groups: their counts' sum
  std::vector<ClientGroupSpec> client_groups;  // "clients" as a list; empty: all alike
  // How the clients train together (training_mode_names(); scenarios/FORMAT.md
  // "Training modes"): "unsynchronised" (each on its own), "vanilla" (one
  // after the other, the client part handed on), "splitfed_v1" / "splitfed_v2"
  // (in parallel, the client parts averaged every `aggregate_every` batches).
  std::string training = "unsynchronised";
  int64_t aggregate_every = 1;
  std::string dataset = "synthetic";           // synthetic | fashion_mnist | cifar10
  uint64_t seed = 0;
  // "calibration": a splitsim.calibration/1 file, relative to the scenario
  // file (to the working directory for expand_scenario), that make_plan
  // applies to every plan. Loaded with the scenario (load_scenario_file,
  // expand_scenario); parse_scenario only reads the name.
  std::string calibration_file;
  std::shared_ptr<const Calibration> calibration;
  // A command's --calibration (simulate, explore, validate): make_plan
  // applies it after `calibration`, to the plan and to each client group's
  // own costs alike. Calibration enters a plan only through make_plan (and,
  // for a plan file, its loader).
  std::shared_ptr<const Calibration> command_calibration;

  // loss_scale, or by default 128 under fp16 compute (fairseq's initial
  // scale) and 1 otherwise (bf16 has FP32's range).
  double effective_loss_scale() const {
    if (loss_scale > 0) return loss_scale;
    return compute_precision == "fp16" ? 128.0 : 1.0;
  }
};

// The training modes' names, "unsynchronised" first (the default).
const std::vector<std::string>& training_mode_names();

// One point of a scenario's sweep. `label` is "base" without a sweep, else
// "chunks=4 compression=conv32" (the axes that vary, in file order).
struct ScenarioVariant {
  std::string label;
  Scenario scenario;
  nlohmann::json json;  // the scenario with the sweep applied (no "sweep" key)
};

// What a command needs of a scenario.
enum class ScenarioNeeds {
  kPlan,   // a Plan: "partition" and "devices" are required
  kModel,  // the model before any decision (plan --list-cuts and --units,
           // explore): "partition", "compression" and "devices" may be
           // missing (then empty); what is there is read as for kPlan
};

// Parses one scenario object (no "sweep"). Throws InputError.
Scenario parse_scenario(const nlohmann::json& j, ScenarioNeeds needs = ScenarioNeeds::kPlan);
// Expands the optional "sweep" section into the cartesian product of its
// axes and parses every variant. Throws InputError.
std::vector<ScenarioVariant> expand_scenario(const nlohmann::json& j,
                                             ScenarioNeeds needs = ScenarioNeeds::kPlan);
// Scenario JSON text and where it stands: what a scenario file holds, or what
// a front end without a file (the Python package) hands over.
struct ScenarioSource {
  std::string text;  // the JSON
  std::string dir;   // relative paths in it (calibration, TorchScript file, devices/) start here
  std::string name;  // named in errors ("[in NAME]"): the file, or "<dict>"
};
// Reads and expands a scenario file. Throws InputError naming the file.
std::vector<ScenarioVariant> load_scenario_file(const std::string& file,
                                                ScenarioNeeds needs = ScenarioNeeds::kPlan);
// The same for a source: the sweep's axes in the text's order. Throws
// InputError naming source.name.
std::vector<ScenarioVariant> load_scenario_source(const ScenarioSource& source,
                                                  ScenarioNeeds needs = ScenarioNeeds::kPlan);
// A scenario file as a source: its text, its directory and its name.
ScenarioSource read_scenario_source(const std::string& file);

// The first labels (a dozen at most), quoted and comma-separated, then how
// many more there are: "\"a\", \"b\" and 30 more".
std::string quote_labels(const std::vector<std::string>& labels);
// The error for a --variant `filter` that no label contains, quoting the labels.
InputError no_variant_matches(const std::string& filter, const std::vector<std::string>& labels);

}  // namespace splitsim
