// calibrate (calibrate.h): robust Levenberg-Marquardt through the simulator.
//
// Each parameter lives in a fitting coordinate x with a box on it
// (parameters.h); the predictions and the Jacobian are problem.h's. Residuals are
// relative errors (predicted - measured) / measured of every measured
// metric of every row, weighted by Huber's function (k = 1.345 times a
// robust scale of at least 1%) so that one wild row cannot pull the fit.
#include "splitsim/calibrate/calibrate.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <utility>

#include "parameters.h"
#include "problem.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/median.h"

namespace splitsim {
namespace {

using calibrate_internal::candidate_params;
using calibrate_internal::Param;
using calibrate_internal::precedence;
using calibrate_internal::Problem;
using calibrate_internal::Residual;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The normalised median absolute residual: the residuals' scatter, robust
// to a few wild ones.
double robust_scale(const Eigen::VectorXd& r) {
  std::vector<double> a(static_cast<size_t>(r.size()));
  for (Eigen::Index i = 0; i < r.size(); ++i) a[static_cast<size_t>(i)] = std::abs(r[i]);
  if (a.empty()) return 0;
  std::nth_element(a.begin(), a.begin() + static_cast<long>(a.size() / 2), a.end());
  return 1.4826 * a[a.size() / 2];
}

// Huber weights for residuals r: 1 inside k*s, k*s/|r| outside; s the
// normalised median absolute residual, at least 1%.
Eigen::VectorXd huber_weights(const Eigen::VectorXd& r) {
  const double k = 1.345 * std::max(0.01, robust_scale(r));
  Eigen::VectorXd w(r.size());
  for (Eigen::Index i = 0; i < r.size(); ++i) w[i] = std::abs(r[i]) <= k ? 1.0 : k / std::abs(r[i]);
  return w;
}

struct FitState {
  Eigen::VectorXd x;
  Eigen::VectorXd r;
  Eigen::MatrixXd J;
  Eigen::VectorXd w;
  int iterations = 0;
};

// Projected Levenberg-Marquardt from x0 over the rows in `use`; a step that
// moves no prediction by `settled` or more ends it (0: only the cost's gain
// or the step's size do). Without `final_jacobian` (a caller that only wants
// x) the residuals and Jacobian at the last step are not computed: a
// simulation per row and parameter.
FitState levenberg_marquardt(const Problem& pb, const std::vector<int>& active, Eigen::VectorXd x0,
                             const std::vector<bool>& use, int max_iterations,
                             const std::function<void(const std::string&)>& progress,
                             double settled = 0, bool final_jacobian = true) {
  FitState s;
  s.x = std::move(x0);
  pb.linearise(active, s.x, use, &s.r, &s.J);
  s.w = huber_weights(s.r);
  double cost = (s.w.array() * s.r.array().square()).sum();
  double lambda = 1e-3;
  const auto clamp = [&](Eigen::VectorXd* x) {
    for (size_t j = 0; j < active.size(); ++j) {
      const Param& p = pb.params()[static_cast<size_t>(active[j])];
      const auto jj = static_cast<Eigen::Index>(j);
      (*x)[jj] = std::clamp((*x)[jj], p.lo, p.hi);
    }
  };
  bool converged = false;
  for (s.iterations = 0; s.iterations < max_iterations && !active.empty() && !converged;
       ++s.iterations) {
    const Eigen::MatrixXd JtW = s.J.transpose() * s.w.asDiagonal();
    const Eigen::MatrixXd A = JtW * s.J;
    const Eigen::VectorXd g = JtW * s.r;
    bool accepted = false;
    for (int tries = 0; tries < 12 && !accepted; ++tries) {
      Eigen::MatrixXd D = A;
      D.diagonal() += lambda * (A.diagonal().array() + 1e-9).matrix();
      Eigen::VectorXd xn = s.x - D.ldlt().solve(g);
      clamp(&xn);
      const Eigen::VectorXd rn = pb.relative(pb.predict(active, xn, use), use);
      const double cn = (s.w.array() * rn.array().square()).sum();
      if (std::isfinite(cn) && cn <= cost) {
        // Converged when a step gains less than 1e-4 of the cost, or moves no
        // prediction by `settled` (relative to its measured value): with
        // Huber weights recomputed after every step the cost kept creeping
        // down by less for up to 40 steps (each a simulation per plan and
        // parameter) that moved the final cost by under 0.02%.
        const bool small = (xn - s.x).norm() < 1e-7 || cost - cn < 1e-14 + 1e-4 * cost ||
                           (rn - s.r).cwiseAbs().maxCoeff() < settled;
        s.x = xn;
        accepted = true;
        lambda = std::max(1e-9, lambda / 3);
        converged = small;
      } else {
        lambda *= 4;
      }
    }
    if (!accepted || (converged && !final_jacobian)) break;
    pb.linearise(active, s.x, use, &s.r, &s.J);
    s.w = huber_weights(s.r);
    cost = (s.w.array() * s.r.array().square()).sum();
    std::ostringstream os;
    os << "iteration " << s.iterations + 1 << ": weighted squared error " << cost;
    progress(os.str());
  }
  return s;
}

size_t match_row(const std::vector<Plan>& plans, const MeasuredRow& row) {
  std::vector<size_t> exact, part;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (plans[i].variant == row.label) exact.push_back(i);
    if (plans[i].variant.find(row.label) != std::string::npos) part.push_back(i);
  }
  if (exact.size() == 1) return exact[0];
  if (exact.empty() && part.size() == 1) return part[0];
  std::string labels;
  for (const Plan& p : plans) labels += (labels.empty() ? "\"" : ", \"") + p.variant + "\"";
  throw InputError(row.source, "\"" + row.label + "\" matches " +
                                   std::to_string(exact.empty() ? part.size() : exact.size()) +
                                   " variants, not one; labels: " + labels);
}

// One plan per row (a row's own copy: rows may repeat a variant) and one
// residual per measured metric of a row.
Problem make_problem(const std::vector<Plan>& plans, const std::vector<MeasuredRow>& rows,
                     const CalibrateOptions& options) {
  if (rows.empty()) throw InputError("measured", "no measured rows");
  if (rows.size() > kMaxMeasuredRows)
    throw InputError("measured", std::to_string(rows.size()) +
                                       " measured rows in all; the limit is " +
                                       std::to_string(kMaxMeasuredRows));
  std::vector<Plan> row_plans;
  std::vector<Residual> residuals;
  for (size_t i = 0; i < rows.size(); ++i) {
    row_plans.push_back(plans[match_row(plans, rows[i])]);
    for (const auto& [key, value] : rows[i].metrics) residuals.push_back({i, key, value});
  }
  std::vector<Param> params = candidate_params(row_plans);
  return Problem(std::move(row_plans), std::move(residuals), std::move(params), options);
}

// The rows simulated as planned; throws InputError for a metric of a party
// the row's plan does not have.
std::vector<double> predict_as_planned(const Problem& pb, const std::vector<MeasuredRow>& rows,
                                       const CalibrateOptions& options) {
  options.progress("simulating " + std::to_string(rows.size()) + " measured row(s) as planned");
  const std::vector<double> before =
      pb.predict({}, Eigen::VectorXd(), std::vector<bool>(rows.size(), true));
  const std::vector<Residual>& residuals = pb.residuals();
  for (size_t i = 0; i < residuals.size(); ++i)
    if (!std::isfinite(before[i]))
      throw InputError(rows[residuals[i].row].source, residuals[i].metric + ": the plan of \"" +
                                                          rows[residuals[i].row].label +
                                                          "\" has no such party");
  return before;
}

// Of the columns `cols` of J0 that the rows cannot tell apart (the weakest
// direction of the normalised columns: the parameters that make it up, at
// least a third of its largest component), the least fundamental one, with
// why it is held; -1 when the columns are separable.
std::pair<int, std::string> weakest_column(const Problem& pb, const std::vector<int>& active,
                                           const std::vector<int>& cols,
                                           const Eigen::MatrixXd& J0) {
  Eigen::MatrixXd S(J0.rows(), static_cast<Eigen::Index>(cols.size()));
  for (size_t c = 0; c < cols.size(); ++c) {
    const Eigen::VectorXd col = J0.col(cols[c]);
    S.col(static_cast<Eigen::Index>(c)) = col / col.norm();
  }
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(S, Eigen::ComputeFullV);
  const Eigen::VectorXd sv = svd.singularValues();
  const bool too_many = cols.size() > static_cast<size_t>(S.rows());
  const double smallest = too_many ? 0.0 : sv[sv.size() - 1];
  if (!too_many && smallest > 0.02 * sv[0]) return {-1, ""};
  const auto param_of = [&](Eigen::Index i) -> const Param& {
    return pb
        .params()[static_cast<size_t>(active[static_cast<size_t>(cols[static_cast<size_t>(i)])])];
  };
  const Eigen::VectorXd v = svd.matrixV().col(svd.matrixV().cols() - 1).cwiseAbs();
  Eigen::Index worst = -1, partner = -1;
  for (Eigen::Index c = 0; c < v.size(); ++c) {
    if (v[c] < v.maxCoeff() / 3) continue;
    if (worst < 0 || precedence(param_of(c)) > precedence(param_of(worst))) worst = c;
  }
  double second = -1;
  for (Eigen::Index c = 0; c < v.size(); ++c)
    if (c != worst && v[c] > second) second = v[c], partner = c;
  const std::string other = partner >= 0 ? param_of(partner).name : "the others";
  return {active[static_cast<size_t>(cols[static_cast<size_t>(worst)])],
          too_many ? "more parameters than measured values; not separable from " + other
                   : "the rows cannot tell it apart from " + other};
}

// Which parameters the rows determine: none that no row depends on, and of
// a set the rows cannot tell apart, all but one. Returns those held, with why.
std::map<int, std::string> held_parameters(const Problem& pb, size_t row_count,
                                           const CalibrateOptions& options) {
  std::vector<int> active;
  for (size_t j = 0; j < pb.params().size(); ++j) active.push_back(static_cast<int>(j));
  Eigen::VectorXd r0;
  Eigen::MatrixXd J0;
  options.progress("checking which of " + std::to_string(active.size()) +
                   " parameters the rows determine");
  pb.linearise(active, Eigen::VectorXd::Zero(static_cast<Eigen::Index>(active.size())),
               std::vector<bool>(row_count, true), &r0, &J0);
  std::map<int, std::string> held;
  for (size_t j = 0; j < active.size(); ++j)
    if (J0.col(static_cast<Eigen::Index>(j)).norm() < 1e-6)
      held[active[j]] = "no measured value depends on it";
  for (;;) {
    std::vector<int> cols;
    for (size_t j = 0; j < active.size(); ++j)
      if (!held.count(active[j])) cols.push_back(static_cast<int>(j));
    if (cols.empty()) break;
    auto [worst, why] = weakest_column(pb, active, cols, J0);
    if (worst < 0) break;
    held[worst] = std::move(why);
  }
  return held;
}

// Fits the parameters not `held` (into `fitted`, in order); a parameter that
// runs to a bound of its box (a scale of 1000x either way, an overhead of an
// hour, a link at 0.1% of its rate) is one the rows push past any plausible
// value: hold it and fit the rest again.
FitState fit_free_parameters(const Problem& pb, size_t row_count, const CalibrateOptions& options,
                             std::map<int, std::string>* held, std::vector<int>* fitted) {
  for (size_t j = 0; j < pb.params().size(); ++j)
    if (!held->count(static_cast<int>(j))) fitted->push_back(static_cast<int>(j));
  FitState s;
  for (;;) {
    options.progress("fitting " + std::to_string(fitted->size()) + " parameter(s) to " +
                     std::to_string(pb.residuals().size()) + " measured value(s)");
    s = levenberg_marquardt(
        pb, *fitted, Eigen::VectorXd::Zero(static_cast<Eigen::Index>(fitted->size())),
        std::vector<bool>(row_count, true), options.max_iterations, options.progress);
    int at_bound = -1;
    for (size_t k = 0; k < fitted->size() && at_bound < 0; ++k) {
      const Param& prm = pb.params()[static_cast<size_t>((*fitted)[k])];
      const double x = s.x[static_cast<Eigen::Index>(k)];
      const double margin = 1e-6 * (prm.hi - prm.lo);
      if ((x <= prm.lo + margin && prm.lo < 0) || (x >= prm.hi - margin && prm.hi > 0))
        at_bound = static_cast<int>(k);
    }
    if (at_bound < 0) break;
    const Param& prm = pb.params()[static_cast<size_t>((*fitted)[static_cast<size_t>(at_bound)])];
    std::ostringstream why;
    why << "ran to the bound of its range (" << prm.value(s.x[at_bound])
        << "): the rows push it past any plausible value";
    (*held)[(*fitted)[static_cast<size_t>(at_bound)]] = why.str();
    options.progress("holding " + prm.name + ": " + why.str());
    fitted->erase(fitted->begin() + at_bound);
  }
  return s;
}

// Every parameter's value and uncertainty (s^2 (J^T W J)^-1 in x, then to
// the parameter's units), or why it is held; a warning when the fit is exact.
void record_parameters(const Problem& pb, const FitState& s, const std::vector<int>& fitted,
                       const std::map<int, std::string>& held, CalibrationFit* fit) {
  const auto n = static_cast<double>(s.r.size());
  const auto p = static_cast<double>(fitted.size());
  Eigen::MatrixXd cov = Eigen::MatrixXd::Constant(static_cast<Eigen::Index>(fitted.size()),
                                                  static_cast<Eigen::Index>(fitted.size()), kNaN);
  if (n > p && !fitted.empty()) {
    const double s2 = (s.w.array() * s.r.array().square()).sum() / (n - p);
    const Eigen::MatrixXd A = s.J.transpose() * s.w.asDiagonal() * s.J;
    cov = s2 * A.completeOrthogonalDecomposition().pseudoInverse();
  } else if (!fitted.empty()) {
    fit->warnings.push_back(std::to_string(static_cast<int>(n)) + " measured value(s) for " +
                            std::to_string(fitted.size()) +
                            " fitted parameter(s): the fit is exact and its uncertainty unknown; "
                            "measure more variants");
  }
  for (size_t j = 0; j < pb.params().size(); ++j) {
    const Param& prm = pb.params()[j];
    FittedParameter fp;
    fp.name = prm.name;
    const auto it = std::find(fitted.begin(), fitted.end(), static_cast<int>(j));
    if (it != fitted.end()) {
      const auto k = static_cast<Eigen::Index>(it - fitted.begin());
      fp.fitted = true;
      fp.value = prm.value(s.x[k]);
      const double sx = std::sqrt(cov(k, k));
      fp.sigma = prm.log ? fp.value * sx : sx * prm.unit;
    } else {
      fp.value = prm.value(0);
      fp.sigma = kNaN;
      fp.why = held.at(static_cast<int>(j));
    }
    fit->parameters.push_back(fp);
  }
}

// Leave one out: refit without row i, from the full fit `s`, and predict
// it (fit->rows' left_out); the median and largest error of time per batch.
// A refit ends once a step moves no prediction by a tenth of the full fit's
// scatter (0.01% at least): on rows with 1% noise the refits otherwise crept
// 17-30 steps along a direction the other rows hardly determine (their
// forward-difference Jacobian over a 2% step overshoots there, so every
// step's first try failed), each step moving the predictions by 0.01-0.04%;
// the left-out errors moved by under 0.01 points, the test's fit took 28
// instead of 128 s.
void leave_one_out(const Problem& pb, const std::vector<MeasuredRow>& rows, const FitState& s,
                   const std::vector<int>& fitted, const CalibrateOptions& options,
                   CalibrationFit* fit) {
  const std::vector<Residual>& residuals = pb.residuals();
  std::vector<double> loo;
  const double settled = std::max(1e-4, 0.1 * robust_scale(s.r));
  if (options.leave_one_out && rows.size() >= 2) {
    for (size_t i = 0; i < rows.size(); ++i) {
      options.progress("leave-one-out " + std::to_string(i + 1) + " of " +
                       std::to_string(rows.size()) + ": \"" + rows[i].label + "\"");
      std::vector<bool> use(rows.size(), true);
      use[i] = false;
      const FitState si = levenberg_marquardt(
          pb, fitted, s.x, use, options.max_iterations, [](const std::string&) {}, settled,
          /*final_jacobian=*/false);
      std::vector<bool> only(rows.size(), false);
      only[i] = true;
      const std::vector<double> pred = pb.predict(fitted, si.x, only);
      for (size_t k = 0; k < residuals.size(); ++k) {
        if (residuals[k].row != i) continue;
        fit->rows[k].left_out = pred[k];
        if (residuals[k].metric == "time_per_batch_s")
          loo.push_back(std::abs(pred[k] - residuals[k].measured) / residuals[k].measured * 100);
      }
    }
  }
  fit->loo_median_abs_pct = median(loo);
  fit->loo_max_abs_pct = loo.empty() ? kNaN : *std::max_element(loo.begin(), loo.end());
}

}  // namespace

