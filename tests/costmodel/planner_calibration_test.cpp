// make_plan's calibrations (the scenario's "calibration", then a command's
// Scenario::command_calibration) and its client groups on devices of their
// own, on the synthetic model of toy_plan.h.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>

#include "splitsim/costmodel/calibration.h"
#include "splitsim/costmodel/planner.h"
#include "toy_plan.h"

namespace splitsim {
namespace {

using namespace toy_plan;  // NOLINT: the fixtures

// A U-shape with a codec on each boundary, so that codec seconds and model
// seconds scale apart.
Scenario with_codecs() {
  Scenario s = ushape();
  s.compression[0].forward.method = CodecMethod::kQuantize;
  s.compression[1].backward.method = CodecMethod::kTopK;
  s.compression[1].backward.keep_ratio = 0.25;
  return s;
}

std::shared_ptr<const Calibration> client_calibration() {
  auto cal = std::make_shared<Calibration>();
  PartyCalibration client;
  client.compute_scale = 1.5;
  client.op_overhead_s = 1e-4;
  client.codec_scale = 3;
  client.op_class_scale.matmul = 0.5;
  cal->parties["client"] = client;
  cal->parties["*"].compute_scale = 2;
  return cal;
}

std::shared_ptr<const Calibration> server_calibration() {
  auto cal = std::make_shared<Calibration>();
  cal->parties["server"].compute_scale = 0.25;
  cal->parties["*"].codec_scale = 2;  // the client's, under the scenario's
  cal->parties["*"].op_overhead_s = 5e-5;
  cal->parties["server"].op_overhead_s = 2e-4;
  cal->bandwidth_factor = 0.5;
  cal->per_message_overhead_s = 1e-3;
  return cal;
}

// Which calibrations a scenario carries.
enum class Calibrated { kNone, kScenarios, kCommands, kBoth };

Scenario calibrated(Scenario s, Calibrated how) {
  if (how == Calibrated::kScenarios || how == Calibrated::kBoth) {
    s.calibration_file = "calibration.json";
    s.calibration = client_calibration();
  }
  if (how == Calibrated::kCommands) s.command_calibration = client_calibration();
  if (how == Calibrated::kBoth) s.command_calibration = server_calibration();
  return s;
}

// A command's calibration goes on top of the scenario's: the plan is the
// scenario's plan with apply_calibration of the command's after it.
TEST(PlannerCalibrationTest, ACommandsCalibrationGoesOnTopOfTheScenarios) {
  const Scenario s = calibrated(with_codecs(), Calibrated::kScenarios);
  const Plan scenarios = make_plan(s, toy_model(), devices());
  Scenario both = s;
  both.command_calibration = server_calibration();
  const Plan plan = make_plan(both, toy_model(), devices());
  EXPECT_EQ(nlohmann::json(plan), nlohmann::json(apply_calibration(scenarios, *server_calibration())));
  EXPECT_NE(nlohmann::json(plan), nlohmann::json(scenarios));
  EXPECT_DOUBLE_EQ(plan.network.bandwidth_factor, 0.5);
  // Alone, a command's calibration is what the scenario's would be.
  Scenario commands = with_codecs();
  commands.command_calibration = client_calibration();
  EXPECT_EQ(nlohmann::json(make_plan(commands, toy_model(), devices())),
            nlohmann::json(scenarios));
}

TEST(PlannerCalibrationTest, AScenarioNamingAnUnloadedCalibrationIsRefused) {
  Scenario s = ushape();
  s.calibration_file = "calibration.json";  // named, never loaded
  try {
    make_plan(s, toy_model(), devices());
    FAIL() << "planned with a calibration it never read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$.calibration");
  }
}

// A client group on a device of its own: its client-role stages cost what
// they cost in the plan with the client role on that device (codecs on its
// side and every calibration's per-party scales included).
TEST(PlannerCalibrationTest, AClientGroupsStagesCostWhatTheClientRoleCostsOnItsDevice) {
  for (const Calibrated how :
       {Calibrated::kNone, Calibrated::kScenarios, Calibrated::kCommands, Calibrated::kBoth}) {
    const Scenario alike = calibrated(with_codecs(), how);
    const int mode = static_cast<int>(how);
    Scenario grouped = alike;
    ClientGroupSpec slow, same;
    slow.name = "slow";
    slow.count = 2;
    slow.device = "pi";
    same.name = "same";
    grouped.client_groups = {slow, same};
    grouped.clients = 3;
    auto devs = devices();
    devs[client_group_device_key(slow)] = device("pi", 5e5);
    const Plan plan = make_plan(grouped, toy_model(), devs);
    ASSERT_EQ(plan.client_groups.size(), 2u);
    EXPECT_TRUE(plan.client_groups[1].stage_costs.empty());
    EXPECT_EQ(plan.client_groups[0].device, "pi");

    auto on_pi = devices();
    on_pi["client"] = device("pi", 5e5);
    const Plan theirs = make_plan(alike, toy_model(), on_pi);
    const Plan ours = make_plan(alike, toy_model(), devices());
    const auto& costs = plan.client_groups[0].stage_costs;
    ASSERT_EQ(costs.size(), 2u);
    for (const PlanStageCosts& c : costs) {
      const PlanStage& st = theirs.stages[static_cast<size_t>(c.stage)];
      EXPECT_EQ(c.fwd_s, st.fwd_s) << "stage " << c.stage << ", calibrations " << mode;
      EXPECT_EQ(c.bwd_s, st.bwd_s) << "stage " << c.stage << ", calibrations " << mode;
      EXPECT_EQ(c.update_s, st.update_s) << "stage " << c.stage << ", calibrations " << mode;
    }
    // The plan's own stages are the alike plan's.
    for (size_t k = 0; k < ours.stages.size(); ++k) {
      EXPECT_EQ(plan.stages[k].fwd_s, ours.stages[k].fwd_s);
      EXPECT_EQ(plan.stages[k].bwd_s, ours.stages[k].bwd_s);
      EXPECT_EQ(plan.stages[k].update_s, ours.stages[k].update_s);
    }
  }
}

}  // namespace
}  // namespace splitsim
