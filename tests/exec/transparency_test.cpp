// Transparency (as torchgpipe's): a split model with codec none gives the
// gradients of the unsplit one, and the synchronous schedules give the
// gradients of sequential.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "exec_test_util.h"
#include "splitsim/exec/mixed_precision.h"

namespace splitsim::testing {
namespace {

CodecSpec none() { return CodecSpec{}; }

std::map<int, std::vector<torch::Tensor>> split_gradients(const Scenario& sc, const Plan& plan) {
  RunOptions o;
  o.keep_gradients = true;
  o.timeout = std::chrono::milliseconds(20000);
  auto results = run_loopback(sc, plan, o);
  std::map<int, std::vector<torch::Tensor>> grads;
  for (auto& r : results) {
    EXPECT_TRUE(r.complete) << r.error;
    for (auto& [u, g] : r.gradients) grads[u] = g;
  }
  return grads;
}

void expect_allclose(const std::map<int, std::vector<torch::Tensor>>& a,
                     const std::vector<std::vector<torch::Tensor>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [u, g] : a) {
    ASSERT_EQ(g.size(), b[static_cast<size_t>(u)].size()) << "unit " << u;
    for (size_t i = 0; i < g.size(); ++i)
      EXPECT_TRUE(torch::allclose(g[i], b[static_cast<size_t>(u)][i], 1e-4, 1e-6))
          << "unit " << u << " parameter " << i << " max diff "
          << (g[i] - b[static_cast<size_t>(u)][i]).abs().max().item<double>();
  }
}

TEST(TransparencyTest, TwoPartSplitWithCodecNoneGivesTheUnsplitGradients) {
  const Scenario sc = small_scenario("resnet20", 4);
  const Plan plan = make_test_plan(sc, {3}, none(), none(), 1, Schedule::kSequential, 1);
  expect_allclose(split_gradients(sc, plan), unsplit_gradients(sc));
}

// Each rank builds only the units of its own stages.
TEST(TransparencyTest, EachRankBuildsOnlyItsOwnStages) {
  const Scenario sc = small_scenario("resnet20", 4);
  const Plan plan = make_test_plan(sc, {0, 9}, none(), none(), 1, Schedule::kSequential, 1);
  const auto results = run_loopback(sc, plan, RunOptions{});
  // Rank 0 is the server (stage 1: units 1..9); the client holds stages 0 and 2.
  std::vector<int> server, client = {0, 10};
  for (int u = 1; u <= 9; ++u) server.push_back(u);
  EXPECT_EQ(results[0].built_units, server);
  EXPECT_EQ(results[1].built_units, client);
}

// A LLaMA-style decoder of hidden 64 (4 query and 2 key/value heads),
// vocabulary 100, 8 tokens, batch 2.
Scenario llama_scenario(int64_t layers, int64_t ffn) {
  Scenario sc = small_scenario("resnet20", 2);
  ModelSpec m;
  m.name = "llama";
  m.layers = layers, m.hidden = 64, m.heads = 4, m.kv_heads = 2, m.ffn = ffn;
  m.seq_len = 8, m.vocab_size = 100;
  sc.model = resolve_model_defaults(m, "$.model");
  return sc;
}

// A U-shape whose server part is far larger than the client's (four wide
// blocks): the client process holds tensors of its own size, not the
// model's; the server at least its weights.
TEST(TransparencyTest, AClientHoldsTensorsOfItsOwnSizeNotTheModels) {
  const Scenario sc = llama_scenario(4, 1024);
  const SplitModel whole = build_model(sc.model, sc.seed);
  const int last = whole.size() - 1;
  const Plan plan = make_test_plan(sc, {0, last - 1}, none(), none(), 1, Schedule::kSequential, 2);
  auto bytes = [&](int first, int end) {
    int64_t b = 0;
    for (const auto& p : whole.parameters(first, end)) b += p.numel() * p.element_size();
    return b;
  };
  const int64_t model_bytes = bytes(0, last), server_bytes = bytes(1, last - 1);
  ASSERT_GT(server_bytes, 10 * (model_bytes - server_bytes));  // the server part is 10x larger
  const auto results = run_loopback(sc, plan, RunOptions{});
  for (const auto& r : results) ASSERT_TRUE(r.complete) << r.error;
  const int64_t server = results[0].peak_tensor_bytes.at(0);
  const int64_t client = results[1].peak_tensor_bytes.at(1);
  EXPECT_GE(server, server_bytes);
  EXPECT_LT(client, model_bytes / 10) << "client " << client << " B, model " << model_bytes << " B";
  EXPECT_GE(client, model_bytes - server_bytes);
}

TEST(TransparencyTest, UShapeThreeStagesGiveTheUnsplitGradients) {
  const Scenario sc = small_scenario("resnet20", 4);
  const Plan plan = make_test_plan(sc, {0, 9}, none(), none(), 1, Schedule::kSequential, 1);
  expect_allclose(split_gradients(sc, plan), unsplit_gradients(sc));
}

TEST(TransparencyTest, GpipeAnd1F1BGiveTheGradientsOfSequential) {
  const Scenario sc = small_scenario("resnet20", 4);
  const auto sequential =
      split_gradients(sc, make_test_plan(sc, {0, 6}, none(), none(), 2, Schedule::kSequential, 1));
  for (Schedule s : {Schedule::kGpipe, Schedule::k1F1B, Schedule::kZbH1}) {
    SCOPED_TRACE(schedule_name(s));
    const auto got = split_gradients(sc, make_test_plan(sc, {0, 6}, none(), none(), 2, s, 1));
    std::vector<std::vector<torch::Tensor>> want(sequential.size());
    for (const auto& [u, g] : sequential) want[static_cast<size_t>(u)] = g;
    expect_allclose(got, want);
  }
}

Scenario lora_scenario();  // below

// zb_h1 splits each backward into B (the input's gradient, sent at once)
// and W (the parameters', deferred): with 4 micro-batches over 4 stages
// stage k defers k weight passes, and the gradients are still sequential's.
// The LoRA U-shape (frozen base weights, adapters on both sides) alike.
TEST(TransparencyTest, ZeroBubbleH1GivesTheGradientsOfSequential) {
  auto same = [](const Scenario& sc, const std::vector<int>& cuts, int64_t chunks) {
    const auto sequential = split_gradients(
        sc, make_test_plan(sc, cuts, none(), none(), chunks, Schedule::kSequential, 1));
    std::vector<std::vector<torch::Tensor>> want(sequential.size());
    for (const auto& [u, g] : sequential) want[static_cast<size_t>(u)] = g;
    expect_allclose(
        split_gradients(sc, make_test_plan(sc, cuts, none(), none(), chunks, Schedule::kZbH1, 1)),
        want);
  };
  same(small_scenario("resnet20", 8), {0, 3, 6}, 4);
  same(lora_scenario(), {2, 4}, 2);
}

// interleaved_1f1b: client and server hold two of the four stages each and
// run them in Megatron-LM's one order per party; the gradients are
// sequential's, at m = p (all forwards first) and m = 2p.
TEST(TransparencyTest, InterleavedOneFOneBGivesTheGradientsOfSequential) {
  const Scenario sc = small_scenario("resnet20", 8);
  for (int64_t chunks : {2, 4}) {
    SCOPED_TRACE(chunks);
    const auto sequential = split_gradients(
        sc, make_test_plan(sc, {0, 3, 6}, none(), none(), chunks, Schedule::kSequential, 1));
    std::vector<std::vector<torch::Tensor>> want(sequential.size());
    for (const auto& [u, g] : sequential) want[static_cast<size_t>(u)] = g;
    Plan plan =
        make_test_plan(sc, {0, 3, 6}, none(), none(), chunks, Schedule::kInterleaved1F1B, 1);
    plan.virtual_stages = 2;
    expect_allclose(split_gradients(sc, plan), want);
  }
}

// Asynchronous schedules run to the end and train (no transparency claim).
TEST(TransparencyTest, AsynchronousSchedulesRunToTheEnd) {
  const Scenario sc = small_scenario("resnet20", 4);
  for (Schedule s : {Schedule::kPipeDream, Schedule::kDdg, Schedule::kFr}) {
    SCOPED_TRACE(schedule_name(s));
    const Plan plan = make_test_plan(sc, {3}, none(), none(), 2, s, 3);
    RunOptions o;
    o.timeout = std::chrono::milliseconds(20000);
    auto results = run_loopback(sc, plan, o);
    // Every stage ran every operation its schedule lists, once: per batch
    // a forward and a backward of each of the 2 micro-batches (fr replays
    // each forward before its backward) and one update.
    std::map<std::pair<int, EventKind>, int> ops;
    for (const auto& r : results) {
      EXPECT_TRUE(r.complete) << r.error;
      EXPECT_EQ(r.batches_done, 3);
      for (const auto& e : r.timeline.events) ++ops[{e.stage, e.kind}];
    }
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ((ops[{k, EventKind::kForward}]), 3 * 2) << "stage " << k;
      EXPECT_EQ((ops[{k, EventKind::kBackward}]), 3 * 2) << "stage " << k;
      EXPECT_EQ((ops[{k, EventKind::kUpdate}]), 3) << "stage " << k;
      EXPECT_EQ((ops[{k, EventKind::kRecompute}]), s == Schedule::kFr ? 3 * 2 : 0) << "stage " << k;
    }
    ASSERT_EQ(results[0].stats.size(), 3u);  // the server holds the last stage
    for (const auto& st : results[0].stats) {
      EXPECT_TRUE(std::isfinite(st.loss)) << st.loss;
      EXPECT_EQ(st.samples, sc.batch_size);
    }
  }
}

