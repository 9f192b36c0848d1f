// Fine-tuning: LoRA adapters and frozen units, measured (the MACs of what
// really runs, trainable parameters) and planned (optimizer state, update,
// memory); the adapters' gradients across a cut.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "expect_input_error.h"
#include "model_test_util.h"
#include "splitsim/costmodel/measure.h"
#include "splitsim/costmodel/model_zoo.h"
#include "splitsim/costmodel/optimizer.h"
#include "splitsim/costmodel/planner.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {
namespace {

using namespace model_test;  // NOLINT: test helpers

// RoBERTa layout, 2 layers of hidden 64 (4 heads, FFN 128), 8 tokens.
ModelSpec tiny_roberta(const std::string& method = "full") {
  ModelSpec s = spec_of("roberta_base");
  s.layers = 2, s.hidden = 64, s.heads = 4, s.ffn = 128, s.seq_len = 8, s.vocab_size = 100;
  s.finetune.method = method;
  return s;
}

// The tiny RoBERTa split over client and server at `partition`, batch 4,
// codec none, both parties on the device of flat_devices().
Scenario tiny_split(const std::string& name, std::vector<PartSpec> partition) {
  Scenario sc;
  sc.name = name;
  sc.batch_size = 4;
  sc.compression.resize(partition.size() - 1);
  sc.partition = std::move(partition);
  sc.devices = {{"client", "d"}, {"server", "d"}};
  sc.model = tiny_roberta();
  return sc;
}

// One device for every party: 1 TFLOP/s, 10 GB/s.
std::map<std::string, DeviceProfile> flat_devices() {
  DeviceProfile dev;
  dev.name = "d";
  dev.peak_flops = 1e12;
  dev.memory_bandwidth_Bps = 1e10;
  return {{"client", dev}, {"server", dev}};
}

int64_t trainable(const SplitModel& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters(0, m.size() - 1))
    if (p.requires_grad()) n += p.numel();
  return n;
}

// A LoRA'd projection x [N, H] -> [N, H] of rank r: forward adds x A^T (N H r)
// and (x A^T) B^T (N r H); backward computes the base's input gradient
// (N H H) but no weight gradient (N H H saved) and, for the adapter, the
// gradients of B (N H r), of x A^T (N H r), of A (N r H) and of x (N r H).
// With LoRA every base projection of the block is frozen: key, value and
// dense lose their weight gradients too.
TEST(FinetuneTest, LoraBackwardIsInputGradientsPlusTheAdapters) {
  ModelSpec lora = tiny_roberta("lora");
  lora.finetune.rank = 4;
  lora.finetune.targets = {"query"};
  const ModelProfile full = measure_model(tiny_roberta());
  const ModelProfile adapted = measure_model(lora);
  const int i = full.index_of("layer.1.attention");  // its input needs a gradient
  const int64_t N = 8, H = 64, r = 4;                // per sample: 8 tokens
  EXPECT_EQ(adapted.units[i].fwd.matmul_macs - full.units[i].fwd.matmul_macs, 2 * N * H * r);
  EXPECT_EQ(adapted.units[i].fwd.matmul_macs - full.units[i].fwd.matmul_macs, 4096);
  EXPECT_EQ(full.units[i].bwd.matmul_macs - adapted.units[i].bwd.matmul_macs,
            4 * N * H * H - 4 * N * H * r);
  EXPECT_EQ(full.units[i].bwd.matmul_macs - adapted.units[i].bwd.matmul_macs, 122880);
  // The FFN has no adapter: only its two weight gradients go (N H F each).
  const int f = full.index_of("layer.1.ffn");
  EXPECT_EQ(full.units[f].bwd.matmul_macs - adapted.units[f].bwd.matmul_macs, 2 * N * H * 128);
  // Trainable: the adapter (r x H + H x r) per layer, and the head.
  EXPECT_EQ(adapted.units[i].trainable_param_count(), 2 * H * r);
  EXPECT_EQ(adapted.units[f].trainable_param_count(), 0);
  EXPECT_EQ(adapted.units.back().trainable_param_count(), adapted.units.back().param_count);
  EXPECT_EQ(full.units[i].trainable_param_count(), full.units[i].param_count);
}

