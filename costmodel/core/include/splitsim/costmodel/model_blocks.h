#pragma once
// Repeated blocks of the built-in transformers: where the cost model may
// measure two blocks for all of them (measure.h), and how many parameters
// planning and a whole build hold. No LibTorch.
#include <cstdint>
#include <string>

#include "splitsim/costmodel/scenario.h"

namespace splitsim {

// The unit-name prefix of the blocks ("layer." for roberta_base and
// bert_small, "layers." for llama) when `spec` (resolved) has more than two
// blocks that all train alike: no finetune.frozen entry names some blocks
// and not others ("layer.3" does; "layer" and "embeddings" do not). Else "".
std::string repeated_block_prefix(const ModelSpec& spec);

// The zoo's transformers: roberta_base, bert_small, llama.
bool is_transformer(const std::string& name);

// Parameters of a built-in transformer (resolved `spec`), the whole model;
// 0 for the other models.
int64_t transformer_param_count(const ModelSpec& spec);

}  // namespace splitsim
