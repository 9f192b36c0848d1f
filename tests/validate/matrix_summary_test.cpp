// validate's matrix summary: pooled errors against their targets, busy
// times, bandwidths, memory, conditions and the printed table.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "splitsim/validate/comparison.h"
#include "validation_runs.h"

namespace splitsim {
namespace {

using namespace validation_runs;  // NOLINT: the fixtures

// A run whose real run failed ("broken").
ValidationRun failed_run(const std::string& failure) {
  ValidationRun r;
  r.variant = "broken";
  r.failure = failure;
  return r;
}

TEST(Matrix, SummaryMedianP90BytesAndOverlapRatio) {
  std::vector<ValidationRun> runs;
  const double measured_times[] = {1.0, 1.0, 1.0, 1.0};
  const double predicted_times[] = {1.05, 0.9, 1.2, 1.01};  // |errors| 5, 10, 20, 1 %
  for (int i = 0; i < 4; ++i) {
    ValidationRun r;
    r.variant = "v" + std::to_string(i);
    r.predicted = two_party(predicted_times[i], 4000, 0.2);
    r.measured = two_party(measured_times[i], i == 3 ? 4001 : 4000, 0.2);
    r.deterministic_bytes = i != 2;
    r.errors = compare_metrics(r.predicted, r.measured);
    const Plan plan = two_party_plan(Schedule::k1F1B);  // wire: 3000 B the busier way
    if (i == 1) {
      r.chunks = 4;
      r.overlap_ratio = overlap_ratio(r.measured, plan, 8000);  // 1 s / 3 s
      r.predicted_overlap_ratio = 1.5;
    }
    if (i == 0) {
      r.chunks = 8;
      r.overlap_ratio = overlap_ratio(r.measured, plan, 16000);  // 1 s / 1.5 s
      r.predicted_overlap_ratio = 0.5;
    }
    runs.push_back(r);
  }
  runs.push_back(failed_run("server exit code 1"));

  const MatrixSummary s = summarise(runs);
  EXPECT_EQ(s.runs, 5);
  EXPECT_EQ(s.failed, 1);
  EXPECT_NEAR(s.median_abs_error_time_per_batch, 0.075, 1e-9);  // of 1, 5, 10, 20 %
  EXPECT_NEAR(s.p90_abs_error_time_per_batch, 0.17, 1e-9);      // 10 + 0.7 * (20 - 10) %
  EXPECT_EQ(s.bytes_checked, 3);
  EXPECT_EQ(s.bytes_exact, 2);
  ASSERT_EQ(s.overlap_ratios.size(), 2u);
  EXPECT_NEAR(s.overlap_ratios[1], 1.0 / 3.0, 1e-12);  // time 1 s / max(0.2 s, 3 s)
  EXPECT_NEAR(s.max_overlap_ratio, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(s.max_overlap_vs_predicted, (2.0 / 3.0) / 0.5, 1e-12);
  ASSERT_EQ(s.overlap_by_chunks.size(), 2u);
  EXPECT_EQ(s.overlap_by_chunks[0].chunks, 4);
  EXPECT_NEAR(s.overlap_by_chunks[0].max_predicted_ratio, 1.5, 1e-12);
  EXPECT_EQ(s.overlap_by_chunks[1].chunks, 8);
  EXPECT_NEAR(s.overlap_by_chunks[1].max_ratio, 2.0 / 3.0, 1e-12);

  const nlohmann::json j = matrix_json(runs);
  EXPECT_EQ(j["schema"], "splitsim.validation_matrix/1");
  EXPECT_EQ(j["runs"].size(), 5u);
  EXPECT_EQ(j["runs"][4]["failure"], "server exit code 1");
  EXPECT_NEAR(j["summary"]["median_abs_error_time_per_batch_pct"].get<double>(), 7.5, 1e-9);
  std::ostringstream table;
  print_matrix(table, runs);
  EXPECT_NE(table.str().find("median 7.5%, p90 17.0%, max 20.0%"), std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("FAILED: server exit code 1"), std::string::npos);
  EXPECT_NE(table.str().find("2 of 3 (target MISSED)"), std::string::npos);
  EXPECT_NE(table.str().find("0.33/1.50"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("chunks 4: max 0.333 over 1 run(s); the simulator's for the same "
                             "runs: max 1.500"),
            std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("largest exec ratio / simulator's ratio 1.333 (target <= 1.15 MISSED"),
            std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("median <= 4% MISSED, p90 <= 8% MISSED, max <= 15% MISSED"),
            std::string::npos);
  EXPECT_EQ(j["summary"]["overlap_by_chunks"].size(), 2u);
}

// Peak and average bandwidth: their |errors| pooled over the runs (both
// peaks; each party's average send and receive), a metric that is 0 on both
// sides left out, failed runs left out; printed and written with targets.
TEST(Matrix, PeakAndAverageBandwidthErrorsArePooledWithTheirTargets) {
  std::vector<ValidationRun> runs;
  const double peak_errors[] = {0.05, -0.30, 0.10};
  for (int i = 0; i < 3; ++i) {
    ValidationRun r;
    r.variant = "v" + std::to_string(i);
    r.predicted = two_party(1.0, 4000, 0.2);
    r.measured = two_party(1.0, 4000, 0.2);
    r.measured.bandwidth_peak_client_Bps = r.measured.bandwidth_peak_server_Bps = 1e6;
    r.predicted.bandwidth_peak_client_Bps = 1e6 * (1 + peak_errors[i]);
    r.predicted.bandwidth_peak_server_Bps = 1e6;
    // With the probe's link: 40 % over on the client's peak in the first
    // run only (the others not predicted so).
    if (i == 0) r.predicted_link_peak_client_Bps = r.predicted_link_peak_server_Bps = 1.4e6;
    for (PartyMetrics& p : r.measured.parties)
      p.bandwidth_avg_send_Bps = p.bandwidth_avg_recv_Bps = 100;
    for (PartyMetrics& p : r.predicted.parties)
      p.bandwidth_avg_send_Bps = p.bandwidth_avg_recv_Bps = 102;
    r.predicted.parties[1].bandwidth_avg_recv_Bps = 0;  // server: no receive average on either side
    r.measured.parties[1].bandwidth_avg_recv_Bps = 0;
    r.errors = compare_metrics(r.predicted, r.measured);
    runs.push_back(r);
  }
  runs.push_back(failed_run("client exit code 1"));

  const MatrixSummary s = summarise(runs);
  EXPECT_EQ(s.peak_bandwidth.n, 6);                   // two peaks per run
  EXPECT_NEAR(s.peak_bandwidth.median, 0.025, 1e-9);  // of 0, 0, 0, 5, 10, 30 %
  EXPECT_NEAR(s.peak_bandwidth.max, 0.30, 1e-9);
  EXPECT_NEAR(s.peak_bandwidth.p90, 0.20, 1e-9);  // 10 + 0.5 * (30 - 10) %
  EXPECT_EQ(s.peak_bandwidth_link.n, 2);
  EXPECT_NEAR(s.peak_bandwidth_link.median, 0.40, 1e-9);
  EXPECT_EQ(s.average_bandwidth.n, 9);  // client send and receive, server send
  EXPECT_NEAR(s.average_bandwidth.median, 0.02, 1e-9);

  const nlohmann::json j = matrix_json(runs);
  EXPECT_NEAR(j["summary"]["peak_bandwidth"]["p90_abs_error_pct"].get<double>(), 20, 1e-9);
  EXPECT_EQ(j["summary"]["average_bandwidth"]["values"], 9);
  EXPECT_EQ(j["summary"]["targets"]["peak_bandwidth_p90_abs_error_pct"], 20);
  EXPECT_NEAR(
      j["summary"]["with_measured_link"]["peak_bandwidth"]["median_abs_error_pct"].get<double>(),
      40, 1e-9);
  std::ostringstream table;
  print_matrix(table, runs);
  EXPECT_NE(table.str().find("over 6 value(s): median 2.5%, p90 20.0%, max 30.0% (targets: median "
                             "<= 10% met, p90 <= 20% met)"),
            std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("  with the link probe's model of one transfer in the link: median "
                             "40.0%, p90 40.0%, max 40.0%"),
            std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("over 9 value(s): median 2.0%, p90 2.0%, max 2.0% (target: median <= "
                             "5% met)"),
            std::string::npos)
      << table.str();
}

// Memory: exec's metrics JSON gives per party the plan's peak and the
// tensor bytes its process held; parties without a measurement are left
// out; the summary counts those within 15% and the report carries them.
TEST(Matrix, MemoryChecksComeFromExecsJsonAndAreSummarised) {
  const nlohmann::json exec = {
      {"memory",
       {{"client", {{"predicted_peak_bytes", 110}, {"measured_peak_tensor_bytes", 100}}},
        {"server", {{"predicted_peak_bytes", 80}, {"measured_peak_tensor_bytes", 100}}},
        {"gpu1", {{"predicted_peak_bytes", 5}}}}}};
  const std::vector<MemoryCheck> checks = memory_checks(exec);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].party, "client");
  EXPECT_NEAR(checks[0].error(), 0.10, 1e-12);
  EXPECT_NEAR(checks[1].error(), -0.20, 1e-12);
  EXPECT_TRUE(memory_checks(nlohmann::json::object()).empty());

  ValidationRun r;
  r.variant = "v";
  r.predicted = two_party(1.0, 4000, 0.2);
  r.measured = two_party(1.0, 4000, 0.2);
  r.errors = compare_metrics(r.predicted, r.measured);
  r.memory = checks;
  const MatrixSummary s = summarise({r});
  ASSERT_EQ(s.memory_abs_errors.size(), 2u);
  EXPECT_EQ(s.memory_within_target, 1);  // 10% in, 20% out
  const nlohmann::json j = matrix_json({r});
  EXPECT_EQ(j["summary"]["memory"]["within_target"], 1);
  EXPECT_NEAR(j["summary"]["memory"]["max_abs_error_pct"].get<double>(), 20, 1e-9);
  EXPECT_NEAR(j["runs"][0]["memory"]["server"]["error_pct"].get<double>(), -20, 1e-9);
  std::ostringstream table;
  print_matrix(table, {r});
  EXPECT_NE(table.str().find("within 15% in 1 of 2 (target all MISSED), |error| median 15.0%, "
                             "max 20.0%"),
            std::string::npos)
      << table.str();
}

TEST(Matrix, SummaryPerModelBusyTimesAndConditions) {
  std::vector<ValidationRun> runs;
  const char* models[] = {"resnet20", "resnet20", "roberta_base"};
  const double predicted[] = {1.02, 0.9, 1.3};  // |errors| 2, 10, 30 %
  const double busy[] = {0.22, 0.2, 0.1};       // client busy |errors| 10, 0, 50 %
  for (int i = 0; i < 3; ++i) {
    ValidationRun r;
    r.variant = "v" + std::to_string(i);
    r.model = models[i];
    r.predicted = two_party(predicted[i], 4000, busy[i]);
    r.repetitions = {two_party(1.0, 4000, 0.2)};
    RunConditions c;
    c.cpu.steal_fraction = 0.01 * i;
    c.cpu.foreign_cpu_fraction = 0.1 * i;
    c.disturbed = i == 2 ? "other processes 20.0% of the CPUs" : "";
    c.retried = i == 2;
    r.conditions = {c};
    r.predicted_plain_time_per_batch_s = 0.5;                      // 50 % off everywhere
    if (i > 0) r.predicted_link_time_per_batch_s = 1.0 + 0.2 * i;  // 20 and 40 % (one not run)
    if (i > 0) r.loss_rate = 0.01;  // the 10 and 30 % runs on a lossy link
    if (i > 0) r.predicted_without_wake = two_party(0.9, 4000, 0.15);  // 10 %; client 25 %
    aggregate_repetitions(&r);
    runs.push_back(r);
  }
  const MatrixSummary s = summarise(runs);
  EXPECT_NEAR(s.median_abs_error_time_per_batch, 0.10, 1e-9);
  ASSERT_EQ(s.by_model.size(), 2u);
  EXPECT_EQ(s.by_model[0].model, "resnet20");
  EXPECT_EQ(s.by_model[0].runs, 2);
  EXPECT_NEAR(s.by_model[0].median, 0.06, 1e-9);
  EXPECT_EQ(s.by_model[1].model, "roberta_base");
  EXPECT_NEAR(s.by_model[1].median, 0.30, 1e-9);
  ASSERT_FALSE(s.median_abs_error_busy.empty());
  EXPECT_EQ(s.median_abs_error_busy[0].first, "client");
  EXPECT_NEAR(s.median_abs_error_busy[0].second, 0.10, 1e-9);
  EXPECT_NEAR(s.median_abs_error_plain, 0.5, 1e-9);
  EXPECT_NEAR(s.median_abs_error_link, 0.3, 1e-9);
  EXPECT_NEAR(s.median_abs_error_without_wake, 0.1, 1e-9);  // over the two runs that made one
  ASSERT_EQ(s.median_abs_error_busy_without_wake.size(), 2u);
  EXPECT_EQ(s.median_abs_error_busy_without_wake[0].first, "client");
  EXPECT_NEAR(s.median_abs_error_busy_without_wake[0].second, 0.25, 1e-9);
  EXPECT_EQ(s.lossy_link.n, 2);
  EXPECT_NEAR(s.lossy_link.median, 0.2, 1e-9);
  EXPECT_NEAR(s.lossy_link.max, 0.3, 1e-9);
  EXPECT_EQ(s.repetitions, 3);
  EXPECT_EQ(s.retried, 1);
  EXPECT_EQ(s.disturbed, 1);
  EXPECT_NEAR(s.max_foreign_cpu_fraction, 0.2, 1e-12);
  std::ostringstream table;
  print_matrix(table, runs);
  EXPECT_NE(table.str().find("roberta_base: 1 variant(s), median 30.0%"), std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("on a lossy link: 2 variant(s), median 20.0%, p90 28.0%, max 30.0% "
                             "(target: median <= 10% MISSED)"),
            std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("disturbed: other processes 20.0%"), std::string::npos);
  // The machine that measured, by name, in the table and the report.
  EXPECT_NE(
      table.str().find("machine: " + machine_text(describe_this_machine()) + "; 3 repetition(s)"),
      std::string::npos)
      << table.str();
  const nlohmann::json report = matrix_json(runs);
  const nlohmann::json& machine = report.at("summary").at("conditions").at("machine");
  EXPECT_EQ(machine.at("kernel"), describe_this_machine().kernel);
  EXPECT_EQ(machine.at("cpus"), describe_this_machine().cpus);
  EXPECT_NE(table.str().find("without the platform model"), std::string::npos);
  EXPECT_NE(table.str().find("without the wake cost (the platform model's cost of a computation "
                             "after a wait): median 10.0%"),
            std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("busy time of client |error|: median 10.0% (target <= 10% met)\n"
                             "  without the wake cost: median 25.0%\n"),
            std::string::npos)
      << table.str();
  EXPECT_NEAR(report.at("summary")
                  .at("without_wake_cost")
                  .at("median_abs_error_busy_pct")
                  .at("client")
                  .get<double>(),
              25, 1e-9);
  EXPECT_NEAR(report.at("runs")
                  .at(1)
                  .at("predicted_without_wake_cost")
                  .at("busy_s_per_batch")
                  .at("client")
                  .get<double>(),
              0.15, 1e-12);
  EXPECT_NE(
      table.str().find("with the link probe's model of one transfer in the link: median 30.0%"),
      std::string::npos);
}

}  // namespace
}  // namespace splitsim
