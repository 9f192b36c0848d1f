#pragma once
// The calibration's parameters as the fit sees them (internal to
// splitsim_calibrate): each in a fitting coordinate x, with a box on x.
// Scales as ln(scale) (a factor of 2 either way is the same step),
// overheads in milliseconds, host work per byte in nanoseconds.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "splitsim/costmodel/calibration.h"
#include "splitsim/costmodel/plan.h"

namespace splitsim::calibrate_internal {

struct Param {
  std::string party;  // "" for the link's parameters
  std::string field;  // "compute_scale", "op_class_scale.conv", "bandwidth_factor", ...
  bool log = false;   // x = ln(value), else x = value / unit
  double unit = 1;
  double lo = 0, hi = 0;  // bounds on x
  std::string name;       // "server.compute_scale", "bandwidth_factor": what reports say

  Param(std::string party_, std::string field_, bool log_, double unit_, double lo_, double hi_)
      : party(std::move(party_)),
        field(std::move(field_)),
        log(log_),
        unit(unit_),
        lo(lo_),
        hi(hi_),
        name(party.empty() ? field : party + "." + field) {}
  double value(double x) const { return log ? std::exp(x) : x * unit; }
};

// Sets parameter `p` of `c` to the value of coordinate x.
void set_param(Calibration* c, const Param& p, double x);

// A class takes part in the fit where its share of some stage's model
// seconds is at least this (as fit_efficiency's 5%).
inline constexpr double kMinClassShare = 0.05;

// The candidate parameters for these plans: per party its compute scale
// and overhead per operation, its codec scale when it runs codecs, a scale
// per op class that takes at least kMinClassShare of a stage but for the
// party's largest class (compute_scale's reference), its host work per
// byte sent and received; the link's factor and overhead per message.
std::vector<Param> candidate_params(const std::vector<Plan>& plans);

// Which parameter to hold first when the rows cannot tell several apart:
// the larger, the sooner held (host work per byte, then codec scales, then
// overheads, then op-class scales; compute scales and the link's factor
// last).
int precedence(const Param& p);

// Step for the forward-difference Jacobian, in x.
inline double fd_step(const Param& p) { return p.log ? 0.02 : 0.05; }

}  // namespace splitsim::calibrate_internal
