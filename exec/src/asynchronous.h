#pragma once
// Internals of the runner: the rules the asynchronous schedules add to the
// order stage_ops() gives, so that exec runs them as the simulator does.
//   pipedream: weight stashing (a backward runs with the weights its forward
//              used; the update applies to the current ones);
//   ddg, fr:   the iteration barrier over a client's stage instances;
//   interleaved_1f1b: the party's one order over its stages' ops.
#include <cstdint>
#include <vector>

#include "party_context.h"

namespace splitsim::exec_internal {

// Weight stashing: for the life of this object the stage's parameters hold
// `version`'s values (the graph saved by the forward reads the parameters'
// storage when the backward runs), then the current ones again. Copies go
// through the aliases, whose version counters the graph does not check. A
// null or empty version (still the current weights) changes nothing.
class StashedWeights {
 public:
  StashedWeights(StageParts& parts, const StageParts::WeightVersion* version);
  ~StashedWeights();
  StashedWeights(const StashedWeights&) = delete;
  StashedWeights& operator=(const StashedWeights&) = delete;

 private:
  StageParts& parts_;
  std::vector<torch::Tensor> current_;
};

// Before an update changes the weights: if a forward still holds the live
// version, it gets a copy of the weights it ran with; then a new version
// starts. Call with the process's compute lock held.
void stash_live_weights(StageParts& parts);

// ddg/fr: returns once every stage instance of `client` (here and in the
// other ranks) has reached the end of `iteration`; throws on timeout or when
// meeting the other ranks failed.
void iteration_barrier(PartyContext& ctx, int client, int64_t iteration);

// interleaved_1f1b: returns once the party's next op for `client` is
// `stage`'s (at once without a turnstile); throws on timeout or when an
// instance failed. pass_turn hands the turn to the next op; fail_turns
// wakes every waiter of the party for good (an instance failed).
void wait_turn(PartyContext& ctx, int client, int stage);
void pass_turn(PartyContext& ctx, int client);
void fail_turns(PartyContext& ctx);

}  // namespace splitsim::exec_internal
