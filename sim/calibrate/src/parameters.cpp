#include "parameters.h"

#include <algorithm>
#include <map>

namespace splitsim::calibrate_internal {

void set_param(Calibration* c, const Param& p, double x) {
  const double v = p.value(x);
  if (p.name == "bandwidth_factor") {
    c->bandwidth_factor = v;
  } else if (p.name == "per_message_overhead_s") {
    c->per_message_overhead_s = v;
  } else {  // "PARTY.field" or "PARTY.op_class_scale.CLASS"
    const auto ends = [&](const std::string& field) {
      return p.name.size() > field.size() + 1 &&
             p.name.compare(p.name.size() - field.size() - 1, std::string::npos, "." + field) == 0;
    };
    const auto party = [&](const std::string& field) {
      return &c->parties[p.name.substr(0, p.name.size() - field.size() - 1)];
    };
    if (ends("compute_scale")) party("compute_scale")->compute_scale = v;
    if (ends("op_overhead_s")) party("op_overhead_s")->op_overhead_s = v;
    if (ends("codec_scale")) party("codec_scale")->codec_scale = v;
    if (ends("cpu_s_per_byte_sent")) party("cpu_s_per_byte_sent")->cpu_s_per_byte_sent = v;
    if (ends("cpu_s_per_byte_received"))
      party("cpu_s_per_byte_received")->cpu_s_per_byte_received = v;
    for (size_t i = 0; i < 5; ++i) {
      const std::string field = std::string("op_class_scale.") + kOpClassNames[i];
      if (ends(field)) op_class_part(party(field)->op_class_scale, i) = v;
    }
  }
}

std::vector<Param> candidate_params(const std::vector<Plan>& plans) {
  std::vector<std::string> parties;
  std::map<std::string, bool> codecs;
  // Per party and op class: the largest share of a stage's model seconds
  // (any plan, micro-batch, direction) and the model seconds it adds up to.
  std::map<std::string, OpClassParts> largest, seconds;
  for (const Plan& p : plans) {
    for (size_t k = 0; k < p.stages.size(); ++k) {
      const PlanStage& st = p.stages[k];
      if (std::find(parties.begin(), parties.end(), st.party) == parties.end())
        parties.push_back(st.party);
      for (size_t m = 0; m < p.microbatch_sizes.size(); ++m) {
        const CodecShare s = codec_share(p, static_cast<int>(k), m);
        codecs[st.party] = codecs[st.party] || s.fwd > 0 || s.bwd > 0;
        for (const bool bwd : {false, true}) {
          const auto& shares = bwd ? st.bwd_op_class_shares : st.fwd_op_class_shares;
          if (m >= shares.size()) continue;
          const double model_s = (bwd ? st.bwd_s[m] - s.bwd : st.fwd_s[m] - s.fwd);
          for (size_t i = 0; i < 5; ++i) {
            double& l = op_class_part(largest[st.party], i);
            l = std::max(l, op_class_part(shares[m], i));
            op_class_part(seconds[st.party], i) += op_class_part(shares[m], i) * model_s;
          }
        }
      }
    }
  }
  const double ln_max = std::log(1e3);
  std::vector<Param> ps;
  for (const std::string& party : parties) {
    ps.push_back({party + ".compute_scale", true, 1, -ln_max, ln_max});
    ps.push_back({party + ".op_overhead_s", false, 1e-3, 0, 3.6e6});
    if (codecs[party]) ps.push_back({party + ".codec_scale", true, 1, -ln_max, ln_max});
    ps.push_back({party + ".cpu_s_per_byte_sent", false, 1e-9, 0, 1000});
    ps.push_back({party + ".cpu_s_per_byte_received", false, 1e-9, 0, 1000});
    // A class's own scale where it takes at least 5% of some stage's time;
    // the class with the most seconds is the reference that compute_scale
    // scales (a scale on every class would only repeat compute_scale).
    size_t reference = 0;
    for (size_t i = 1; i < 5; ++i)
      if (op_class_part(seconds[party], i) > op_class_part(seconds[party], reference))
        reference = i;
    for (size_t i = 0; i < 5; ++i)
      if (i != reference && op_class_part(largest[party], i) >= kMinClassShare)
        ps.push_back({party + ".op_class_scale." + kOpClassNames[i], true, 1, -ln_max, ln_max});
  }
  ps.push_back({"bandwidth_factor", true, 1, std::log(1e-3), 0});
  ps.push_back({"per_message_overhead_s", false, 1e-3, 0, 3.6e6});
  return ps;
}

int precedence(const std::string& name) {
  if (name.find("cpu_s_per_byte") != std::string::npos) return 6;
  if (name.find("codec_scale") != std::string::npos) return 5;
  if (name == "per_message_overhead_s") return 4;
  if (name.find("op_overhead_s") != std::string::npos) return 3;
  if (name.find("op_class_scale") != std::string::npos) return 2;
  if (name == "bandwidth_factor") return 1;
  return 0;  // compute scales
}

}  // namespace splitsim::calibrate_internal
