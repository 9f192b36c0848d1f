#pragma once
// A prediction's spread. A device profile measured on a machine says how
// much a unit's time moved between its measured rounds
// (DeviceProfile::timing_spread, a relative half-width); a prediction that
// stands on it has a spread too: the time per batch with every party's
// compute at the fast end and at the slow end. Two plans whose spreads
// overlap are a tie: the prediction does not tell them apart.
// The explorer ranks with it, validate reports it (sim/explore/README.md
// "Ties").
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/plan.h"

namespace splitsim {

struct TimeSpread {
  double low_s = NAN, high_s = NAN;  // NaN: not computed
  bool known() const { return !std::isnan(low_s) && !std::isnan(high_s); }
};

// The relative spread of each party's compute: by the keys of `devices`
// (parties, as Workspace::devices() names them), each device's
// timing_spread, or `fixed` for every party when given; "*" (every party
// not named) the largest of them. Throws std::invalid_argument when `fixed`
// is outside [0, 1).
std::map<std::string, double> party_spreads(const std::map<std::string, DeviceProfile>& devices,
                                            std::optional<double> fixed = std::nullopt);

// The largest spread of party_spreads(): 0 when no device measured one.
double largest_spread(const std::map<std::string, double>& spreads);

// `plan` with each party's forward, backward and update seconds × (1 +
// sign × its spread) (a calibration's compute_scale; codec work unscaled);
// `sign` is -1 (the fast end) or +1 (the slow end).
Plan plan_at_spread(const Plan& plan, const std::map<std::string, double>& spreads, int sign);

// Whether two predictions are a tie: both spreads known and overlapping.
bool predicted_tie(const TimeSpread& a, const TimeSpread& b);

}  // namespace splitsim
