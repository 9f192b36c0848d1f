// The training samples spread over clients (client_data.h): IID parts,
// Dirichlet label skew, and the batches each client draws.
#include "splitsim/exec/client_data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

constexpr int64_t kClasses = 10;

// 100 samples of each class, in class order.
torch::Tensor class_labels(int64_t per_class = 100) {
  return torch::arange(kClasses * per_class, torch::kLong).div(per_class, "floor");
}

// Each client's largest class share, averaged over clients.
double mean_top_share(const ClientPartition& p) {
  double sum = 0;
  for (const auto& counts : p.class_counts) {
    const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    sum += static_cast<double>(*std::max_element(counts.begin(), counts.end())) /
           static_cast<double>(total);
  }
  return sum / static_cast<double>(p.class_counts.size());
}

void expect_disjoint(const ClientPartition& p, int64_t n) {
  std::set<int64_t> seen;
  for (const auto& mine : p.samples)
    for (int64_t i : mine) {
      EXPECT_TRUE(i >= 0 && i < n) << i;
      EXPECT_TRUE(seen.insert(i).second) << "sample " << i << " twice";
    }
}

TEST(ClientPartitionTest, IidGivesEqualDisjointPartsDeterministicForASeed) {
  const torch::Tensor labels = class_labels();
  const ClientPartition p = partition_samples(labels, kClasses, 3, 0, 7, 16);
  ASSERT_EQ(p.samples.size(), 3u);
  for (const auto& mine : p.samples) EXPECT_EQ(mine.size(), 333u);  // 1000 / 3, remainder out
  expect_disjoint(p, 1000);
  for (size_t c = 0; c < 3; ++c)
    EXPECT_EQ(std::accumulate(p.class_counts[c].begin(), p.class_counts[c].end(), int64_t{0}), 333);
  EXPECT_LT(mean_top_share(p), 0.2);  // about 1/10 of each class
  EXPECT_EQ(partition_samples(labels, kClasses, 3, 0, 7, 16).samples, p.samples);
  EXPECT_NE(partition_samples(labels, kClasses, 3, 0, 8, 16).samples, p.samples);
}

TEST(ClientPartitionTest, DirichletSkewsTheLabelsMoreTheSmallerAlpha) {
  const torch::Tensor labels = class_labels(200);
  const ClientPartition skewed = partition_samples(labels, kClasses, 8, 0.1, 3, 16);
  const ClientPartition even = partition_samples(labels, kClasses, 8, 1000, 3, 16);
  for (const auto* p : {&skewed, &even}) {
    expect_disjoint(*p, 2000);
    size_t total = 0;
    for (const auto& mine : p->samples) {
      EXPECT_GE(mine.size(), 16u);
      total += mine.size();
    }
    EXPECT_EQ(total, 2000u);  // every sample goes to some client
  }
  EXPECT_GT(mean_top_share(skewed), 0.5);  // most of a client's samples from one class
  EXPECT_LT(mean_top_share(even), 0.15);   // close to IID's 1/10
  EXPECT_EQ(partition_samples(labels, kClasses, 8, 0.1, 3, 16).samples, skewed.samples);
}

TEST(ClientPartitionTest, RefusesWhatCannotGiveEveryClientABatch) {
  const torch::Tensor labels = class_labels(10);  // 100 samples
  try {
    partition_samples(labels, kClasses, 8, 0, 1, 16);  // 12 each
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "clients");
  }
  try {
    partition_samples(labels, kClasses, 4, 0.001, 1, 24);  // whole classes: 3 each of 10
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "alpha");
  }
}

TEST(ClientPartitionTest, EachClientDrawsItsOwnSamplesOnly) {
  // The image's one pixel is its sample index.
  const int64_t n = 1000;
  LabeledImages data{torch::arange(n, torch::kFloat).view({n, 1, 1, 1}), class_labels()};
  const ClientPartition p = partition_samples(data.labels, kClasses, 4, 0.3, 5, 8);
  auto source = make_client_image_source(data, p, {1, 1, 1}, 5);
  for (int c = 0; c < 4; ++c) {
    const std::set<int64_t> mine(p.samples[c].begin(), p.samples[c].end());
    for (int64_t b = 0; b < 3; ++b) {
      const auto [x, y] = source->batch(c, b, 8);
      for (int64_t i = 0; i < 8; ++i) {
        const auto sample = static_cast<int64_t>(x[i].item<float>());
        EXPECT_EQ(mine.count(sample), 1u) << "client " << c << " drew sample " << sample;
        EXPECT_EQ(y[i].item<int64_t>(), data.labels[sample].item<int64_t>());
      }
    }
  }
}

}  // namespace
}  // namespace splitsim
