// The one median every measured figure is reduced to.
#include "splitsim/costmodel/median.h"

#include <gtest/gtest.h>

#include <cmath>

namespace splitsim {
namespace {

TEST(Median, MiddleValueOrMeanOfTheTwoMiddleOnes) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7);
  EXPECT_DOUBLE_EQ(median({1, 1, 100}), 1);  // an outlier does not move it
  EXPECT_TRUE(std::isnan(median({})));
}

}  // namespace
}  // namespace splitsim
