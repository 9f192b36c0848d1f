// MemoryAccount against a hand count: 10,000 tensors of known sizes alive at
// once on a joined thread, then freed in a shuffled order with new ones in
// between (exec reports ~900 allocations a micro-batch of a small model);
// a free of memory allocated before the account counts nothing.
#include "splitsim/costmodel/memory_account.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <random>
#include <vector>

namespace splitsim {
namespace {

TEST(MemoryAccountTest, LiveAndPeakBytesFollowAHandCountThroughShuffledFrees) {
  MemoryAccount memory;
  MemoryAccount::Join joined(memory);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> size(1, 4096);
  std::vector<torch::Tensor> held;
  std::vector<int64_t> bytes;
  int64_t live = 0, peak = 0;
  for (int i = 0; i < 10000; ++i) {
    bytes.push_back(size(rng));
    held.push_back(torch::empty({bytes.back()}, torch::kUInt8));
    live += bytes.back();
    peak = std::max(peak, live);
  }
  ASSERT_EQ(memory.live_bytes(), live);
  ASSERT_EQ(memory.peak_bytes(), peak);
  std::vector<size_t> order(held.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t n = 0; n < order.size(); ++n) {
    const size_t i = order[n];
    held[i] = torch::Tensor();
    live -= bytes[i];
    if (n % 7 == 0) {  // and some new ones between the frees
      held.push_back(torch::empty({size(rng)}, torch::kUInt8));
      bytes.push_back(held.back().numel());
      live += bytes.back();
      peak = std::max(peak, live);
    }
    ASSERT_EQ(memory.live_bytes(), live) << "after " << n + 1 << " frees";
  }
  EXPECT_EQ(memory.peak_bytes(), peak);
  // A free of memory allocated before the account counts nothing.
  torch::Tensor before;
  {
    MemoryAccount other;
    before = torch::empty({1000}, torch::kUInt8);
    MemoryAccount::Join other_joined(other);
    before = torch::Tensor();
    EXPECT_EQ(other.live_bytes(), 0);
  }
}

}  // namespace
}  // namespace splitsim
