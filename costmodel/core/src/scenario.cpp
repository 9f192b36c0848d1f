// Strict parsing of one scenario object (schema "splitsim.scenario/1", see
// scenarios/FORMAT.md). The sweep section is expanded in scenario_sweep.cpp.
#include "splitsim/costmodel/scenario.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "json_read.h"
#include "scenario_internal.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"

namespace splitsim {
namespace {

namespace jr = json_read;
using nlohmann::json;

const std::vector<std::string> kOptimizerKeys = {"name", "lr", "momentum", "weight_decay", "eps"};
const std::vector<std::string> kNetworkKeys = {"bandwidth_bit_per_s",
                                               "up_bandwidth_bit_per_s",
                                               "down_bandwidth_bit_per_s",
                                               "latency_s",
                                               "bandwidth_trace",
                                               "per_message_overhead_s",
                                               "bandwidth_factor",
                                               "burst_bytes",
                                               "burst_packet_bytes",
                                               "server_bandwidth_bit_per_s",
                                               "server_latency_s",
                                               "burst_peak_bit_per_s",
                                               "loss_rate",
                                               "loss_recovery_s"};
const std::vector<std::string> kPartKeys = {"party", "from", "to"};
const std::vector<std::string> kCompressionEntryKeys = {"forward", "backward"};
const std::vector<std::string> kPrecisions = {"fp32", "fp16", "bf16"};
const std::vector<std::string> kOptimizers = {"sgd", "adam", "adamw"};
const std::vector<std::string> kDatasets = {"synthetic", "fashion_mnist", "cifar10"};

// A device is a profile name (scenarios/devices/<name>.json) or a .json path.
std::map<std::string, std::string> parse_devices(const json& j, const std::string& path) {
  jr::require_object(j, path,
                     "an object mapping each party to a device, such as "
                     "{\"client\": \"xeon_40core\", \"server\": \"gtx1080\"}");
  if (j.empty()) throw InputError(path, "no parties; map each party of the partition to a device");
  std::map<std::string, std::string> devices;
  for (const auto& item : j.items()) {
    const std::string where = jr::member_path(path, item.key());
    if (item.key().empty()) throw InputError(where, "empty party name");
    const std::string device = jr::read_string(item.value(), where);
    const bool is_file = device.size() > 5 && device.substr(device.size() - 5) == ".json";
    if (!is_file && device.find('/') != std::string::npos) {
      throw InputError(where, "\"" + device +
                                  "\" is neither a device profile name nor a "
                                  "path ending in .json");
    }
    devices[item.key()] = device;
  }
  return devices;
}

std::vector<PartSpec> parse_partition(const json& j, const std::string& path,
                                      const std::map<std::string, std::string>& devices) {
  jr::require_array(j, path,
                    "a list of at least 2 parts such as {\"party\": \"client\", \"from\": "
                    "\"conv1\", \"to\": \"layer1.0\"}",
                    2);
  std::vector<std::string> parties;
  for (const auto& [party, device] : devices) parties.push_back(party);
  std::vector<PartSpec> parts;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = jr::index_path(path, i);
    const json& p = j[i];
    jr::require_object(p, where, "a part {\"party\": ..., \"from\": ..., \"to\": ...}");
    jr::check_keys(p, where, kPartKeys);
    PartSpec part;
    for (const char* key : {"party", "from", "to"}) {
      jr::require_key(
          p, where, key,
          key == std::string("party") ? "a key of \"devices\"" : "a unit name of the model");
    }
    part.party = jr::read_string(p.at("party"), where + ".party");
    part.from = jr::read_string(p.at("from"), where + ".from");
    part.to = jr::read_string(p.at("to"), where + ".to");
    if (devices.count(part.party) == 0) {
      throw InputError(where + ".party",
                       "party \"" + part.party + "\" has no device; \"devices\" maps: " +
                           jr::join(parties) + "; add \"" + part.party + "\": \"<device>\" there" +
                           jr::did_you_mean(part.party, parties));
    }
    parts.push_back(part);
  }
  return parts;
}

bool is_trainable_insert(CodecMethod m) {
  return m == CodecMethod::kConvInsert || m == CodecMethod::kLinearInsert ||
         m == CodecMethod::kDecayingLinear;
}

// One {forward, backward} entry per boundary; absent: none both ways.
std::vector<BoundaryCodecs> parse_compression(const json* j, const std::string& path,
                                              size_t parts) {
  const size_t boundaries = parts - 1;
  if (j == nullptr) return std::vector<BoundaryCodecs>(boundaries);
  const std::string expected =
      "a list with one {\"forward\": ..., \"backward\": ...} entry per "
      "boundary";
  jr::require_array(*j, path, expected);
  if (j->size() != boundaries) {
    throw InputError(path, "has " + std::to_string(j->size()) + " entries but the partition has " +
                               std::to_string(parts) + " parts, so " + std::to_string(boundaries) +
                               (boundaries == 1 ? " boundary" : " boundaries") + "; expected " +
                               expected);
  }
  std::vector<BoundaryCodecs> out;
  for (size_t i = 0; i < j->size(); ++i) {
    const std::string where = jr::index_path(path, i);
    const json& b = (*j)[i];
    jr::require_object(b, where, "a boundary {\"forward\": {...}, \"backward\": {...}}");
    jr::check_keys(b, where, kCompressionEntryKeys);
    BoundaryCodecs codecs;
    if (b.contains("forward")) codecs.forward = parse_codec(b.at("forward"), where + ".forward");
    if (b.contains("backward")) {
      codecs.backward = parse_codec(b.at("backward"), where + ".backward");
      if (is_trainable_insert(codecs.backward.method)) {
        throw InputError(where + ".backward.method",
                         std::string(method_name(codecs.backward.method)) +
                             " is a trainable insert: it compresses the forward activation "
                             "and its gradient comes back in the reduced shape, so it cannot "
                             "be a backward method; use it under \"forward\", or on the "
                             "gradient use none, fp16, bf16, power_iteration, quantize or topk");
      }
    }
    out.push_back(codecs);
  }
  return out;
}

OptimizerSpec parse_optimizer(const json& j, const std::string& path) {
  jr::require_object(j, path, "an optimizer object such as {\"name\": \"sgd\", \"lr\": 0.01}");
  jr::check_keys(j, path, kOptimizerKeys);
  OptimizerSpec o;
  if (j.contains("name"))
    o.name = jr::read_choice(j.at("name"), path + ".name", "optimizer", kOptimizers);
  if (j.contains("lr")) o.lr = jr::read_number(j.at("lr"), path + ".lr", jr::positive());
  if (j.contains("momentum")) {
    o.momentum = jr::read_number(j.at("momentum"), path + ".momentum", {0, false, 1, true});
    if (o.name != "sgd" && o.momentum != 0) {
      throw InputError(path + ".momentum", "momentum applies to sgd only; " + o.name +
                                               " keeps its own moment estimates (remove the key)");
    }
  }
  if (j.contains("weight_decay")) {
    o.weight_decay =
        jr::read_number(j.at("weight_decay"), path + ".weight_decay", jr::non_negative());
  }
  if (j.contains("eps")) {
    o.eps = jr::read_number(j.at("eps"), path + ".eps", {0, true, 1, false});
    if (o.name == "sgd")
      throw InputError(path + ".eps",
                       "eps applies to adam and adamw; sgd has none (remove the key)");
  }
  return o;
}

// iterations x chunks x clients x stages within limits::kMaxStagePasses.
void check_passes(const Scenario& s, const json& j) {
  // Each factor is bounded (the partition by the file size): no overflow.
  const int64_t stages = static_cast<int64_t>(s.partition.size());
  const int64_t passes = s.iterations * s.chunks * s.clients * stages;
  if (passes <= limits::kMaxStagePasses) return;
  const std::string where = j.contains("iterations") ? "$.iterations"
                            : j.contains("clients")  ? "$.clients"
                                                     : "$.chunks";
  throw InputError(
      where, "iterations x chunks x clients x stages = " + std::to_string(s.iterations) + " x " +
                 std::to_string(s.chunks) + " x " + std::to_string(s.clients) + " x " +
                 std::to_string(stages) + " = " + std::to_string(passes) +
                 " stage passes to simulate; the limit is " +
                 std::to_string(limits::kMaxStagePasses));
}

}  // namespace

