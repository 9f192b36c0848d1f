// A LLaMA-style decoder (costmodel/README.md "Models and partition units"),
// HuggingFace's LlamaForCausalLM layout and eager ops:
//   embed_tokens, layers.{i}.self_attn, layers.{i}.mlp, head (final norm and
//   lm_head), each [B,T,H] -> [B,T,H] between them; the head gives [B,T,V].
// Pre-norm blocks with RMSNorm, rotary position embeddings (rotate-half form,
// base 10000) on queries and keys, grouped-query attention (kv_heads key and
// value heads, each shared by heads / kv_heads query heads), a causal mask,
// a SwiGLU feed-forward (down(silu(gate(x)) * up(x))), no biases, no dropout,
// untied input and output embeddings. The task is next-token prediction:
// cross-entropy over every position.
#include <cmath>
#include <string>

#include "models/models_impl.h"

namespace splitsim {
namespace models {
namespace {

constexpr double kRmsEps = 1e-6;
constexpr double kRopeBase = 10000;

// x / sqrt(mean(x^2) + eps) * weight over the last dimension.
class RmsNormImpl : public nn::Module {
 public:
  explicit RmsNormImpl(int64_t hidden)
      : weight_(register_parameter("weight", torch::ones({hidden}))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return x * torch::rsqrt(x.pow(2).mean(-1, true) + kRmsEps) * weight_;
  }

 private:
  torch::Tensor weight_;
};
TORCH_MODULE(RmsNorm);

// [-x2, x1] for x = [x1, x2] split in halves along the last dimension.
torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// Turns each pair (i, i + d/2) of `x` [B, heads, T, d] by the angle
// position * base^(-2i/d).
torch::Tensor apply_rotary(const torch::Tensor& x) {
  const int64_t seq = x.size(2), d = x.size(3);
  const auto f32 = x.options().dtype(torch::kFloat32);
  torch::Tensor inv_freq = torch::pow(kRopeBase, -torch::arange(0, d, 2, f32) / d);
  torch::Tensor angles = torch::outer(torch::arange(seq, f32), inv_freq);
  torch::Tensor emb = torch::cat({angles, angles}, -1);  // [T, d]
  return x * emb.cos().to(x.dtype()) + rotate_half(x) * emb.sin().to(x.dtype());
}

// Pre-norm self-attention with rotary positions, grouped-query heads and a
// causal mask, plus the residual. [B,T,H] -> [B,T,H].
class SelfAttention : public UnitModule {
 public:
  SelfAttention(const ModelSpec& s)
      : heads_(s.heads),
        kv_heads_(s.kv_heads),
        norm_(register_module("input_layernorm", RmsNorm(s.hidden))),
        q_(register_module("q_proj", Projection(s.hidden, s.hidden, "query", s.finetune, false))),
        k_(register_module("k_proj", Projection(s.hidden, s.kv_heads * (s.hidden / s.heads), "key",
                                                s.finetune, false))),
        v_(register_module("v_proj", Projection(s.hidden, s.kv_heads * (s.hidden / s.heads),
                                                "value", s.finetune, false))),
        o_(register_module("o_proj", Projection(s.hidden, s.hidden, "dense", s.finetune, false))) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    const int64_t batch = x.size(0), seq = x.size(1), hidden = x.size(2);
    const int64_t d = hidden / heads_, group = heads_ / kv_heads_;
    torch::Tensor y = norm_->forward(x);
    auto split_heads = [&](const torch::Tensor& t, int64_t n) {  // [B,T,n*d] -> [B,n,T,d]
      return t.view({batch, seq, n, d}).transpose(1, 2);
    };
    torch::Tensor q = apply_rotary(split_heads(q_->forward(y), heads_));
    torch::Tensor k = apply_rotary(split_heads(k_->forward(y), kv_heads_));
    torch::Tensor v = split_heads(v_->forward(y), kv_heads_);
    if (group > 1) {  // each key/value head serves `group` query heads (HF's repeat_kv)
      k = k.unsqueeze(2).expand({batch, kv_heads_, group, seq, d}).reshape({batch, heads_, seq, d});
      v = v.unsqueeze(2).expand({batch, kv_heads_, group, seq, d}).reshape({batch, heads_, seq, d});
    }
    torch::Tensor scores =
        torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(d));
    torch::Tensor mask =
        torch::full({seq, seq}, -std::numeric_limits<float>::infinity(), scores.options()).triu(1);
    torch::Tensor probs = torch::softmax(scores + mask, -1);
    torch::Tensor context = torch::matmul(probs, v).transpose(1, 2).reshape({batch, seq, hidden});
    return x + o_->forward(context);
  }

 private:
  int64_t heads_, kv_heads_;
  RmsNorm norm_;
  Projection q_, k_, v_, o_;
};

// Pre-norm SwiGLU feed-forward plus the residual. [B,T,H] -> [B,T,H].
class Mlp : public UnitModule {
 public:
  explicit Mlp(const ModelSpec& s)
      : norm_(register_module("post_attention_layernorm", RmsNorm(s.hidden))),
        gate_(register_module("gate_proj",
                              Projection(s.hidden, s.ffn, "intermediate", s.finetune, false))),
        up_(register_module("up_proj",
                            Projection(s.hidden, s.ffn, "intermediate", s.finetune, false))),
        down_(register_module("down_proj",
                              Projection(s.ffn, s.hidden, "output", s.finetune, false))) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    torch::Tensor y = norm_->forward(x);
    return x + down_->forward(torch::silu(gate_->forward(y)) * up_->forward(y));
  }

 private:
  RmsNorm norm_;
  Projection gate_, up_, down_;
};

// Token ids [B,T] -> [B,T,H].
class TokenEmbedding : public UnitModule {
 public:
  TokenEmbedding(int64_t vocab, int64_t hidden)
      : embed_(register_module("embed_tokens", nn::Embedding(vocab, hidden))) {}
  torch::Tensor forward(const torch::Tensor& ids) override { return embed_->forward(ids); }

 private:
  nn::Embedding embed_;
};

// Final RMSNorm and the LM head: [B,T,H] -> [B,T,V] logits.
class LmHead : public UnitModule {
 public:
  LmHead(int64_t hidden, int64_t vocab)
      : norm_(register_module("norm", RmsNorm(hidden))),
        lm_head_(
            register_module("lm_head", nn::Linear(nn::LinearOptions(hidden, vocab).bias(false)))) {}
  torch::Tensor forward(const torch::Tensor& x) override {
    return lm_head_->forward(norm_->forward(x));
  }

 private:
  RmsNorm norm_;
  nn::Linear lm_head_;
};

}  // namespace

void add_llama(SplitModel& m) {
  const ModelSpec& s = m.spec;
  m.task = TaskKind::kCausalLm;
  add_unit(m, "embed_tokens",
           [&] { return std::make_shared<TokenEmbedding>(s.vocab_size, s.hidden); });
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string prefix = "layers." + std::to_string(i);
    add_unit(m, prefix + ".self_attn", [&] { return std::make_shared<SelfAttention>(s); });
    add_unit(m, prefix + ".mlp", [&] { return std::make_shared<Mlp>(s); });
  }
  add_unit(m, "head", [&] { return std::make_shared<LmHead>(s.hidden, s.vocab_size); });
  m.output_shape = {s.seq_len, s.vocab_size};
}

}  // namespace models
}  // namespace splitsim
