// Valid cut points from the unit graph.
#include "splitsim/costmodel/unit_graph.h"

#include <gtest/gtest.h>

namespace splitsim {
namespace {

ModelProfile chain_with_skip() {
  // input -> a -> b -> c -> d, plus a skip a -> c: cutting before b or c
  // would send two tensors (a's output twice consumed across the cut).
  ModelProfile p;
  p.model = "toy";
  p.input_shape = {3};
  const char* names[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; ++i) {
    UnitProfile u;
    u.name = names[i];
    u.inputs = {i - 1};
    u.output_shape = {i + 10};
    p.units.push_back(u);
  }
  p.units[2].inputs = {1, 0};
  return p;
}

TEST(UnitGraphTest, ChainHasEveryCut) {
  ModelProfile p = chain_with_skip();
  p.units[2].inputs = {1};
  const auto cuts = valid_cuts(p);
  ASSERT_EQ(cuts.size(), 3u);
  EXPECT_EQ(cuts[0].before, "a");
  EXPECT_EQ(cuts[0].after, "b");
  EXPECT_EQ(cuts[0].shape, std::vector<int64_t>{10});
  EXPECT_EQ(cuts[2].position, 3);
}

TEST(UnitGraphTest, SkipEdgeInvalidatesTheCutsItSpans) {
  const auto cuts = valid_cuts(chain_with_skip());
  // Before b: a's output crosses twice? No: one tensor (a's output) crosses,
  // consumed by b and c. Before c: a's and b's outputs both cross.
  ASSERT_EQ(cuts.size(), 2u);
  EXPECT_EQ(cuts[0].after, "b");
  EXPECT_EQ(cuts[1].after, "d");
}

TEST(UnitGraphTest, ModelInputConsumedTwiceBlocksCuts) {
  ModelProfile p = chain_with_skip();
  p.units[2].inputs = {1};
  p.units[3].inputs = {2, -1};  // d also reads the model input
  EXPECT_TRUE(valid_cuts(p).empty());
}

TEST(UnitGraphTest, ForwardEdgeIsRejected) {
  ModelProfile p = chain_with_skip();
  p.units[1].inputs = {2};
  EXPECT_THROW(valid_cuts(p), std::exception);
}

}  // namespace
}  // namespace splitsim