namespace scenario_internal {

NetworkSpec parse_network(const json& j, const std::string& path) {
  jr::require_object(j, path,
                     "a network object such as {\"bandwidth_bit_per_s\": 1e9, "
                     "\"latency_s\": 0.0001}");
  jr::check_keys(j, path, kNetworkKeys);
  NetworkSpec n;
  const jr::NumberRange kBandwidth = {limits::kMinBandwidthBitPerS, false,
                                      limits::kMaxBandwidthBitPerS, false};
  struct NumberKey {
    const char* key;
    double* field;
    jr::NumberRange range;
  };
  const NumberKey numbers[] = {
      {"bandwidth_bit_per_s", &n.bandwidth_bit_per_s, kBandwidth},
      {"up_bandwidth_bit_per_s", &n.up_bandwidth_bit_per_s, kBandwidth},
      {"down_bandwidth_bit_per_s", &n.down_bandwidth_bit_per_s, kBandwidth},
      {"latency_s", &n.latency_s, {0, false, limits::kMaxLatencyS, false}},
      {"per_message_overhead_s", &n.per_message_overhead_s, {0, false, limits::kMaxOverheadS}},
      {"bandwidth_factor", &n.bandwidth_factor, {limits::kMinBandwidthFactor, false, 1, false}},
      {"server_bandwidth_bit_per_s", &n.server_bandwidth_bit_per_s, kBandwidth},
      {"server_latency_s", &n.server_latency_s, {0, false, limits::kMaxLatencyS, false}},
      {"burst_peak_bit_per_s",
       &n.burst_peak_bit_per_s,
       {0, false, limits::kMaxBandwidthBitPerS, false}},
      {"loss_rate", &n.loss_rate, {0, false, limits::kMaxLossRate, false}},
      {"loss_recovery_s", &n.loss_recovery_s, {0, false, limits::kMaxLossRecoveryS, false}},
  };
  for (const NumberKey& k : numbers) {
    if (j.contains(k.key)) *k.field = jr::read_number(j.at(k.key), path + "." + k.key, k.range);
  }
  if (j.contains("bandwidth_trace")) {
    n.bandwidth_trace = jr::read_string(j.at("bandwidth_trace"), path + ".bandwidth_trace");
  }
  if (n.loss_rate > 0 && !(n.latency_s > 0))
    throw InputError(path + ".loss_rate",
                     "needs latency_s > 0: TCP's rate under loss depends on the round trip "
                     "(sim/README.md \"Lossy links\")");
  if (j.contains("burst_bytes"))
    n.burst_bytes =
        jr::read_int(j.at("burst_bytes"), path + ".burst_bytes", 0, limits::kMaxPlanBytes);
  if (j.contains("burst_packet_bytes"))
    n.burst_packet_bytes = jr::read_int(j.at("burst_packet_bytes"), path + ".burst_packet_bytes", 0,
                                        limits::kMaxPlanBytes);
  return n;
}

void check_schema(const json& j) {
  jr::require_object(j, "$", "a scenario object");
  jr::require_key(j, "$", "schema", std::string("\"") + kSchema + "\"");
  if (j.at("schema") != kSchema) {
    throw InputError("$.schema", "unsupported schema " + jr::show(j.at("schema")) +
                                     "; this version reads \"" + kSchema + "\"");
  }
}

const std::vector<std::string>& top_level_keys() {
  // clang-format off
  static const std::vector<std::string> kKeys = {
      "schema", "name", "description", "model", "batch_size", "precision", "compute_precision",
      "loss_scale", "partition", "compression", "chunks", "schedule", "virtual_stages",
      "optimizer", "devices",
      "network", "platform", "iterations", "warmup", "clients", "training", "aggregate_every",
      "dataset", "seed", "calibration"};
  // clang-format on
  return kKeys;
}

const std::vector<std::string>* nested_keys(const std::string& object) {
  if (object == "model") return &model_keys();
  if (object == "optimizer") return &kOptimizerKeys;
  if (object == "network") return &kNetworkKeys;
  if (object == "platform") return &platform_keys();
  return nullptr;
}

}  // namespace scenario_internal

