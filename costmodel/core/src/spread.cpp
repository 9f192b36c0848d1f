// A prediction's spread: the plan at the ends of its devices' timing spread.
#include "splitsim/costmodel/spread.h"

#include <algorithm>
#include <stdexcept>

#include "splitsim/costmodel/calibration.h"

namespace splitsim {

std::map<std::string, double> party_spreads(const std::map<std::string, DeviceProfile>& devices,
                                            std::optional<double> fixed) {
  if (fixed && !(*fixed >= 0 && *fixed < 1))
    throw std::invalid_argument("a spread must be in [0, 1), got " + std::to_string(*fixed));
  std::map<std::string, double> out;
  double largest = fixed.value_or(0.0);
  for (const auto& [party, device] : devices) {
    out[party] = fixed.value_or(device.timing_spread);
    largest = std::max(largest, out[party]);
  }
  out["*"] = largest;
  return out;
}

double largest_spread(const std::map<std::string, double>& spreads) {
  double largest = 0;
  for (const auto& [party, s] : spreads) largest = std::max(largest, s);
  return largest;
}

Plan plan_at_spread(const Plan& plan, const std::map<std::string, double>& spreads, int sign) {
  if (sign != -1 && sign != 1) throw std::invalid_argument("plan_at_spread: sign must be -1 or +1");
  Calibration c;
  c.description = sign < 0 ? "the fast end of the timing spread" : "the slow end";
  for (const auto& [party, s] : spreads) c.parties[party].compute_scale = 1 + sign * s;
  return apply_calibration(plan, c);
}

bool predicted_tie(const TimeSpread& a, const TimeSpread& b) {
  return a.known() && b.known() && a.low_s <= b.high_s && b.low_s <= a.high_s;
}

}  // namespace splitsim
