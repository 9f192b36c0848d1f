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

// Net: a free of memory allocated before the account counts against what
// was allocated since, and the peak is the highest point of that (a
// backward's working memory above the stash it frees as it goes).
TEST(MemoryAccountTest, NetCountsFreesOfEarlierMemoryAgainstNewAllocations) {
  torch::Tensor stash;
  {  // c10 reports the size of a free only where it saw the allocation
    MemoryAccount forward;
    MemoryAccount::Join forward_joined(forward);
    stash = torch::empty({3000}, torch::kUInt8);
  }
  MemoryAccount net(/*net=*/true);
  MemoryAccount::Join joined(net);
  torch::Tensor a = torch::empty({1000}, torch::kUInt8);
  stash = torch::Tensor();
  EXPECT_EQ(net.live_bytes(), 1000 - 3000);
  torch::Tensor b = torch::empty({2500}, torch::kUInt8);
  EXPECT_EQ(net.live_bytes(), 500);
  EXPECT_EQ(net.peak_bytes(), 1000);  // before the stash went
}

// StorageAccount's net mode on the meta device, where MemoryAccount sees no
// allocation: an earlier storage an op reads and that then dies counts
// against the created ones, at the end of the next op.
TEST(MemoryAccountTest, StorageAccountNetCreditsEarlierStoragesThatDie) {
  torch::Tensor stash = torch::empty({750}, torch::TensorOptions().device(torch::kMeta));
  StorageAccount net(/*net=*/true);
  torch::Tensor a = stash * 2;  // reads the stash: 3,000 bytes created
  EXPECT_EQ(net.live_bytes(), 3000);
  stash = torch::Tensor();
  EXPECT_EQ(net.live_bytes(), 0);
  torch::Tensor b = a.sum();  // 4 bytes
  EXPECT_EQ(net.peak_bytes(), 3000);
  EXPECT_EQ(net.live_bytes(), 4);
}

}  // namespace
}  // namespace splitsim
