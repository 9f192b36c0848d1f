// explore --validate-top as a library: the comparison of validate's matrix
// report with the explorer's ranking (compare_top), and the run of the
// validate command on the top plans (validate_top, here with a stand-in
// script for the binary, so no root and no real runs).
#include "splitsim/validate/ranking_check.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace splitsim {
namespace {

// Three ranked plans, the explorer's order 0, 1, 2.
Exploration three_plans() {
  Exploration e;
  for (int i = 0; i < 3; ++i) {
    Candidate c;
    c.label = "plan" + std::to_string(i);
    c.partition = {{"client", "a", "a"}, {"server", "b", "c"}};
    c.compression.resize(1);
    c.chunks = 1 + i;
    c.bandwidth_bit_per_s = 1e9;
    c.time_per_batch_s = 1.0 + i;
    e.result.candidates.push_back(c);
    e.ranking.push_back(i);
  }
  return e;
}

nlohmann::json run(double measured, double lo, double hi, double predicted) {
  return {{"errors", {{"time_per_batch_s", {{"measured", measured}}}}},
          {"predicted", {{"time_per_batch_s", predicted}}},
          {"measured_time_per_batch_spread_s", {lo, hi}}};
}

TEST(ValidateTopTest, ComparesTheMeasuredBestWithBothPredictions) {
  const Exploration e = three_plans();
  // Measured: plan 1 fastest, apart from the others; validate predicts plan 1.
  nlohmann::json report = {
      {"runs", {run(3.0, 2.9, 3.1, 2.5), run(1.0, 0.9, 1.1, 0.8), run(2.0, 1.9, 2.1, 2.2)}},
      {"summary", {{"runs", 3}}}};
  nlohmann::json v = compare_top(e, 3, 2, report);
  ASSERT_EQ(v.at("plans").size(), 3u);
  EXPECT_EQ(v.at("repeat"), 2);
  EXPECT_EQ(v.at("measured_best_rank"), 2);
  EXPECT_EQ(v.at("predicted_best_rank"), 2);
  EXPECT_TRUE(v.at("measured_best_is_predicted_best").get<bool>());
  EXPECT_FALSE(v.at("measured_best_is_explorers_best").get<bool>());
  EXPECT_DOUBLE_EQ(v.at("predicted_best_regret_pct").get<double>(), 0);
  EXPECT_FALSE(v.at("measured_order_matches_predicted").get<bool>());
  EXPECT_EQ(v.at("summary"), report.at("summary"));
  const auto& p = v.at("plans")[0];
  EXPECT_EQ(p.at("rank"), 1);
  EXPECT_EQ(p.at("label"), "plan0");
  EXPECT_EQ(p.at("explorer_predicted_time_per_batch_s"), 1.0);
  EXPECT_EQ(p.at("validate_predicted_time_per_batch_s"), 2.5);
  EXPECT_EQ(p.at("measured_time_per_batch_s"), 3.0);
  EXPECT_EQ(p.at("measured_spread_s"), nlohmann::json({2.9, 3.1}));

  // Validate predicts plan 0 (measured 50% slower than plan 1), whose
  // spread reaches plan 1's: within the spread, it and the explorer's best agree.
  report["runs"][0] = run(1.5, 1.05, 1.6, 0.5);
  v = compare_top(e, 3, 2, report);
  EXPECT_EQ(v.at("measured_best_rank"), 2);
  EXPECT_EQ(v.at("predicted_best_rank"), 1);
  EXPECT_TRUE(v.at("measured_best_is_predicted_best").get<bool>());
  EXPECT_TRUE(v.at("measured_best_is_explorers_best").get<bool>());
  EXPECT_NEAR(v.at("predicted_best_regret_pct").get<double>(), 50, 1e-9);

  // A failed run has no measurement: never the measured best, and when it
  // is the predicted best, the prediction missed.
  report["runs"][0] = run(1.5, 1.05, 1.6, 0.9);
  report["runs"][1] = {{"failure", "exec failed"}, {"predicted", {{"time_per_batch_s", 0.8}}}};
  v = compare_top(e, 3, 2, report);
  EXPECT_TRUE(std::isnan(v.at("plans")[1].at("measured_time_per_batch_s").get<double>()));
  EXPECT_NE(v.dump().find("\"measured_time_per_batch_s\":null"), std::string::npos);
  EXPECT_EQ(v.at("measured_best_rank"), 1);
  EXPECT_EQ(v.at("predicted_best_rank"), 2);
  EXPECT_FALSE(v.at("measured_best_is_predicted_best").get<bool>());

  // The first two only; more plans than ranked is a programming error.
  v = compare_top(e, 2, 2, report);
  EXPECT_EQ(v.at("plans").size(), 2u);
  EXPECT_THROW(compare_top(e, 4, 2, report), std::invalid_argument);
  EXPECT_THROW(compare_top(e, 0, 2, report), std::invalid_argument);
}

TEST(ValidateTopTest, KendallTauCountsConcordantPairsAndCorrectsForTies) {
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}), 1.0);
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4, 5}, {5, 4, 3, 2, 1}), -1.0);
  // One adjacent swap of five: 9 concordant, 1 discordant of 10 pairs.
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4, 5}, {1, 3, 2, 4, 5}), 0.8);
  // tau-b: x ties its first two; 5 untied pairs in x, 6 in y, all concordant.
  EXPECT_NEAR(kendall_tau({1, 1, 2, 3}, {1, 2, 3, 4}), 5 / std::sqrt(5.0 * 6.0), 1e-12);
  // A NaN (a failed run) leaves its pairs out.
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3}, {1, NAN, 3}), 1.0);
  EXPECT_TRUE(std::isnan(kendall_tau({1, 2}, {1, NAN})));
  EXPECT_TRUE(std::isnan(kendall_tau({1, 1, 1}, {1, 2, 3})));
  EXPECT_THROW(kendall_tau({1, 2}, {1}), std::invalid_argument);
  // With ranges: the first two overlap in x (a tie there), not in y; the
  // other pairs agree: 2 concordant, 1 tied in x only.
  const std::vector<RankedTime> x = {{1.0, 0.9, 1.1}, {1.05, 1.0, 1.1}, {2.0, 1.9, 2.1}};
  const std::vector<RankedTime> y = {{3, 3, 3}, {1, 1, 1}, {5, 5, 5}};
  EXPECT_NEAR(kendall_tau(x, y), 2 / std::sqrt(2.0 * 3.0), 1e-12);
  EXPECT_NEAR(kendall_tau(std::vector<double>{1.0, 1.05, 2.0}, std::vector<double>{3, 1, 5}),
              1.0 / 3, 1e-12);
  // Everything tied in x: undefined.
  EXPECT_TRUE(std::isnan(kendall_tau({{1, 0, 5}, {2, 0, 5}}, {{1, 1, 1}, {2, 2, 2}})));
}

