// plan_schema.h's claim: a new Plan field is one line in its list, and the
// plan file's writer and reader carry it with no other change. The stage of
// plan_stage_with_new_field.h adds "warmup_s" to PlanStage's list by one
// line; the visitors below are those of plan.cpp and plan_parse.cpp.
// (sim/src/plan_codec_binary.h's binary codec: tests/sim/plan_codec_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../plan_stage_with_new_field.h"
// After the new field's list: these visitors find it by qualified name.
#include "expect_input_error.h"
#include "plan_json_reader.h"
#include "plan_json_writer.h"

namespace splitsim {
namespace {

using nlohmann::json;
using testing::StageWithWarmup;

constexpr size_t kMicrobatches = 2;  // testing::stage_with_warmup()'s
const std::string kPath = "$.stages[0]";

StageWithWarmup read_stage(const json& j) {
  StageWithWarmup s;
  plan_fields::read_fields(j, kPath, kMicrobatches, &s);
  return s;
}

TEST(PlanSchemaNewField, WriterWritesItsKeyAndValue) {
  const json j = plan_fields::JsonWriter::write(testing::stage_with_warmup());
  ASSERT_TRUE(j.contains("warmup_s")) << j.dump();
  EXPECT_EQ(j.at("warmup_s"), 2.5);
  // Beside PlanStage's own keys, unchanged.
  const json plain =
      plan_fields::JsonWriter::write(static_cast<const PlanStage&>(testing::stage_with_warmup()));
  json without = j;
  without.erase("warmup_s");
  EXPECT_EQ(without, plain);
}

TEST(PlanSchemaNewField, ReaderReadsItBack) {
  const StageWithWarmup s = testing::stage_with_warmup();
  const json j = plan_fields::JsonWriter::write(s);
  const StageWithWarmup back = read_stage(j);
  EXPECT_EQ(back.warmup_s, 2.5);
  EXPECT_EQ(back.party, "client");
  EXPECT_EQ(back.fwd_s, s.fwd_s);
  EXPECT_EQ(plan_fields::JsonWriter::write(back), j);
}

TEST(PlanSchemaNewField, FileWithoutItLeavesTheDefault) {
  json j = plan_fields::JsonWriter::write(testing::stage_with_warmup());
  j.erase("warmup_s");
  EXPECT_EQ(read_stage(j).warmup_s, StageWithWarmup().warmup_s);
  EXPECT_EQ(StageWithWarmup().warmup_s, 0.5);
}

TEST(PlanSchemaNewField, BadValueNamesItsPath) {
  json j = plan_fields::JsonWriter::write(testing::stage_with_warmup());
  j["warmup_s"] = -1.5;
  expect_error([&] { read_stage(j); }, kPath + ".warmup_s", "got -1.5");
  j["warmup_s"] = "soon";
  expect_error([&] { read_stage(j); }, kPath + ".warmup_s", "got \"soon\"");
}

// check_keys, which refuses keys no list names, accepts it.
TEST(PlanSchemaNewField, ItsKeyIsKnown) {
  const std::vector<std::string> keys = plan_fields::keys_of<StageWithWarmup>();
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "warmup_s"), 1);
  EXPECT_EQ(keys.size(), plan_fields::keys_of<PlanStage>().size() + 1);
}

}  // namespace
}  // namespace splitsim
