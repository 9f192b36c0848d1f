// `splitsim simulate PLAN_FILE` end to end: for every variant of every
// shipped scenario (each scenarios/*.json), the plan that `splitsim plan
// --json` writes reads back to the same JSON (parse_plan), and simulating
// the plan file prints the same metrics as simulating the scenario.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "run_cli.h"
#include "splitsim/costmodel/calibration.h"
#include "splitsim/costmodel/plan.h"

namespace splitsim::testing {
namespace {

// Every scenarios/*.json: a new scenario is covered without editing this.
std::vector<std::string> shipped_scenarios() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(source_path("scenarios")))
    if (e.path().extension() == ".json") names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string write_json_text(const std::string& text, const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("splitsim_" + name + "_" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << text;
  return p.string();
}

class ShippedPlanFileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedPlanFileTest, PlansRoundTripAndSimulateLikeTheScenario) {
  const std::string scenario = source_path("scenarios/" + GetParam());
  const CliResult plan = run_cli("plan --json " + scenario);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const nlohmann::json written = nlohmann::json::parse(plan.out);
  const std::vector<Plan> plans = parse_plans(written);
  const nlohmann::json all = written.is_array() ? written : nlohmann::json::array({written});
  ASSERT_EQ(plans.size(), all.size());
  ASSERT_GE(plans.size(), 1u);
  for (size_t i = 0; i < plans.size(); ++i) {
    SCOPED_TRACE(plans[i].variant);
    EXPECT_EQ(nlohmann::json(plans[i]), all[i]);
  }

  const std::string file = write_json_text(plan.out, "plan_file_" + GetParam());
  const CliResult from_plans = run_cli("simulate --json " + file);
  const CliResult from_scenario = run_cli("simulate --json " + scenario);
  std::filesystem::remove(file);
  ASSERT_EQ(from_plans.exit_code, 0) << from_plans.err;
  ASSERT_EQ(from_scenario.exit_code, 0) << from_scenario.err;
  EXPECT_FALSE(from_plans.out.empty());
  EXPECT_EQ(from_plans.out, from_scenario.out);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ShippedPlanFileTest, ::testing::ValuesIn(shipped_scenarios()),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.find('.'));
                           for (char& c : n) c = std::isalnum(c) ? c : '_';
                           return n;
                         });

TEST(PlanFileCliTest, VariantFiltersPlansAndTraceNeedsOne) {
  const std::string scenario = source_path("scenarios/mobilenet_v2_ushape.json");
  const CliResult plan = run_cli("plan --json " + scenario);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::string file = write_json_text(plan.out, "plan_file_variant");

  CliResult r = run_cli("simulate --csv --variant chunks=8 " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int lines = 0;
  for (char c : r.out) lines += c == '\n';
  EXPECT_EQ(lines, 1 + 5);  // header + 5 codecs at chunks=8
  EXPECT_EQ(r.out, run_cli("simulate --csv --variant chunks=8 " + scenario).out);

  r = run_cli("simulate --variant nosuchlabel " + file);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--variant"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chunks=1 compression=none"), std::string::npos) << r.err;

  r = run_cli("simulate --trace /dev/null " + file);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--trace"), std::string::npos) << r.err;
  std::filesystem::remove(file);
}

TEST(PlanFileCliTest, ABrokenPlanFileExitsTwoNamingThePath) {
  const CliResult plan = run_cli("plan --json --variant 'chunks=4 compression=none' " +
                                 source_path("scenarios/mobilenet_v2_ushape.json"));
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  nlohmann::json j = nlohmann::json::parse(plan.out);
  ASSERT_TRUE(j.is_object());
  j["stages"][1]["fwd_s_per_microbatch"][0] = -1;
  const std::string file = write_json_text(j.dump(), "plan_file_broken");
  const CliResult r = run_cli("simulate " + file);
  std::filesystem::remove(file);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("$.stages[1].fwd_s_per_microbatch[0]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
}

TEST(PlanFileCliTest, CalibrationIsThePlanWithItApplied) {
  // simulate --calibration C on plans P prints what simulating
  // apply_calibration(P, C) prints, and something else than P alone.
  const CliResult plan = run_cli("plan --json --variant 'compression=none' " +
                                 source_path("scenarios/mobilenet_v2_ushape.json"));
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::vector<Plan> plans = parse_plans(nlohmann::json::parse(plan.out));
  ASSERT_GE(plans.size(), 2u);
  Calibration c;
  c.parties["server"] = {0.25, 2e-4, 1.0};
  c.parties["*"] = {1.5, 1e-4, 2.0};
  c.bandwidth_factor = 0.6;
  c.per_message_overhead_s = 5e-4;
  c.cpu_s_per_byte_received = 1e-9;
  nlohmann::json calibrated = nlohmann::json::array();
  for (const Plan& p : plans) calibrated.push_back(apply_calibration(p, c));
  const std::string plan_file = write_json_text(plan.out, "calib_plans");
  const std::string calibrated_file = write_json_text(calibrated.dump(), "calib_applied");
  const std::string calibration_file = write_json_text(nlohmann::json(c).dump(), "calibration");

  const CliResult with =
      run_cli("simulate --json --calibration " + calibration_file + " " + plan_file);
  const CliResult applied = run_cli("simulate --json " + calibrated_file);
  const CliResult without = run_cli("simulate --json " + plan_file);
  ASSERT_EQ(with.exit_code, 0) << with.err;
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_EQ(with.out, applied.out);
  EXPECT_NE(with.out, without.out);

  // A broken calibration file: exit 2, the JSON path and the file named, no output.
  const std::string broken = write_json_text(
      R"({"schema": "splitsim.calibration/1", "parties": {"server": {"compute_scale": -2}}})",
      "calibration_broken");
  const CliResult r = run_cli("simulate --calibration " + broken + " " + plan_file);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("$.parties.server.compute_scale"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(broken), std::string::npos) << r.err;
  for (const auto& f : {plan_file, calibrated_file, calibration_file, broken})
    std::filesystem::remove(f);
}

}  // namespace
}  // namespace splitsim::testing