TEST(ValidateTopTest, APredictedTieWithTheBestCountsAsAgreement) {
  const Exploration e = three_plans();
  // Validate predicts plan 0 best (1.00, 0.95..1.05), plan 1 a tie
  // (1.04, 0.99..1.09), plan 2 apart (1.30, 1.25..1.35); plan 1 measures
  // fastest, its repetitions apart from plan 0's.
  auto with_spread = [](nlohmann::json r, double lo, double hi) {
    r["predicted_time_per_batch_spread_s"] = {lo, hi};
    return r;
  };
  nlohmann::json report = {{"runs",
                            {with_spread(run(1.10, 1.08, 1.12, 1.00), 0.95, 1.05),
                             with_spread(run(1.00, 0.98, 1.02, 1.04), 0.99, 1.09),
                             with_spread(run(1.40, 1.38, 1.42, 1.30), 1.25, 1.35)}},
                           {"summary", {{"runs", 3}}}};
  nlohmann::json v = compare_top(e, 3, 3, report);
  EXPECT_EQ(v.at("predicted_best_rank"), 1);
  EXPECT_EQ(v.at("measured_best_rank"), 2);
  EXPECT_FALSE(v.at("measured_best_is_predicted_best").get<bool>());
  EXPECT_EQ(v.at("predicted_ties_with_best"), nlohmann::json({2}));
  EXPECT_TRUE(v.at("measured_best_is_predicted_best_or_tie").get<bool>());
  EXPECT_EQ(v.at("plans")[1].at("validate_predicted_spread_s"), nlohmann::json({0.99, 1.09}));
  // Predicted 1.00, 1.04, 1.30 against measured 1.10, 1.00, 1.40: one of
  // three pairs swapped; the explorer's 1, 2, 3 the same.
  EXPECT_NEAR(v.at("kendall_tau").get<double>(), 1.0 / 3, 1e-12);
  EXPECT_NEAR(v.at("kendall_tau_explorer").get<double>(), 1.0 / 3, 1e-12);
  // With the spreads: plans 0 and 1 are a predicted tie, measured apart.
  EXPECT_NEAR(v.at("kendall_tau_with_spreads").get<double>(), 2 / std::sqrt(6.0), 1e-12);
  // Narrower spreads: no tie, and the prediction missed.
  report["runs"][1]["predicted_time_per_batch_spread_s"] = {1.03, 1.05};
  report["runs"][0]["predicted_time_per_batch_spread_s"] = {0.99, 1.01};
  v = compare_top(e, 3, 3, report);
  EXPECT_EQ(v.at("predicted_ties_with_best"), nlohmann::json::array());
  EXPECT_FALSE(v.at("measured_best_is_predicted_best_or_tie").get<bool>());
  // A report without spreads (an older validate): every spread a point.
  for (auto& r : report["runs"]) r.erase("predicted_time_per_batch_spread_s");
  v = compare_top(e, 3, 3, report);
  EXPECT_EQ(v.at("plans")[0].at("validate_predicted_spread_s"), nlohmann::json({1.0, 1.0}));
  EXPECT_FALSE(v.at("measured_best_is_predicted_best_or_tie").get<bool>());
}