// The reports' setting: RoBERTa-base, LoRA rank 8 on query and value.
TEST(FinetuneTest, RobertaBaseWithLoraTrainsTheAdaptersAndTheHead) {
  ModelSpec s = spec_of("roberta_base");
  s.num_classes = 2;
  s.finetune.method = "lora";
  const SplitModel m = build_model(s);
  int64_t adapters = 0;
  for (const auto& unit : m.units)
    for (const auto& p : unit->named_parameters())
      if (p.key().find("lora_") != std::string::npos) adapters += p.value().numel();
  EXPECT_EQ(adapters, 294912);  // 12 layers x 2 projections x (8 x 768 + 768 x 8)
  const int64_t head = 768 * 768 + 768 + 768 * 2 + 2;
  EXPECT_EQ(trainable(m), 294912 + head);
  EXPECT_EQ(count_params(m), 124647170 + 294912);
}

TEST(FinetuneTest, FrozenUnitsByNameOrPrefix) {
  ModelSpec s = tiny_roberta();
  s.finetune.frozen = {"embeddings", "layer.0"};
  const SplitModel m = build_model(s);
  for (int i = 0; i < m.size(); ++i) {
    const bool frozen = m.names[i] == "embeddings" || m.names[i].rfind("layer.0.", 0) == 0;
    for (const auto& p : m.units[i]->parameters())
      EXPECT_EQ(p.requires_grad(), !frozen) << m.names[i];
  }
  // Nothing before layer.1 trains: its input needs no gradient, and the
  // frozen units have no backward at all.
  const ModelProfile p = measure_model(s);
  EXPECT_EQ(p.units[0].bwd.macs(), 0);
  EXPECT_EQ(p.units[2].bwd.macs(), 0);
  EXPECT_GT(p.units[3].bwd.macs(), 0);
  EXPECT_EQ(p.units[1].trainable_param_count(), 0);
}

TEST(FinetuneTest, RefusalsNameTheirPath) {
  ModelSpec s = tiny_roberta();
  s.finetune.frozen = {"layer.9"};
  expect_error([&] { build_model(s); }, "$.model.finetune.frozen[0]", "units: embeddings");
  s.finetune.frozen = {"embeddings", "layer", "head"};
  expect_error([&] { build_model(s); }, "$.model.finetune", "every parameter is frozen");
  ModelSpec cnn = spec_of("resnet20");
  cnn.finetune.method = "lora";
  expect_error([&] { resolve_model_defaults(cnn, "$.model"); }, "$.model.finetune.method",
               "freeze units");
  cnn.finetune.method = "full";
  cnn.dropout = 0.2;
  expect_error([&] { resolve_model_defaults(cnn, "$.model"); }, "$.model.dropout",
               "roberta_base and bert_small only");
}

// Split at a cut as exec does (the receiver's input a fresh leaf, its
// gradient sent back): the adapters get the gradients of the unsplit model.
TEST(FinetuneTest, AdapterGradientsAcrossACutEqualTheUnsplitModel) {
  ModelSpec s = tiny_roberta("lora");
  s.finetune.targets = {"query", "value", "intermediate"};
  s.finetune.dropout = 0;
  s.dropout = 0;
  const torch::Tensor x = build_model(s).make_input(4, 1);
  auto grads = [&](bool split) {
    SplitModel m = build_model(s, 5);
    // B starts at zero (A gets no gradient then); move off it.
    for (const auto& unit : m.units)
      for (auto& p : unit->named_parameters())
        if (p.key().find("lora_B") != std::string::npos) p.value().data().normal_(0, 0.1);
    const torch::Tensor target = m.make_target(4, 1);
    if (split) {
      const torch::Tensor sent = m.forward(x, 0, 2);
      const torch::Tensor received = sent.detach().requires_grad_();
      m.loss(m.forward(received, 3, m.size() - 1), target).backward();
      sent.backward(received.grad());
    } else {
      m.loss(m.forward(x), target).backward();
    }
    std::vector<torch::Tensor> out;
    for (const auto& p : m.parameters(0, m.size() - 1))
      if (p.requires_grad()) out.push_back(p.grad().clone());
    return out;
  };
  const auto whole = grads(false), split = grads(true);
  ASSERT_EQ(whole.size(), split.size());
  ASSERT_EQ(whole.size(), 2u * 3 * 2 + 4);  // 3 adapters (A, B) per layer, the head's 4
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_TRUE(torch::allclose(whole[i], split[i], 1e-5, 1e-7)) << i;
    EXPECT_GT(whole[i].abs().sum().item<double>(), 0) << i;
  }
}

