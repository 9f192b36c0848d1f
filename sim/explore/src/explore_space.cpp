// The explorer's inputs and outputs: names, the space file (schema
// "splitsim.explore/1"), codec options, and the JSON it writes.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "json_read.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/explore/explore.h"

namespace splitsim {

namespace jr = json_read;
using nlohmann::json;

const char* cut_kind_name(CutKind k) {
  switch (k) {
    case CutKind::kSingle:
      return "single";
    case CutKind::kUShape:
      return "ushape";
    case CutKind::kKStage:
      return "kstage";
  }
  return "?";
}

const char* objective_name(Objective o) {
  switch (o) {
    case Objective::kTime:
      return "time";
    case Objective::kBytes:
      return "bytes";
    case Objective::kClientMacs:
      return "client_macs";
  }
  return "?";
}

CutKind parse_cut_kind(const std::string& name, const std::string& where) {
  for (CutKind k : {CutKind::kSingle, CutKind::kUShape, CutKind::kKStage})
    if (name == cut_kind_name(k)) return k;
  throw InputError(where, "unknown cut kind \"" + name + "\"; allowed: single, ushape, kstage");
}

Objective parse_objective(const std::string& name, const std::string& where) {
  for (Objective o : {Objective::kTime, Objective::kBytes, Objective::kClientMacs})
    if (name == objective_name(o)) return o;
  throw InputError(where, "unknown objective \"" + name + "\"; allowed: time, bytes, client_macs");
}

namespace {

Schedule parse_schedule(const json& v, const std::string& path) {
  const std::string name = jr::read_choice(v, path, "schedule", schedule_names());
  Schedule s = Schedule::kSequential;
  if (!schedule_from_name(name, &s)) throw InputError(path, "unknown schedule");  // unreachable
  if (s == Schedule::kInterleaved1F1B)
    throw InputError(path,
                     "interleaved_1f1b needs parties that take turns (client, server, client, "
                     "server, ...), which no cut kind of the explorer gives; plan and simulate "
                     "such a partition with `splitsim simulate`");
  return s;
}

CodecOption parse_codec_option(const json& v, const std::string& path) {
  jr::require_object(v, path,
                     "a codec option such as {\"label\": \"q8\", \"codec\": {\"method\": "
                     "\"quantize\", \"bits\": 8}}");
  jr::check_keys(v, path, {"label", "codec", "per_boundary", "auto_insert"});
  jr::require_key(v, path, "label", "a short name for the option");
  CodecOption o;
  o.label = jr::read_label(v.at("label"), jr::member_path(path, "label"));
  const int given = static_cast<int>(v.contains("codec")) + v.contains("per_boundary") +
                    v.contains("auto_insert");
  if (given != 1)
    throw InputError(path, "give exactly one of \"codec\", \"per_boundary\", \"auto_insert\"");
  if (v.contains("codec")) o.codec = parse_codec(v.at("codec"), jr::member_path(path, "codec"));
  if (v.contains("per_boundary")) {
    const std::string p = jr::member_path(path, "per_boundary");
    jr::require_array(v.at("per_boundary"), p, "one codec object per boundary", 1);
    for (size_t i = 0; i < v.at("per_boundary").size(); ++i)
      o.per_boundary.push_back(parse_codec(v.at("per_boundary")[i], jr::index_path(p, i)));
  }
  if (v.contains("auto_insert"))
    o.auto_insert_reduction =
        jr::read_int(v.at("auto_insert"), jr::member_path(path, "auto_insert"), 2);
  return o;
}

bool is_insert(const CodecSpec& c) {
  return c.method == CodecMethod::kConvInsert || c.method == CodecMethod::kLinearInsert ||
         c.method == CodecMethod::kDecayingLinear;
}

}  // namespace

std::vector<CodecOption> default_codec_options() {
  std::vector<CodecOption> out(5);
  out[0].label = "none";
  out[1].label = "fp16";
  out[1].codec.method = CodecMethod::kFp16;
  out[2].label = "q8";
  out[2].codec.method = CodecMethod::kQuantize;
  out[2].codec.bits = 8;
  out[3].label = "pi4";
  out[3].codec.method = CodecMethod::kPowerIteration;
  out[3].codec.rank = 4;
  out[3].codec.iters = 1;
  out[4].label = "insert4";
  out[4].auto_insert_reduction = 4;
  return out;
}

bool instantiate_codec(const CodecOption& option, const std::vector<int64_t>& shape, int index,
                       int count, BoundaryCodecs* out) {
  CodecSpec fwd = option.codec;
  if (!option.per_boundary.empty()) {
    if (static_cast<int>(option.per_boundary.size()) != count) return false;
    fwd = option.per_boundary[index];
  } else if (option.auto_insert_reduction > 0) {
    const int64_t r = option.auto_insert_reduction;
    if (shape.size() == 3) {
      fwd.method = CodecMethod::kConvInsert;
      fwd.out_channels = (shape[0] + r - 1) / r;
      fwd.kernel = fwd.stride = 1;
    } else if (shape.size() == 2) {
      fwd.method = CodecMethod::kLinearInsert;
      fwd.out_features = (shape[1] + r - 1) / r;
    } else {
      return false;
    }
  }
  CodecSpec bwd = is_insert(fwd) ? CodecSpec{} : fwd;
  try {
    check_applicable(fwd, shape, "$");
    check_applicable(bwd, carried_shape(fwd, shape), "$");
  } catch (const InputError&) {
    return false;
  }
  out->forward = fwd;
  out->backward = bwd;
  return true;
}

int64_t space_combinations(const ExploreSpace& s) {
  const auto at_least_one = [](size_t n) { return static_cast<int64_t>(std::max<size_t>(n, 1)); };
  const size_t codecs = s.codecs.empty() ? default_codec_options().size() : s.codecs.size();
  // Each factor is at most the entries of a 16 MiB file: no overflow.
  return at_least_one(codecs) * at_least_one(s.chunks.size()) * at_least_one(s.schedules.size()) *
         at_least_one(s.bandwidths_bit_per_s.size());
}

void check_space(const ExploreSpace& s) {
  if (s.kinds.empty()) throw InputError("kinds", "give at least one cut kind");
  for (int64_t c : s.chunks)
    if (c < 1 || c > limits::kMaxChunks)
      throw InputError("chunks", "chunk counts must be from 1 to " +
                                       std::to_string(limits::kMaxChunks) + ", got " +
                                       std::to_string(c));
  for (double b : s.bandwidths_bit_per_s)
    if (!(b >= limits::kMinBandwidthBitPerS && b <= limits::kMaxBandwidthBitPerS))
      throw InputError("bandwidth_bit_per_s",
                       "bandwidths must be from 1e3 to 1e15 bit/s (scenarios/FORMAT.md, "
                       "\"Input limits\")");
  if (s.client_memory_bytes < 0)
    throw InputError("client_memory_bytes", "must be >= 0 (0 = no limit)");
  if (!(s.max_client_mac_share > 0 && s.max_client_mac_share <= 1))
    throw InputError("max_client_mac_share", "must be a number in (0, 1]");
  for (CutKind k : s.kinds)
    if (k == CutKind::kKStage && s.stage_parties.size() < 2)
      throw InputError("stages",
                       "kstage needs at least two stage parties (--stages K or the space "
                       "file's \"stage_parties\")");
}

ExploreSpace parse_space(const json& j) {
  const std::string root = "$";
  jr::require_object(j, root, "an explore space object");
  jr::check_keys(j, root,
                 {"schema", "kinds", "client_party", "server_party", "stage_parties", "codecs",
                  "chunks", "schedules", "bandwidths_bit_per_s", "constraints", "objective"});
  jr::require_key(j, root, "schema", "\"splitsim.explore/1\"");
  jr::read_choice(j.at("schema"), "$.schema", "schema", {"splitsim.explore/1"});
  ExploreSpace s;
  auto list = [&](const char* key, const std::string& what) -> const json* {
    if (!j.contains(key)) return nullptr;
    jr::require_array(j.at(key), jr::member_path(root, key), what, 1);
    return &j.at(key);
  };
  if (const json* a = list("kinds", "cut kinds: single, ushape, kstage")) {
    s.kinds.clear();
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string p = jr::index_path("$.kinds", i);
      s.kinds.push_back(parse_cut_kind(jr::read_string((*a)[i], p), p));
    }
  }
  if (j.contains("client_party"))
    s.client_party = jr::read_string(j.at("client_party"), "$.client_party");
  if (j.contains("server_party"))
    s.server_party = jr::read_string(j.at("server_party"), "$.server_party");
  if (const json* a = list("stage_parties", "party names, one per stage"))
    for (size_t i = 0; i < a->size(); ++i)
      s.stage_parties.push_back(jr::read_string((*a)[i], jr::index_path("$.stage_parties", i)));
  if (const json* a = list("codecs", "codec options"))
    for (size_t i = 0; i < a->size(); ++i)
      s.codecs.push_back(parse_codec_option((*a)[i], jr::index_path("$.codecs", i)));
  if (const json* a = list("chunks", "chunk counts"))
    for (size_t i = 0; i < a->size(); ++i)
      s.chunks.push_back(
          jr::read_int((*a)[i], jr::index_path("$.chunks", i), 1, limits::kMaxChunks));
  if (const json* a = list("schedules", "schedule names"))
    for (size_t i = 0; i < a->size(); ++i)
      s.schedules.push_back(parse_schedule((*a)[i], jr::index_path("$.schedules", i)));
  if (const json* a = list("bandwidths_bit_per_s", "bandwidths in bit/s"))
    for (size_t i = 0; i < a->size(); ++i)
      s.bandwidths_bit_per_s.push_back(
          jr::read_number((*a)[i], jr::index_path("$.bandwidths_bit_per_s", i),
                          {limits::kMinBandwidthBitPerS, false, limits::kMaxBandwidthBitPerS}));
  if (j.contains("constraints")) {
    const json& c = j.at("constraints");
    const std::string p = "$.constraints";
    jr::require_object(c, p, "an object of constraints");
    jr::check_keys(c, p, {"client_memory_bytes", "max_client_mac_share"});
    if (c.contains("client_memory_bytes"))
      s.client_memory_bytes = jr::read_int(c.at("client_memory_bytes"), p + ".client_memory_bytes",
                                           0, int64_t{1} << 50);
    if (c.contains("max_client_mac_share"))
      s.max_client_mac_share = jr::read_number(c.at("max_client_mac_share"),
                                               p + ".max_client_mac_share", jr::fraction());
  }
  if (j.contains("objective"))
    s.objective = parse_objective(jr::read_string(j.at("objective"), "$.objective"), "$.objective");
  for (CutKind k : s.kinds)
    if (k == CutKind::kKStage && s.stage_parties.size() < 2)
      throw InputError("$.stage_parties", "kstage needs at least two stage parties");
  return s;
}

