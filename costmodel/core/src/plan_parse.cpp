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
#include "plan_json_reader.h"
#include "scenario_internal.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/input_file.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/plan_schema.h"

namespace splitsim {
namespace {

namespace jr = json_read;
using nlohmann::json;
using namespace plan_fields;  // NOLINT: the plan's value readers
using plan_json::JsonCodec;

// A transfer's keys: its list's and the two that repeat its codec.
std::vector<std::string> transfer_keys() {
  std::vector<std::string> keys = keys_of<PlanTransfer>();
  keys.insert(keys.begin() + 1, "description");
  keys.insert(keys.begin(), "method");
  return keys;
}

// One of "client_groups": its per-client lists have `count` entries, its
// stage costs name stages of the client role (`client_party`), once each.
PlanClientGroup read_group(const json& j, const std::string& path, const Plan& p,
                           const std::string& client_party) {
  jr::require_object(j, path, "a client group such as {\"name\": \"g0\", \"count\": 3, ...}");
  jr::check_keys(j, path, keys_of<PlanClientGroup>());
  PlanClientGroup g;  // the list's plain values, then those that check others
  for (Pass pass : {Pass::kRequire, Pass::kRead}) {
    FieldReader r(pass, j, path, 0);
    plan_schema::fields(r, g);
  }
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
      jr::check_keys(c, ci, keys_of<PlanStageCosts>());
      if (c.contains("stage"))  // first, in the range of the plan's stages
        jr::read_int(c.at("stage"), ci + ".stage", 0, static_cast<int64_t>(p.stages.size()) - 1);
      PlanStageCosts sc;
      read_fields(c, ci, m, &sc);
      if (p.stages[static_cast<size_t>(sc.stage)].party != client_party)
        throw InputError(ci + ".stage", "stage " + std::to_string(sc.stage) +
                                            " is not the client role's (\"" + client_party + "\")");
      for (const PlanStageCosts& other : g.stage_costs)
        if (other.stage == sc.stage)
          throw InputError(ci + ".stage", "stage " + std::to_string(sc.stage) + " appears twice");
      g.stage_costs.push_back(sc);
    }
  }
  return g;
}

PlanStage read_stage(const json& j, const std::string& path, size_t k, size_t m) {
  jr::require_object(j, path, "a stage object such as {\"party\": \"client\", ...}");
  jr::check_keys(j, path, keys_of<PlanStage>());
  PlanStage s;
  s.name = "stage" + std::to_string(k);
  read_fields(j, path, m, &s);
  return s;
}

}  // namespace

void plan_fields::read_object(const json& j, const std::string& path, size_t m, PlanTransfer* t) {
  jr::require_object(j, path,
                     "a transfer object such as {\"wire_bytes_per_microbatch\": [...], ...}");
  jr::check_keys(j, path, transfer_keys());
  read_fields(j, path, m, t);
  if (j.contains("method")) {
    const std::string method = jr::read_string(j.at("method"), path + ".method");
    if (method != method_name(t->codec.method))
      throw InputError(path + ".method", "is \"" + method + "\" but the codec's method is \"" +
                                             method_name(t->codec.method) +
                                             "\"; give the same in both, or leave this out");
  }
  for (size_t i = 0; i < t->last_tensor_bytes.size(); ++i)
    if (t->last_tensor_bytes[i] > t->wire_bytes[i])
      throw InputError(path + ".last_tensor_bytes_per_microbatch[" + std::to_string(i) + "]",
                       "is " + std::to_string(t->last_tensor_bytes[i]) +
                           ", more than the micro-batch's wire_bytes_per_microbatch (" +
                           std::to_string(t->wire_bytes[i]) + ")");
  if (j.contains("description"))  // informational: describe(codec), not read back
    jr::read_string(j.at("description"), path + ".description", true);
}

