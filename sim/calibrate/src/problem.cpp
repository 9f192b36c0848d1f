#include "problem.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "splitsim/sim/simulator.h"

namespace splitsim::calibrate_internal {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double metric_of(const Metrics& m, const std::string& key) {
  if (key == "time_per_batch_s") return m.time_per_batch_s;
  if (key == "computation_time_s") return m.computation_time_s;
  const PartyMetrics* p = m.party(key.substr(key.find('.') + 1));
  return p != nullptr ? p->busy_s_per_batch : kNaN;
}

}  // namespace

Calibration Problem::calibration(const std::vector<int>& active, const Eigen::VectorXd& x) const {
  Calibration c;
  for (size_t i = 0; i < active.size(); ++i)
    set_param(&c, params_[static_cast<size_t>(active[i])], x[static_cast<Eigen::Index>(i)]);
  return c;
}

std::vector<double> Problem::predict(const std::vector<int>& active, const Eigen::VectorXd& x,
                                     const std::vector<bool>& use) const {
  const Calibration c = calibration(active, x);
  const std::string key = nlohmann::json(c).dump();
  std::vector<Plan> run;
  std::vector<size_t> run_rows;
  for (const Residual& r : res_)
    if (use[r.row] && !simulated_.count({r.row, key}) &&
        std::find(run_rows.begin(), run_rows.end(), r.row) == run_rows.end()) {
      run_rows.push_back(r.row);
      run.push_back(apply_calibration(plans_[r.row], c));
    }
  const std::vector<Metrics> m = simulate_metrics(run, SimOptions{}, o_.jobs);
  for (size_t i = 0; i < run_rows.size(); ++i) simulated_[{run_rows[i], key}] = m[i];
  simulations_ += static_cast<int>(run.size());
  std::vector<double> out(res_.size(), kNaN);
  for (size_t i = 0; i < res_.size(); ++i)
    if (use[res_[i].row]) out[i] = metric_of(simulated_.at({res_[i].row, key}), res_[i].metric);
  return out;
}

Eigen::VectorXd Problem::relative(const std::vector<double>& pred,
                                  const std::vector<bool>& use) const {
  std::vector<double> r;
  for (size_t i = 0; i < res_.size(); ++i)
    if (use[res_[i].row]) r.push_back((pred[i] - res_[i].measured) / res_[i].measured);
  return Eigen::Map<Eigen::VectorXd>(r.data(), static_cast<Eigen::Index>(r.size()));
}

void Problem::linearise(const std::vector<int>& active, const Eigen::VectorXd& x,
                        const std::vector<bool>& use, Eigen::VectorXd* r,
                        Eigen::MatrixXd* J) const {
  *r = relative(predict(active, x, use), use);
  J->resize(r->size(), static_cast<Eigen::Index>(active.size()));
  for (size_t j = 0; j < active.size(); ++j) {
    const Param& p = params_[static_cast<size_t>(active[j])];
    Eigen::VectorXd xs = x;
    double h = fd_step(p);
    const auto jj = static_cast<Eigen::Index>(j);
    if (xs[jj] + h > p.hi) h = -h;  // step inside the box
    xs[jj] += h;
    J->col(jj) = (relative(predict(active, xs, use), use) - *r) / h;
  }
}

}  // namespace splitsim::calibrate_internal
