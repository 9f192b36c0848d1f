#pragma once
// Calibration: parameters with a physical meaning that bring a Plan to what
// was measured on a real deployment, where spec-sheet device profiles and a
// nominal link rate miss costs (framework overhead per operation, a link
// below its peak, host work per byte). JSON schema "splitsim.calibration/1"
// (scenarios/FORMAT.md "Calibration files"); a scenario's "calibration" key
// (make_plan) and `simulate`/`explore`/`validate --calibration FILE` apply
// one. A plain value type: applying it is a pure function of the Plan.
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "splitsim/costmodel/plan.h"

namespace splitsim {

struct PartyCalibration {
  double compute_scale = 1.0;  // the model's forward, backward and update seconds × this
  double op_overhead_s = 0.0;  // added to every forward, backward (per micro-batch) and update
  double codec_scale = 1.0;    // encode and decode seconds × this
  // Per op class, × its share of the model's seconds (PlanStage's
  // *_op_class_shares), on top of compute_scale: a device whose convolutions
  // or fixed cost per ATen op (per_op) are off by another factor than the rest.
  // The update step is element-wise work.
  OpClassParts op_class_scale{1, 1, 1, 1, 1};
  // Added to the platform's host work per byte this party sends / receives
  // (copies, serialization on its host).
  double cpu_s_per_byte_sent = 0.0;
  double cpu_s_per_byte_received = 0.0;
};

struct Calibration {
  // By party name ("client", "server", ...); the entry "*" applies to every
  // party not named. A party with neither is left as planned.
  std::map<std::string, PartyCalibration> parties;
  double bandwidth_factor = 1.0;         // × the network's bandwidth_factor (0.001 to 1)
  double per_message_overhead_s = 0.0;   // added to the network's, seconds per message
  double cpu_s_per_byte_sent = 0.0;      // added to the platform's host work per byte,
  double cpu_s_per_byte_received = 0.0;  // every party's (a party's own: above)
  std::string description;               // free text, kept
};

inline constexpr const char* kCalibrationSchema = "splitsim.calibration/1";

// The calibration of `party`: its own entry, else "*", else identity.
PartyCalibration party_calibration(const Calibration& c, const std::string& party);

// `plan` with `c` applied. Per stage and micro-batch: the model's forward
// and backward seconds × compute_scale × Σ_class share × op_class_scale +
// op_overhead_s; update_s × compute_scale × op_class_scale.elementwise +
// op_overhead_s; the codec work (the boundaries' encode_s / decode_s) ×
// the codec_scale of the party that runs it. A client group's own stage
// costs change alike, with its stage's op-class shares. The network's
// bandwidth_factor × bandwidth_factor (at least 0.001),
// per_message_overhead_s and the platform's host work per byte added; each
// party's own host work per byte added to platform.parties[party]. The
// identity calibration returns `plan` unchanged.
// Throws InputError when a per-class scale other than 1 meets a stage without
// op-class shares (a plan file written before them: plan it again).
Plan apply_calibration(const Plan& plan, const Calibration& c);

void to_json(nlohmann::json& j, const Calibration& c);
// Strict, like the scenario parser (a "fit" object, what `splitsim
// calibrate` records of the fit, is allowed and not read): unknown keys, another schema, scales
// that are not positive, overheads that are negative or above an hour, a
// bandwidth factor outside [0.001, 1]: InputError naming the JSON path.
Calibration parse_calibration(const nlohmann::json& j, const std::string& path = "$");
// Reads a calibration file (bounded like every input file). Throws
// InputError naming the file.
Calibration load_calibration_file(const std::string& file);

}  // namespace splitsim
