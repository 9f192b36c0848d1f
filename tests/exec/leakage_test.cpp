// The leakage metrics (leakage.h) reproduce what they are known to measure.
#include "splitsim/exec/leakage.h"

#include <gtest/gtest.h>

#include <cmath>

namespace splitsim {
namespace {

// Under independence R*_n has mean 0 and standard deviation about
// 1 / sqrt(n (n - 3) / 2) (Székely & Rizzo 2014): five of them.
double independence_bound(int64_t n) { return 5 / std::sqrt(static_cast<double>(n * (n - 3)) / 2); }

TEST(DistanceCorrelationTest, OfATensorWithItselfOrAScaledCopyIsOne) {
  torch::manual_seed(1);
  const torch::Tensor x = torch::randn({64, 3, 4, 4});
  EXPECT_NEAR(distance_correlation(x, x), 1, 1e-9);
  EXPECT_NEAR(distance_correlation(x, 3 * x + 1), 1, 1e-9);
}

TEST(DistanceCorrelationTest, WithIndependentNoiseIsZeroWithinTheBoundOfItsSampleCount) {
  for (int64_t n : {32, 128, 512}) {
    torch::manual_seed(n);
    const torch::Tensor x = torch::rand({n, 1, 16, 16});
    const torch::Tensor z = torch::randn({n, 16, 8, 8});
    EXPECT_LT(std::abs(distance_correlation(x, z)), independence_bound(n)) << n << " samples";
  }
}

TEST(DistanceCorrelationTest, SeesANonLinearDependenceThatPearsonMisses) {
  const torch::Tensor x = torch::linspace(-1, 1, 256, torch::kFloat64).unsqueeze(1);
  const torch::Tensor z = x * x;  // uncorrelated with x (symmetric), fully dependent
  EXPECT_LT(std::abs(torch::corrcoef(torch::cat({x, z}, 1).t())[0][1].item<double>()), 1e-9);
  // dCor(X, X^2) for X uniform on [-1, 1] is about 0.49: R*_n estimates its square.
  EXPECT_GT(distance_correlation(x, z), independence_bound(256));
  EXPECT_NEAR(distance_correlation(x, z), 0.24, 0.03);
}

TEST(RocAucTest, IsTheMannWhitneyStatisticWithTiesCountingAHalf) {
  // Three of the four positive-negative pairs ordered right.
  EXPECT_DOUBLE_EQ(roc_auc({0.1, 0.4, 0.35, 0.8}, {false, false, true, true}), 0.75);
  EXPECT_DOUBLE_EQ(roc_auc({1, 2, 3}, {false, true, true}), 1.0);
  EXPECT_DOUBLE_EQ(roc_auc({1, 2, 3}, {true, false, false}), 0.0);
  EXPECT_DOUBLE_EQ(roc_auc({5, 5, 5, 5}, {true, false, true, false}), 0.5);
  EXPECT_TRUE(std::isnan(roc_auc({1, 2}, {true, true})));
}

// Li et al.'s set-up: binary labels, few positives; the gradient of the
// loss on a logit is (p - y), carried back through the layers above the cut
// (here one fixed direction w, and noise).
TEST(LabelAttackTest, TheNormAttackTellsTheRarePositivesOfABinaryTaskByTheirGradientNorm) {
  torch::manual_seed(3);
  const int64_t n = 1000;
  const torch::Tensor y = (torch::rand({n}) < 0.1).to(torch::kLong);
  const torch::Tensor p = 0.2 * torch::rand({n});  // early in training: positives predicted low
  const torch::Tensor w = torch::randn({1, 64});
  const torch::Tensor g = (p - y.to(torch::kFloat)).unsqueeze(1) * w + 0.01 * torch::randn({n, 64});
  EXPECT_GT(norm_attack_auc(g, y), 0.99);
  // Gradients that carry no label: chance.
  EXPECT_NEAR(norm_attack_auc(torch::randn({n, 64}), y), 0.5, 0.1);
}

TEST(LabelAttackTest, TheDirectionAttackPairsSamplesOfOneClassByTheirGradientsCosine) {
  torch::manual_seed(4);
  const int64_t n = 200, classes = 10;
  const torch::Tensor y = torch::randint(classes, {n}, torch::kLong);
  const torch::Tensor directions = torch::randn({classes, 128});
  // Softmax cross-entropy early in training: (p - e_y) through the head;
  // each class its own direction, plus the sample's own noise.
  const torch::Tensor g = directions.index_select(0, y) + 0.5 * torch::randn({n, 128});
  EXPECT_GT(direction_attack_auc(g, y), 0.95);
  EXPECT_NEAR(direction_attack_auc(torch::randn({n, 128}), y), 0.5, 0.05);
  // Ten classes: the norm attack oriented per class sits a little above
  // chance on label-free gradients.
  EXPECT_LT(norm_attack_auc(torch::randn({n, 128}), y), 0.5 + 0.4 / std::sqrt(n / classes) + 0.05);
}

TEST(ReconstructionTest, AnInvertibleActivationIsReconstructedAndNoiseIsNoBetterThanTheMean) {
  torch::manual_seed(5);
  const torch::Tensor x = torch::rand({512, 1, 8, 8});
  const torch::Tensor train_x = x.narrow(0, 0, 256), test_x = x.narrow(0, 256, 256);
  // An activation that keeps the image (two channels of a fixed linear map).
  const torch::Tensor mix = torch::randn({2, 1, 1, 1});
  auto act = [&](const torch::Tensor& in) { return torch::cat({in * mix[0], in * mix[1]}, 1); };
  const Reconstruction kept = reconstruction_attack(act(train_x), train_x, act(test_x), test_x, 7);
  EXPECT_GT(kept.psnr_db, kept.baseline_psnr_db + 6);
  EXPECT_LT(kept.mse, kept.baseline_mse / 4);
  // Independent of the image: the decoder can do no better than the mean.
  const Reconstruction noise = reconstruction_attack(torch::randn({256, 2, 8, 8}), train_x,
                                                     torch::randn({256, 2, 8, 8}), test_x, 7);
  EXPECT_LT(noise.psnr_db, noise.baseline_psnr_db + 0.5);
  // Deterministic for a seed.
  const Reconstruction again = reconstruction_attack(act(train_x), train_x, act(test_x), test_x, 7);
  EXPECT_EQ(again.mse, kept.mse);
}

// What crosses a trained cut can sit far from unit scale (ReLU outputs in
// the tens, or all positive); an attacker standardises it before decoding,
// so neither its scale nor its offset decides what the attack finds.
TEST(ReconstructionTest, TheActivationsScaleAndOffsetDoNotChangeWhatTheAttackerReads) {
  torch::manual_seed(5);
  const torch::Tensor x = torch::rand({512, 1, 8, 8});
  const torch::Tensor train_x = x.narrow(0, 0, 256), test_x = x.narrow(0, 256, 256);
  const torch::Tensor mix = torch::randn({2, 1, 1, 1});
  auto act = [&](const torch::Tensor& in, double scale, double offset) {
    return torch::cat({in * mix[0], in * mix[1]}, 1) * scale + offset;
  };
  const Reconstruction unit =
      reconstruction_attack(act(train_x, 1, 0), train_x, act(test_x, 1, 0), test_x, 7);
  for (const auto& [scale, offset] : {std::pair{1000.0, 0.0}, {1e-3, 0.0}, {30.0, 100.0}}) {
    const Reconstruction r = reconstruction_attack(act(train_x, scale, offset), train_x,
                                                   act(test_x, scale, offset), test_x, 7);
    EXPECT_NEAR(r.psnr_db, unit.psnr_db, 1.0) << "scale " << scale << ", offset " << offset;
  }
  // A flat activation too.
  const torch::Tensor flat = x.reshape({512, 64}).matmul(torch::randn({64, 32}));
  auto flat_attack = [&](double scale) {
    return reconstruction_attack(flat.narrow(0, 0, 256) * scale, train_x,
                                 flat.narrow(0, 256, 256) * scale, test_x, 1, 50);
  };
  EXPECT_NEAR(flat_attack(1000).psnr_db, flat_attack(1).psnr_db, 1.0);
}

TEST(ReconstructionTest, AFlatActivationGoesThroughTheLinearDecoder) {
  torch::manual_seed(6);
  const torch::Tensor x = torch::rand({256, 1, 4, 4});
  const torch::Tensor z = x.reshape({256, 16}).matmul(torch::randn({16, 32}));
  const Reconstruction r =
      reconstruction_attack(z.narrow(0, 0, 128), x.narrow(0, 0, 128), z.narrow(0, 128, 128),
                            x.narrow(0, 128, 128), 1, 200);
  EXPECT_GT(r.psnr_db, r.baseline_psnr_db + 3);
}

}  // namespace
}  // namespace splitsim
