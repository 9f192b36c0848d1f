// `splitsim calibrate FILE --measured FILES... -o OUT`: fit a calibration
// (splitsim.calibration/1) to measured runs of FILE's variants (calibrate,
// sim/calibrate) and print the parameters, the rows and the leave-one-out
// errors (print_calibration_fit).
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "commands.h"
#include "flag_checks.h"
#include "plan_source.h"
#include "splitsim/calibrate/calibrate.h"
#include "splitsim/costmodel/output_file.h"

namespace splitsim {
namespace {

struct CalibrateArgs {
  std::string file;
  std::vector<std::string> measured;
  std::string output;
  bool no_loo = false;
  int jobs = 0;
};

int run_calibrate(const CalibrateArgs& args) {
  check_output_path(args.output, "-o");  // before the fit
  std::vector<MeasuredRow> rows;
  for (const std::string& f : args.measured) {
    const std::vector<MeasuredRow> more = read_measured(f);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  const std::vector<Plan> plans = load_plans(args.file, "");
  CalibrateOptions o;
  o.jobs = args.jobs > 0 ? args.jobs
                         : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  o.leave_one_out = !args.no_loo;
  o.progress = [](const std::string& line) { std::cerr << "calibrate: " << line << "\n"; };
  const CalibrationFit fit = calibrate(plans, rows, o);
  write_output_file(args.output, calibration_file_json(fit).dump(2) + "\n", "-o");
  print_calibration_fit(std::cout, fit);
  std::cout << "calibration written to " << args.output << "\n";
  return 0;
}

}  // namespace

Command add_calibrate_command(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "Fit a calibration (per party: compute scale, scale per op class, overhead per "
      "operation, codec scale, host work per byte sent and received; the link's bandwidth "
      "factor and overhead per message) to measured runs "
      "of FILE's variants, by robust least squares through the simulator; print each "
      "parameter with its uncertainty (or why it was held), each row's error before and after, "
      "and the leave-one-out error. Use the result with `simulate --calibration`.");
  sub->add_option("file", args->file,
                  "scenario JSON file, or plan file (`splitsim plan --json`): the variants that "
                  "were measured")
      ->required();
  sub->add_option("--measured", args->measured,
                  "measured runs: exec metrics JSON (splitsim.metrics/1, `splitsim exec --json`; "
                  "one object or an array) or CSV with a `variant` column and any of "
                  "time_per_batch_s, computation_time_s, busy_s_per_batch.PARTY")
      ->required()
      ->expected(1, -1);
  sub->add_option("-o,--output", args->output, "the calibration file to write")->required();
  sub->add_flag("--no-leave-one-out", args->no_loo,
                "skip refitting without each row (faster; no leave-one-out error)");
  sub->add_option("--jobs", args->jobs,
                  "simulations run at once, each in a process of its own (default: the CPU count)")
      ->check(int_range(1, 1024));
  return {sub, [args] { return run_calibrate(*args); }};
}

}  // namespace splitsim
