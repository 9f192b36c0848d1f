// Transformer encoders (costmodel/README.md "Models and partition units"), HuggingFace layouts:
//  - roberta_base: embeddings, layer.{i}.attention, layer.{i}.ffn, head
//    (RobertaClassificationHead on the first token).
//  - bert_small: embeddings, layer.{i}.attention, layer.{i}.ffn, heads (MLM
//    head and NSP head, concatenated into one tensor).
// Every sequence is full length, so there is no attention mask and no
// padding: every token attends to every token. Attention is written with
// explicit matmul/softmax ops (not a fused kernel) so the MAC counter sees
// the same ops HuggingFace's eager implementation runs.
#include <algorithm>
#include <cmath>
#include <string>

#include "models/models_impl.h"

namespace splitsim {
namespace models {
namespace {

namespace nn = torch::nn;

struct EmbeddingOptions {
  int64_t vocab, max_positions, type_vocab, hidden;
  int64_t padding_idx;      // -1: none
  int64_t position_offset;  // position id of token i is position_offset + i
  double eps;
};

// word(ids) + position(offset + i) + token_type(0), LayerNorm, dropout.
// Input [B,T] int64 token ids; output [B,T,hidden].
class Embeddings : public UnitModule {
 public:
  explicit Embeddings(const EmbeddingOptions& o, double dropout) : offset_(o.position_offset) {
    auto word_options = nn::EmbeddingOptions(o.vocab, o.hidden);
    if (o.padding_idx >= 0) word_options.padding_idx(o.padding_idx);
    word_ = register_module("word_embeddings", nn::Embedding(word_options));
    position_ = register_module("position_embeddings",
                                nn::Embedding(nn::EmbeddingOptions(o.max_positions, o.hidden)));
    token_type_ = register_module("token_type_embeddings",
                                  nn::Embedding(nn::EmbeddingOptions(o.type_vocab, o.hidden)));
    norm_ =
        register_module("LayerNorm", nn::LayerNorm(nn::LayerNormOptions({o.hidden}).eps(o.eps)));
    dropout_ = register_module("dropout", nn::Dropout(dropout));
  }
  torch::Tensor forward(const torch::Tensor& ids) override {
    const int64_t seq = ids.size(1);
    torch::Tensor positions =
        torch::arange(offset_, offset_ + seq, ids.options()).unsqueeze(0).expand_as(ids);
    torch::Tensor x = word_->forward(ids) + position_->forward(positions) +
                      token_type_->forward(torch::zeros_like(ids));
    return dropout_->forward(norm_->forward(x));
  }

 private:
  int64_t offset_;
  nn::Embedding word_{nullptr}, position_{nullptr}, token_type_{nullptr};
  nn::LayerNorm norm_{nullptr};
  nn::Dropout dropout_{nullptr};
};

// Self-attention block: Q, K, V projections, softmax(QK^T / sqrt(d)) V per
// head, output dense, dropout, residual + LayerNorm. [B,T,H] -> [B,T,H].
class Attention : public UnitModule {
 public:
  Attention(int64_t hidden, int64_t heads, double eps, double dropout, const FinetuneSpec& f)
      : heads_(heads),
        query_(register_module("query", Projection(hidden, hidden, "query", f))),
        key_(register_module("key", Projection(hidden, hidden, "key", f))),
        value_(register_module("value", Projection(hidden, hidden, "value", f))),
        dense_(register_module("dense", Projection(hidden, hidden, "dense", f))),
        norm_(register_module("LayerNorm", nn::LayerNorm(nn::LayerNormOptions({hidden}).eps(eps)))),
        attention_dropout_(register_module("attention_dropout", nn::Dropout(dropout))),
        dropout_(register_module("dropout", nn::Dropout(dropout))) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    const int64_t batch = x.size(0), seq = x.size(1), hidden = x.size(2);
    const int64_t head_dim = hidden / heads_;
    auto split_heads = [&](const torch::Tensor& t) {  // [B,T,H] -> [B,heads,T,d]
      return t.view({batch, seq, heads_, head_dim}).permute({0, 2, 1, 3});
    };
    torch::Tensor q = split_heads(query_->forward(x));
    torch::Tensor k = split_heads(key_->forward(x));
    torch::Tensor v = split_heads(value_->forward(x));
    torch::Tensor scores =
        torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(head_dim));
    torch::Tensor probs = attention_dropout_->forward(torch::softmax(scores, -1));
    torch::Tensor context =
        torch::matmul(probs, v).permute({0, 2, 1, 3}).contiguous().view({batch, seq, hidden});
    return norm_->forward(dropout_->forward(dense_->forward(context)) + x);
  }

