// The planner's steps that read the schedule's operation orders
// (planner_internal.h): the receives a stage posts ahead, zb_h1's split
// backward priced per stage, interleaved_1f1b's stages per party checked.
#include <algorithm>

#include "planner_internal.h"

namespace splitsim::planner_internal {

namespace {

// The work of a stage's two halves per sample, as exec runs them
// (exec/src/stage_instance.cpp): B, the gradient of the stage's input alone
// through every unit (none where the input needs none); W, the trainable
// parameters' gradients alone: the first trainable unit's, and every later
// unit's whole backward, whose chain the path to the earlier parameters
// runs through again.
struct SplitWork {
  OpCounts input, weights;
};

SplitWork split_work(const ModelProfile& model, int first, int last) {
  SplitWork w;
  bool earlier_trains = false;  // a unit before the stage
  for (int i = 0; i < first; ++i) earlier_trains |= model.units[i].trainable_param_count() > 0;
  bool trains = false;  // a unit of the stage up to i
  for (int i = first; i <= last; ++i) {
    const UnitProfile& u = model.units[i];
    if (earlier_trains) w.input += u.bwd_input;
    if (trains)
      w.weights += u.bwd;
    else if (u.trainable_param_count() > 0)
      w.weights += u.bwd_params;
    trains |= u.trainable_param_count() > 0;
  }
  return w;
}

// Whether the profile measured the halves (profiles written before they
// were have neither for any unit with a backward).
bool halves_measured(const ModelProfile& model) {
  for (const UnitProfile& u : model.units)
    if (!(u.bwd_input == OpCounts{}) || !(u.bwd_params == OpCounts{})) return true;
  return false;
}

}  // namespace

int64_t posted_receive_bytes(const Plan& plan, int k, int64_t m) {
  const int K = static_cast<int>(plan.stages.size());
  const int64_t fwd = k > 0 ? plan.boundaries[k - 1].forward.wire_bytes.front() : 0;
  const int64_t bwd = k + 1 < K ? plan.boundaries[k].backward.wire_bytes.front() : 0;
  if (fwd == 0 && bwd == 0) return 0;
  const std::vector<Op> ops = stage_ops(plan.schedule, k, K, m, 3, plan.virtual_stages);
  const size_t window = static_cast<size_t>(2 * m + 2);
  int64_t most = 0;
  for (size_t j = 0; j < ops.size(); ++j) {
    if (ops[j].kind != OpKind::kBackward) continue;  // where the stage's memory peaks
    int64_t held = 0;
    for (size_t i = j + 1; i < ops.size() && i <= j + window; ++i)
      held += ops[i].kind == OpKind::kForward ? fwd : ops[i].kind == OpKind::kBackward ? bwd : 0;
    most = std::max(most, held);
  }
  return most;
}

int virtual_stages(const Scenario& sc) {
  if (sc.schedule != Schedule::kInterleaved1F1B) {
    if (sc.virtual_stages > 1)
      throw InputError("$.virtual_stages",
                       "only schedule interleaved_1f1b gives a party several stages in turn");
    return 1;
  }
  std::vector<std::string> parties;
  for (const PartSpec& part : sc.partition) parties.push_back(part.party);
  const int v = virtual_stages_of(parties);
  const int want = sc.virtual_stages > 0 ? static_cast<int>(sc.virtual_stages) : v;
  const std::string problem = interleaving_problem(parties, sc.chunks, want);
  if (problem.empty()) return v;
  const char* at = v < 2 ? "$.partition" : want != v ? "$.virtual_stages" : "$.chunks";
  throw InputError(at, problem);
}

void split_backward_seconds(const ModelProfile& model, const DeviceProfile& dev,
                            const std::vector<int64_t>& sizes, PlanStage& st) {
  // Without the halves: the whole backward is the B, the W empty (the
  // gradient goes back after all of it, as in 1f1b).
  if (!halves_measured(model)) {
    st.bwd_weight_s.assign(sizes.size(), 0.0);
    return;
  }
  const SplitWork w = split_work(model, st.first_unit, st.last_unit);
  OpCounts whole;
  for (int i = st.first_unit; i <= st.last_unit; ++i) whole += model.units[i].bwd;
  st.bwd_weight_s.clear();
  for (size_t c = 0; c < sizes.size(); ++c) {
    const double full = formula_seconds(dev, whole.scaled(sizes[c]));
    const double input = formula_seconds(dev, w.input.scaled(sizes[c]));
    const double weights = formula_seconds(dev, w.weights.scaled(sizes[c]));
    const double per = full > 0 ? st.bwd_s[c] / full : 0.0;
    st.bwd_weight_s.push_back(weights * per);
    st.bwd_s[c] = (input + weights) * per;
  }
}

}  // namespace splitsim::planner_internal
