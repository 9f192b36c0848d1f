#pragma once
// Helpers shared by the model zoo tests.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "splitsim/costmodel/model_zoo.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim::model_test {

using Shape = std::vector<int64_t>;

inline Shape shape_of(const torch::Tensor& t) { return Shape(t.sizes().begin(), t.sizes().end()); }

inline int64_t count_params(const SplitModel& m, int first, int last) {
  int64_t n = 0;
  for (const auto& p : m.parameters(first, last)) n += p.numel();
  return n;
}
inline int64_t count_params(const SplitModel& m) { return count_params(m, 0, m.size() - 1); }

inline ModelSpec spec_of(const std::string& name) {
  ModelSpec s;
  s.name = name;
  return s;
}

// A transformer of the zoo at a size that measures in milliseconds.
inline ModelSpec small_transformer(const std::string& name, int64_t layers) {
  ModelSpec s = spec_of(name);
  s.layers = layers, s.hidden = 64, s.heads = 4, s.ffn = 128, s.seq_len = 16, s.vocab_size = 200;
  if (name == "llama") s.kv_heads = 2;
  return s;
}

// Units form a chain: unit i consumes unit i-1 (the first, the model input).
inline void expect_chain(const SplitModel& m) {
  ASSERT_EQ(m.names.size(), m.units.size());
  ASSERT_EQ(static_cast<int>(m.inputs.size()), m.size());
  for (int i = 0; i < m.size(); ++i) EXPECT_EQ(m.inputs[i], std::vector<int>{i - 1});
}

}  // namespace splitsim::model_test