CalibrationFit calibrate(const std::vector<Plan>& plans, const std::vector<MeasuredRow>& rows,
                         const CalibrateOptions& options) {
  const Problem pb = make_problem(plans, rows, options);
  const std::vector<double> before = predict_as_planned(pb, rows, options);
  std::map<int, std::string> held = held_parameters(pb, rows.size(), options);
  std::vector<int> fitted;
  const FitState s = fit_free_parameters(pb, rows.size(), options, &held, &fitted);
  CalibrationFit fit;
  fit.iterations = s.iterations;
  fit.calibration = pb.calibration(fitted, s.x);
  record_parameters(pb, s, fitted, held, &fit);
  if (!held.empty() && rows.size() < 4)
    fit.warnings.push_back("only " + std::to_string(rows.size()) +
                           " row(s): several parameters are held; measure variants that differ "
                           "in codec, chunks and link rate");
  const std::vector<Residual>& residuals = pb.residuals();
  const std::vector<double> after = pb.predict(fitted, s.x, std::vector<bool>(rows.size(), true));
  for (size_t i = 0; i < residuals.size(); ++i)
    fit.rows.push_back({rows[residuals[i].row].label, residuals[i].metric, residuals[i].measured,
                        before[i], after[i], kNaN});
  leave_one_out(pb, rows, s, fitted, options, &fit);
  fit.simulations = pb.simulations();
  return fit;
}

}  // namespace splitsim
