// `splitsim simulate FILE`: every variant of a scenario, or every plan of a
// plan file (load_plans, plan_source.h), through the SimGrid simulator; a
// table (print_metrics_table), the metrics JSON, CSV, and a Chrome trace of
// one variant.
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "commands.h"
#include "flag_checks.h"
#include "plan_source.h"
#include "splitsim/costmodel/calibration.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/output_file.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/metrics_table.h"
#include "splitsim/sim/simulator.h"
#include "splitsim/sim/trace.h"

namespace splitsim {
namespace {

struct SimulateArgs {
  std::string file;
  std::string variant;
  bool json = false;
  bool csv = false;
  bool wide = false;
  std::string trace;
  std::string server_order = "fifo";
  std::string calibration;
  int jobs = 0;
};

int run_simulate(const SimulateArgs& args) {
  const ServerOrder order = parse_server_order(args.server_order, "--server-order");
  if (!args.trace.empty()) check_output_path(args.trace, "--trace");  // before the simulation
  std::vector<Plan> plans = load_plans(args.file, args.variant);
  if (!args.calibration.empty()) {
    const Calibration c = load_calibration_file(args.calibration);
    for (Plan& p : plans) p = apply_calibration(p, c);
  }
  if (!args.trace.empty() && plans.size() > 1) {
    std::string labels;
    for (const auto& p : plans) labels += (labels.empty() ? "\"" : ", \"") + p.variant + "\"";
    throw InputError(
        "--trace", "writes one variant's trace, but " + std::to_string(plans.size()) +
                       " variants are selected; pick one with --variant (labels: " + labels + ")");
  }
  const int jobs = args.jobs > 0
                       ? args.jobs
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  SimOptions options;
  options.server_order = order;
  std::cerr << "simulating " << plans.size() << " variant(s)\n";
  std::vector<Metrics> metrics;
  if (args.trace.empty()) {
    metrics = simulate_metrics(plans, options, jobs);
  } else {  // one plan, whose timeline is written too
    const Timeline timeline = simulate(plans.front(), options);
    metrics.push_back(compute_metrics(timeline, plans.front(), plans.front().warmup));
    write_output_stream(args.trace, "--trace",
                        [&timeline](std::ostream& out) { write_chrome_trace(timeline, out); });
    std::cerr << "trace of \"" << plans.front().variant << "\" written to " << args.trace << "\n";
  }
  std::ostringstream out;
  if (args.json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& m : metrics) all.push_back(m);
    out << (all.size() == 1 ? all[0] : all).dump(2) << "\n";
  } else if (args.csv) {
    write_csv_header(out);
    for (const auto& m : metrics) write_csv_row(out, m);
  } else if (args.wide) {
    print_wide_metrics_table(out, metrics);
  } else {
    print_metrics_table(out, metrics);
  }
  std::cout << out.str();
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
  auto* json = sub->add_flag("--json", args->json,
                             "metrics JSON (schema splitsim.metrics/1): one object, or an array "
                             "when several variants are selected");
  auto* csv = sub->add_flag("--csv", args->csv, "CSV, one row per variant (for notebooks)");
  csv->excludes(json);
  sub->add_flag("--wide", args->wide,
                "the table with every column (the time's spread, bubble fraction, peak stash "
                "per stage, bytes per party), one long row per variant")
      ->excludes(json)
      ->excludes(csv);
  sub->add_option("--trace", args->trace,
                  "write the Chrome trace-event JSON (Perfetto) of the one selected variant");
  sub->add_option("--server-order", args->server_order,
                  "with several clients, which waiting client the server serves next: fifo or "
                  "round-robin")
      ->capture_default_str();
  sub->add_option("--calibration", args->calibration,
                  "apply this calibration (schema splitsim.calibration/1: per-party compute "
                  "scale, overhead per operation and codec scale; link bandwidth factor, "
                  "overhead per message, host work per byte) to every plan before simulating");
  sub->add_option("--jobs", args->jobs,
                  "simulations run at once, each in a process of its own (default: the CPU count)")
      ->check(int_range(1, 1024));
  return {sub, [args] { return run_simulate(*args); }};
}

}  // namespace splitsim
