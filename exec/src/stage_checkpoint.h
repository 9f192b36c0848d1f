#pragma once
// Internals of the runner: one instance's checkpoint (checkpoint.h's file)
// from and into its stage: the units' parameters and buffers, the codecs'
// (trainable inserts), the optimizer's state, and the instance's training
// records (batch statistics and evaluations so far).
#include <cstdint>

#include "party_context.h"

namespace splitsim::exec_internal {

// Writes instance (stage, client)'s checkpoint of `step` (batches done)
// into ctx.options.checkpoint.dir, then removes its files older than the
// checkpoint before (two are kept: the parties of a run are at most one
// checkpoint apart when one fails). Throws CheckpointWriteError.
void save_checkpoint(PartyContext& ctx, int stage, int client, int64_t step,
                     const InstanceResult& records);

// Loads instance (stage, client)'s checkpoint of step ctx.options.first_batch
// into its stage (weights, buffers, codecs, optimizer) and its records into
// *out. Throws InputError naming the file when it is not this run's (its
// identity), not this instance's or step, or its tensors differ from the
// stage's in name, dtype or shape; nothing is loaded then.
void load_checkpoint(PartyContext& ctx, int stage, int client, InstanceResult* out);

}  // namespace splitsim::exec_internal
