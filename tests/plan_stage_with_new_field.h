#pragma once
// For the tests of plan_schema.h's claim that a new Plan field is one line:
// a stage with one field the Plan lacks, listed by PlanStage's list plus one
// line. Include it before the codecs' visitors
// (costmodel/core/src/plan_json_writer.h, costmodel/core/src/plan_json_reader.h,
// sim/src/plan_codec_binary.h): they call plan_schema::fields by its
// qualified name, which finds the overloads declared before them.
#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/plan_schema.h"

namespace splitsim {
namespace testing {

// A PlanStage plus seconds of warm-up, optional in a plan file.
struct StageWithWarmup : PlanStage {
  double warmup_s = 0.5;
};

// Two micro-batches; the new field and the stage's own set apart from their
// defaults.
inline StageWithWarmup stage_with_warmup() {
  StageWithWarmup s;
  s.name = "stage0";
  s.party = "client";
  s.device = "cpu";
  s.units = {"conv1", "fc"};
  s.first_unit = 3;
  s.last_unit = 4;
  s.param_count = 10;
  s.param_bytes = 40;
  s.fwd_s = {0.125, 0.25};
  s.bwd_s = {0.5, 0.75};
  s.update_s = 0.0625;
  s.warmup_s = 2.5;
  return s;
}

}  // namespace testing

namespace plan_schema {

template <class V>
void fields(V& v, testing::StageWithWarmup& s) {
  fields(v, static_cast<PlanStage&>(s));
  v.optional("warmup_s", s.warmup_s, plan_json::kSeconds);  // the new field: one line
}

}  // namespace plan_schema
}  // namespace splitsim
