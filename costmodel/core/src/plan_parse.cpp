// Strict reading of plan files (schema "splitsim.plan/1", what `splitsim plan
// --json` writes; costmodel/README.md "Plan files"). Every value the
// simulator uses is required; the informational ones (units, MACs, memory)
// are optional, and the totals that repeat per-micro-batch values must agree
// with them.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "json_read.h"
#include "plan_fields.h"
#include "scenario_internal.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/input_file.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/costmodel/plan.h"

namespace splitsim {
namespace {

namespace jr = json_read;
using nlohmann::json;
using namespace plan_fields;  // NOLINT: the plan's value readers

const std::vector<std::string> kTopKeys = {
    "schema",           "scenario", "variant", "model",        "batch_size", "chunks",
    "microbatch_sizes", "schedule", "stages",  "boundaries",   "network",    "platform",
    "iterations",       "warmup",   "clients", "client_groups", "compute_precision"};
const std::vector<std::string> kGroupKeys = {
    "name", "device", "count", "bandwidth_bit_per_s", "latency_s", "stage_costs"};
const std::vector<std::string> kStageCostKeys = {"stage", "fwd_s_per_microbatch",
                                                 "bwd_s_per_microbatch", "update_s_per_batch"};
const std::vector<std::string> kStageKeys = {"name",
                                             "party",
                                             "device",
                                             "units",
                                             "fwd_macs_per_batch",
                                             "bwd_macs_per_batch",
                                             "fwd_work_per_batch",
                                             "bwd_work_per_batch",
                                             "param_count",
                                             "param_bytes",
                                             "trainable_param_count",
                                             "trainable_param_bytes",
                                             "optimizer_state_bytes",
                                             "stash_bytes_per_microbatch",
                                             "stashed_microbatches",
                                             "weight_versions",
                                             "replay_bytes",
                                             "work_bytes",
                                             "input_bytes",
                                             "recv_bytes",
                                             "step_bytes",
                                             "peak_memory_bytes",
                                             "fwd_s_per_microbatch",
                                             "bwd_s_per_microbatch",
                                             "fwd_s_per_batch",
                                             "bwd_s_per_batch",
                                             "update_s_per_batch",
                                             "timed_from",
                                             "fwd_op_class_shares_per_microbatch",
                                             "bwd_op_class_shares_per_microbatch"};
const std::vector<std::string> kPlanBoundaryKeys = {"from_stage", "to_stage", "activation_shape",
                                                "forward", "backward"};
const std::vector<std::string> kTransferKeys = {"method",
                                                "codec",
                                                "description",
                                                "carried_shape_per_sample",
                                                "wire_bytes_per_batch",
                                                "wire_bytes_per_microbatch",
                                                "wire_messages_per_microbatch",
                                                "encode_s_per_microbatch",
                                                "decode_s_per_microbatch",
                                                "encode_s_per_batch",
                                                "decode_s_per_batch"};
// One of "client_groups": its per-client lists have `count` entries, its
// stage costs name stages of the client role (`client_party`), once each.
PlanClientGroup read_group(const json& j, const std::string& path, const Plan& p,
                           const std::string& client_party) {
  jr::require_object(j, path, "a client group such as {\"name\": \"g0\", \"count\": 3, ...}");
  jr::check_keys(j, path, kGroupKeys);
  for (const char* key : {"name", "count"}) jr::require_key(j, path, key, "see the plan format");
  PlanClientGroup g;
  g.name = jr::read_string(j.at("name"), path + ".name");
  if (j.contains("device")) g.device = jr::read_string(j.at("device"), path + ".device", true);
  g.count = jr::read_int(j.at("count"), path + ".count", 1, limits::kMaxClients);
  const auto per_client = [&](const char* key, const jr::NumberRange& range) {
    std::vector<double> v;
    if (!j.contains(key)) return v;
    const std::string at = jr::member_path(path, key);
    v = read_list<double>(
        j.at(key), at, "a list with one number per client of the group",
        [&](const json& x, const std::string& a) { return jr::read_number(x, a, range); });
    if (static_cast<int64_t>(v.size()) != g.count)
      throw InputError(at, "has " + std::to_string(v.size()) +
                               " entries; expected one per client (" + std::to_string(g.count) +
                               ")");
    return v;
  };
  g.bandwidth_bit_per_s = per_client("bandwidth_bit_per_s", {limits::kMinBandwidthBitPerS, false,
                                                             limits::kMaxBandwidthBitPerS, false});
  g.latency_s = per_client("latency_s", {0, false, limits::kMaxLatencyS, false});
  if (j.contains("stage_costs")) {
    const std::string at = path + ".stage_costs";
    jr::require_array(j.at("stage_costs"), at, "a list of stage costs");
    const size_t m = p.microbatch_sizes.size();
    for (size_t i = 0; i < j.at("stage_costs").size(); ++i) {
      const json& c = j.at("stage_costs")[i];
      const std::string ci = jr::index_path(at, i);
      jr::require_object(c, ci, "{\"stage\": k, \"fwd_s_per_microbatch\": [...], ...}");
      jr::check_keys(c, ci, kStageCostKeys);
      for (const std::string& key : kStageCostKeys)
        jr::require_key(c, ci, key.c_str(), "see the plan format");
      PlanStageCosts sc;
      sc.stage = static_cast<int>(
          jr::read_int(c.at("stage"), ci + ".stage", 0, static_cast<int64_t>(p.stages.size()) - 1));
      if (p.stages[static_cast<size_t>(sc.stage)].party != client_party)
        throw InputError(ci + ".stage", "stage " + std::to_string(sc.stage) +
                                            " is not the client role's (\"" + client_party + "\")");
      for (const PlanStageCosts& other : g.stage_costs)
        if (other.stage == sc.stage)
          throw InputError(ci + ".stage", "stage " + std::to_string(sc.stage) + " appears twice");
      sc.fwd_s = per_microbatch<double>(c, ci, "fwd_s_per_microbatch", m, read_seconds);
      sc.bwd_s = per_microbatch<double>(c, ci, "bwd_s_per_microbatch", m, read_seconds);
      sc.update_s = read_seconds(c.at("update_s_per_batch"), ci + ".update_s_per_batch");
      g.stage_costs.push_back(sc);
    }
  }
  return g;
}

PlanStage read_stage(const json& j, const std::string& path, size_t k, size_t m) {
  jr::require_object(j, path, "a stage object such as {\"party\": \"client\", ...}");
  jr::check_keys(j, path, kStageKeys);
  for (const char* key :
       {"party", "fwd_s_per_microbatch", "bwd_s_per_microbatch", "update_s_per_batch"})
    jr::require_key(j, path, key,
                    std::string(key) == "party" ? "the party running the stage" : "seconds");
  PlanStage s;
  s.name = j.contains("name") ? jr::read_string(j.at("name"), path + ".name")
                              : "stage" + std::to_string(k);
  s.party = jr::read_string(j.at("party"), path + ".party");
  if (j.contains("device")) s.device = jr::read_string(j.at("device"), path + ".device", true);
  if (j.contains("units"))
    s.units = read_list<std::string>(
        j.at("units"), path + ".units", "a list of unit names",
        [](const json& v, const std::string& p) { return jr::read_string(v, p); });
  if (j.contains("fwd_work_per_batch"))
    s.fwd_per_batch = read_work(j.at("fwd_work_per_batch"), path + ".fwd_work_per_batch");
  if (j.contains("bwd_work_per_batch"))
    s.bwd_per_batch = read_work(j.at("bwd_work_per_batch"), path + ".bwd_work_per_batch");
  check_count_total(j, path, "fwd_macs_per_batch", s.fwd_per_batch.macs(), "fwd_work_per_batch");
  check_count_total(j, path, "bwd_macs_per_batch", s.bwd_per_batch.macs(), "bwd_work_per_batch");
  struct CountKey {
    const char* key;
    int64_t* field;
  };
  const CountKey counts[] = {{"param_count", &s.param_count},
                             {"param_bytes", &s.param_bytes},
                             {"optimizer_state_bytes", &s.optimizer_state_bytes},
                             {"stash_bytes_per_microbatch", &s.stash_bytes_per_microbatch},
                             {"stashed_microbatches", &s.stashed_microbatches},
                             {"replay_bytes", &s.replay_bytes},
                             {"work_bytes", &s.work_bytes},
                             {"input_bytes", &s.input_bytes},
                             {"recv_bytes", &s.recv_bytes},
                             {"step_bytes", &s.step_bytes},
                             {"peak_memory_bytes", &s.peak_memory_bytes}};
  for (const CountKey& c : counts)
    if (j.contains(c.key)) *c.field = read_count(j.at(c.key), jr::member_path(path, c.key));
  // Plan files written before fine-tuning existed: everything trained.
  int64_t trainable_count = s.param_count, trainable_bytes = s.param_bytes;
  for (const CountKey& c : {CountKey{"trainable_param_count", &trainable_count},
                            CountKey{"trainable_param_bytes", &trainable_bytes}})
    if (j.contains(c.key)) *c.field = read_count(j.at(c.key), jr::member_path(path, c.key));
  s.frozen_param_count = std::max<int64_t>(0, s.param_count - trainable_count);
  s.frozen_param_bytes = std::max<int64_t>(0, s.param_bytes - trainable_bytes);
  if (j.contains("weight_versions"))
    s.weight_versions =
        jr::read_int(j.at("weight_versions"), path + ".weight_versions", 1, limits::kMaxPlanBytes);
  s.fwd_s = per_microbatch<double>(j, path, "fwd_s_per_microbatch", m, read_seconds);
  s.bwd_s = per_microbatch<double>(j, path, "bwd_s_per_microbatch", m, read_seconds);
  check_seconds_total(j, path, "fwd_s_per_batch", s.fwd_s);
  check_seconds_total(j, path, "bwd_s_per_batch", s.bwd_s);
  s.update_s = read_seconds(j.at("update_s_per_batch"), path + ".update_s_per_batch");
  for (const bool backward : {false, true}) {
    const char* key =
        backward ? "bwd_op_class_shares_per_microbatch" : "fwd_op_class_shares_per_microbatch";
    if (j.contains(key))
      (backward ? s.bwd_op_class_shares : s.fwd_op_class_shares) =
          per_microbatch<OpClassParts>(j, path, key, m, read_op_class_shares);
  }
  if (j.contains("timed_from"))
    s.timed_from_measurement =
        jr::read_choice(j.at("timed_from"), path + ".timed_from", "timing source",
                        {"measured", "formula"}) == "measured";
  return s;
}

PlanTransfer read_transfer(const json& j, const std::string& path, size_t m) {
  jr::require_object(j, path,
                     "a transfer object such as {\"wire_bytes_per_microbatch\": [...], ...}");
  jr::check_keys(j, path, kTransferKeys);
  for (const char* key :
       {"wire_bytes_per_microbatch", "encode_s_per_microbatch", "decode_s_per_microbatch"})
    jr::require_key(j, path, key, "a list with one entry per micro-batch");
  PlanTransfer t;
  if (j.contains("codec")) t.codec = parse_codec(j.at("codec"), path + ".codec");
  if (j.contains("method")) {
    const std::string method = jr::read_string(j.at("method"), path + ".method");
    if (method != method_name(t.codec.method))
      throw InputError(path + ".method", "is \"" + method + "\" but the codec's method is \"" +
                                             method_name(t.codec.method) +
                                             "\"; give the same in both, or leave this out");
  }
  if (j.contains("description"))  // informational: describe(codec), not read back
    jr::read_string(j.at("description"), path + ".description", true);
  if (j.contains("carried_shape_per_sample"))
    t.carried_shape =
        read_shape(j.at("carried_shape_per_sample"), path + ".carried_shape_per_sample");
  t.wire_bytes = per_microbatch<int64_t>(j, path, "wire_bytes_per_microbatch", m, read_count);
  t.wire_bytes_per_batch = std::accumulate(t.wire_bytes.begin(), t.wire_bytes.end(), int64_t{0});
  if (j.contains("wire_messages_per_microbatch"))  // optional: 1 in plans written before it
    t.wire_messages = jr::read_int(j.at("wire_messages_per_microbatch"),
                                   path + ".wire_messages_per_microbatch", 1, 1 << 20);
  check_count_total(j, path, "wire_bytes_per_batch", t.wire_bytes_per_batch,
                    "wire_bytes_per_microbatch");
  t.encode_s = per_microbatch<double>(j, path, "encode_s_per_microbatch", m, read_seconds);
  t.decode_s = per_microbatch<double>(j, path, "decode_s_per_microbatch", m, read_seconds);
  check_seconds_total(j, path, "encode_s_per_batch", t.encode_s);
  check_seconds_total(j, path, "decode_s_per_batch", t.decode_s);
  return t;
}

PlanBoundary read_boundary(const json& j, const std::string& path, int b, size_t m) {
  jr::require_object(j, path,
                     "a boundary object such as {\"from_stage\": 0, \"to_stage\": 1, ...}");
  jr::check_keys(j, path, kPlanBoundaryKeys);
  jr::require_key(j, path, "from_stage", "a stage index");
  jr::require_key(j, path, "to_stage", "a stage index");
  jr::require_key(j, path, "forward", "a transfer object");
  jr::require_key(j, path, "backward", "a transfer object");
  PlanBoundary bd;
  const int64_t from = jr::read_int(j.at("from_stage"), path + ".from_stage", 0);
  const int64_t to = jr::read_int(j.at("to_stage"), path + ".to_stage", 0);
  const std::string joins = "boundary " + std::to_string(b) + " joins stage " + std::to_string(b) +
                            " to stage " + std::to_string(b + 1) +
                            " (boundaries join adjacent stages, in order)";
  if (from != b)
    throw InputError(path + ".from_stage", "is " + std::to_string(from) + "; " + joins);
  if (to != b + 1) throw InputError(path + ".to_stage", "is " + std::to_string(to) + "; " + joins);
  bd.from_stage = b;
  bd.to_stage = b + 1;
  if (j.contains("activation_shape"))
    bd.activation_shape = read_shape(j.at("activation_shape"), path + ".activation_shape");
  bd.forward = read_transfer(j.at("forward"), path + ".forward", m);
  bd.backward = read_transfer(j.at("backward"), path + ".backward", m);
  return bd;
}

}  // namespace

bool is_plan_json(const json& j) {
  const json* first = &j;
  if (j.is_array()) {
    if (j.empty()) return false;
    first = &j.front();
  }
  return first->is_object() && first->contains("schema") && first->at("schema") == kPlanSchema;
}

Plan parse_plan(const json& j, const std::string& path) {
  jr::require_object(j, path, "a plan object (what `splitsim plan --json` writes)");
  jr::require_key(j, path, "schema", std::string("\"") + kPlanSchema + "\"");
  if (j.at("schema") != kPlanSchema)
    throw InputError(path + ".schema", "unsupported schema " + jr::show(j.at("schema")) +
                                           "; this version reads \"" + kPlanSchema + "\"");
  jr::check_keys(j, path, kTopKeys);
  const std::string again =
      " (plan files written before the simulator read them lack it: write it again with "
      "`splitsim plan --json`)";
  for (const char* key : {"batch_size", "microbatch_sizes", "schedule", "stages", "boundaries",
                          "network", "platform", "iterations", "warmup", "clients"})
    jr::require_key(j, path, key, std::string("see the plan format") + again);
  Plan p;
  if (j.contains("scenario")) p.scenario = jr::read_string(j.at("scenario"), path + ".scenario");
  if (j.contains("variant")) p.variant = jr::read_label(j.at("variant"), path + ".variant");
  if (j.contains("model")) p.model = jr::read_string(j.at("model"), path + ".model", true);
  p.batch_size = jr::read_int(j.at("batch_size"), path + ".batch_size", 1, limits::kMaxBatchSize);
  const std::string mb = path + ".microbatch_sizes";
  jr::require_array(j.at("microbatch_sizes"), mb, "a list of micro-batch sizes", 1);
  p.microbatch_sizes =
      read_list<int64_t>(j.at("microbatch_sizes"), mb, "a list of micro-batch sizes",
                         [](const json& v, const std::string& at) {
                           return jr::read_int(v, at, 1, limits::kMaxBatchSize);
                         });
  if (p.chunks() > limits::kMaxChunks)
    throw InputError(mb, "has " + std::to_string(p.chunks()) + " micro-batches; the limit is " +
                             std::to_string(limits::kMaxChunks));
  const int64_t total =
      std::accumulate(p.microbatch_sizes.begin(), p.microbatch_sizes.end(), int64_t{0});
  if (total != p.batch_size)
    throw InputError(mb, "sums to " + std::to_string(total) + " samples; expected batch_size " +
                             std::to_string(p.batch_size));
  if (j.contains("chunks")) {
    const int64_t chunks = jr::read_int(j.at("chunks"), path + ".chunks", 1, limits::kMaxChunks);
    if (chunks != p.chunks())
      throw InputError(path + ".chunks", "is " + std::to_string(chunks) + " but " + mb + " has " +
                                             std::to_string(p.chunks()) + " entries");
  }
  const std::string schedule =
      jr::read_choice(j.at("schedule"), path + ".schedule", "schedule", schedule_names());
  for (int s = 0; s <= static_cast<int>(Schedule::kFr); ++s)
    if (schedule == schedule_name(static_cast<Schedule>(s))) p.schedule = static_cast<Schedule>(s);
  if (j.contains("compute_precision"))
    p.compute_precision = jr::read_choice(j.at("compute_precision"), path + ".compute_precision",
                                          "compute precision", {"fp32", "fp16", "bf16"});
  const size_t m = p.microbatch_sizes.size();

  const json& stages = j.at("stages");
  jr::require_array(stages, path + ".stages", "a list of at least 1 stage", 1);
  for (size_t k = 0; k < stages.size(); ++k)
    p.stages.push_back(read_stage(stages[k], jr::index_path(path + ".stages", k), k, m));
  const json& boundaries = j.at("boundaries");
  jr::require_array(boundaries, path + ".boundaries", "a list of boundaries");
  if (boundaries.size() + 1 != stages.size())
    throw InputError(path + ".boundaries", "has " + std::to_string(boundaries.size()) +
                                               " entries; " + std::to_string(stages.size()) +
                                               " stages need " + std::to_string(stages.size() - 1) +
                                               " (one between each adjacent pair)");
  for (size_t b = 0; b < boundaries.size(); ++b)
    p.boundaries.push_back(read_boundary(boundaries[b], jr::index_path(path + ".boundaries", b),
                                         static_cast<int>(b), m));

  p.network = scenario_internal::parse_network(j.at("network"), path + ".network");
  p.platform = scenario_internal::parse_platform(j.at("platform"), path + ".platform");
  p.iterations = jr::read_int(j.at("iterations"), path + ".iterations", 1, limits::kMaxIterations);
  p.warmup = jr::read_int(j.at("warmup"), path + ".warmup", 0, p.iterations - 1);
  p.clients = jr::read_int(j.at("clients"), path + ".clients", 1, limits::kMaxClients);
  if (j.contains("client_groups")) {
    const std::string at = path + ".client_groups";
    jr::require_array(j.at("client_groups"), at, "a list of client groups", 1);
    int64_t total = 0;
    for (size_t i = 0; i < j.at("client_groups").size(); ++i) {
      p.client_groups.push_back(
          read_group(j.at("client_groups")[i], jr::index_path(at, i), p, p.stages.front().party));
      total += p.client_groups.back().count;
    }
    if (total != p.clients)
      throw InputError(at, "the groups hold " + std::to_string(total) + " clients; $.clients is " +
                               std::to_string(p.clients));
  }
  // Each factor is bounded: no overflow.
  const int64_t passes =
      p.iterations * p.chunks() * p.clients * static_cast<int64_t>(p.stages.size());
  if (passes > limits::kMaxStagePasses)
    throw InputError(path + ".iterations",
                     "iterations x chunks x clients x stages = " + std::to_string(passes) +
                         " stage passes to simulate; the limit is " +
                         std::to_string(limits::kMaxStagePasses));
  return p;
}

std::vector<Plan> parse_plans(const json& j) {
  if (!j.is_array()) return {parse_plan(j, "$")};
  jr::require_array(j, "$", "a list of plans", 1);
  std::vector<Plan> plans;
  for (size_t i = 0; i < j.size(); ++i) plans.push_back(parse_plan(j[i], jr::index_path("$", i)));
  return plans;
}

std::vector<Plan> load_plan_file(const std::string& file) {
  const json j = parse_json_file(file, "plan file");
  try {
    return parse_plans(j);
  } catch (const InputError& e) {
    throw in_file(e, file);
  }
}

}  // namespace splitsim
