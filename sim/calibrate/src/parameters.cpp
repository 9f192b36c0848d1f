#include "parameters.h"

#include <algorithm>
#include <map>

namespace splitsim::calibrate_internal {

void set_param(Calibration* c, const Param& p, double x) {
  const double v = p.value(x);
  if (p.party.empty()) {
    if (p.field == "bandwidth_factor") c->bandwidth_factor = v;
    if (p.field == "per_message_overhead_s") c->per_message_overhead_s = v;
    return;
  }
  PartyCalibration& pc = c->parties[p.party];
  if (p.field == "compute_scale") pc.compute_scale = v;
  if (p.field == "op_overhead_s") pc.op_overhead_s = v;
  if (p.field == "codec_scale") pc.codec_scale = v;
  if (p.field == "cpu_s_per_byte_sent") pc.cpu_s_per_byte_sent = v;
  if (p.field == "cpu_s_per_byte_received") pc.cpu_s_per_byte_received = v;
  for (size_t i = 0; i < 5; ++i)
    if (p.field == std::string("op_class_scale.") + kOpClassNames[i])
      op_class_part(pc.op_class_scale, i) = v;
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
        const PassSeconds f = p.forward_pass(static_cast<int>(k), Plan::kOwnCosts, m);
        const PassSeconds b = p.backward_pass(static_cast<int>(k), Plan::kOwnCosts, m);
        codecs[st.party] = codecs[st.party] || f.decode + f.encode + b.decode + b.encode > 0;
        for (const bool bwd : {false, true}) {
          const auto& shares = bwd ? st.bwd_op_class_shares : st.fwd_op_class_shares;
          if (m >= shares.size()) continue;
          const double model_s = bwd ? st.bwd_s[m] : st.fwd_s[m];
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
    ps.emplace_back(party, "compute_scale", true, 1, -ln_max, ln_max);
    ps.emplace_back(party, "op_overhead_s", false, 1e-3, 0, 3.6e6);
    if (codecs[party]) ps.emplace_back(party, "codec_scale", true, 1, -ln_max, ln_max);
    ps.emplace_back(party, "cpu_s_per_byte_sent", false, 1e-9, 0, 1000);
    ps.emplace_back(party, "cpu_s_per_byte_received", false, 1e-9, 0, 1000);
    // A class's own scale where it takes at least 5% of some stage's time;
    // the class with the most seconds is the reference that compute_scale
    // scales (a scale on every class would only repeat compute_scale).
    size_t reference = 0;
    for (size_t i = 1; i < 5; ++i)
      if (op_class_part(seconds[party], i) > op_class_part(seconds[party], reference))
        reference = i;
    for (size_t i = 0; i < 5; ++i)
      if (i != reference && op_class_part(largest[party], i) >= kMinClassShare)
        ps.emplace_back(party, std::string("op_class_scale.") + kOpClassNames[i], true, 1, -ln_max,
                        ln_max);
  }
  ps.emplace_back("", "bandwidth_factor", true, 1, std::log(1e-3), 0);
  ps.emplace_back("", "per_message_overhead_s", false, 1e-3, 0, 3.6e6);
  return ps;
}

int precedence(const Param& p) {
  if (p.field.rfind("cpu_s_per_byte", 0) == 0) return 6;
  if (p.field == "codec_scale") return 5;
  if (p.field == "per_message_overhead_s") return 4;
  if (p.field == "op_overhead_s") return 3;
  if (p.field.rfind("op_class_scale", 0) == 0) return 2;
  if (p.field == "bandwidth_factor") return 1;
  return 0;  // compute scales
}

}  // namespace splitsim::calibrate_internal
