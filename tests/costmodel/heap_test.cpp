// hold_freed_heap_memory (heap.h): memory a training step frees is reused by
// the next step without page faults.
#include "splitsim/costmodel/heap.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace splitsim {
namespace {

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// One "step": blocks of 7, 7, 6, 5 and 4 MiB and sixteen of 64 KiB
// allocated, written page by page and freed, as a forward and backward
// allocate and free activations. Returns a checksum so that the writes stay.
constexpr size_t kBigMiB[] = {7, 7, 6, 5, 4};  // 29 MiB

unsigned step() {
  std::vector<std::pair<char*, size_t>> blocks;
  for (size_t mib : kBigMiB)
    blocks.emplace_back(static_cast<char*>(std::malloc(mib << 20)), mib << 20);
  for (int i = 0; i < 16; ++i)
    blocks.emplace_back(static_cast<char*>(std::malloc(64 << 10)), 64 << 10);
  unsigned sum = 0;
  for (const auto& [b, bytes] : blocks) {
    EXPECT_NE(b, nullptr);
    std::memset(b, 1, bytes);
    sum += static_cast<unsigned char>(b[bytes - 1]);
  }
  for (const auto& [b, bytes] : blocks) std::free(b);
  return sum;
}

TEST(HeapTest, AStepReusesTheLastStepsPagesWithoutFaulting) {
  hold_freed_heap_memory();
  hold_freed_heap_memory();        // idempotent
  unsigned sum = step() + step();  // the first steps grow the heap
  const long before = minor_faults();
  constexpr int kSteps = 8;
  for (int i = 0; i < kSteps; ++i) sum += step();
  const long faults = minor_faults() - before;
  EXPECT_EQ(sum, (kSteps + 2u) * 21);  // 21 blocks of ones a step
  // Faulting the blocks in afresh would cost 29 MiB / 4 KiB = 7,424 faults a
  // step; held, a step costs none (a few for the test's own bookkeeping).
  EXPECT_LT(faults, 50 * kSteps) << faults << " minor faults in " << kSteps << " steps";
}

}  // namespace
}  // namespace splitsim
