// validate of several clients, the pure part: the compared rows, the
// straggler and the summary from hand-made Metrics.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "splitsim/validate/clients_validation.h"

namespace splitsim {
namespace {

ClientGroupMetrics group(const std::string& name, double time_s, double sent, double last) {
  ClientGroupMetrics g;
  g.name = name;
  g.clients = 2;
  g.time_per_batch = {time_s, time_s, time_s};
  g.bytes_sent_per_batch = sent;
  g.bytes_received_per_batch = sent / 2;
  g.last_in_round = last;
  return g;
}

Metrics metrics(double round_s, double fast_s, double slow_s, double slow_last) {
  Metrics m;
  m.clients = 4;
  m.time_per_batch_s = round_s;
  m.round_wait_spread = {0.1, 0.2, 0.3};
  m.client_groups = {group("fast", fast_s, 1000, 1 - slow_last),
                     group("slow", slow_s, 1000, slow_last)};
  return m;
}

ClientsValidationRun two_groups() {
  ClientsValidationRun r;
  r.scenario = "s";
  r.variant = "v";
  r.predicted = metrics(1.0, 0.5, 1.0, 1.0);
  // Measured: 1.1, 1.25, 1.0 s a round; the median 1.1.
  r.repetitions = {metrics(1.1, 0.4, 1.1, 1.0), metrics(1.25, 0.5, 1.2, 0.75),
                   metrics(1.0, 0.625, 1.0, 0.25)};
  r.conditions.resize(3);
  return r;
}

TEST(ClientsReportTest, RowsCompareThePredictionWithTheMedianRepetition) {
  const std::vector<ClientsRow> rows = clients_rows(two_groups());
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0].median.metric, "time_per_round_s");
  EXPECT_DOUBLE_EQ(rows[0].median.measured, 1.1);
  EXPECT_NEAR(rows[0].median.error, (1.0 - 1.1) / 1.1, 1e-12);
  EXPECT_DOUBLE_EQ(rows[0].min, 1.0);
  EXPECT_DOUBLE_EQ(rows[0].max, 1.25);
  EXPECT_EQ(rows[1].median.metric, "round_wait_s");
  EXPECT_DOUBLE_EQ(rows[1].median.error, 0);
  EXPECT_EQ(rows[2].median.metric, "fast.time_per_batch_s");
  EXPECT_DOUBLE_EQ(rows[2].median.measured, 0.5);
  EXPECT_EQ(rows[3].median.metric, "fast.bytes_sent_per_batch");
  EXPECT_EQ(rows[4].median.metric, "fast.bytes_received_per_batch");
  EXPECT_DOUBLE_EQ(rows[4].median.predicted, 500);
  EXPECT_EQ(rows[5].median.metric, "slow.time_per_batch_s");
  EXPECT_NEAR(rows[5].median.error, (1.0 - 1.1) / 1.1, 1e-12);
}

TEST(ClientsReportTest, AGroupMissingFromAMeasurementCountsAsZero) {
  ClientsValidationRun r = two_groups();
  for (Metrics& m : r.repetitions) m.client_groups.pop_back();
  const std::vector<ClientsRow> rows = clients_rows(r);
  EXPECT_EQ(rows[5].median.measured, 0);
  EXPECT_TRUE(std::isnan(rows[5].median.error));
}

TEST(ClientsReportTest, TheStragglerIsTheGroupLastInMostRounds) {
  const ClientsValidationRun r = two_groups();
  EXPECT_EQ(straggler(r.predicted), "slow (100% of rounds)");
  EXPECT_EQ(straggler(r.repetitions[2]), "fast (75% of rounds)");
  Metrics one;
  one.client_groups = {group("clients", 1, 1, 1)};
  EXPECT_EQ(straggler(one), "");
}

TEST(ClientsReportTest, SummaryCountsExactBytesAndTheNamedStraggler) {
  std::vector<ClientsValidationRun> runs = {two_groups(), two_groups()};
  runs[1].failure = "the real run failed";  // left out
  const ClientsSummary s = summarize_clients(runs);
  EXPECT_NEAR(s.round_median_abs_error, 0.1 / 1.1, 1e-12);
  // fast 0.5 vs 0.5 (0), slow 1.0 vs 1.1: the median of {0, 0.0909}.
  EXPECT_NEAR(s.group_median_abs_error, 0.5 * 0.1 / 1.1, 1e-12);
  EXPECT_NEAR(s.group_max_abs_error, 0.1 / 1.1, 1e-12);
  EXPECT_EQ(s.bytes_compared, 4);
  EXPECT_EQ(s.bytes_exact, 4);
  EXPECT_EQ(s.straggler_runs, 3);
  EXPECT_EQ(s.straggler_named, 2);
  const nlohmann::json j = clients_validation_json(runs);
  EXPECT_EQ(j["schema"], "splitsim.validation_clients/1");
  EXPECT_EQ(j["variants"][1]["failure"], "the real run failed");
  EXPECT_EQ(j["variants"][0]["straggler"]["measured"][2], "fast (75% of rounds)");
  EXPECT_EQ(j["summary"]["straggler_named"], 2);
  std::ostringstream text;
  print_clients_run(text, runs[0]);
  EXPECT_NE(text.str().find("straggler: predicted slow (100% of rounds); measured slow (100% of "
                            "rounds), slow (75% of rounds), fast (75% of rounds)"),
            std::string::npos)
      << text.str();
}

}  // namespace
}  // namespace splitsim
