// Held-out evaluation inside a run (RunOptions::eval_every, what
// `splitsim train` uses): it scores the model as the unsplit one in eval
// mode would, leaves the training and its wire bytes untouched, and is
// refused where it has no place between batches.
#include <gtest/gtest.h>

#include "exec_test_util.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/exec/dataset.h"

namespace splitsim::testing {
namespace {

// Random 1x8x8 images (resized to the model's input) with labels 0..9.
LabeledImages random_images(int64_t n, uint64_t seed) {
  torch::Generator gen = at::detail::createCPUGenerator(seed);
  return {torch::rand({n, 1, 8, 8}, gen), torch::randint(10, {n}, gen)};
}

struct TwoRanks {
  std::vector<RunResult> ranks;
  const RunResult& last_stage() const { return ranks[0].evals.empty() ? ranks[1] : ranks[0]; }
};

TwoRanks run(const Scenario& sc, const Plan& plan, int64_t eval_every,
             bool keep_gradients = false) {
  const std::vector<int64_t> shape = model_input_shape(sc.model);
  const RunSpec spec = test_run(sc, plan);
  auto hub = std::make_shared<LoopbackHub>(2);
  TwoRanks r;
  r.ranks.resize(2);
  const auto start = ExecClock::now();
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank)
    threads.emplace_back([&, rank] {
      // Each rank its own sources, as each process has.
      auto train = make_image_source(random_images(64, 1), shape, sc.seed);
      auto test = make_ordered_image_source(random_images(24, 2), shape);
      RunOptions o;
      o.timeout = std::chrono::milliseconds(30000);
      o.keep_gradients = keep_gradients;
      o.data = train.get();
      o.eval_data = test.get();
      o.eval_every = eval_every;
      o.eval_batches = 3;
      LoopbackTransport t(hub, rank);
      r.ranks[static_cast<size_t>(rank)] = run_party(spec, t, rank, o, start);
    });
  for (auto& t : threads) t.join();
  for (const auto& p : r.ranks) EXPECT_TRUE(p.complete) << p.error;
  return r;
}

TEST(TrainEvalTest, EvaluationIsTheUnsplitModelInEvalMode) {
  // No optimizer step (gradients kept): only the batch-norm statistics of the
  // two training forwards move, as in the unsplit model below.
  const Scenario sc = small_scenario("resnet20", 8);
  const Plan plan = make_test_plan(sc, {3}, CodecSpec{}, CodecSpec{}, 1, Schedule::kGpipe, 2);
  const TwoRanks r = run(sc, plan, 2, /*keep_gradients=*/true);
  const RunResult& last = r.last_stage();
  ASSERT_EQ(last.evals.size(), 1u);
  const EvalStats& e = last.evals[0];
  EXPECT_EQ(e.after_batches, 2);
  EXPECT_EQ(e.samples, 24);

  SplitModel model = build_model(sc.model, sc.seed);
  const std::vector<int64_t> shape = model_input_shape(sc.model);
  auto train = make_image_source(random_images(64, 1), shape, sc.seed);
  auto test = make_ordered_image_source(random_images(24, 2), shape);
  model.train(true);
  {
    torch::NoGradGuard no_grad;
    for (int64_t b = 0; b < 2; ++b) model.forward(train->batch(0, b, 8).first);
  }
  model.train(false);
  torch::NoGradGuard no_grad;
  double loss = 0, correct = 0;
  for (int64_t t = 0; t < 3; ++t) {
    auto [x, y] = test->batch(0, t, 8);
    torch::Tensor out = model.forward(x);
    loss += model.loss(out, y).item<double>() * 8;
    correct += out.argmax(1).eq(y).sum().item<double>();
  }
  EXPECT_NEAR(e.loss, loss / 24, 1e-5);
  EXPECT_EQ(e.correct, correct);
}

TEST(TrainEvalTest, EvaluationLeavesTheTrainingAndItsWireBytesAlone) {
  const Scenario sc = small_scenario("resnet20", 8);
  CodecSpec q8;
  q8.method = CodecMethod::kQuantize;
  const Plan plan = make_test_plan(sc, {3, 9}, q8, CodecSpec{}, 2, Schedule::k1F1B, 4);
  const TwoRanks with = run(sc, plan, 2);
  const TwoRanks without = run(sc, plan, 0);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(with.ranks[k].wire_bytes_sent, without.ranks[k].wire_bytes_sent);
    EXPECT_EQ(with.ranks[k].wire_bytes_received, without.ranks[k].wire_bytes_received);
    ASSERT_EQ(with.ranks[k].stats.size(), without.ranks[k].stats.size());
    for (size_t i = 0; i < with.ranks[k].stats.size(); ++i)
      EXPECT_EQ(with.ranks[k].stats[i].loss, without.ranks[k].stats[i].loss) << "batch " << i;
  }
  const RunResult& last = with.last_stage();
  ASSERT_EQ(last.evals.size(), 2u);
  EXPECT_EQ(last.evals[0].after_batches, 2);
  EXPECT_EQ(last.evals[1].after_batches, 4);
  // The training batches before each evaluation are summarised with it.
  double mean = 0;
  for (const auto& s : last.stats)
    if (s.batch < 2) mean += s.loss / 2;
  EXPECT_DOUBLE_EQ(last.evals[0].train_loss, mean);
  // Three eval batches of 8 went forward over both boundaries (U-shape:
  // client -> server -> client), q8 then none: counted apart.
  EXPECT_GT(with.ranks[0].eval_bytes, 0);
  EXPECT_EQ(with.ranks[0].eval_bytes, with.ranks[1].eval_bytes);
  EXPECT_TRUE(without.ranks[0].evals.empty() && without.ranks[1].evals.empty());
}

TEST(TrainEvalTest, RefusedForAsynchronousSchedulesAndWithoutData) {
  const Scenario sc = small_scenario("resnet20", 8);
  const Plan plan = make_test_plan(sc, {3}, CodecSpec{}, CodecSpec{}, 1, Schedule::kPipeDream, 2);
  auto hub = std::make_shared<LoopbackHub>(2);
  LoopbackTransport t(hub, 0);
  RunOptions o;
  auto test = make_ordered_image_source(random_images(24, 2), model_input_shape(sc.model));
  o.eval_data = test.get();
  o.eval_every = 1;
  o.eval_batches = 1;
  EXPECT_THROW(run_party(test_run(sc, plan), t, 0, o, ExecClock::now()), InputError);
  const Plan gpipe = make_test_plan(sc, {3}, CodecSpec{}, CodecSpec{}, 1, Schedule::kGpipe, 2);
  o.eval_data = nullptr;
  EXPECT_THROW(run_party(test_run(sc, gpipe), t, 0, o, ExecClock::now()), InputError);
}

}  // namespace
}  // namespace splitsim::testing
