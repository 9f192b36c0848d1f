#include "leakage_report.h"

#include <cmath>
#include <map>
#include <utility>

#include "splitsim/exec/runner.h"

namespace splitsim {
namespace {

// The last model unit before boundary `b`.
const std::string& cut_of(const Plan& plan, const PlanBoundary& b) {
  return plan.stages[static_cast<size_t>(b.from_stage)].units.back();
}

// A number, or null where it is not one (an AUC without both classes).
nlohmann::json finite_or_null(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json cuts_json(const Plan& plan) {
  nlohmann::json out = nlohmann::json::array();
  for (const PlanBoundary& b : plan.boundaries) out.push_back(cut_of(plan, b));
  return out;
}

nlohmann::json leakage_json(const Plan& plan, int64_t batches_per_epoch,
                            const std::vector<BoundaryLeakage>& records) {
  std::map<std::pair<int64_t, int>, nlohmann::json> entries;
  for (const BoundaryLeakage& l : records) {
    nlohmann::json& e = entries[{l.after_batches, l.boundary}];
    if (e.is_null()) {
      const PlanBoundary& b = plan.boundaries.at(static_cast<size_t>(l.boundary));
      e = {{"batches", l.after_batches},
           {"epoch", static_cast<double>(l.after_batches) / static_cast<double>(batches_per_epoch)},
           {"boundary", l.boundary},
           {"cut", cut_of(plan, b)},
           {"from", plan.stages[static_cast<size_t>(b.from_stage)].party},
           {"to", plan.stages[static_cast<size_t>(b.to_stage)].party},
           {"forward", nullptr},
           {"backward", nullptr},
           {"seconds", 0.0}};
    }
    e["seconds"] = e["seconds"].get<double>() + l.seconds;
    if (l.backward) {
      e["backward"] = {{"samples", l.samples},
                       {"label_auc_norm", finite_or_null(l.label_auc_norm)},
                       {"label_auc_direction", finite_or_null(l.label_auc_direction)}};
    } else {
      const Reconstruction& r = l.reconstruction;
      e["forward"] = {{"samples", l.samples},
                      {"attacker_samples", l.attacker_samples},
                      {"distance_correlation", l.distance_correlation},
                      {"reconstruction_mse", r.mse},
                      {"reconstruction_psnr_db", finite_or_null(r.psnr_db)},
                      {"baseline_mse", r.baseline_mse},
                      {"baseline_psnr_db", finite_or_null(r.baseline_psnr_db)}};
    }
  }
  nlohmann::json out = nlohmann::json::array();
  for (auto& [key, e] : entries) out.push_back(std::move(e));
  return out;
}

}  // namespace splitsim
