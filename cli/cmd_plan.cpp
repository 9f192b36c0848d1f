// `splitsim plan SCENARIO`: the Plan of every variant, as a table or JSON
// (print_plan), or the measured model unit by unit (print_units) or its
// valid cuts (print_cuts; both in
// costmodel/core/include/splitsim/costmodel/model_report.h).
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "splitsim/costmodel/model_report.h"
#include "splitsim/costmodel/workspace.h"

namespace splitsim {
namespace {

struct PlanArgs {
  std::string scenario;
  std::string variant;
  bool json = false;
  bool list_cuts = false;
  bool units = false;
};

int run_plan(const PlanArgs& args) {
  // The cuts and units need only the model: a scenario may name nothing else.
  const bool model_only = args.list_cuts || args.units;
  Workspace ws(
      args.scenario, [](const std::string& line) { std::cerr << line << "\n"; },
      model_only ? ScenarioNeeds::kModel : ScenarioNeeds::kPlan);
  ws.select(args.variant);
  // Everything is computed before anything is printed: on an error nothing
  // reaches stdout.
  std::ostringstream out;
  if (args.list_cuts) {
    print_cuts(out, ws.model(ws.variants().front()), args.json);
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
                "list the model's valid cut points (where exactly one tensor crosses) instead; "
                "the scenario needs only \"model\" and \"batch_size\"");
  sub->add_flag("--units", args->units,
                "print the measured model unit by unit instead (output shape and bytes, "
                "parameter, gradient and optimizer-state bytes, MACs, retained activations); "
                "the scenario needs only \"model\" and \"batch_size\"");
  return {sub, [args] { return run_plan(*args); }};
}

}  // namespace splitsim