// RoBERTa layout, 2 layers of hidden 64, 8 tokens; LoRA on query and value
// (every base weight frozen but the head's); dropout off, so that the split
// and the unsplit run draw nothing.
Scenario lora_scenario() {
  Scenario sc = small_scenario("resnet20", 4);
  ModelSpec m;
  m.name = "roberta_base";
  m.layers = 2, m.hidden = 64, m.heads = 4, m.ffn = 128, m.seq_len = 8, m.vocab_size = 100;
  m.dropout = 0;
  m.finetune.method = "lora";
  m.finetune.dropout = 0;
  sc.model = resolve_model_defaults(m, "$.model");
  return sc;
}

// A LLaMA-style decoder as a U-shape (client embed_tokens .. layers.0.mlp,
// server layers.1, client head): the causal LM's gradients across two cuts
// are the unsplit model's.
TEST(TransparencyTest, LlamaUShapeGivesTheUnsplitGradients) {
  const Scenario sc = llama_scenario(2, 96);
  const Plan plan = make_test_plan(sc, {2, 4}, none(), none(), 1, Schedule::kSequential, 1);
  expect_allclose(split_gradients(sc, plan), unsplit_gradients(sc));
}

// Client embeddings .. layer.0.ffn, server layer.1, client head.
TEST(TransparencyTest, LoraUShapeGivesTheUnsplitGradients) {
  const Scenario sc = lora_scenario();
  const Plan plan = make_test_plan(sc, {2, 4}, none(), none(), 1, Schedule::kSequential, 1);
  const auto split = split_gradients(sc, plan);
  expect_allclose(split, unsplit_gradients(sc));
  // The adapters' B (zero at first) and the head get gradients; frozen
  // weights none.
  const SplitModel model = build_model(sc.model, sc.seed);
  int nonzero = 0;
  for (const auto& [u, grads] : split) {
    const auto named = model.units[u]->named_parameters();
    for (size_t i = 0; i < grads.size(); ++i) {
      const bool trains = named[i].value().requires_grad();
      const bool moved = grads[i].abs().sum().item<double>() > 0;
      if (!trains) {
        EXPECT_FALSE(moved) << named[i].key();
      }
      nonzero += moved;
    }
  }
  EXPECT_EQ(nonzero, 2 * 2 + 4);  // lora_B of query and value in 2 layers; the head's 4
}