// The plan counts gradients, optimizer state and the update for the
// trainable parameters only; the weights stay whole.
TEST(FinetuneTest, PlanHoldsStateAndUpdatesForTheTrainableParametersOnly) {
  Scenario sc = tiny_split(
      "lora", {{"client", "embeddings", "layer.0.attention"}, {"server", "layer.0.ffn", "head"}});
  sc.optimizer.name = "adamw";
  const auto devices = flat_devices();
  const Plan full = make_plan(sc, measure_model(sc.model), devices);
  sc.model = tiny_roberta("lora");
  const Plan lora = make_plan(sc, measure_model(sc.model), devices);
  for (int k = 0; k < 2; ++k) {
    const PlanStage &a = full.stages[k], &b = lora.stages[k];
    EXPECT_EQ(a.trainable_param_bytes(), a.param_bytes);
    EXPECT_EQ(b.optimizer_state_bytes, 2 * b.trainable_param_bytes());    // AdamW: 2 copies
    EXPECT_LT(b.trainable_param_bytes(), a.trainable_param_bytes() / 5);  // the head stays
    EXPECT_LT(b.update_s, a.update_s / 5);
    EXPECT_LT(b.bwd_per_batch.macs(), a.bwd_per_batch.macs());
    // Weights, gradients and state: the weights stay, the rest shrinks; and
    // the larger of the activations (the stash and a backward's working
    // memory shrink with what no longer trains) and the optimizer step's
    // temporaries (copies of a smaller trainable tensor).
    EXPECT_LE(b.step_bytes, a.step_bytes);
    auto busiest = [](const PlanStage& s) { return std::max(s.activation_bytes(), s.step_bytes); };
    EXPECT_EQ(a.peak_memory_bytes - b.peak_memory_bytes,
              3 * (a.trainable_param_bytes() - b.trainable_param_bytes()) +
                  (a.param_bytes - b.param_bytes) + busiest(a) - busiest(b));
    EXPECT_EQ(a.input_bytes, b.input_bytes);
    EXPECT_EQ(a.recv_bytes, b.recv_bytes);
  }
}

// zb_h1's two halves of a backward, measured per unit. The FFN block, two
// linear layers H -> F -> H over N tokens: the input's gradient alone is
// both layers' dX (2 N H F MACs); the parameters' alone both dWs and the
// second layer's dX, the way to the first's weights (3 N H F); the whole
// backward 4 N H F. The planner prices a stage's B and W from these: stage
// 0 (the data needs no gradient) is all W; the server's B + W covers more
// than its whole backward (the W walks the chain again, as exec's does).
TEST(FinetuneTest, ASplitBackwardIsMeasuredAsItsTwoHalves) {
  const ModelProfile full = measure_model(tiny_roberta());
  const UnitProfile& ffn = full.units[full.index_of("layer.1.ffn")];
  const int64_t N = 8, H = 64, F = 128;
  EXPECT_EQ(ffn.bwd_input.matmul_macs, 2 * N * H * F);
  EXPECT_EQ(ffn.bwd_params.matmul_macs, 3 * N * H * F);
  EXPECT_EQ(ffn.bwd.matmul_macs, 4 * N * H * F);
  const UnitProfile& emb = full.units[full.index_of("embeddings")];
  EXPECT_EQ(emb.bwd_input.macs(), 0);  // token ids need no gradient
  EXPECT_EQ(emb.bwd_params.macs(), emb.bwd.macs());

  Scenario sc = tiny_split(
      "zb", {{"client", "embeddings", "layer.0.attention"}, {"server", "layer.0.ffn", "head"}});
  sc.chunks = 2;
  const auto devices = flat_devices();
  sc.schedule = Schedule::k1F1B;
  const Plan f1b = make_plan(sc, full, devices);
  sc.schedule = Schedule::kZbH1;
  const Plan zb = make_plan(sc, full, devices);
  EXPECT_TRUE(f1b.stages[0].bwd_weight_s.empty());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(zb.stages[0].bwd_weight_s[i], zb.stages[0].bwd_s[i]);
    EXPECT_NEAR(zb.stages[0].bwd_s[i], f1b.stages[0].bwd_s[i], 1e-9 * f1b.stages[0].bwd_s[i]);
    EXPECT_GT(zb.stages[1].bwd_weight_s[i], 0);
    EXPECT_LT(zb.stages[1].bwd_weight_s[i], zb.stages[1].bwd_s[i]);
    EXPECT_GT(zb.stages[1].bwd_s[i], f1b.stages[1].bwd_s[i]);
    EXPECT_DOUBLE_EQ(zb.weight_pass_s(1, Plan::kOwnCosts, i), zb.stages[1].bwd_weight_s[i]);
    EXPECT_EQ(f1b.weight_pass_s(1, Plan::kOwnCosts, i), 0);
  }
  // Every stage keeps min(m, K) micro-batches until their W.
  EXPECT_EQ(zb.stages[1].stashed_microbatches, 2);
  EXPECT_EQ(f1b.stages[1].stashed_microbatches, 1);
}