// A stand-in for the splitsim binary: checks its arguments, records the
// scenario files it was given and prints a matrix report of two runs (or,
// `fail`, exits 1 printing nothing).
std::string fake_validate(const std::filesystem::path& dir, bool fail) {
  std::string text = R"(#!/bin/sh
[ "$1 $3 $4 $5 $6" = "validate --matrix --keep-going --json --repeat" ] || exit 3
ls "$2" > OUT/files
echo "$2" > OUT/dir
grep -h description "$2"/*.json > OUT/descriptions
run='{"errors":{"time_per_batch_s":{"measured":2}},"predicted":{"time_per_batch_s":2}}'
echo "{\"runs\":[$run,$run],\"summary\":{\"repeat\":$7}}"
)";
  for (size_t at = 0; (at = text.find("OUT", at)) != std::string::npos; at += dir.string().size())
    text.replace(at, 3, dir.string());
  if (fail) text.insert(text.find('\n') + 1, "exit 1\n");
  const auto script = dir / (fail ? "failing_splitsim" : "fake_splitsim");
  std::ofstream(script) << text;
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  return script.string();
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ValidateTopTest, RunsValidateOnTheTopPlansWrittenAsScenarios) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("splitsim_validate_top_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const nlohmann::json base = {{"schema", "splitsim.scenario/1"},
                               {"name", "x"},
                               {"network", {{"bandwidth_bit_per_s", 1e8}}}};
  std::vector<std::string> lines;
  ValidateTopRequest request;
  request.top = 2;
  request.repeat = 4;
  request.splitsim_bin = fake_validate(dir, false);
  const nlohmann::json v =
      validate_top(three_plans(), base, request, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_EQ(slurp(dir / "files"), "top01.json\ntop02.json\n");
  const std::string descriptions = slurp(dir / "descriptions");
  EXPECT_NE(descriptions.find("plan0"), std::string::npos) << descriptions;
  EXPECT_NE(descriptions.find("plan1"), std::string::npos) << descriptions;
  EXPECT_EQ(descriptions.find("plan2"), std::string::npos) << descriptions;
  // The scenario files' directory is gone.
  std::string used = slurp(dir / "dir");
  used.erase(used.find_last_not_of('\n') + 1);
  ASSERT_FALSE(used.empty());
  EXPECT_FALSE(std::filesystem::exists(used)) << used;
  EXPECT_EQ(v.at("plans").size(), 2u);
  EXPECT_EQ(v.at("repeat"), 4);
  EXPECT_EQ(v.at("summary").at("repeat"), 4);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "explore: validating the top 2 (4 interleaved repetitions each)");

  request.splitsim_bin = fake_validate(dir, true);
  try {
    validate_top(three_plans(), base, request, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--validate-top"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exit 1"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace splitsim