int64_t OptimizerSpec::state_copies() const {
  if (name == "adam" || name == "adamw") return 2;
  return momentum > 0 ? 1 : 0;
}

int64_t OptimizerSpec::step_temporary_copies() const {
  const int64_t decay = weight_decay > 0 ? 1 : 0;
  if (name == "adamw") return 2;  // its decay scales the weights in place
  if (name == "adam") return 2 + decay;
  return decay;
}

Scenario parse_scenario(const json& j, ScenarioNeeds needs) {
  scenario_internal::check_schema(j);
  if (j.contains("sweep")) {
    throw InputError("$.sweep",
                     "a sweep is expanded by expand_scenario / load_scenario_file; "
                     "parse_scenario reads one variant");
  }
  jr::check_keys(j, "$", scenario_internal::top_level_keys());
  jr::require_key(j, "$", "name", "a string naming the scenario");
  jr::require_key(j, "$", "model", "a model object such as {\"name\": \"resnet20\"}");
  jr::require_key(j, "$", "batch_size", "a positive integer");
  const bool plan = needs == ScenarioNeeds::kPlan;
  if (plan) {
    jr::require_key(j, "$", "partition", "a list of at least 2 parts");
    jr::require_key(j, "$", "devices", "an object mapping each party to a device");
  }

  Scenario s;
  s.name = jr::read_string(j.at("name"), "$.name");
  if (j.contains("description")) {
    s.description = jr::read_string(j.at("description"), "$.description", true);
  }
  s.model = scenario_internal::parse_model(j.at("model"), "$.model");
  s.batch_size = jr::read_int(j.at("batch_size"), "$.batch_size", 1, limits::kMaxBatchSize);
  if (j.contains("compute_precision")) {
    s.compute_precision = jr::read_choice(j.at("compute_precision"), "$.compute_precision",
                                          "compute precision", kPrecisions);
  }
  if (j.contains("loss_scale")) {
    s.loss_scale = jr::read_number(j.at("loss_scale"), "$.loss_scale",
                                   {0, true, std::numeric_limits<float>::max(), false});
  }
  if (j.contains("precision")) {
    s.precision = jr::read_choice(j.at("precision"), "$.precision", "precision", kPrecisions);
  }
  if (j.contains("devices")) s.devices = parse_devices(j.at("devices"), "$.devices");
  if (j.contains("partition")) {
    s.partition = parse_partition(j.at("partition"), "$.partition", s.devices);
    s.compression = parse_compression(j.contains("compression") ? &j.at("compression") : nullptr,
                                      "$.compression", s.partition.size());
  }
  if (j.contains("chunks")) {
    s.chunks = jr::read_int(j.at("chunks"), "$.chunks", 1, limits::kMaxChunks);
    if (s.chunks > s.batch_size) {
      throw InputError("$.chunks", "chunks " + std::to_string(s.chunks) + " > batch_size " +
                                       std::to_string(s.batch_size) +
                                       "; every micro-batch needs a sample, so allowed: 1 to " +
                                       std::to_string(s.batch_size));
    }
  }
  if (j.contains("schedule")) {
    const std::string name =
        jr::read_choice(j.at("schedule"), "$.schedule", "schedule", schedule_names());
    schedule_from_name(name, &s.schedule);  // read_choice refused any other name
  }
  if (j.contains("virtual_stages"))
    s.virtual_stages = jr::read_int(j.at("virtual_stages"), "$.virtual_stages", 2, 1024);
  if (j.contains("optimizer")) s.optimizer = parse_optimizer(j.at("optimizer"), "$.optimizer");
  if (j.contains("calibration"))
    s.calibration_file = jr::read_string(j.at("calibration"), "$.calibration");
  if (j.contains("network"))
    s.network = scenario_internal::parse_network(j.at("network"), "$.network");
  if (j.contains("platform"))
    s.platform = scenario_internal::parse_platform(j.at("platform"), "$.platform");
  if (j.contains("iterations")) {
    s.iterations = jr::read_int(j.at("iterations"), "$.iterations", 1, limits::kMaxIterations);
  }
  if (j.contains("warmup")) s.warmup = jr::read_int(j.at("warmup"), "$.warmup", 0);
  if (s.warmup >= s.iterations) {
    throw InputError(j.contains("warmup") ? "$.warmup" : "$.iterations",
                     "warmup " + std::to_string(s.warmup) + " leaves no measured batch of " +
                         std::to_string(s.iterations) + " iterations; allowed: warmup < " +
                         "iterations");
  }
  if (j.contains("clients"))
    s.client_groups = scenario_internal::parse_clients(j.at("clients"), &s.clients);
  if (j.contains("training"))
    s.training =
        jr::read_choice(j.at("training"), "$.training", "training mode", training_mode_names());
  if (s.training != "unsynchronised" && !is_synchronous(s.schedule))
    throw InputError("$.training", "training " + s.training +
                                       " takes rounds between batches: a schedule that ends each "
                                       "batch before the next (sequential, gpipe, 1f1b, zb_h1, "
                                       "interleaved_1f1b), not " +
                                       schedule_name(s.schedule));
  if (j.contains("aggregate_every"))
    s.aggregate_every =
        jr::read_int(j.at("aggregate_every"), "$.aggregate_every", 1, limits::kMaxIterations);
  check_passes(s, j);
  if (j.contains("dataset")) {
    s.dataset = jr::read_choice(j.at("dataset"), "$.dataset", "dataset", kDatasets);
  }
  if (j.contains("seed")) s.seed = static_cast<uint64_t>(jr::read_int(j.at("seed"), "$.seed", 0));
  return s;
}

const std::vector<std::string>& training_mode_names() {
  static const std::vector<std::string> kNames = {"unsynchronised", "vanilla", "splitfed_v1",
                                                  "splitfed_v2"};
  return kNames;
}

}  // namespace splitsim
