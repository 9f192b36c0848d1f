#include "parameters.h"

#include <algorithm>
#include <map>

namespace splitsim::calibrate_internal {

void set_param(Calibration* c, const Param& p, double x) {
  const double v = p.value(x);
  const size_t dot = p.name.rfind('.');
  if (dot != std::string::npos) {
    PartyCalibration& pc = c->parties[p.name.substr(0, dot)];
    const std::string field = p.name.substr(dot + 1);
    if (field == "compute_scale") pc.compute_scale = v;
    if (field == "op_overhead_s") pc.op_overhead_s = v;
    if (field == "codec_scale") pc.codec_scale = v;
  } else if (p.name == "bandwidth_factor") {
    c->bandwidth_factor = v;
  } else if (p.name == "per_message_overhead_s") {
    c->per_message_overhead_s = v;
  } else if (p.name == "cpu_s_per_byte_sent") {
    c->cpu_s_per_byte_sent = v;
  } else if (p.name == "cpu_s_per_byte_received") {
    c->cpu_s_per_byte_received = v;
  }
}

std::vector<Param> candidate_params(const std::vector<Plan>& plans) {
  std::vector<std::string> parties;
  std::map<std::string, bool> codecs;
  for (const Plan& p : plans) {
    for (size_t k = 0; k < p.stages.size(); ++k) {
      const std::string& party = p.stages[k].party;
      if (std::find(parties.begin(), parties.end(), party) == parties.end())
        parties.push_back(party);
      for (size_t m = 0; m < p.microbatch_sizes.size(); ++m) {
        const CodecShare s = codec_share(p, static_cast<int>(k), m);
        codecs[party] = codecs[party] || s.fwd > 0 || s.bwd > 0;
      }
    }
  }
  const double ln_max = std::log(1e3);
  std::vector<Param> ps;
  for (const std::string& party : parties) {
    ps.push_back({party + ".compute_scale", true, 1, -ln_max, ln_max});
    ps.push_back({party + ".op_overhead_s", false, 1e-3, 0, 3.6e6});
    if (codecs[party]) ps.push_back({party + ".codec_scale", true, 1, -ln_max, ln_max});
  }
  ps.push_back({"bandwidth_factor", true, 1, std::log(1e-3), 0});
  ps.push_back({"per_message_overhead_s", false, 1e-3, 0, 3.6e6});
  ps.push_back({"cpu_s_per_byte_sent", false, 1e-9, 0, 1000});
  ps.push_back({"cpu_s_per_byte_received", false, 1e-9, 0, 1000});
  return ps;
}

int precedence(const std::string& name) {
  if (name.rfind("cpu_s_per_byte", 0) == 0) return 5;
  if (name.find("codec_scale") != std::string::npos) return 4;
  if (name == "per_message_overhead_s") return 3;
  if (name.find("op_overhead_s") != std::string::npos) return 2;
  if (name == "bandwidth_factor") return 1;
  return 0;  // compute scales
}

}  // namespace splitsim::calibrate_internal
