#include "splitsim/costmodel/efficiency_fit.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include <Eigen/Dense>

namespace splitsim {
namespace {

constexpr int kClasses = 5;  // conv, depthwise, matmul, elementwise, per-op
// A class is fitted only where, at full efficiency, it would take at least
// this share of some observation's measured time. Below that the data cannot
// tell its efficiency apart from noise in the other classes: ResNet20's only
// matmul is the 64x10 head, 0.2% of the head's time, and fitting it gave a
// matmul efficiency of 0.0025, which then priced power iteration's products
// (batched matmuls) 240 times too slow.
constexpr double kMinShare = 0.05;
const char* const kNames[kClasses] = {"conv", "depthwise", "matmul", "elementwise", "per_op_s"};

// Seconds per unit of each class's coefficient: x_c = 1 / efficiency_c
// (per_op_s is its own coefficient).
Eigen::RowVectorXd features(const DeviceProfile& d, const OpCounts& w) {
  Eigen::RowVectorXd f(kClasses);
  f << w.conv_macs / d.peak_macs_per_s(), w.depthwise_macs / d.peak_macs_per_s(),
      w.matmul_macs / d.peak_macs_per_s(), 8.0 * w.elementwise_elems / d.memory_bandwidth_Bps,
      static_cast<double>(w.ops);
  return f;
}

}  // namespace

FitResult fit_efficiency(const DeviceProfile& device, const std::vector<TimedWork>& data) {
  assert(device.peak_flops > 0 && device.memory_bandwidth_Bps > 0);
  const int n = static_cast<int>(data.size());
  Eigen::MatrixXd a(n, kClasses);
  Eigen::VectorXd b(n);
  for (int i = 0; i < n; ++i) {
    // Divide each row by the measured time: minimise relative, not absolute, error.
    const double t = std::max(data[i].seconds, 1e-9);
    a.row(i) = features(device, data[i].work) / t;
    b(i) = 1.0;
  }
  std::vector<bool> active(kClasses);
  // Rows are features / measured time, so a column's entries are the shares.
  for (int c = 0; c < kClasses; ++c) {
    const double most = n > 0 ? a.col(c).cwiseAbs().maxCoeff() : 0.0;
    active[c] = c == kClasses - 1 ? most > 0 : most >= kMinShare;
  }

  Eigen::VectorXd x = Eigen::VectorXd::Zero(kClasses);
  for (int round = 0; round < kClasses; ++round) {
    std::vector<int> cols;
    for (int c = 0; c < kClasses; ++c)
      if (active[c]) cols.push_back(c);
    if (cols.empty()) break;
    Eigen::MatrixXd sub(n, cols.size());
    for (size_t k = 0; k < cols.size(); ++k) sub.col(k) = a.col(cols[k]);
    const Eigen::VectorXd sol = sub.colPivHouseholderQr().solve(b);
    x.setZero();
    int worst = -1;
    for (size_t k = 0; k < cols.size(); ++k) {
      x(cols[k]) = sol(k);
      if (sol(k) <= 0 && (worst < 0 || sol(k) < x(worst))) worst = cols[k];
    }
    if (worst < 0) break;
    active[worst] = false;  // a negative inverse efficiency means no evidence
  }

  FitResult r;
  r.efficiency = device.efficiency;
  r.observations = n;
  double* eff[4] = {&r.efficiency.conv, &r.efficiency.depthwise, &r.efficiency.matmul,
                    &r.efficiency.elementwise};
  for (int c = 0; c < kClasses; ++c) {
    if (!active[c] || x(c) <= 0) continue;
    r.fitted.push_back(kNames[c]);
    if (c < 4) *eff[c] = 1.0 / x(c);
  }
  r.efficiency.per_op_s = active[4] && x(4) > 0 ? x(4) : 0.0;

  DeviceProfile fitted = device;
  fitted.efficiency = r.efficiency;
  double sum_sq = 0;
  for (const auto& d : data) {
    const double rel = formula_seconds(fitted, d.work) / d.seconds - 1.0;
    sum_sq += rel * rel;
    r.max_rel_error = std::max(r.max_rel_error, std::abs(rel));
  }
  r.rms_rel_error = n > 0 ? std::sqrt(sum_sq / n) : 0.0;
  return r;
}

}  // namespace splitsim