// The LoRA U-shape with a client that only embeds (client embeddings,
// server layer.0 .. layer.1, client head): nothing before the first cut
// trains, so exec neither computes nor sends its gradient, and the
// gradients are still the unsplit model's. Bytes per batch fall by that
// transfer (4 x 8 x 64 FP32 per batch), planned and measured alike.
TEST(TransparencyTest, AFrozenFirstPartGetsNoGradient) {
  Scenario sc = lora_scenario();
  const int64_t batches = 3;
  const Plan plan = make_test_plan(sc, {0, 4}, none(), none(), 2, Schedule::k1F1B, batches);
  ASSERT_FALSE(plan.boundaries[0].needs_gradient);
  ASSERT_TRUE(plan.boundaries[1].needs_gradient);
  Plan sent_anyway = plan;  // as exec ran it before: the gradient computed and sent
  sent_anyway.boundaries[0].needs_gradient = true;
  sent_anyway.boundaries[0].backward = sent_anyway.boundaries[0].forward;
  const int64_t gradient = sent_anyway.boundaries[0].backward.wire_bytes_per_batch;
  EXPECT_EQ(gradient, 4 * 8 * 64 * 4);
  RunOptions o;
  o.timeout = std::chrono::milliseconds(20000);
  o.keep_gradients = true;
  std::map<std::string, int64_t> sent, sent_before;  // by party (the server is rank 0)
  const Plan* runs[] = {&plan, &sent_anyway};
  std::map<std::string, int64_t>* outs[] = {&sent, &sent_before};
  for (int run = 0; run < 2; ++run) {
    const Plan* p = runs[run];
    std::map<std::string, int64_t>* out = outs[run];
    const auto results = run_loopback(sc, *p, o);
    for (size_t rank = 0; rank < results.size(); ++rank) {
      ASSERT_TRUE(results[rank].complete) << results[rank].error;
      (*out)[rank == 0 ? "server" : "client"] = results[rank].wire_bytes_sent;
    }
  }
  EXPECT_EQ(sent["server"], batches * plan.bytes_sent("server"));
  EXPECT_EQ(sent["client"], batches * plan.bytes_sent("client"));
  EXPECT_EQ(sent_before["server"] - sent["server"], batches * gradient);
  EXPECT_EQ(sent_before["client"], sent["client"]);
  Plan one = plan;
  one.iterations = 1;
  one.schedule = Schedule::kSequential;
  expect_allclose(split_gradients(sc, one), unsplit_gradients(sc));
}

