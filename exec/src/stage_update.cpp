#include "stage_update.h"

#include "asynchronous.h"

namespace splitsim::exec_internal {
namespace {

// The last stage scaled the loss, so every gradient upstream of it is
// scaled too: divides them back; whether all of them are finite.
bool unscale_gradients(StageParts& parts, double loss_scale) {
  if (loss_scale == 1) return true;
  bool finite = true;
  for (auto& p : parts.params) {
    if (!p.grad().defined()) continue;
    p.mutable_grad().div_(loss_scale);
    finite = finite && torch::isfinite(p.grad()).all().item<bool>();
  }
  return finite;
}

}  // namespace

void update_stage(StageParts& parts, SplitModel& model, double loss_scale, bool stash_weights,
                  bool keep_gradients, InstanceResult* out) {
  if (stash_weights) stash_live_weights(parts);
  if (!unscale_gradients(parts, loss_scale)) {
    ++out->skipped_updates;
  } else if (keep_gradients) {
    for (int u = parts.first_unit; u <= parts.last_unit; ++u) {
      auto& g = out->gradients[u];
      g.clear();
      for (const auto& p : model.units[static_cast<size_t>(u)]->parameters())
        g.push_back(p.grad().defined() ? p.grad().detach().clone() : torch::zeros_like(p));
    }
  } else if (parts.optimizer) {
    for (size_t i = 0; i < parts.params.size(); ++i)
      parts.aliases[i].mutable_grad() = parts.params[i].grad();
    parts.optimizer->step();
  }
  for (auto& p : parts.params) p.mutable_grad() = torch::Tensor();
  for (auto& a : parts.aliases) a.mutable_grad() = torch::Tensor();
}

}  // namespace splitsim::exec_internal
