// `splitsim calibrate FILE --measured FILES... -o OUT`: fit a calibration
// (splitsim.calibration/1) to measured runs of FILE's variants (calibrate,
// sim/calibrate) and print the parameters, the rows and the leave-one-out
// errors.
#include <cmath>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
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

std::string pct(double predicted, double measured) {
  if (!std::isfinite(predicted)) return "-";
  std::ostringstream os;
  os << std::showpos << std::fixed << std::setprecision(1)
     << (predicted - measured) / measured * 100 << "%";
  return os.str();
}

void print_fit(std::ostream& out, const CalibrationFit& fit) {
  out << "parameter                          value         ±1 sigma      \n";
  for (const FittedParameter& p : fit.parameters) {
    out << std::left << std::setw(34) << p.name << " " << std::setw(13) << std::setprecision(5)
        << p.value << " ";
    if (p.fitted) {
      std::ostringstream sigma;
      sigma << std::setprecision(3) << p.sigma;
      out << std::setw(13) << (std::isfinite(p.sigma) ? sigma.str() : "unknown") << " fitted\n";
    } else
      out << "-             held: " << p.why << "\n";
  }
  out << "\nvariant / metric: measured, error uncalibrated -> calibrated, left out\n";
  for (const RowResult& r : fit.rows)
    out << "  " << r.label << " / " << r.metric << ": " << r.measured << " s, "
        << pct(r.uncalibrated, r.measured) << " -> " << pct(r.calibrated, r.measured) << ", "
        << pct(r.left_out, r.measured) << "\n";
  out << "leave-one-out |error| of time per batch: ";
  if (std::isfinite(fit.loo_median_abs_pct))
    out << "median " << std::setprecision(3) << fit.loo_median_abs_pct << "%, max "
        << fit.loo_max_abs_pct << "%\n";
  else
    out << "not run (needs 2 rows with time_per_batch_s)\n";
  for (const std::string& w : fit.warnings) out << "warning: " << w << "\n";
}

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
  print_fit(std::cout, fit);
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
