// The shape pass: a transformer measured on the meta device gives the same
// profile as one training step on the CPU, byte for byte (MACs, element
// counts, ops, shapes, parameters trainable and frozen, stashed bytes); the
// StorageAccount that counts the stash there agrees with MemoryAccount on
// every unit of every zoo model; and a model far beyond what the CPU step
// could hold measures without holding it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "model_test_util.h"
#include "splitsim/costmodel/measure.h"
#include "splitsim/costmodel/memory_account.h"
#include "splitsim/costmodel/model_zoo.h"
#include "splitsim/costmodel/optimizer.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {
namespace {

using namespace model_test;  // NOLINT: test helpers

// Everything equal but the backward's working memory, which may differ by
// what CPU kernels allocate and free inside one op (an embedding's backward
// sorts its indices): within 1% and 64 bytes per sample. The working memory
// is compared apart and then left out of the exact comparison. Returns
// whether any unit has working memory (net of the stash its backward frees:
// none where the parameters' gradients outweigh the activations).
bool expect_same_on_both(const ModelSpec& spec, int64_t batch = 2) {
  nlohmann::json cpu = measure_model(spec, batch, false, MeasureOn::kCpu);
  nlohmann::json meta = measure_model(spec, batch, false, MeasureOn::kMeta);
  EXPECT_EQ(cpu.at("units").size(), meta.at("units").size());
  if (cpu.at("units").size() != meta.at("units").size()) return false;
  bool some_work = false;
  for (size_t i = 0; i < cpu.at("units").size(); ++i) {
    nlohmann::json& c = cpu["units"][i];
    nlohmann::json& m = meta["units"][i];
    const double want = c.at("bwd_work_bytes_per_sample").get<double>();
    const double got = m.at("bwd_work_bytes_per_sample").get<double>();
    EXPECT_NEAR(got, want, 0.01 * want + 64) << c.at("name");
    some_work = some_work || want > 0;
    c.erase("bwd_work_bytes_per_sample");
    m.erase("bwd_work_bytes_per_sample");
  }
  EXPECT_EQ(cpu, meta) << "first difference: "
                       << nlohmann::json::diff(cpu, meta).dump().substr(0, 400);
  return some_work;
}

TEST(MeasureShapesTest, EveryTransformerAndFineTuningMeasuresTheSameOnMeta) {
  for (const std::string name : {"roberta_base", "bert_small", "llama"}) {
    SCOPED_TRACE(name);
    ModelSpec s = small_transformer(name, 2);
    expect_same_on_both(s);  // full fine-tuning
    expect_same_on_both(s, 3);
    // Activations that outweigh the weights' gradients: working memory.
    EXPECT_TRUE(expect_same_on_both(s, 64));
    s.finetune.method = "lora";
    expect_same_on_both(s);  // adapters, frozen bases
    s.finetune.method = "full";
    s.finetune.frozen = {name == "llama" ? "embed_tokens" : "embeddings"};
    expect_same_on_both(s);  // the first block's input needs no gradient
    s.finetune.frozen = {name == "llama" ? "layers.0" : "layer.0"};
    expect_same_on_both(s);
  }
}

TEST(MeasureShapesTest, TheDefaultSizesMeasureTheSameOnMeta) {
  for (const std::string name : {"roberta_base", "bert_small", "llama"}) {
    SCOPED_TRACE(name);
    ModelSpec s = spec_of(name);
    s.layers = 2;
    s.seq_len = 32;  // the default widths and vocabularies; a CPU step at seq 512 takes seconds
    expect_same_on_both(s);
  }
}

// The stash of a unit measured on the meta device is only as good as
// StorageAccount; on the CPU it must agree with the allocator's count on
// every unit of every zoo model, CNNs included (in-place ReLUs, BatchNorm's
// saved statistics, views), after the forward and after the backward (the
// autograd engine's records of the nodes it runs are not ops).
TEST(MeasureShapesTest, StorageAccountAgreesWithTheAllocatorOnEveryUnit) {
  for (const std::string name : {"resnet20", "mobilenet_v2_cifar", "roberta_base", "llama"}) {
    SCOPED_TRACE(name);
    ModelSpec s = name == "resnet20" || name == "mobilenet_v2_cifar" ? spec_of(name)
                                                                     : small_transformer(name, 2);
    SplitModel m = build_model(s, 0);
    torch::Tensor x = m.make_input(4, 1);
    for (int i = 0; i < m.size(); ++i) {
      SCOPED_TRACE(m.names[i]);
      torch::Tensor in = x.is_floating_point() ? x.detach().requires_grad_(true) : x;
      MemoryAccount memory;
      MemoryAccount::Join joined(memory);
      StorageAccount storage;
      storage.exclude(in);
      for (const auto& p : m.units[i]->parameters()) storage.exclude(p);
      for (const auto& b : m.units[i]->buffers()) storage.exclude(b);
      torch::Tensor out = m.units[i]->forward(in);
      EXPECT_EQ(storage.live_bytes(), memory.live_bytes());
      EXPECT_GT(storage.live_bytes(), 0);
      if (out.requires_grad()) {
        MemoryAccount bwd_memory;
        MemoryAccount::Join bwd_joined(bwd_memory);
        StorageAccount bwd_storage;
        out.backward(torch::ones_like(out));
        // Never above the allocator's peak: it misses only what a kernel
        // allocates and frees inside one op (a convolution's columns; the
        // transformers' backward is compared with the CPU's above).
        EXPECT_LE(bwd_storage.peak_bytes(), bwd_memory.peak_bytes());
        EXPECT_GT(bwd_storage.peak_bytes(), 0);
        EXPECT_EQ(bwd_storage.live_bytes(), bwd_memory.live_bytes());
      }
      x = out.detach();
    }
  }
}

// The last unit's stash is what a split run holds once the loss is computed
// and the logits are dropped (exec's last stage keeps only the loss):
// cross-entropy keeps the logits' log-softmax, not the logits, so a
// language model's head stashes one logits-sized tensor, not two.
TEST(MeasureShapesTest, TheLastUnitStashesWhatTheLossKeepsNotTheLogits) {
  for (const std::string name : {"llama", "roberta_base", "resnet20"}) {
    SCOPED_TRACE(name);
    const ModelSpec s = name == "resnet20" ? spec_of(name) : small_transformer(name, 1);
    constexpr int64_t kBatch = 4;
    const ModelProfile p = measure_model(s, kBatch, false, MeasureOn::kCpu);
    SplitModel m = build_model(s, 0);
    m.train(true);
    torch::Tensor x = m.make_input(kBatch, 1);
    const int last = m.size() - 1;
    for (int i = 0; i < last; ++i) x = m.units[i]->forward(x).detach();
    torch::Tensor in = x.is_floating_point() ? x.requires_grad_(true) : x;
    const torch::Tensor target = m.make_target(kBatch, 1);
    MemoryAccount memory;
    torch::Tensor loss;
    int64_t logits_bytes = 0;
    {
      MemoryAccount::Join joined(memory);
      torch::Tensor logits = m.units[last]->forward(in);
      logits_bytes = logits.numel() * logits.element_size();
      loss = m.loss(logits, target);
    }
    const UnitProfile& u = p.units[last];
    EXPECT_EQ(u.stash_bytes_per_sample * kBatch, memory.live_bytes());
    // The loss's shares (FP32 under mixed precision): part of the unit's.
    EXPECT_GT(u.loss_stash_bytes_per_sample, 0);
    EXPECT_LE(u.loss_stash_bytes_per_sample, u.stash_bytes_per_sample);
    EXPECT_GT(u.loss_bwd_work_bytes_per_sample, 0);
    EXPECT_LE(u.loss_bwd_work_bytes_per_sample, u.bwd_work_bytes_per_sample);
    for (int i = 0; i < last; ++i)
      EXPECT_EQ(p.units[i].loss_stash_bytes_per_sample + p.units[i].loss_bwd_work_bytes_per_sample,
                0);
    if (name == "llama") {  // 200-way logits over 16 tokens: the head's largest tensor
      EXPECT_GE(memory.live_bytes(), logits_bytes);
      EXPECT_LT(memory.live_bytes(), 2 * logits_bytes);
      EXPECT_GE(u.loss_stash_bytes_per_sample * kBatch, logits_bytes);  // the log-softmax
    }
    loss.backward();
  }
}

// The optimizer's step holds, beside the weights, gradients and state,
// temporaries of the tensor it is updating, one tensor at a time: as many
// copies of the largest as OptimizerSpec::step_temporary_copies says, for
// each of LibTorch's optimizers exec uses. And the profile names that
// tensor per unit: trainable ones only (LoRA leaves the base frozen).
TEST(OptimizerStepTest, TemporariesAreTheCopiesThePlanCounts) {
  struct Case {
    const char* name;
    double momentum, weight_decay;
  };
  constexpr int64_t kBig = 500 * 200 * 4;
  for (const Case& c :
       {Case{"sgd", 0, 0}, Case{"sgd", 0, 0.1}, Case{"sgd", 0.9, 0}, Case{"sgd", 0.9, 0.1},
        Case{"adam", 0, 0}, Case{"adam", 0, 0.1}, Case{"adamw", 0, 0}, Case{"adamw", 0, 0.1}}) {
    SCOPED_TRACE(std::string(c.name) + " momentum " + std::to_string(c.momentum) +
                 " weight decay " + std::to_string(c.weight_decay));
    OptimizerSpec o;
    o.name = c.name, o.momentum = c.momentum, o.weight_decay = c.weight_decay;
    torch::Tensor big = torch::randn({500, 200}).requires_grad_(true);
    torch::Tensor small = torch::randn({10, 10}).requires_grad_(true);
    auto optimizer = make_optimizer(o, {big, small});
    for (int step = 0; step < 2; ++step) {
      (big.sum() + small.sum()).backward();
      MemoryAccount memory;
      {
        MemoryAccount::Join joined(memory);
        optimizer->step();
      }
      if (step == 1) {  // the first step also allocates the state
        EXPECT_GE(memory.peak_bytes(), o.step_temporary_copies() * kBig);
        EXPECT_LT(memory.peak_bytes(), o.step_temporary_copies() * kBig + 1024);
      }
      optimizer->zero_grad();
    }
  }
  ModelSpec s = small_transformer("llama", 1);
  s.finetune.method = "lora";
  for (const UnitProfile& u : measure_model(s, 2, false, MeasureOn::kMeta).units) {
    SCOPED_TRACE(u.name);
    EXPECT_LE(u.largest_trainable_tensor_bytes, u.param_bytes - u.frozen_param_bytes);
    EXPECT_EQ(u.largest_trainable_tensor_bytes > 0, u.param_bytes > u.frozen_param_bytes);
  }
  const ModelProfile full =
      measure_model(small_transformer("llama", 1), 2, false, MeasureOn::kMeta);
  EXPECT_EQ(full.units.front().largest_trainable_tensor_bytes, 200 * 64 * 4);  // the token table
}

// Tensors made before the account, and what an in-place op writes into
// them, are not the unit's; a temporary freed inside is not either.
// Running statistics are state a training mode averages with the weights:
// batch norm's mean and variance (FP32, a value per channel each), not its
// integer count of batches; a transformer's layer norms hold none.
TEST(MeasureShapesTest, BufferBytesAreTheFloatingPointRunningStatistics) {
  ModelSpec resnet;
  resnet.name = "resnet20";
  resnet = resolve_model_defaults(resnet, "$.model");
  const ModelProfile r = measure_model(resnet, 2, false, MeasureOn::kCpu);
  EXPECT_EQ(r.units.front().name, "conv1");
  EXPECT_EQ(r.units.front().buffer_bytes, 2 * 16 * 4);  // conv1's batch norm, 16 channels
  EXPECT_EQ(r.units.back().buffer_bytes, 0);            // the head: pooling and a linear layer
  for (const UnitProfile& u :
       measure_model(small_transformer("llama", 1), 2, false, MeasureOn::kMeta).units)
    EXPECT_EQ(u.buffer_bytes, 0) << u.name;
}

TEST(MeasureShapesTest, StorageAccountCountsOnlyWhatIsCreatedAndHeld) {
  torch::Tensor before = torch::ones({1000});
  StorageAccount account;
  before.mul_(2);
  torch::Tensor kept = before * 3;  // 4,000 bytes
  { torch::Tensor dropped = before + 1; }
  torch::Tensor view = kept.view({10, 100});  // the same storage
  EXPECT_EQ(account.live_bytes(), 4000);
  kept = torch::Tensor();
  EXPECT_EQ(account.live_bytes(), 4000);  // the view still holds it
  view = torch::Tensor();
  EXPECT_EQ(account.live_bytes(), 0);
}

// The 7B-class decoder (32 layers, hidden 4096, FFN 11008, seq 2048):
// one CPU training step of its two measured blocks would hold tens of GB;
// the shape pass holds one unit's weights at a time.
TEST(MeasureShapesTest, ASevenBillionParameterDecoderMeasuresWithoutHoldingIt) {
  ModelSpec s = spec_of("llama");
  s.layers = 32, s.hidden = 4096, s.heads = 32, s.kv_heads = 32, s.ffn = 11008, s.seq_len = 2048;
  const ModelProfile p = measure_model(s);
  ASSERT_EQ(p.units.size(), 66u);
  int64_t params = 0;
  for (const auto& u : p.units) params += u.param_count;
  // HF's LLaMA-7B: 6,738,415,616 parameters.
  EXPECT_EQ(params, 6738415616);
  const auto& mlp = p.units[p.index_of("layers.31.mlp")];
  EXPECT_EQ(mlp.fwd.matmul_macs, 3 * 2048 * 4096 * 11008LL);  // per sample
  EXPECT_EQ(mlp.output_shape, (std::vector<int64_t>{2048, 4096}));
}

}  // namespace
}  // namespace splitsim
