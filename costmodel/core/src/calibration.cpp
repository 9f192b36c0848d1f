#include "splitsim/costmodel/calibration.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "json_read.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/input_file.h"
#include "splitsim/costmodel/limits.h"

namespace splitsim {

using json_read::check_keys;
using json_read::member_path;
using json_read::NumberRange;
using json_read::read_number;
using nlohmann::json;

namespace {

const std::vector<std::string> kKeys = {"schema",
                                        "description",
                                        "parties",
                                        "bandwidth_factor",
                                        "per_message_overhead_s",
                                        "cpu_s_per_byte_sent",
                                        "cpu_s_per_byte_received",
                                        "fit"};
const std::vector<std::string> kPartyKeys = {"compute_scale",       "op_overhead_s",
                                             "codec_scale",         "op_class_scale",
                                             "cpu_s_per_byte_sent", "cpu_s_per_byte_received"};

// Scales: a factor of a million either way is a unit mistake, not a machine.
const NumberRange kScale{1e-6, false, 1e6, false};
const NumberRange kOverhead{0, false, limits::kMaxOverheadS, false};
const NumberRange kPerByte{0, false, limits::kMaxCpuSPerByte, false};

}  // namespace

PartyCalibration party_calibration(const Calibration& c, const std::string& party) {
  if (auto it = c.parties.find(party); it != c.parties.end()) return it->second;
  if (auto it = c.parties.find("*"); it != c.parties.end()) return it->second;
  return {};
}

namespace {

bool identity(const OpClassParts& scale) { return scale == OpClassParts{1, 1, 1, 1, 1}; }

// Σ_class share × scale for one micro-batch of stage `k`.
double class_factor(const std::vector<OpClassParts>& shares, size_t m, const OpClassParts& scale,
                    size_t k, const char* key) {
  if (identity(scale)) return 1.0;
  if (m >= shares.size())
    throw InputError("$.stages[" + std::to_string(k) + "]",
                     std::string("has no ") + key +
                         "; the calibration's op_class_scale needs them (plan it again)");
  const OpClassParts& s = shares[m];
  if (s.total() == 0) return 1.0;  // no model work: nothing to scale
  double f = 0;
  for (size_t i = 0; i < 5; ++i) f += op_class_part(s, i) * op_class_part(scale, i);
  return f;
}

// Stage k's model seconds (its own, or a client group's on it) calibrated
// by its party's `p`: × compute_scale × Σ_class share × scale, with the
// stage's op-class shares, + op_overhead_s (a backward of 0 s stays 0).
void calibrate_model(const PlanStage& in, size_t k, const PartyCalibration& p,
                     std::vector<double>& fwd_s, std::vector<double>& bwd_s, double& update_s,
                     std::vector<double>* bwd_weight_s = nullptr) {
  for (size_t m = 0; m < fwd_s.size(); ++m) {
    const double fwd = p.compute_scale * class_factor(in.fwd_op_class_shares, m, p.op_class_scale,
                                                      k, "fwd_op_class_shares_per_microbatch");
    const double bwd = p.compute_scale * class_factor(in.bwd_op_class_shares, m, p.op_class_scale,
                                                      k, "bwd_op_class_shares_per_microbatch");
    fwd_s[m] = fwd_s[m] * fwd + p.op_overhead_s;
    // A stage with no backward (drop_unneeded_gradients) runs none to calibrate.
    bwd_s[m] = bwd_s[m] > 0 ? bwd_s[m] * bwd + p.op_overhead_s : 0.0;
    // zb_h1's W: the same work, scaled alike (the overhead goes to the B).
    if (bwd_weight_s != nullptr && m < bwd_weight_s->size()) (*bwd_weight_s)[m] *= bwd;
  }
  update_s = update_s * p.compute_scale * p.op_class_scale.elementwise + p.op_overhead_s;
}

}  // namespace

Plan apply_calibration(const Plan& plan, const Calibration& c) {
  Plan out = plan;
  for (size_t k = 0; k < out.stages.size(); ++k) {
    PlanStage& st = out.stages[k];
    calibrate_model(plan.stages[k], k, party_calibration(c, st.party), st.fwd_s, st.bwd_s,
                    st.update_s, &st.bwd_weight_s);
  }
  for (PlanClientGroup& g : out.client_groups)
    for (PlanStageCosts& own : g.stage_costs) {
      const size_t k = static_cast<size_t>(own.stage);
      const PartyCalibration p = party_calibration(c, plan.stages.at(k).party);
      calibrate_model(plan.stages.at(k), k, p, own.fwd_s, own.bwd_s, own.update_s);
      for (auto* v : {&own.fwd_decode_s, &own.fwd_encode_s, &own.bwd_decode_s, &own.bwd_encode_s})
        for (double& s : *v) s *= p.codec_scale;
    }
  for (PlanBoundary& b : out.boundaries) {
    const double sender = party_calibration(c, plan.stages.at(b.from_stage).party).codec_scale;
    const double receiver = party_calibration(c, plan.stages.at(b.to_stage).party).codec_scale;
    for (double& s : b.forward.encode_s) s *= sender;
    for (double& s : b.forward.decode_s) s *= receiver;
    for (double& s : b.backward.encode_s) s *= receiver;
    for (double& s : b.backward.decode_s) s *= sender;
  }
  out.network.bandwidth_factor =
      std::max(limits::kMinBandwidthFactor, plan.network.bandwidth_factor * c.bandwidth_factor);
  out.network.per_message_overhead_s += c.per_message_overhead_s;
  out.platform.cpu_s_per_byte_sent += c.cpu_s_per_byte_sent;
  out.platform.cpu_s_per_byte_received += c.cpu_s_per_byte_received;
  for (const PlanStage& st : plan.stages) {
    const PartyCalibration p = party_calibration(c, st.party);
    if (p.cpu_s_per_byte_sent == 0 && p.cpu_s_per_byte_received == 0) continue;
    // From the plan's value, so that a party with several stages adds once.
    PartyHostWork& w = out.platform.parties[st.party];
    const auto was = plan.platform.parties.find(st.party);
    const PartyHostWork before = was == plan.platform.parties.end() ? PartyHostWork{} : was->second;
    w.cpu_s_per_byte_sent = before.cpu_s_per_byte_sent + p.cpu_s_per_byte_sent;
    w.cpu_s_per_byte_received = before.cpu_s_per_byte_received + p.cpu_s_per_byte_received;
  }
  return out;
}

void to_json(json& j, const Calibration& c) {
  json parties = json::object();
  for (const auto& [name, p] : c.parties) {
    parties[name] = {{"compute_scale", p.compute_scale},
                     {"op_overhead_s", p.op_overhead_s},
                     {"codec_scale", p.codec_scale}};
    if (p.cpu_s_per_byte_sent != 0) parties[name]["cpu_s_per_byte_sent"] = p.cpu_s_per_byte_sent;
    if (p.cpu_s_per_byte_received != 0)
      parties[name]["cpu_s_per_byte_received"] = p.cpu_s_per_byte_received;
    if (!identity(p.op_class_scale)) {
      json scales = json::object();
      for (size_t i = 0; i < 5; ++i)
        if (op_class_part(p.op_class_scale, i) != 1)
          scales[kOpClassNames[i]] = op_class_part(p.op_class_scale, i);
      parties[name]["op_class_scale"] = scales;
    }
  }
  j = {{"schema", kCalibrationSchema},
       {"parties", parties},
       {"bandwidth_factor", c.bandwidth_factor},
       {"per_message_overhead_s", c.per_message_overhead_s},
       {"cpu_s_per_byte_sent", c.cpu_s_per_byte_sent},
       {"cpu_s_per_byte_received", c.cpu_s_per_byte_received}};
  if (!c.description.empty()) j["description"] = c.description;
}

Calibration parse_calibration(const json& j, const std::string& path) {
  json_read::require_object(j, path,
                            "a calibration object such as {\"schema\": \"" +
                                std::string(kCalibrationSchema) + "\", \"parties\": {...}}");
  check_keys(j, path, kKeys);
  json_read::require_key(j, path, "schema", std::string("\"") + kCalibrationSchema + "\"");
  const std::string schema = json_read::read_string(j.at("schema"), member_path(path, "schema"));
  if (schema != kCalibrationSchema)
    throw InputError(member_path(path, "schema"), "expected \"" + std::string(kCalibrationSchema) +
                                                      "\", got \"" + schema + "\"");
  Calibration c;
  if (j.contains("description"))
    c.description = json_read::read_string(j.at("description"), member_path(path, "description"),
                                           /*allow_empty=*/true);
  if (j.contains("parties")) {
    const std::string at = member_path(path, "parties");
    json_read::require_object(j.at("parties"), at,
                              "an object of parties such as {\"server\": {\"compute_scale\": 2}}");
    for (const auto& [name, v] : j.at("parties").items()) {
      const std::string pat = member_path(at, name);
      if (name.empty()) throw InputError(pat, "a party name must not be empty");
      json_read::require_object(v, pat, "a party calibration such as {\"compute_scale\": 2}");
      check_keys(v, pat, kPartyKeys);
      PartyCalibration p;
      if (v.contains("compute_scale"))
        p.compute_scale =
            read_number(v.at("compute_scale"), member_path(pat, "compute_scale"), kScale);
      if (v.contains("op_overhead_s"))
        p.op_overhead_s =
            read_number(v.at("op_overhead_s"), member_path(pat, "op_overhead_s"), kOverhead);
      if (v.contains("codec_scale"))
        p.codec_scale = read_number(v.at("codec_scale"), member_path(pat, "codec_scale"), kScale);
      if (v.contains("cpu_s_per_byte_sent"))
        p.cpu_s_per_byte_sent = read_number(v.at("cpu_s_per_byte_sent"),
                                            member_path(pat, "cpu_s_per_byte_sent"), kPerByte);
      if (v.contains("cpu_s_per_byte_received"))
        p.cpu_s_per_byte_received = read_number(
            v.at("cpu_s_per_byte_received"), member_path(pat, "cpu_s_per_byte_received"), kPerByte);
      if (v.contains("op_class_scale")) {
        const std::string cat = member_path(pat, "op_class_scale");
        json_read::require_object(v.at("op_class_scale"), cat,
                                  "scales by op class such as {\"conv\": 1.3, \"per_op\": 0.2}");
        check_keys(v.at("op_class_scale"), cat,
                   {std::begin(kOpClassNames), std::end(kOpClassNames)});
        for (size_t i = 0; i < 5; ++i)
          if (v.at("op_class_scale").contains(kOpClassNames[i]))
            op_class_part(p.op_class_scale, i) =
                read_number(v.at("op_class_scale").at(kOpClassNames[i]),
                            member_path(cat, kOpClassNames[i]), kScale);
      }
      c.parties[name] = p;
    }
  }
  const auto number = [&](const char* key, double* out, const NumberRange& range) {
    if (j.contains(key)) *out = read_number(j.at(key), member_path(path, key), range);
  };
  number("bandwidth_factor", &c.bandwidth_factor,
         NumberRange{limits::kMinBandwidthFactor, false, 1, false});
  number("per_message_overhead_s", &c.per_message_overhead_s, kOverhead);
  number("cpu_s_per_byte_sent", &c.cpu_s_per_byte_sent, kPerByte);
  number("cpu_s_per_byte_received", &c.cpu_s_per_byte_received, kPerByte);
  return c;
}

Calibration load_calibration_file(const std::string& file) {
  const json j = parse_json_file(file, "calibration file");
  try {
    return parse_calibration(j);
  } catch (const InputError& e) {
    throw in_file(e, file);
  }
}

}  // namespace splitsim
