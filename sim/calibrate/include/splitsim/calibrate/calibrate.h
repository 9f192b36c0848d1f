#pragma once
// Fitting a Calibration (splitsim/costmodel/calibration.h) to measured runs:
// the parameters that the rows can determine are fitted by robust
// Levenberg-Marquardt through the simulator, the others held at their
// defaults with the reason; each fitted parameter gets an uncertainty, each
// row its residual and its leave-one-out prediction error. See README.md
// here. No LibTorch: it takes Plans.
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/calibration.h"
#include "splitsim/costmodel/plan.h"

namespace splitsim {

// One measured run of a variant. Metric keys: "time_per_batch_s",
// "computation_time_s", "busy_s_per_batch.<party>".
struct MeasuredRow {
  std::string label;   // the variant's label (or a unique part of it)
  std::string source;  // "FILE:LINE" or "FILE[i]", for messages
  std::map<std::string, double> metrics;
};

// Measured times, in seconds: from a microsecond (below any real batch or
// busy time; smaller values are not measurements) to a day.
constexpr double kMinMeasuredS = 1e-6;
constexpr double kMaxMeasuredS = 86400;
// Measured rows, per file and in all: each is simulated at every step of
// the fit, and leave-one-out refits once per row.
constexpr size_t kMaxMeasuredRows = 256;

// Reads measured rows from `file`: exec's metrics JSON (splitsim.metrics/1,
// one object or an array; the variant label and the metrics above), or a
// CSV whose header names a `variant` column and any of the metric keys (the
// form in which results are published). Throws InputError naming the file,
// line or JSON path: a time outside [kMinMeasuredS, kMaxMeasuredS], a
// metric that is not a number, a label that is not UTF-8 or holds a control
// character, more than kMaxMeasuredRows rows.
std::vector<MeasuredRow> read_measured(const std::string& file);

struct CalibrateOptions {
  int jobs = 1;               // simulations at once
  int max_iterations = 40;    // Levenberg-Marquardt iterations per fit
  bool leave_one_out = true;  // refit without each row and predict it
  std::function<void(const std::string&)> progress = [](const std::string&) {};
};

struct FittedParameter {
  std::string name;  // "server.compute_scale", "bandwidth_factor", ...
  double value = 0;
  double sigma = 0;  // one standard deviation; NaN when not estimable
  bool fitted = false;
  std::string why;  // why held, or "" when fitted
};

struct RowResult {
  std::string label, metric;
  double measured = 0;
  double uncalibrated = 0;  // predicted with the plan as given
  double calibrated = 0;    // predicted with the fitted calibration
  double left_out = 0;      // predicted by the fit without this row (NaN: not run)
};

struct CalibrationFit {
  Calibration calibration;
  std::vector<FittedParameter> parameters;
  std::vector<RowResult> rows;
  std::vector<std::string> warnings;                   // too few rows, parameters not identifiable
  double loo_median_abs_pct = 0, loo_max_abs_pct = 0;  // time per batch (NaN: not run)
  int iterations = 0;
  // Plans the fit simulated, leave-one-out included: each row once for each
  // parameter vector it was predicted under (a repeat is looked up, not run).
  int simulations = 0;
};

// Matches every row to the one plan whose variant label equals it (else
// contains it, when exactly one does) and fits. Throws InputError when a row
// matches no plan or several, or names a party no plan has.
CalibrationFit calibrate(const std::vector<Plan>& plans, const std::vector<MeasuredRow>& rows,
                         const CalibrateOptions& options);

// The calibration file: the Calibration, with the fit's parameters, rows and
// warnings under "fit" (kept for the reader; not read back).
nlohmann::json calibration_file_json(const CalibrationFit& fit);

// Each parameter with its value and uncertainty (or why it was held), each
// row's error before and after the fit and left out, the leave-one-out
// error and the warnings, as `splitsim calibrate` prints them.
void print_calibration_fit(std::ostream& out, const CalibrationFit& fit);

}  // namespace splitsim