namespace {

PlanBoundary read_boundary(const json& j, const std::string& path, int b, size_t m) {
  jr::require_object(j, path,
                     "a boundary object such as {\"from_stage\": 0, \"to_stage\": 1, ...}");
  jr::check_keys(j, path, keys_of<PlanBoundary>());
  const std::string joins = "boundary " + std::to_string(b) + " joins stage " + std::to_string(b) +
                            " to stage " + std::to_string(b + 1) +
                            " (boundaries join adjacent stages, in order)";
  // First, as integers of any size: a boundary joins stages b and b + 1.
  for (const char* key : {"from_stage", "to_stage"}) {
    if (!j.contains(key)) continue;
    const int64_t stage = jr::read_int(j.at(key), jr::member_path(path, key), 0);
    if (stage != b + (key[0] == 't' ? 1 : 0))
      throw InputError(jr::member_path(path, key), "is " + std::to_string(stage) + "; " + joins);
  }
  PlanBoundary bd;
  read_fields(j, path, m, &bd);
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

void plan_fields::FieldReader::schedule(const char* key, Schedule& s, const char* need) {
  if (pass_ == Pass::kRequire) jr::require_key(j_, path_, key, need);
  if (pass_ != Pass::kRead) return;
  const std::string name = jr::read_choice(j_.at(key), at(key), "schedule", schedule_names());
  schedule_from_name(name, &s);
}

void plan_fields::FieldReader::scenario_object(const char* key, NetworkSpec& n, const char* need) {
  if (pass_ == Pass::kRequire) jr::require_key(j_, path_, key, need);
  if (pass_ == Pass::kRead) n = scenario_internal::parse_network(j_.at(key), at(key));
}

void plan_fields::FieldReader::scenario_object(const char* key, PlatformSpec& p,
                                               const char* need) {
  if (pass_ == Pass::kRequire) jr::require_key(j_, path_, key, need);
  if (pass_ == Pass::kRead) p = scenario_internal::parse_platform(j_.at(key), at(key));
}

namespace {

// The micro-batch sizes, each a batch of its own, summing to the batch.
std::vector<int64_t> read_microbatch_sizes(const json& j, const std::string& path,
                                           const Plan& p) {
  const std::string mb = path + ".microbatch_sizes";
  jr::require_array(j.at("microbatch_sizes"), mb, "a list of micro-batch sizes", 1);
  std::vector<int64_t> sizes =
      read_list<int64_t>(j.at("microbatch_sizes"), mb, "a list of micro-batch sizes",
                         [](const json& v, const std::string& at) {
                           return jr::read_int(v, at, 1, limits::kMaxBatchSize);
                         });
  if (static_cast<int64_t>(sizes.size()) > limits::kMaxChunks)
    throw InputError(mb, "has " + std::to_string(sizes.size()) + " micro-batches; the limit is " +
                             std::to_string(limits::kMaxChunks));
  const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  if (total != p.batch_size)
    throw InputError(mb, "sums to " + std::to_string(total) + " samples; expected batch_size " +
                             std::to_string(p.batch_size));
  if (j.contains("chunks")) {
    const int64_t chunks = jr::read_int(j.at("chunks"), path + ".chunks", 1, limits::kMaxChunks);
    if (chunks != static_cast<int64_t>(sizes.size()))
      throw InputError(path + ".chunks", "is " + std::to_string(chunks) + " but " + mb + " has " +
                                             std::to_string(sizes.size()) + " entries");
  }
  return sizes;
}

// The stages, then the boundaries between them (one per adjacent pair).
void read_stages_and_boundaries(const json& j, const std::string& path, Plan* p) {
  const size_t m = p->microbatch_sizes.size();
  const json& stages = j.at("stages");
  jr::require_array(stages, path + ".stages", "a list of at least 1 stage", 1);
  for (size_t k = 0; k < stages.size(); ++k)
    p->stages.push_back(read_stage(stages[k], jr::index_path(path + ".stages", k), k, m));
  const json& boundaries = j.at("boundaries");
  jr::require_array(boundaries, path + ".boundaries", "a list of boundaries");
  if (boundaries.size() + 1 != stages.size())
    throw InputError(path + ".boundaries", "has " + std::to_string(boundaries.size()) +
                                               " entries; " + std::to_string(stages.size()) +
                                               " stages need " + std::to_string(stages.size() - 1) +
                                               " (one between each adjacent pair)");
  for (size_t b = 0; b < boundaries.size(); ++b)
    p->boundaries.push_back(read_boundary(boundaries[b], jr::index_path(path + ".boundaries", b),
                                          static_cast<int>(b), m));
}

// "client_groups", if given: their counts add up to the plan's clients.
void read_client_groups(const json& j, const std::string& path, Plan* p) {
  if (!j.contains("client_groups")) return;
  const std::string at = path + ".client_groups";
  jr::require_array(j.at("client_groups"), at, "a list of client groups", 1);
  int64_t total = 0;
  for (size_t i = 0; i < j.at("client_groups").size(); ++i) {
    p->client_groups.push_back(
        read_group(j.at("client_groups")[i], jr::index_path(at, i), *p, p->stages.front().party));
    total += p->client_groups.back().count;
  }
  if (total != p->clients)
    throw InputError(at, "the groups hold " + std::to_string(total) + " clients; $.clients is " +
                             std::to_string(p->clients));
}

}  // namespace

Plan parse_plan(const json& j, const std::string& path) {
  jr::require_object(j, path, "a plan object (what `splitsim plan --json` writes)");
  jr::require_key(j, path, "schema", std::string("\"") + kPlanSchema + "\"");
  if (j.at("schema") != kPlanSchema)
    throw InputError(path + ".schema", "unsupported schema " + jr::show(j.at("schema")) +
                                           "; this version reads \"" + kPlanSchema + "\"");
  std::vector<std::string> top_keys = keys_of<Plan>();
  top_keys.insert(top_keys.begin(), "schema");
  jr::check_keys(j, path, top_keys);
  Plan p;
  // The list's plain values (plan_schema.h), then those that check others.
  for (Pass pass : {Pass::kRequire, Pass::kRead}) {
    FieldReader r(pass, j, path, 0);
    plan_schema::fields(r, p);
  }
  p.microbatch_sizes = read_microbatch_sizes(j, path, p);
  read_stages_and_boundaries(j, path, &p);
  p.warmup = jr::read_int(j.at("warmup"), path + ".warmup", 0, p.iterations - 1);
  read_client_groups(j, path, &p);
  if (p.schedule == Schedule::kInterleaved1F1B) {
    std::vector<std::string> parties;
    for (const PlanStage& st : p.stages) parties.push_back(st.party);
    const std::string problem = interleaving_problem(parties, p.chunks(), p.virtual_stages);
    if (!problem.empty()) throw InputError(path + ".virtual_stages", problem);
  }
  if (p.synchronised()) {
    if (!is_synchronous(p.schedule))
      throw InputError(path + ".training", "training " + p.training +
                                               " takes rounds between batches, which schedule " +
                                               schedule_name(p.schedule) + " overlaps");
    bool server = false;
    for (const PlanStage& st : p.stages) server = server || st.party != p.stages.front().party;
    if (!server)
      throw InputError(path + ".training",
                       "training " + p.training + " needs a party besides stage 0's");
  }
  take_codec_parts_out(&p);
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
