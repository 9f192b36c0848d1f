#pragma once
// Internals of the runner: one stage instance's update at the end of its
// batch, once its backwards have left their gradients on its parameters.
#include "party_context.h"

namespace splitsim::exec_internal {

// Under loss scaling (loss_scale != 1) divides the gradients back first; a
// non-finite one skips the step (++out->skipped_updates). pipedream
// (stash_weights) keeps the weights a forward still holds before they
// change (asynchronous.h: stash_live_weights). With keep_gradients the
// gradients go to out->gradients per unit instead of to the optimizer.
// Either way the parameters' gradients are cleared. Call with the party's
// compute lock held.
void update_stage(StageParts& parts, SplitModel& model, double loss_scale, bool stash_weights,
                  bool keep_gradients, InstanceResult* out);

}  // namespace splitsim::exec_internal
