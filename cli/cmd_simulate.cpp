// `splitsim simulate FILE`: every variant of a scenario, or every plan of a
// plan file (load_plans, plan_source.h), calibrated with --calibration,
// through the SimGrid simulator (simulate_and_report,
// sim/include/splitsim/sim/simulate_report.h): a table, the metrics JSON,
// CSV, and a Chrome trace of one variant.
#include <iostream>
#include <memory>

#include "commands.h"
#include "flag_checks.h"
#include "plan_source.h"
#include "splitsim/costmodel/calibration.h"
#include "splitsim/sim/simulate_report.h"

namespace splitsim {
namespace {

struct SimulateArgs {
  std::string file;
  std::string variant;
  std::string calibration;
  SimulateRequest request;
};

int run_simulate(const SimulateArgs& args) {
  auto load = [&args] {
    std::shared_ptr<const Calibration> calibration;
    if (!args.calibration.empty())
      calibration = std::make_shared<const Calibration>(load_calibration_file(args.calibration));
    return load_plans(args.file, args.variant, calibration);
  };
  simulate_and_report(args.request, load, std::cout, std::cerr);
  return 0;
}

}  // namespace

Command add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* sub = app.add_subcommand(
      "simulate",
      "Simulate every variant of a scenario, or every plan of a plan file, with SimGrid (one "
      "host per party, full-duplex links, one actor per stage running the schedule) and print "
      "per batch: time, computation time, average and peak bandwidth and the bottleneck (a "
      "table within 120 columns; --wide adds the time's spread, bubble fraction, peak stash per "
      "stage and bytes per party). Warm-up batches are left out.");
  sub->add_option("file", args->file,
                  "scenario JSON file, or plan file (schema splitsim.plan/1, what `splitsim plan "
                  "--json` writes: one plan or an array); a build without LibTorch reads plan "
                  "files only")
      ->required();
  sub->add_option("--variant", args->variant,
                  "only the variants (of a plan file: the plans) whose label contains this text "
                  "(e.g. \"chunks=4\")");
  auto* json = sub->add_flag("--json", args->request.json,
                             "metrics JSON (schema splitsim.metrics/1): one object, or an array "
                             "when several variants are selected");
  auto* csv = sub->add_flag("--csv", args->request.csv, "CSV, one row per variant (for notebooks)");
  csv->excludes(json);
  sub->add_flag("--wide", args->request.wide,
                "the table with every column (the time's spread, bubble fraction, peak stash "
                "per stage, bytes per party), one long row per variant")
      ->excludes(json)
      ->excludes(csv);
  sub->add_option("--trace", args->request.trace,
                  "write the Chrome trace-event JSON (Perfetto) of the one selected variant");
  sub->add_option("--server-order", args->request.server_order,
                  "with several clients, which waiting client the server serves next: fifo or "
                  "round-robin")
      ->capture_default_str();
  sub->add_option("--calibration", args->calibration,
                  "apply this calibration (schema splitsim.calibration/1: per-party compute "
                  "scale, overhead per operation and codec scale; link bandwidth factor, "
                  "overhead per message, host work per byte) to every plan before simulating");
  sub->add_option("--jobs", args->request.jobs,
                  "simulations run at once, each in a process of its own (default: the CPU count)")
      ->check(int_range(1, 1024));
  return {sub, [args] { return run_simulate(*args); }};
}

}  // namespace splitsim
