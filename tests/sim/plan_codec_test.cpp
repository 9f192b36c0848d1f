// The simulator's binary codec carries a new Plan field with no change of
// its own: the stage of plan_stage_with_new_field.h (PlanStage's list plus
// one line) through sim/src/plan_codec_binary.h, the visitor of
// encode_plan and decode_plan. (The plan file's JSON:
// tests/costmodel/plan_schema_test.cpp.)
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "../plan_stage_with_new_field.h"
// After the new field's list: the visitor finds it by qualified name.
#include "plan_codec_binary.h"

namespace splitsim {
namespace {

using testing::StageWithWarmup;

TEST(PlanCodecNewField, RoundTrips) {
  const StageWithWarmup s = testing::stage_with_warmup();
  const std::string bytes = sim_internal::encode_fields(s);
  const auto back = sim_internal::decode_fields<StageWithWarmup>(bytes.data(), bytes.size());
  EXPECT_EQ(back.warmup_s, 2.5);
  EXPECT_EQ(back.party, "client");
  EXPECT_EQ(back.units, s.units);
  EXPECT_EQ(back.first_unit, 3);
  EXPECT_EQ(back.last_unit, 4);
  EXPECT_EQ(back.fwd_s, s.fwd_s);
  EXPECT_EQ(back.bwd_s, s.bwd_s);
  EXPECT_EQ(back.update_s, s.update_s);
}

// Its 8 bytes follow PlanStage's: bytes without them are refused.
TEST(PlanCodecNewField, IsStoredAfterTheStage) {
  const StageWithWarmup s = testing::stage_with_warmup();
  const std::string with = sim_internal::encode_fields(s);
  const std::string plain = sim_internal::encode_fields(static_cast<const PlanStage&>(s));
  ASSERT_EQ(with.size(), plain.size() + sizeof(double));
  EXPECT_EQ(with.substr(0, plain.size()), plain);
  EXPECT_THROW(sim_internal::decode_fields<StageWithWarmup>(plain.data(), plain.size()),
               std::runtime_error);
}

}  // namespace
}  // namespace splitsim