// 40 AdamW steps of the LoRA U-shape through exec on one repeated batch.
std::vector<RunResult> train_lora(const std::string& compute_precision) {
  Scenario sc = lora_scenario();
  sc.compute_precision = compute_precision;
  sc.optimizer.name = "adamw";
  sc.optimizer.lr = 3e-3;
  const SplitModel model = build_model(sc.model, sc.seed);
  auto data = make_synthetic_source(model, sc.seed, 1);  // one batch, again and again
  RunOptions o;
  o.timeout = std::chrono::milliseconds(20000);
  o.data = data.get();
  return run_loopback(sc, make_test_plan(sc, {2, 4}, none(), none(), 1, Schedule::kSequential, 40),
                      o);
}

// The batch statistics of the rank that holds the head (the loss).
const std::vector<BatchStats>& head_stats(const std::vector<RunResult>& results) {
  return results[results[0].stats.empty() ? 1 : 0].stats;
}

TEST(TransparencyTest, LoraTrainsThroughExec) {
  const auto results = train_lora("fp32");
  for (const auto& r : results) ASSERT_TRUE(r.complete) << r.error;
  const auto& stats = head_stats(results);
  ASSERT_EQ(stats.size(), 40u);
  EXPECT_LT(stats.back().loss, 0.5 * stats.front().loss)
      << stats.front().loss << " -> " << stats.back().loss;
}

// Mixed precision: autocast on this thread for the guard's lifetime (bf16 on
// a CPU; fp16 has no CPU autocast in LibTorch 1.13 and stays FP32).
TEST(MixedPrecisionTest, GuardCastsMatmulsOnlyInsideAndOnlyWhereSupportedOnTheCpu) {
  const torch::Tensor a = torch::randn({4, 8}), b = torch::randn({8, 3});
  const torch::Device cpu(torch::kCPU);
  EXPECT_TRUE(autocast_applies(cpu, "bf16"));
  EXPECT_FALSE(autocast_applies(cpu, "fp16"));
  EXPECT_FALSE(autocast_applies(cpu, "fp32"));
  EXPECT_TRUE(autocast_applies(torch::Device(torch::kCUDA), "fp16"));
  {
    AutocastGuard guard(cpu, "bf16");
    EXPECT_TRUE(guard.active());
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat32);
  {
    AutocastGuard guard(cpu, "fp16");
    EXPECT_FALSE(guard.active());
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat32);
  }
}

TEST(MixedPrecisionTest, GuardCastsMatmulsToHalfOnCuda) {
  if (!torch::cuda::is_available())
    GTEST_SKIP() << "no CUDA device: the fp16 path is compiled only";
  const torch::Tensor a = torch::randn({4, 8}).cuda(), b = torch::randn({8, 3}).cuda();
  {
    AutocastGuard guard(torch::Device(torch::kCUDA), "fp16");
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kHalf);
  }
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat32);
}

