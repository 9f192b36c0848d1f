#include "splitsim/costmodel/run_spec.h"

#include <algorithm>

namespace splitsim {

RunSpec make_run_spec(const ScenarioVariant& variant, const Plan& plan, const RunChanges& changes) {
  const Scenario& sc = variant.scenario;
  RunSpec r;
  r.plan = plan;
  if (changes.iterations > 0) r.plan.iterations = changes.iterations;
  if (changes.warmup >= 0) r.plan.warmup = changes.warmup;
  if (r.plan.iterations > 0) r.plan.warmup = std::min(r.plan.warmup, r.plan.iterations - 1);
  r.topology = make_topology(r.plan);
  for (const PlanBoundary& b : plan.boundaries) {
    RunBoundary rb;
    rb.activation_shape.assign(b.activation_shape.begin() + 1, b.activation_shape.end());
    rb.carried_shape = carried_shape(b.forward.codec, rb.activation_shape, 0);
    r.boundaries.push_back(rb);
  }
  r.model = sc.model;
  r.dataset = changes.dataset.empty() ? sc.dataset : changes.dataset;
  r.seed = changes.seed >= 0 ? static_cast<uint64_t>(changes.seed) : sc.seed;
  r.optimizer = sc.optimizer;
  r.activation_dtype = activation_dtype(sc.precision);
  r.compute_precision = sc.compute_precision;
  r.loss_scale = sc.effective_loss_scale();
  r.label = variant.label;
  r.identity = variant.json;
  if (changes.iterations > 0) r.identity["iterations"] = changes.iterations;
  return r;
}

}  // namespace splitsim
