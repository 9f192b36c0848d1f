// Measured model profiles against published totals and basic invariants.
#include "splitsim/costmodel/measure.h"

#include <gtest/gtest.h>

namespace splitsim {
namespace {

int64_t total_fwd_macs(const ModelProfile& p) {
  int64_t macs = 0;
  for (const auto& u : p.units) macs += u.fwd.macs();
  return macs;
}

ModelSpec spec(const std::string& name, int64_t classes = 0) {
  ModelSpec s;
  s.name = name;
  s.num_classes = classes;
  return resolve_model_defaults(s, "$.model");
}

TEST(MeasureTest, MobileNetV2At224MatchesThePublished300MMacs) {
  const ModelProfile p = measure_model(spec("mobilenet_v2", 1000));
  const double macs = static_cast<double>(total_fwd_macs(p));
  EXPECT_NEAR(macs / 300e6, 1.0, 0.02) << macs;  // Sandler et al. 2018: 300M multiply-adds
  int64_t params = 0;
  for (const auto& u : p.units) params += u.param_count;
  EXPECT_EQ(params, 3504872);
}

TEST(MeasureTest, ResNet20MatchesThePublished41MMacs) {
  const ModelProfile p = measure_model(spec("resnet20"));
  const double macs = static_cast<double>(total_fwd_macs(p));
  EXPECT_NEAR(macs / 41e6, 1.0, 0.02) << macs;
  ASSERT_EQ(p.units.size(), 11u);
  EXPECT_EQ(p.units.back().output_shape, std::vector<int64_t>{10});
}

TEST(MeasureTest, CountsArePerSampleAndLinearInTheBatch) {
  const ModelProfile a = measure_model(spec("resnet20"), 2);
  const ModelProfile b = measure_model(spec("resnet20"), 4);
  for (size_t i = 0; i < a.units.size(); ++i) {
    EXPECT_EQ(a.units[i].fwd.macs(), b.units[i].fwd.macs()) << a.units[i].name;
    EXPECT_EQ(a.units[i].bwd.macs(), b.units[i].bwd.macs()) << a.units[i].name;
  }
}

TEST(MeasureTest, BackwardIsTwiceForwardExceptWhereNoInputGradientIsNeeded) {
  const ModelProfile p = measure_model(spec("resnet20"));
  // The first conv needs no gradient for the data: backward = weight grads only.
  EXPECT_EQ(p.units[0].bwd.conv_macs, p.units[0].fwd.conv_macs);
  for (size_t i = 1; i + 1 < p.units.size(); ++i)
    EXPECT_EQ(p.units[i].bwd.conv_macs, 2 * p.units[i].fwd.conv_macs) << p.units[i].name;
}

TEST(MeasureTest, MobileNetV2CutShapesAndStash) {
  const ModelProfile p = measure_model(spec("mobilenet_v2"));
  const int bn = p.index_of("features.0.bn");
  const int f18 = p.index_of("features.18");
  ASSERT_GE(bn, 0);
  ASSERT_GE(f18, 0);
  EXPECT_EQ(p.units[bn].output_shape, (std::vector<int64_t>{32, 112, 112}));
  EXPECT_EQ(p.units[f18].output_shape, (std::vector<int64_t>{1280, 7, 7}));
  // BN keeps at least its output for the next op; a block keeps several tensors.
  EXPECT_GE(p.units[bn].stash_bytes_per_sample, 32 * 112 * 112 * 4);
  EXPECT_GT(p.units[p.index_of("features.1")].stash_bytes_per_sample, 0);
  EXPECT_GT(p.units[bn].fwd.elementwise_elems, 0);
  EXPECT_EQ(p.units[bn].fwd.macs(), 0);
}

}  // namespace
}  // namespace splitsim
