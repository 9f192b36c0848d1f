// The pure part of validate: link rates, errors, quantiles, reports.
#include "splitsim/validate/comparison.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "splitsim/costmodel/errors.h"
#include "splitsim/validate/netns_link.h"
#include "validation_runs.h"

namespace splitsim {
namespace {

using namespace validation_runs;  // NOLINT: the fixtures

TEST(LinkRate, ParsesTcStyleRates) {
  EXPECT_DOUBLE_EQ(parse_link_rate("200mbit"), 2e8);
  EXPECT_DOUBLE_EQ(parse_link_rate("1gbit"), 1e9);
  EXPECT_DOUBLE_EQ(parse_link_rate("50mbit"), 5e7);
  EXPECT_DOUBLE_EQ(parse_link_rate("500kbit"), 5e5);
  EXPECT_DOUBLE_EQ(parse_link_rate("2.5Gbit"), 2.5e9);
  EXPECT_DOUBLE_EQ(parse_link_rate("1e8"), 1e8);
  EXPECT_DOUBLE_EQ(parse_link_rate("100000bit"), 1e5);
}

TEST(LinkRate, RejectsBadRatesNamingTheField) {
  for (const char* bad : {"", "fast", "200mb", "200 mbit", "-5mbit", "0mbit", "mbit", "1e400"}) {
    try {
      parse_link_rate(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "link_rate") << bad;
      EXPECT_NE(std::string(e.what()).find("200mbit"), std::string::npos) << e.what();
    }
  }
}

TEST(LinkRate, FormatsRoundRates) {
  EXPECT_EQ(format_link_rate(2e8), "200mbit");
  EXPECT_EQ(format_link_rate(1e9), "1gbit");
  EXPECT_EQ(format_link_rate(5e5), "500kbit");
  EXPECT_EQ(format_link_rate(1.5e6), "1.5mbit");
}

TEST(Quantile, MedianAndP90FromLiteralInputs) {
  EXPECT_DOUBLE_EQ(quantile({3, 1, 2}, 0.5), 2);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.5), 2.5);
  // 10 values 1..10: position 0.9 * 9 = 8.1 -> 9 + 0.1 * (10 - 9).
  EXPECT_DOUBLE_EQ(quantile({10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 0.9), 9.1);
  EXPECT_DOUBLE_EQ(quantile({0.05}, 0.9), 0.05);
}

TEST(CompareMetrics, ErrorIsRelativeToTheMeasurement) {
  const auto rows = compare_metrics(two_party(1.1, 4000, 0.2), two_party(1.0, 4000, 0));
  ASSERT_EQ(rows.size(), 4u + 2 * 5u);
  EXPECT_EQ(rows[0].metric, "time_per_batch_s");
  EXPECT_NEAR(rows[0].error, 0.1, 1e-12);
  EXPECT_EQ(format_error_percent(rows[0].error), "+10.0%");
  EXPECT_EQ(rows[4].metric, "parties.client.bytes_sent_per_batch");
  EXPECT_EQ(rows[4].error, 0);
  EXPECT_EQ(rows[8].metric, "parties.client.busy_s_per_batch");
  EXPECT_TRUE(std::isnan(rows[8].error));  // measured 0, predicted 0.2
  EXPECT_EQ(format_error_percent(rows[8].error), "n/a");
  EXPECT_EQ(format_error_percent(-0.004), "-0.4%");
  EXPECT_EQ(rows[2].error, 0);  // both peaks 0
  std::ostringstream table;
  print_comparison(table, rows);
  EXPECT_NE(table.str().find("time_per_batch_s"), std::string::npos);
  EXPECT_NE(table.str().find("+10.0%"), std::string::npos);
}

TEST(CompareMetrics, ReportJsonCarriesBothMetricsAndTheErrors) {
  ValidationRun r;
  r.scenario = "s";
  r.variant = "v";
  r.link = {"loopback (not shaped: not root)", false, 2e8, 0};
  r.predicted = two_party(1.1, 4000, 0.2);
  r.measured = two_party(1.0, 4000, 0.1);
  r.errors = compare_metrics(r.predicted, r.measured);
  const nlohmann::json j = validation_json(r);
  EXPECT_EQ(j["schema"], "splitsim.validation/1");
  EXPECT_EQ(j["link"]["description"], "loopback (not shaped: not root)");
  EXPECT_EQ(j["predicted"]["schema"], "splitsim.metrics/1");
  EXPECT_NEAR(j["errors"]["time_per_batch_s"]["error_pct"].get<double>(), 10, 1e-9);
  EXPECT_TRUE(j["bytes_exact"].get<bool>());
}

TEST(OverlapRatio, WireBoundCountsEachDirectionAndGpipePhases) {
  // No flush: each direction on its own; client -> server is the busier.
  EXPECT_DOUBLE_EQ(wire_lower_bound_s(two_party_plan(Schedule::k1F1B), 8000), 3.0);
  // U-shape, no flush: up 3000 + 250, down 1000 + 500 -> 3250 B.
  EXPECT_DOUBLE_EQ(wire_lower_bound_s(two_party_plan(Schedule::k1F1B, true), 8000), 3.25);
  // GPipe: forward phase up 3000 | down 500, then backward phase up 250 |
  // down 1000: the busier of each phase, added -> 4000 B.
  EXPECT_DOUBLE_EQ(wire_lower_bound_s(two_party_plan(Schedule::kGpipe, true), 8000), 4.0);
  // Two parties, gpipe: 3000 up, then 1000 down.
  EXPECT_DOUBLE_EQ(wire_lower_bound_s(two_party_plan(Schedule::kGpipe), 8000), 4.0);

  Metrics m = two_party(6.0, 4000, 0.2);
  EXPECT_DOUBLE_EQ(overlap_ratio(m, two_party_plan(Schedule::kGpipe), 8000), 1.5);
  m.parties[0].busy_s_per_batch = 5;  // compute-bound: 6 s / 5 s
  EXPECT_DOUBLE_EQ(overlap_ratio(m, two_party_plan(Schedule::kGpipe), 8000), 1.2);
}

TEST(Repetitions, MedianRepetitionSpreadAndPerMetricMedians) {
  ValidationRun r;
  r.predicted = two_party(1.0, 4000, 0.3);
  // Times 1.3, 0.9, 1.1: the median repetition is the third; busy 0.2, 0.5, 0.25.
  r.repetitions = {two_party(1.3, 4000, 0.2), two_party(0.9, 4000, 0.5),
                   two_party(1.1, 4000, 0.25)};
  aggregate_repetitions(&r);
  EXPECT_DOUBLE_EQ(r.measured.time_per_batch_s, 1.1);
  EXPECT_DOUBLE_EQ(r.measured_min_time_s, 0.9);
  EXPECT_DOUBLE_EQ(r.measured_max_time_s, 1.3);
  EXPECT_TRUE(predicted_inside_spread(r));
  EXPECT_NEAR(r.errors.at(0).measured, 1.1, 1e-12);
  EXPECT_NEAR(r.errors.at(0).error, 1.0 / 1.1 - 1, 1e-12);
  // Each metric's own median: client busy 0.25 (not the median repetition's).
  for (const auto& e : r.errors)
    if (e.metric == "parties.client.busy_s_per_batch") {
      EXPECT_NEAR(e.measured, 0.25, 1e-12);
    }
  r.predicted = two_party(0.8, 4000, 0.3);
  EXPECT_FALSE(predicted_inside_spread(r));
}

TEST(Profiles, TheMedianUnitByUnitShrugsOffOneSlowMeasurement) {
  auto profile = [](double fwd0, double bwd1) {
    DeviceProfile d;
    d.name = "cpu_this_machine";
    d.timings = {{"a", fwd0, 2e-3, 1e-4}, {"b", 3e-3, bwd1, 2e-4}};
    return d;
  };
  // The first measured in a slow spell (twice as slow), then three.
  const DeviceProfile m = median_profile(
      {profile(2e-3, 8e-3), profile(1e-3, 4e-3), profile(1.1e-3, 4.2e-3), profile(0.9e-3, 3.8e-3)});
  EXPECT_EQ(m.name, "cpu_this_machine");
  ASSERT_EQ(m.timings.size(), 2u);
  EXPECT_EQ(m.timings[1].unit, "b");
  EXPECT_NEAR(m.timings[0].fwd_s, 1.05e-3, 1e-12);  // the middle two's mean (a mean: 1.25e-3)
  EXPECT_NEAR(m.timings[1].bwd_s, 4.1e-3, 1e-12);
  EXPECT_NEAR(m.timings[1].update_s, 2e-4, 1e-15);
  EXPECT_NEAR(median_profile({profile(2e-3, 8e-3)}).timings[0].fwd_s, 2e-3, 1e-15);
}

TEST(NetnsLinkBurst, OnePacketOf128MicrosecondsOfTrafficButAtLeastOneSegment) {
  EXPECT_EQ(NetnsLink::packet_segments(5e6), 1);
  EXPECT_EQ(NetnsLink::packet_segments(1e8), 1);    // 1,600 B in 128 us
  EXPECT_EQ(NetnsLink::packet_segments(3e8), 3);    // 4,800 B
  EXPECT_EQ(NetnsLink::packet_segments(1e9), 11);   // 16,000 B
  EXPECT_EQ(NetnsLink::packet_segments(1e10), 45);  // 160,000 B, more than a veth's 64 KiB
  EXPECT_EQ(NetnsLink::burst_bytes(1e8), 1514);     // a frame as the shaper counts it
  EXPECT_EQ(NetnsLink::burst_bytes(1e9), 1514);
  EXPECT_EQ(NetnsLink::burst_bytes(2e8, Shaper::kTbf), 25000);  // tbf: 1 ms, at least 4 KiB
  EXPECT_EQ(NetnsLink::burst_bytes(5e6, Shaper::kTbf), 4096);
}

TEST(NetnsLinkBurst, GsoPacketsAreWholeSegmentsThatFit) {
  EXPECT_EQ(NetnsLink::gso_packet_bytes(65536, 1500), 45 * 1448);  // a veth's defaults
  EXPECT_EQ(NetnsLink::gso_packet_bytes(65536, 9000), 7 * 8948);
  EXPECT_EQ(NetnsLink::gso_packet_bytes(1000, 1500), 1448);  // at least one segment
  EXPECT_EQ(NetnsLink::gso_packet_bytes(65536, 40), 0);      // no room for a segment
}

}  // namespace
}  // namespace splitsim
