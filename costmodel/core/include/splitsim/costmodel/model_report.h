#pragma once
// A measured model as `splitsim plan --units` and `--list-cuts` print it,
// as a table or JSON.
#include <iosfwd>

#include "splitsim/costmodel/model_profile.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {

// Per unit: output shape and bytes, parameter / gradient / optimizer-state
// bytes, MACs and element-wise work per sample, retained activation bytes.
// JSON: the ModelProfile with grad_bytes and optimizer_state_bytes per unit.
void print_units(std::ostream& out, const ModelProfile& model, const OptimizerSpec& optimizer,
                 bool json);

// The model's valid cut points (valid_cuts: where exactly one tensor
// crosses), each with the tensor's shape and bytes per sample. JSON:
// schema "splitsim.cuts/1".
void print_cuts(std::ostream& out, const ModelProfile& model, bool json);

}  // namespace splitsim
