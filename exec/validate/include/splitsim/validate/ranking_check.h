#pragma once
// `splitsim explore --validate-top N`: the explorer's best N plans run for
// real by `splitsim validate DIR --matrix`, and whether the measured best is
// the predicted best (sim/explore/README.md, "Flags").
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "splitsim/explore/exploration.h"

namespace splitsim {

struct ValidateTopRequest {
  int top = 0;               // the first `top` of the ranking (fewer when fewer were ranked)
  int repeat = 3;            // real runs per plan (validate --repeat), interleaved
  std::string splitsim_bin;  // the binary that runs `validate`; "": this one
};

// Writes the first request.top ranked candidates of `e` as scenario files
// (candidate_scenario_json(base_json, ...): top01.json, top02.json, ...)
// into a fresh temporary directory (removed afterwards), runs
// `BIN validate DIR --matrix --keep-going --json --repeat R` (no shell; its
// stderr is this process's) and returns compare_top() of its report.
// `log` gets one line before the runs. Throws std::runtime_error naming
// --validate-top when validate gives no report with one run per plan.
nlohmann::json validate_top(const Exploration& e, const nlohmann::json& base_json,
                            const ValidateTopRequest& request,
                            const std::function<void(const std::string&)>& log);

// The comparison, from validate's matrix report (`validate_report`, schema
// of `splitsim validate --matrix --json`: "runs" in the order of the
// ranking, "summary") for the first `count` ranked candidates of `e`:
// per plan ("plans") its rank, label, the explorer's predicted time,
// validate's (this machine's profile and platform), the measured median and
// min..max; "repeat"; "measured_best_rank" and "predicted_best_rank"
// (validate's prediction; 1-based); "measured_best_is_predicted_best" and
// "measured_best_is_explorers_best" (the same plan, or the two plans'
// measured min..max overlap); "predicted_best_regret_pct" (the predicted
// best's measured time over the measured best's, minus 1, in percent);
// "measured_order_matches_predicted" (measured times ascending in the
// explorer's order); "predicted_ties_with_best" (the ranks whose predicted
// spread, validate's "predicted_time_per_batch_spread_s", overlaps the
// predicted best's: splitsim/costmodel/spread.h); "measured_best_is_predicted_best_or_tie";
// "kendall_tau" (kendall_tau() of validate's predicted times and the
// measured medians; null when undefined), "kendall_tau_with_spreads" (the
// same with the predicted spreads and the measured min..max as ranges:
// plans the prediction or the measurement cannot tell apart are ties) and
// "kendall_tau_explorer" (the explorer's times against the measured
// medians); "summary" (validate's). A failed run counts as NaN.
nlohmann::json compare_top(const Exploration& e, int count, int repeat,
                           const nlohmann::json& validate_report);

// A plan's time with the range it may lie in: a prediction's spread, a
// measurement's min..max over its repetitions.
struct RankedTime {
  double time_s = 0, low_s = 0, high_s = 0;
};

// Kendall's tau-b of two lists of the same plans' times: +1 the same order,
// -1 reversed. Two plans are tied in a list when their times are equal or
// their ranges overlap; a pair tied in one list only counts in the other's
// denominator (tau-b), one tied in both in neither; a pair with a NaN time
// is left out. NaN when fewer than two plans are left or one list ties them
// all. Throws std::invalid_argument for lists of unequal length.
double kendall_tau(const std::vector<RankedTime>& x, const std::vector<RankedTime>& y);
// The same of bare times (ties: equal times only).
double kendall_tau(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace splitsim