 private:
  int64_t heads_;
  Projection query_, key_, value_, dense_;
  nn::LayerNorm norm_;
  nn::Dropout attention_dropout_, dropout_;
};

// Feed-forward block: dense hidden->ffn, GELU, dense ffn->hidden, dropout,
// residual + LayerNorm. [B,T,H] -> [B,T,H].
class FeedForward : public UnitModule {
 public:
  FeedForward(int64_t hidden, int64_t ffn, double eps, double dropout, const FinetuneSpec& f)
      : intermediate_(register_module("intermediate", Projection(hidden, ffn, "intermediate", f))),
        output_(register_module("output", Projection(ffn, hidden, "output", f))),
        norm_(register_module("LayerNorm", nn::LayerNorm(nn::LayerNormOptions({hidden}).eps(eps)))),
        dropout_(register_module("dropout", nn::Dropout(dropout))) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    torch::Tensor y = output_->forward(torch::gelu(intermediate_->forward(x)));
    return norm_->forward(dropout_->forward(y) + x);
  }

 private:
  Projection intermediate_, output_;
  nn::LayerNorm norm_;
  nn::Dropout dropout_;
};

// RobertaClassificationHead on the first token: dropout, dense, tanh,
// dropout, out_proj. [B,T,H] -> [B,num_labels].
class ClassificationHead : public UnitModule {
 public:
  ClassificationHead(int64_t hidden, int64_t num_labels, double dropout)
      : dense_(register_module("dense", nn::Linear(hidden, hidden))),
        out_proj_(register_module("out_proj", nn::Linear(hidden, num_labels))),
        dropout_(register_module("dropout", nn::Dropout(dropout))) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    torch::Tensor first = dropout_->forward(x.select(1, 0));
    return out_proj_->forward(dropout_->forward(torch::tanh(dense_->forward(first))));
  }

 private:
  nn::Linear dense_, out_proj_;
  nn::Dropout dropout_;
};

// BERT pre-training heads. MLM: dense, GELU, LayerNorm, decoder to the
// vocabulary (with bias; not tied to the word embeddings, which live in
// another unit). NSP: pooler (dense + tanh on the first token), Linear -> 2.
// [B,T,H] -> [B, T*V + 2]: the MLM logits flattened, then the NSP logits
// (SplitModel::loss splits them back).
class PretrainingHeads : public UnitModule {
 public:
  PretrainingHeads(int64_t hidden, int64_t vocab, double eps)
      : transform_(register_module("transform", nn::Linear(hidden, hidden))),
        norm_(register_module("LayerNorm", nn::LayerNorm(nn::LayerNormOptions({hidden}).eps(eps)))),
        decoder_(register_module("decoder", nn::Linear(hidden, vocab))),
        pooler_(register_module("pooler", nn::Linear(hidden, hidden))),
        nsp_(register_module("seq_relationship", nn::Linear(hidden, 2))) {}

  torch::Tensor forward(const torch::Tensor& x) override {
    torch::Tensor mlm = decoder_->forward(norm_->forward(torch::gelu(transform_->forward(x))));
    torch::Tensor nsp = nsp_->forward(torch::tanh(pooler_->forward(x.select(1, 0))));
    return torch::cat({mlm.flatten(1), nsp}, 1);
  }

 private:
  nn::Linear transform_;
  nn::LayerNorm norm_;
  nn::Linear decoder_, pooler_, nsp_;
};

void add_encoder_layers(SplitModel& m, double eps) {
  const ModelSpec& s = m.spec;
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string prefix = "layer." + std::to_string(i);
    add_unit(m, prefix + ".attention", [&] {
      return std::make_shared<Attention>(s.hidden, s.heads, eps, s.dropout, s.finetune);
    });
    add_unit(m, prefix + ".ffn", [&] {
      return std::make_shared<FeedForward>(s.hidden, s.ffn, eps, s.dropout, s.finetune);
    });
  }
}

}  // namespace

void add_roberta_base(SplitModel& m) {
  constexpr double kEps = 1e-5;
  constexpr int64_t kPaddingIdx = 1;
  const ModelSpec& s = m.spec;
  m.task = TaskKind::kSequenceClassification;
  add_unit(m, "embeddings", [&] {
    return std::make_shared<Embeddings>(EmbeddingOptions{s.vocab_size, s.max_positions, 1, s.hidden,
                                                         kPaddingIdx, kPaddingIdx + 1, kEps},
                                        s.dropout);
  });
  add_encoder_layers(m, kEps);
  add_unit(m, "head", [&] {
    return std::make_shared<ClassificationHead>(s.hidden, s.num_classes, s.dropout);
  });
  m.output_shape = {s.num_classes};
}

void add_bert_small(SplitModel& m) {
  constexpr double kEps = 1e-12;
  const ModelSpec& s = m.spec;
  m.task = TaskKind::kMaskedLmAndNsp;
  add_unit(m, "embeddings", [&] {
    return std::make_shared<Embeddings>(
        EmbeddingOptions{s.vocab_size, s.max_positions, 2, s.hidden, -1, 0, kEps}, s.dropout);
  });
  add_encoder_layers(m, kEps);
  add_unit(m, "heads",
           [&] { return std::make_shared<PretrainingHeads>(s.hidden, s.vocab_size, kEps); });
  m.output_shape = {s.seq_len * s.vocab_size + 2};
}

}  // namespace models
}  // namespace splitsim
