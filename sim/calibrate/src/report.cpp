// calibration_file_json and print_calibration_fit (calibrate.h): the
// calibration file with the fit, and the fit as `calibrate` prints it.
#include <cmath>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "splitsim/calibrate/calibrate.h"

namespace splitsim {
namespace {

// The error of `predicted` against `measured` in percent, signed; "-" when
// there is no prediction.
std::string pct(double predicted, double measured) {
  if (!std::isfinite(predicted)) return "-";
  std::ostringstream os;
  os << std::showpos << std::fixed << std::setprecision(1)
     << (predicted - measured) / measured * 100 << "%";
  return os.str();
}

}  // namespace

nlohmann::json calibration_file_json(const CalibrationFit& fit) {
  nlohmann::json j = fit.calibration;
  const auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json params = nlohmann::json::array(), rows = nlohmann::json::array();
  for (const FittedParameter& p : fit.parameters) {
    nlohmann::json e = {{"name", p.name}, {"value", p.value}, {"fitted", p.fitted}};
    if (p.fitted)
      e["sigma"] = num(p.sigma);
    else
      e["held_because"] = p.why;
    params.push_back(e);
  }
  for (const RowResult& r : fit.rows)
    rows.push_back({{"variant", r.label},
                    {"metric", r.metric},
                    {"measured", r.measured},
                    {"uncalibrated", num(r.uncalibrated)},
                    {"calibrated", num(r.calibrated)},
                    {"left_out", num(r.left_out)}});
  j["fit"] = {{"parameters", params},
              {"rows", rows},
              {"warnings", fit.warnings},
              {"iterations", fit.iterations},
              {"simulations", fit.simulations},
              {"leave_one_out_median_abs_pct", num(fit.loo_median_abs_pct)},
              {"leave_one_out_max_abs_pct", num(fit.loo_max_abs_pct)}};
  return j;
}

void print_calibration_fit(std::ostream& out, const CalibrationFit& fit) {
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

}  // namespace splitsim