// A LoRA U-shape whose client part before the server only embeds (LoRA
// leaves the embeddings frozen): nothing before the first cut trains, so
// its gradient is neither computed nor sent. The bytes per batch fall by
// exactly that backward transfer; the client's first stage has no backward
// and posts no gradient receives. A trainable codec at the cut trains on
// the client, and brings the gradient back.
TEST(FinetuneTest, NoGradientGoesBackToAFrozenFirstPart) {
  Scenario sc = tiny_split("lora_frozen_client", {{"client", "embeddings", "embeddings"},
                                                  {"server", "layer.0.attention", "layer.1.ffn"},
                                                  {"client", "head", "head"}});
  sc.chunks = 2;
  sc.schedule = Schedule::k1F1B;
  const auto devices = flat_devices();
  const Plan full = make_plan(sc, measure_model(sc.model), devices);
  sc.model = tiny_roberta("lora");
  const ModelProfile lora_model = measure_model(sc.model);
  const Plan lora = make_plan(sc, lora_model, devices);
  ASSERT_EQ(lora.boundaries.size(), 2u);
  EXPECT_TRUE(full.boundaries[0].needs_gradient);
  EXPECT_FALSE(lora.boundaries[0].needs_gradient);
  EXPECT_TRUE(lora.boundaries[1].needs_gradient);
  // Codec none: the gradient is as large as the activation, 4 x 8 x 64 FP32.
  const int64_t gradient = full.boundaries[0].backward.wire_bytes_per_batch;
  EXPECT_EQ(gradient, 4 * 8 * 64 * 4);
  EXPECT_EQ(lora.boundaries[0].backward.wire_bytes_per_batch, 0);
  EXPECT_EQ(lora.boundaries[0].backward.wire_bytes, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(full.bytes_sent("server") - lora.bytes_sent("server"), gradient);
  EXPECT_EQ(full.bytes_received("client") - lora.bytes_received("client"), gradient);
  EXPECT_EQ(lora.bytes_sent("client"), full.bytes_sent("client"));  // the forward and the head's
  EXPECT_EQ(lora.stages[0].bwd_s, (std::vector<double>{0, 0}));
  EXPECT_GT(full.stages[0].bwd_s[0], 0);
  EXPECT_EQ(lora.stages[0].recv_bytes, 0);
  EXPECT_GT(full.stages[0].recv_bytes, 0);
  // A linear insert at the first cut: its encoder's weights train on the client.
  CodecSpec insert;
  insert.method = CodecMethod::kLinearInsert;
  insert.out_features = 16;
  sc.compression[0].forward = insert;
  const Plan coded = make_plan(sc, lora_model, devices);
  EXPECT_TRUE(coded.boundaries[0].needs_gradient);
  EXPECT_GT(coded.boundaries[0].backward.wire_bytes_per_batch, 0);
}

// The reports' AdamW eps (1e-6) reaches the optimizer exec and the
// profile build; the default stays LibTorch's 1e-8.
TEST(FinetuneTest, AdamOptimizersTakeTheScenariosEps) {
  const std::vector<torch::Tensor> params = {torch::zeros({2}, torch::requires_grad())};
  OptimizerSpec spec;
  spec.name = "adamw";
  spec.eps = 1e-6;
  auto adamw = make_optimizer(spec, params);
  EXPECT_EQ(static_cast<torch::optim::AdamWOptions&>(adamw->param_groups()[0].options()).eps(),
            1e-6);
  spec.name = "adam";
  spec.eps = OptimizerSpec{}.eps;
  auto adam = make_optimizer(spec, params);
  EXPECT_EQ(static_cast<torch::optim::AdamOptions&>(adam->param_groups()[0].options()).eps(), 1e-8);
}

}  // namespace
}  // namespace splitsim