json candidate_scenario_json(const json& base_json, const Candidate& c) {
  json j = base_json;
  j.erase("sweep");
  j["schema"] = "splitsim.scenario/1";
  j["partition"] = json::array();
  for (const auto& p : c.partition)
    j["partition"].push_back({{"party", p.party}, {"from", p.from}, {"to", p.to}});
  j["compression"] = json::array();
  for (const auto& b : c.compression)
    j["compression"].push_back(
        {{"forward", codec_to_json(b.forward)}, {"backward", codec_to_json(b.backward)}});
  j["chunks"] = c.chunks;
  j["schedule"] = schedule_name(c.schedule);
  j["network"]["bandwidth_bit_per_s"] = c.bandwidth_bit_per_s;
  j["network"].erase("up_bandwidth_bit_per_s");
  j["network"].erase("down_bandwidth_bit_per_s");
  j["description"] =
      "Found by splitsim explore: " + c.label + ". " + j.value("description", std::string());
  return j;
}

json candidate_to_json(const Candidate& c) {
  json parts = json::array();
  for (const auto& p : c.partition)
    parts.push_back({{"party", p.party}, {"from", p.from}, {"to", p.to}});
  json codecs = json::array();
  for (const auto& b : c.compression)
    codecs.push_back({{"forward", describe(b.forward)}, {"backward", describe(b.backward)}});
  json j = {{"label", c.label},
            {"kind", cut_kind_name(c.kind)},
            {"codec", c.codec_label},
            {"partition", parts},
            {"compression", codecs},
            {"chunks", c.chunks},
            {"schedule", schedule_name(c.schedule)},
            {"bandwidth_bit_per_s", c.bandwidth_bit_per_s},
            {"wire_bytes_per_batch", c.wire_bytes_per_batch},
            {"client_macs_per_batch", c.client_macs_per_batch},
            {"client_mac_share", c.client_mac_share},
            {"client_memory_bytes", c.client_memory_bytes},
            {"lower_bound_s", c.lower_bound_s},
            {"upper_bound_s", c.upper_bound_s},
            {"screened_out", c.screened_out}};
  j["time_per_batch_s"] = std::isnan(c.time_per_batch_s) ? json(nullptr) : json(c.time_per_batch_s);
  if (c.spread.known()) j["time_per_batch_spread_s"] = {c.spread.low_s, c.spread.high_s};
  return j;
}

}  // namespace splitsim