// exec with compute_precision bf16 on a CPU: the forwards run under
// autocast, the wire carries what the plan says (FP32 activations), the
// weights and gradients stay FP32, and it trains.
TEST(MixedPrecisionTest, ExecTrainsLoraInBf16OnTheCpu) {
  const Plan plan =
      make_test_plan(lora_scenario(), {2, 4}, none(), none(), 1, Schedule::kSequential, 40);
  const auto results = train_lora("bf16");
  int64_t plan_bytes = 0;
  for (const auto& b : plan.boundaries)
    plan_bytes += b.forward.wire_bytes_per_batch + b.backward.wire_bytes_per_batch;
  int64_t sent = 0;
  for (const auto& r : results) {
    ASSERT_TRUE(r.complete) << r.error;
    sent += r.wire_bytes_sent;
  }
  EXPECT_EQ(sent, 40 * plan_bytes);
  const auto& stats = head_stats(results);
  ASSERT_EQ(stats.size(), 40u);
  EXPECT_LT(stats.back().loss, 0.5 * stats.front().loss)
      << stats.front().loss << " -> " << stats.back().loss;
  // The first loss, before any step: bf16 matmuls round it, a little.
  const auto fp32 = train_lora("fp32");
  const double want = head_stats(fp32).front().loss;
  EXPECT_NE(stats.front().loss, want);
  EXPECT_NEAR(stats.front().loss / want, 1.0, 0.05);
}

// Loss scaling (fp16's default, here at fp32 so the CPU can check it): the
// loss is scaled before the backward, so every gradient on both sides of the
// cut is too; unscaled before the update, they are the unsplit ones.
TEST(LossScalingTest, ScaledAndUnscaledGradientsAreTheUnsplitOnes) {
  Scenario sc = small_scenario("resnet20", 4);
  sc.loss_scale = 1024;
  const Plan plan = make_test_plan(sc, {3}, none(), none(), 1, Schedule::kSequential, 1);
  expect_allclose(split_gradients(sc, plan), unsplit_gradients(sc));
}

// Batch 1 poisoned (a NaN in its input): its gradients are NaN on both
// sides. Under loss scaling each stage skips that update and training goes
// on; without it the NaN reaches the weights and every later loss.
class PoisonedBatch : public BatchSource {
 public:
  explicit PoisonedBatch(std::unique_ptr<BatchSource> source) : source_(std::move(source)) {}
  std::pair<torch::Tensor, torch::Tensor> batch(int client, int64_t index, int64_t size) override {
    auto b = source_->batch(client, index, size);
    if (index == 1) b.first.view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
    return b;
  }
  torch::Tensor target(int client, int64_t index, int64_t size) override {
    return source_->target(client, index, size);
  }

 private:
  std::unique_ptr<BatchSource> source_;
};

std::vector<RunResult> train_through_a_poisoned_batch(double loss_scale) {
  Scenario sc = small_scenario("resnet20", 4);
  sc.loss_scale = loss_scale;
  const SplitModel model = build_model(sc.model, sc.seed);
  PoisonedBatch data(make_synthetic_source(model, sc.seed));
  RunOptions o;
  o.timeout = std::chrono::milliseconds(20000);
  o.data = &data;
  return run_loopback(sc, make_test_plan(sc, {3}, none(), none(), 1, Schedule::kSequential, 4), o);
}

TEST(LossScalingTest, ANonFiniteGradientSkipsTheUpdateOnEachSide) {
  const auto scaled = train_through_a_poisoned_batch(1024);
  int64_t skipped = 0;
  for (const auto& r : scaled) {
    ASSERT_TRUE(r.complete) << r.error;
    skipped += r.skipped_updates;
  }
  EXPECT_EQ(skipped, 2);  // batch 1, on each of the two stages
  const auto& stats = head_stats(scaled);
  ASSERT_EQ(stats.size(), 4u);
  EXPECT_TRUE(std::isnan(stats[1].loss));
  EXPECT_TRUE(std::isfinite(stats[2].loss) && std::isfinite(stats[3].loss));

  const auto unscaled = train_through_a_poisoned_batch(1);
  for (const auto& r : unscaled) EXPECT_EQ(r.skipped_updates, 0);
  EXPECT_TRUE(std::isnan(head_stats(unscaled)[3].loss));
}

}  // namespace
}  // namespace splitsim::testing
