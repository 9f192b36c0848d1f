// calibration_file_json (calibrate.h): the calibration file with the fit.
#include <cmath>
#include <nlohmann/json.hpp>

#include "splitsim/calibrate/calibrate.h"

namespace splitsim {

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
              {"leave_one_out_median_abs_pct", num(fit.loo_median_abs_pct)},
              {"leave_one_out_max_abs_pct", num(fit.loo_max_abs_pct)}};
  return j;
}

}  // namespace splitsim
