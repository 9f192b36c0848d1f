// measure_this_machine (timing.h): what `splitsim profile` measures and writes.
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <ostream>

#include "splitsim/costmodel/efficiency_fit.h"
#include "splitsim/costmodel/measure.h"
#include "splitsim/costmodel/timing.h"

namespace splitsim {

MeasuredDevice measure_this_machine(const ModelSpec& spec, const ProfileOptions& opts,
                                    const std::string& name,
                                    const std::function<void(const std::string&)>& progress) {
  DeviceProfile device = profile_this_machine(spec, opts, progress);
  device.name = name;
  device.peak_flops = measure_peak_flops();
  device.memory_bandwidth_Bps = measure_memory_bandwidth();
  char host[256] = "this machine";
  gethostname(host, sizeof host);
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  device.description = std::string("CPU of ") + host + ", " + std::to_string(opts.threads) +
                       " thread(s), measured by splitsim profile on " + date;
  device.sources = {"measured: splitsim profile --model " + spec.name + " --batch " +
                    std::to_string(opts.batch) + " --threads " + std::to_string(opts.threads)};

  progress("counting MACs per unit");
  const ModelProfile counts = measure_model(spec);
  std::vector<TimedWork> data;
  for (size_t i = 0; i < counts.units.size(); ++i) {
    const auto& t = device.timings[i];
    data.push_back({counts.units[i].fwd.scaled(opts.batch), t.fwd_s});
    data.push_back({counts.units[i].bwd.scaled(opts.batch), t.bwd_s});
  }
  const FitResult fit = fit_efficiency(device, data);
  device.efficiency = fit.efficiency;
  return {device, fit};
}

nlohmann::json measured_device_json(const MeasuredDevice& m) {
  nlohmann::json j = m.device;
  j["fit"] = {{"observations", m.fit.observations},
              {"rms_rel_error", m.fit.rms_rel_error},
              {"max_rel_error", m.fit.max_rel_error},
              {"fitted", m.fit.fitted}};
  return j;
}

void print_measured_device(std::ostream& out, const MeasuredDevice& m) {
  const DeviceProfile& device = m.device;
  const FitResult& fit = m.fit;
  char line[512];
  std::snprintf(line, sizeof line, "peak %.1f GFLOP/s (1024^3 matmul), memory %.1f GB/s (copy)\n",
                device.peak_flops / 1e9, device.memory_bandwidth_Bps / 1e9);
  out << line;
  std::snprintf(line, sizeof line,
                "fitted efficiency: conv %.3f  depthwise %.3f  matmul %.3f  elementwise %.3f  "
                "per-op %.1f us\n",
                fit.efficiency.conv, fit.efficiency.depthwise, fit.efficiency.matmul,
                fit.efficiency.elementwise, fit.efficiency.per_op_s * 1e6);
  out << line;
  std::snprintf(line, sizeof line, "fit error over %d unit timings: rms %.1f%%, max %.1f%%\n",
                fit.observations, 100 * fit.rms_rel_error, 100 * fit.max_rel_error);
  out << line;
}

}  // namespace splitsim
