// `splitsim bench`: how fast the simulator is (run_simulator_bench,
// sim/include/splitsim/sim/bench.h), on the plans of a scenario (by default
// the shipped MobileNetV2 U-shape, found in data_dir()); the model is
// measured once, outside the timings.
#include <iostream>
#include <memory>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/data_dir.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/workspace.h"
#include "splitsim/sim/bench.h"

namespace splitsim {
namespace {

struct BenchArgs {
  std::string scenario;  // "": default_scenario_file()
  int repeat = 3;
  int jobs = 0;
};

const ScenarioVariant& find_variant(const Workspace& ws, const std::string& label) {
  for (const auto& v : ws.variants())
    if (v.label.find(label) != std::string::npos) return v;
  return ws.variants().front();
}

int run_bench(const BenchArgs& args) {
  if (args.repeat < 1) throw InputError("--repeat", "must be at least 1");
  Workspace ws(args.scenario.empty() ? default_scenario_file() : args.scenario,
               [](const std::string& line) { std::cerr << line << "\n"; });
  BenchPlans plans;
  plans.base = ws.plan(find_variant(ws, "chunks=1 compression=none"));
  plans.chunked = ws.plan(find_variant(ws, "chunks=8 compression=none"));
  for (const auto& v : ws.variants()) plans.variants.push_back(ws.plan(v));
  run_simulator_bench(plans, args.repeat, args.jobs, std::cout);
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Time the simulator (wall clock, medians): one scenario of 100 batches, one CIFAR-10 epoch "
      "(782 batches, chunks 8), 1,000 clients x 10 batches, a 300-variant sweep.");
  sub->add_option("--scenario", args->scenario,
                  "scenario whose plans are simulated (default: the shipped "
                  "scenarios/mobilenet_v2_ushape.json)");
  sub->add_option("--repeat", args->repeat, "runs per figure")
      ->capture_default_str()
      ->check(int_range(1, 1000));
  sub->add_option("--jobs", args->jobs, "parallel simulations in the sweep (default: CPU count)")
      ->check(int_range(1, 1024));
  return {sub, [args] { return run_bench(*args); }};
}

}  // namespace splitsim
