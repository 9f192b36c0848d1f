// `splitsim plan SCENARIO`: the Plan of every variant, as a table or JSON.
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "splitsim/costmodel/unit_graph.h"
#include "workspace.h"

namespace splitsim {
namespace {

struct PlanArgs {
  std::string scenario;
  std::string variant;
  bool json = false;
  bool list_cuts = false;
  bool units = false;
};

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

// Per unit: output shape and bytes, parameter / gradient / optimizer-state
// bytes, MACs and element-wise work per sample, retained activation bytes.
void print_units(std::ostream& out, const ModelProfile& model, const OptimizerSpec& optimizer,
                 bool json) {
  const int64_t state_copies = optimizer.state_copies();
  if (json) {
    nlohmann::json j = model;
    for (auto& u : j["units"]) {
      u["grad_bytes"] = u["param_bytes"];
      u["optimizer_state_bytes"] = u["param_bytes"].get<int64_t>() * state_copies;
    }
    j["optimizer"] = optimizer.name;
    out << j.dump(2) << "\n";
    return;
  }
  char line[256];
  out << model.model << ", per sample (measured at batch " << model.measured_batch
      << "); optimizer " << optimizer.name << " keeps " << state_copies
      << " state copies per parameter\n";
  std::snprintf(line, sizeof line, "%-20s %-16s %12s %10s %12s %12s %12s %12s %12s\n", "unit",
                "output", "out B", "params", "param B", "opt state B", "fwd MACs", "bwd MACs",
                "stash B");
  out << line;
  for (const auto& u : model.units) {
    std::snprintf(line, sizeof line,
                  "%-20s %-16s %12lld %10lld %12lld %12lld %12lld %12lld %12lld\n",
                  u.name.c_str(), shape_str(u.output_shape).c_str(),
                  static_cast<long long>(u.output_bytes()), static_cast<long long>(u.param_count),
                  static_cast<long long>(u.param_bytes),
                  static_cast<long long>(u.param_bytes * state_copies),
                  static_cast<long long>(u.fwd.macs()), static_cast<long long>(u.bwd.macs()),
                  static_cast<long long>(u.stash_bytes_per_sample));
    out << line;
  }
  out << "gradient bytes = parameter bytes; element-wise work and op counts: --units --json\n";
}

int run_plan(const PlanArgs& args) {
  Workspace ws(args.scenario, [](const std::string& line) { std::cerr << line << "\n"; });
  ws.select(args.variant);
  // Everything is computed before anything is printed: on an error nothing
  // reaches stdout.
  std::ostringstream out;
  if (args.list_cuts) {
    const ModelProfile& model = ws.model(ws.variants().front());
    nlohmann::json cuts = nlohmann::json::array();
    if (!args.json) out << "valid cut points of " << model.model << " (before unit: tensor per sample)\n";
    for (const auto& c : valid_cuts(model)) {
      int64_t numel = 1;
      for (int64_t d : c.shape) numel *= d;
      const int64_t bytes = numel * model.units[c.position - 1].output_elem_bytes;
      cuts.push_back({{"position", c.position}, {"before", c.before}, {"after", c.after},
                      {"shape_per_sample", c.shape}, {"bytes_per_sample", bytes}});
      if (!args.json)
        out << "  " << c.before << " | " << c.after << "  " << shape_str(c.shape) << "  "
            << bytes << " B/sample\n";
    }
    if (args.json)
      out << nlohmann::json{{"schema", "splitsim.cuts/1"}, {"model", model.model}, {"cuts", cuts}}
                 .dump(2)
          << "\n";
    std::cout << out.str();
    return 0;
  }
  if (args.units) {
    const ScenarioVariant& v = ws.variants().front();
    print_units(out, ws.model(v), v.scenario.optimizer, args.json);
    std::cout << out.str();
    return 0;
  }
  nlohmann::json plans = nlohmann::json::array();
  for (const auto& v : ws.variants()) {
    const Plan plan = ws.plan(v);
    if (args.json) plans.push_back(plan);
    else {
      print_plan(out, plan);
      out << "\n";
    }
  }
  if (args.json) out << (plans.size() == 1 ? plans[0] : plans).dump(2) << "\n";
  std::cout << out.str();
  return 0;
}

}  // namespace

Command add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* sub = app.add_subcommand(
      "plan",
      "Measure the scenario's model (MACs by observed ATen ops, tensor sizes) and print the Plan "
      "of every variant: stages with party, units, MACs, parameters, compute seconds on their "
      "device; boundaries with activation shape and wire bytes per direction.");
  sub->add_option("scenario", args->scenario, "scenario JSON file")->required();
  sub->add_option("--variant", args->variant,
                  "only the variants whose label contains this text (e.g. \"chunks=4\")");
  sub->add_flag("--json", args->json,
                "JSON (schema splitsim.plan/1): one plan object, or an array of them when "
                "several variants are selected");
  sub->add_flag("--list-cuts", args->list_cuts,
                "list the model's valid cut points (where exactly one tensor crosses) instead");
  sub->add_flag("--units", args->units,
                "print the measured model unit by unit instead (output shape and bytes, "
                "parameter, gradient and optimizer-state bytes, MACs, retained activations)");
  return {sub, [args] { return run_plan(*args); }};
}

}  // namespace splitsim
