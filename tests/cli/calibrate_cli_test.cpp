// `splitsim calibrate` end to end: measured rows (CSV) of a plan file's
// variants, simulated under a hidden calibration, give back a calibration
// file with which `simulate --calibration` predicts those rows; bad input
// exits 2 and writes nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "run_cli.h"

namespace splitsim::testing {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("splitsim_calcli_" + name + "_" + std::to_string(::getpid())))
      .string();
}

std::string write_text(const std::string& name, const std::string& text) {
  const std::string p = temp_path(name);
  std::ofstream(p) << text;
  return p;
}

TEST(CalibrateCliTest, FitsMeasuredRowsAndSimulateUsesTheResult) {
  const CliResult plan = run_cli("plan --json --variant 'chunks=' " +
                                 source_path("scenarios/mobilenet_v2_ushape.json"));
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::string plans = write_text("plans.json", plan.out);
  const std::string hidden = write_text("hidden.json",
                                        R"({"schema": "splitsim.calibration/1",
          "parties": {"server": {"compute_scale": 3}, "client": {"compute_scale": 1.5}},
          "bandwidth_factor": 0.5})");
  const CliResult truth = run_cli("simulate --json --calibration " + hidden + " " + plans);
  ASSERT_EQ(truth.exit_code, 0) << truth.err;
  // Five measured variants, in the CSV form people publish.
  std::ostringstream csv;
  csv << "variant,time_per_batch_s,busy_s_per_batch.server\n";
  const nlohmann::json all = nlohmann::json::parse(truth.out);
  std::map<std::string, double> measured;
  for (size_t i = 0; i < all.size(); i += 3) {
    const nlohmann::json& m = all[i];
    csv << "\"" << m["variant"].get<std::string>() << "\"," << m["time_per_batch_s"] << ","
        << m["parties"]["server"]["busy_s_per_batch"] << "\n";
    measured[m["variant"]] = m["time_per_batch_s"];
  }
  ASSERT_GE(measured.size(), 4u);
  const std::string rows = write_text("rows.csv", csv.str());
  const std::string out = temp_path("calibration.json");

  const CliResult fit =
      run_cli("calibrate " + plans + " --measured " + rows + " -o " + out + " --no-leave-one-out");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_NE(fit.out.find("server.compute_scale"), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("fitted"), std::string::npos) << fit.out;
  EXPECT_NE(fit.err.find("calibrate: fitting"), std::string::npos) << fit.err;  // progress
  std::ifstream in(out);
  ASSERT_TRUE(in.good());
  const nlohmann::json cal = nlohmann::json::parse(in);
  EXPECT_EQ(cal["schema"], "splitsim.calibration/1");
  EXPECT_TRUE(cal["fit"]["parameters"].is_array());

  const CliResult again = run_cli("simulate --json --calibration " + out + " " + plans);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  for (const nlohmann::json& m : nlohmann::json::parse(again.out)) {
    const auto it = measured.find(m["variant"]);
    if (it == measured.end()) continue;
    EXPECT_NEAR(m["time_per_batch_s"].get<double>(), it->second, 0.01 * it->second) << it->first;
  }
  for (const auto& f : {plans, hidden, rows, out}) std::filesystem::remove(f);
}

TEST(CalibrateCliTest, AScenarioNamesItsCalibrationRelativeToItself) {
  // The shipped scenario copied into a folder with a calibration beside it:
  // simulating the copy is simulating the original with --calibration.
  const std::filesystem::path dir = temp_path("scenario_dir");
  std::filesystem::create_directories(dir);
  const std::string cal = (dir / "cal.json").string();
  std::ofstream(cal) << R"({"schema": "splitsim.calibration/1",
                            "parties": {"server": {"compute_scale": 2, "op_overhead_s": 1e-3}},
                            "bandwidth_factor": 0.8})";
  const std::string original = source_path("scenarios/mobilenet_v2_ushape.json");
  nlohmann::json s = nlohmann::json::parse(std::ifstream(original));
  s["calibration"] = "cal.json";
  const std::string copy = (dir / "scenario.json").string();
  std::ofstream(copy) << s.dump(1);

  const CliResult named = run_cli("simulate --json --variant chunks=4 " + copy);
  const CliResult flag =
      run_cli("simulate --json --variant chunks=4 --calibration " + cal + " " + original);
  const CliResult plain = run_cli("simulate --json --variant chunks=4 " + original);
  ASSERT_EQ(named.exit_code, 0) << named.err;
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(named.out, flag.out);
  EXPECT_NE(named.out, plain.out);

  // A calibration file that is not there: exit 2 naming the key and the file.
  s["calibration"] = "missing.json";
  std::ofstream(copy) << s.dump(1);
  const CliResult missing = run_cli("simulate " + copy);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("$.calibration"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("missing.json"), std::string::npos) << missing.err;
  std::filesystem::remove_all(dir);
}

TEST(CalibrateCliTest, BadInputExitsTwoAndWritesNothing) {
  const std::string scenario = source_path("scenarios/mobilenet_v2_ushape.json");
  const std::string out = temp_path("never.json");
  // A row naming no variant.
  const std::string rows = write_text("bad_rows.csv", "variant,time_per_batch_s\nno such,0.5\n");
  CliResult r = run_cli("calibrate " + scenario + " --measured " + rows + " -o " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(rows + ":2"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  // A missing measured file; an output in a missing folder.
  r = run_cli("calibrate " + scenario + " --measured " + temp_path("missing.csv") + " -o " + out);
  EXPECT_EQ(r.exit_code, 2);
  const std::string good =
      write_text("good_rows.csv", "variant,time_per_batch_s\n\"chunks=4 compression=q8\",0.5\n");
  r = run_cli("calibrate " + scenario + " --measured " + good + " -o /nonexistent/dir/c.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-o"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::remove(rows);
  std::filesystem::remove(good);
}

}  // namespace
}  // namespace splitsim::testing
