// The LLaMA-style decoder: units, parameters and forward MACs by formula,
// the causal mask, rotary positions, and LoRA on it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "model_test_util.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/measure.h"
#include "splitsim/costmodel/model_zoo.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {
namespace {

using namespace model_test;  // NOLINT: test helpers

// 2 layers of hidden 64: 4 query heads of 16, 2 key/value heads, FFN 96,
// vocab 100, 8 tokens.
ModelSpec tiny_llama(int64_t layers = 2) {
  ModelSpec s = spec_of("llama");
  s.layers = layers, s.hidden = 64, s.heads = 4, s.kv_heads = 2, s.ffn = 96;
  s.vocab_size = 100, s.seq_len = 8;
  return s;
}

TEST(LlamaTest, UnitsAndParametersByFormula) {
  const SplitModel m = build_model(tiny_llama());
  EXPECT_EQ(m.names, (std::vector<std::string>{"embed_tokens", "layers.0.self_attn", "layers.0.mlp",
                                               "layers.1.self_attn", "layers.1.mlp", "head"}));
  expect_chain(m);
  EXPECT_EQ(m.task, TaskKind::kCausalLm);
  const int64_t H = 64, kv = 2 * 16, F = 96, V = 100;
  // q and o H x H, k and v kv x H (grouped-query), one RMSNorm weight.
  EXPECT_EQ(count_params(m, 1, 1), 2 * H * H + 2 * kv * H + H);
  EXPECT_EQ(count_params(m, 2, 2), 3 * H * F + H);  // gate, up, down: no biases
  EXPECT_EQ(count_params(m, 0, 0), V * H);
  EXPECT_EQ(count_params(m, 5, 5), H + H * V);  // final norm, untied lm_head
  // The defaults: 124,668,672 (vocab 32,000, hidden 768, 12 layers, FFN 2048, kv 4 x 64).
  EXPECT_EQ(
      count_params(build_model(spec_of("llama"))),
      2 * 32000 * 768 + 12 * (2 * 768 * 768 + 2 * 256 * 768 + 3 * 768 * 2048 + 2 * 768) + 768);
  EXPECT_EQ(count_params(build_model(spec_of("llama"))), 124668672);
  torch::Tensor x = m.make_input(3, 0);
  EXPECT_EQ(shape_of(m.forward(x, 0, 1)), (Shape{3, 8, 64}));
  EXPECT_EQ(shape_of(m.forward(x)), (Shape{3, 8, 100}));
  EXPECT_EQ(shape_of(m.make_target(3, 0)), (Shape{3, 8}));
  EXPECT_GT(m.loss(m.forward(x), m.make_target(3, 0)).item<double>(), 0);
}

// Per sample of T tokens: q and o T H H each, k and v T H kv each, the scores
// and the context heads T T d each; the MLP 3 T H F; the head T H V.
TEST(LlamaTest, ForwardMacsByFormula) {
  const ModelProfile p = measure_model(tiny_llama());
  const int64_t T = 8, H = 64, kv = 32, heads = 4, d = 16, F = 96, V = 100;
  const auto& attn = p.units[p.index_of("layers.1.self_attn")];
  EXPECT_EQ(attn.fwd.matmul_macs, 2 * T * H * H + 2 * T * H * kv + 2 * heads * T * T * d);
  EXPECT_EQ(attn.fwd.matmul_macs, 106496);
  EXPECT_EQ(p.units[p.index_of("layers.1.mlp")].fwd.matmul_macs, 3 * T * H * F);
  EXPECT_EQ(p.units[p.index_of("head")].fwd.matmul_macs, T * H * V);
  EXPECT_EQ(p.units[p.index_of("embed_tokens")].fwd.matmul_macs, 0);
}

// Position t never sees a later token: changing token 5 leaves positions
// 0..4 as they were and changes position 5.
TEST(LlamaTest, APositionSeesNoLaterToken) {
  const SplitModel m = build_model(tiny_llama());
  torch::NoGradGuard no_grad;
  torch::Tensor x = m.make_input(1, 0);
  const torch::Tensor y = m.forward(x);
  x[0][5] = (x[0][5].item<int64_t>() + 1) % 100;
  const torch::Tensor z = m.forward(x);
  EXPECT_TRUE(torch::allclose(y.narrow(1, 0, 5), z.narrow(1, 0, 5), 0, 1e-6));
  EXPECT_GT((y.select(1, 5) - z.select(1, 5)).abs().max().item<double>(), 1e-3);
}

// Without positions one attention layer could not tell tokens 0 and 1 apart
// from their order: position 3 attends to the same set either way. Rotary
// positions make the order count.
TEST(LlamaTest, RotaryPositionsMakeAttentionOrderAware) {
  const SplitModel m = build_model(tiny_llama(1));
  torch::NoGradGuard no_grad;
  torch::Tensor x = m.make_input(1, 0);
  torch::Tensor swapped = x.clone();
  swapped[0][0] = x[0][1];
  swapped[0][1] = x[0][0];
  ASSERT_FALSE(torch::equal(x, swapped));
  const torch::Tensor a = m.forward(x, 0, 1).select(1, 3);
  const torch::Tensor b = m.forward(swapped, 0, 1).select(1, 3);
  EXPECT_GT((a - b).abs().max().item<double>(), 1e-3);
}

// LoRA r8 on query and value trains the adapters only: v's adapter maps into
// the key/value width (kv = 32), and the head (the vocabulary projection)
// stays frozen.
TEST(LlamaTest, LoraTrainsTheAdaptersOnly) {
  ModelSpec s = tiny_llama();
  s.finetune.method = "lora";
  const SplitModel m = build_model(s);
  int64_t trainable = 0;
  for (const auto& p : m.parameters(0, m.size() - 1))
    if (p.requires_grad()) trainable += p.numel();
  const int64_t H = 64, kv = 32, r = 8;
  EXPECT_EQ(trainable, 2 * ((r * H + H * r) + (r * H + kv * r)));
  EXPECT_EQ(trainable, 3584);
}

TEST(LlamaTest, RefusesWhatItCannotBuild) {
  ModelSpec s = tiny_llama();
  s.kv_heads = 3;  // 4 query heads do not split into 3 groups
  EXPECT_THROW(resolve_model_defaults(s, "$.model"), InputError);
  s = tiny_llama();
  s.max_positions = 16;  // rotary: no table
  EXPECT_THROW(resolve_model_defaults(s, "$.model"), InputError);
  s = tiny_llama();
  s.dropout = 0.1;
  EXPECT_THROW(resolve_model_defaults(s, "$.model"), InputError);
  s = spec_of("roberta_base");
  s.kv_heads = 4;  // grouped-query attention is llama's
  EXPECT_THROW(resolve_model_defaults(s, "$.model"), InputError);
}

}  // namespace
}  // namespace splitsim
