#include "splitsim/costmodel/model_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "splitsim/costmodel/format.h"
#include "splitsim/costmodel/unit_graph.h"

namespace splitsim {
namespace {


}  // namespace

void print_units(std::ostream& out, const ModelProfile& model, const OptimizerSpec& optimizer,
                 bool json) {
  const int64_t state_copies = optimizer.state_copies();
  if (json) {
    nlohmann::json j = model;
    for (auto& u : j["units"]) {
      u["grad_bytes"] = u["trainable_param_bytes"];
      u["optimizer_state_bytes"] = u["trainable_param_bytes"].get<int64_t>() * state_copies;
    }
    j["optimizer"] = optimizer.name;
    out << j.dump(2) << "\n";
    return;
  }
  char line[256];
  out << model.model << ", per sample (measured at batch " << model.measured_batch
      << "); optimizer " << optimizer.name << " keeps " << state_copies
      << " state copies per parameter\n";
  std::snprintf(line, sizeof line, "%-20s %-16s %12s %10s %10s %12s %12s %12s %12s %12s\n", "unit",
                "output", "out B", "params", "trainable", "param B", "opt state B", "fwd MACs",
                "bwd MACs", "stash B");
  out << line;
  for (const auto& u : model.units) {
    std::snprintf(
        line, sizeof line, "%-20s %-16s %12lld %10lld %10lld %12lld %12lld %12lld %12lld %12lld\n",
        u.name.c_str(), format_shape(u.output_shape).c_str(), static_cast<long long>(u.output_bytes()),
        static_cast<long long>(u.param_count), static_cast<long long>(u.trainable_param_count()),
        static_cast<long long>(u.param_bytes),
        static_cast<long long>(u.trainable_param_bytes() * state_copies),
        static_cast<long long>(u.fwd.macs()), static_cast<long long>(u.bwd.macs()),
        static_cast<long long>(u.stash_bytes_per_sample));
    out << line;
  }
  out << "gradients and optimizer state for the trainable parameters only; element-wise work "
         "and op counts: --units --json\n";
}

void print_cuts(std::ostream& out, const ModelProfile& model, bool json) {
  nlohmann::json cuts = nlohmann::json::array();
  if (!json) out << "valid cut points of " << model.model << " (before unit: tensor per sample)\n";
  for (const auto& c : valid_cuts(model)) {
    int64_t numel = 1;
    for (int64_t d : c.shape) numel *= d;
    const int64_t bytes = numel * model.units[c.position - 1].output_elem_bytes;
    cuts.push_back({{"position", c.position},
                    {"before", c.before},
                    {"after", c.after},
                    {"shape_per_sample", c.shape},
                    {"bytes_per_sample", bytes}});
    if (!json)
      out << "  " << c.before << " | " << c.after << "  " << format_shape(c.shape) << "  " << bytes
          << " B/sample\n";
  }
  if (json)
    out << nlohmann::json{{"schema", "splitsim.cuts/1"}, {"model", model.model}, {"cuts", cuts}}
               .dump(2)
        << "\n";
}

}  // namespace splitsim
