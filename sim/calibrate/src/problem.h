#pragma once
// The fit's problem (internal to splitsim_calibrate): one plan per measured
// row, one residual per measured value, the candidate parameters; the
// predictions through the simulator, each row simulated once per
// calibration, and the forward-difference Jacobian.
#include <Eigen/Dense>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "parameters.h"
#include "splitsim/calibrate/calibrate.h"
#include "splitsim/costmodel/calibration.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/sim/metrics.h"

namespace splitsim::calibrate_internal {

struct Residual {
  size_t row;
  std::string metric;
  double measured;
};

class Problem {
 public:
  Problem(std::vector<Plan> plans, std::vector<Residual> residuals, std::vector<Param> params,
          const CalibrateOptions& o)
      : plans_(std::move(plans)), res_(std::move(residuals)), params_(std::move(params)), o_(o) {}

  const std::vector<Param>& params() const { return params_; }
  const std::vector<Residual>& residuals() const { return res_; }

  // The calibration with the parameters `active` (indices into params())
  // at the coordinates x, the others as planned.
  Calibration calibration(const std::vector<int>& active, const Eigen::VectorXd& x) const;

  // Predicted value of every residual's metric under the calibration of
  // (active, x) for the rows in `use`, NaN for the others. A row already
  // simulated under the same calibration is not simulated again (the
  // simulator is deterministic): the fit's first Jacobian is the one that
  // chose which parameters to hold, and a leave-one-out refit's first is the
  // fit's last.
  std::vector<double> predict(const std::vector<int>& active, const Eigen::VectorXd& x,
                              const std::vector<bool>& use) const;

  // (predicted - measured) / measured of the rows in `use`, in order.
  Eigen::VectorXd relative(const std::vector<double>& pred, const std::vector<bool>& use) const;

  // Residuals and forward-difference Jacobian at x.
  void linearise(const std::vector<int>& active, const Eigen::VectorXd& x,
                 const std::vector<bool>& use, Eigen::VectorXd* r, Eigen::MatrixXd* J) const;

  // Plans simulated so far (each row under each calibration once).
  int simulations() const { return simulations_; }

 private:
  using Key = std::pair<size_t, std::string>;  // the row, its calibration as JSON
  std::vector<Plan> plans_;
  std::vector<Residual> res_;
  std::vector<Param> params_;
  CalibrateOptions o_;
  mutable std::map<Key, Metrics> simulated_;
  mutable int simulations_ = 0;
};

}  // namespace splitsim::calibrate_internal
