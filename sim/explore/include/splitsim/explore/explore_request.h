#pragma once
// `splitsim explore` as values: what it is asked (ExploreRequest, the CLI's
// flags) and the one call that answers it: checks, the scenario measured,
// run_exploration(), the accuracy and leakage rankings, the best plan
// written, the top plans validated, the report. InputErrors name the
// request's fields ("top", "accuracy", "target_accuracy", "leakage",
// "max_psnr", "emit_best") or the space's (space_flags.h).
#include <functional>
#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/model_profile.h"
#include "splitsim/costmodel/scenario.h"
#include "splitsim/explore/exploration.h"
#include "splitsim/explore/leakage.h"
#include "splitsim/explore/space_flags.h"

namespace splitsim {

struct ExploreRequest {
  std::string scenario;  // base scenario file
  std::string variant;   // a sweep's variant to explore around ("": the first)
  SpaceFlags space;
  ExploreOptions options;          // progress and spread_top are set by explore_scenario
  int top = 10;                    // rows of the ranking, >= 1
  bool json = false, csv = false;  // the report's format (else a table)
  std::string emit_best;           // write the best plan as a scenario file ("": no)
  std::string accuracy;            // a train report: also rank by time to accuracy
  double target_accuracy_pct = -1, max_accuracy_drop_pct = -1;  // < 0: not given
  std::vector<std::string> leakage;  // train reports with leakage: also rank within the limits
  LeakageLimits leakage_limits;
  double spread_pct = -1;          // < 0: the device profiles' timing spread
  int validate_top = 0;            // validate the first N plans for real (0: none)
  int validate_repeat = 3;         // real runs per plan
  bool progress_in_place = false;  // rewrite one progress line (a terminal)
};

// The measured scenario variant explored around.
struct ExploreSubject {
  ScenarioVariant variant;
  ModelProfile model;
  std::map<std::string, DeviceProfile> devices;
};

// The validation report of the first `validate_top` ranked candidates, each
// a scenario made from `base_json` (validate_top(), exec/validate).
using ValidateTop =
    std::function<nlohmann::json(const Exploration& e, const nlohmann::json& base_json)>;

// Checks `r` (before anything is measured), loads the subject with `load`,
// explores, writes r.emit_best, validates when r.validate_top > 0, and
// prints the report to `out`; progress and notes go to `err`.
void explore_scenario(const ExploreRequest& r, const std::function<ExploreSubject()>& load,
                      const ValidateTop& validate, std::ostream& out, std::ostream& err);

}  // namespace splitsim
