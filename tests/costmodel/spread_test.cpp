// A prediction's spread (spread.h): the timing spread a profile measures,
// its JSON, each party's share of it, the plan at both ends, and ties.
#include "splitsim/costmodel/spread.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

TEST(SpreadTest, TimingSpreadIsTheMedianUnitsRelativeHalfRange) {
  // Half-ranges 0.1 (0.9..1.1 around 1), 0.25 (1.5..2.5 around 2) and 0.5
  // (0.5..1.5 around 1); a unit with one pass and one at zero are left out.
  EXPECT_DOUBLE_EQ(timing_spread_of({{0.9, 1.0, 1.1}, {2.5, 2.0, 1.5}, {1.0, 0.5, 1.5}, {3.0},
                                     {0.0, 0.0}}),
                   0.25);
  EXPECT_DOUBLE_EQ(timing_spread_of({{1.0, 1.0, 1.0}}), 0.0);
  EXPECT_DOUBLE_EQ(timing_spread_of({}), 0.0);
  // A round three times the median (a machine disturbed that much): capped,
  // so that the fast end of a prediction stays above zero.
  EXPECT_DOUBLE_EQ(timing_spread_of({{1.0, 1.0, 3.5}}), kMaxTimingSpread);
  EXPECT_DOUBLE_EQ(timing_spread_of({{4.0}}), 0.0);
}

TEST(SpreadTest, ProfileJsonKeepsTheTimingSpreadAndChecksIt) {
  DeviceProfile d;
  d.name = "x";
  d.peak_flops = 1e12;
  d.memory_bandwidth_Bps = 1e11;
  d.measured_model = "resnet20";
  d.measured_input_shape = {3, 32, 32};
  d.measured_batch = 8;
  d.timings = {{"conv1", 0.1, 0.2, 0.01}};
  d.timing_spread = 0.04;
  nlohmann::json j = d;
  EXPECT_DOUBLE_EQ(j.at("measured").at("timing_spread").get<double>(), 0.04);
  EXPECT_DOUBLE_EQ(parse_device(j, "$").timing_spread, 0.04);
  j["measured"].erase("timing_spread");  // profiles written before it: not measured
  EXPECT_DOUBLE_EQ(parse_device(j, "$").timing_spread, 0.0);
  for (double bad : {-0.1, 1.0}) {
    j["measured"]["timing_spread"] = bad;
    EXPECT_THROW(parse_device(j, "$"), InputError) << bad;
  }
}

TEST(SpreadTest, EachPartyGetsItsDevicesSpreadAndTheRestTheLargest) {
  DeviceProfile fast, slow;
  fast.timing_spread = 0.02;
  slow.timing_spread = 0.06;
  auto s = party_spreads({{"client", slow}, {"server", fast}});
  EXPECT_DOUBLE_EQ(s.at("client"), 0.06);
  EXPECT_DOUBLE_EQ(s.at("server"), 0.02);
  EXPECT_DOUBLE_EQ(s.at("*"), 0.06);
  EXPECT_DOUBLE_EQ(largest_spread(s), 0.06);
  s = party_spreads({{"client", slow}, {"server", fast}}, 0.1);
  EXPECT_DOUBLE_EQ(s.at("client"), 0.1);
  EXPECT_DOUBLE_EQ(s.at("server"), 0.1);
  EXPECT_DOUBLE_EQ(largest_spread(party_spreads({{"client", DeviceProfile{}}})), 0.0);
  EXPECT_THROW(party_spreads({}, 1.0), std::invalid_argument);
  EXPECT_THROW(party_spreads({}, -0.01), std::invalid_argument);
}

TEST(SpreadTest, BothEndsScaleEachPartysComputeButNotItsCodecWork) {
  Plan p;
  p.microbatch_sizes = {4};
  for (const char* party : {"client", "server"}) {
    PlanStage st;
    st.party = party;
    st.fwd_s = {1.0};
    st.bwd_s = {2.0};
    st.update_s = 0.5;
    p.stages.push_back(st);
  }
  PlanBoundary b;
  b.from_stage = 0;
  b.to_stage = 1;
  b.forward.encode_s = {0.1};  // the client's forward beside its model's 0.9
  p.stages[0].fwd_s = {0.9};
  b.forward.decode_s = {0.0};
  b.backward.encode_s = {0.0};
  b.backward.decode_s = {0.0};
  p.boundaries.push_back(b);
  const std::map<std::string, double> spreads = {{"client", 0.1}, {"server", 0.2}, {"*", 0.2}};
  const Plan fast = plan_at_spread(p, spreads, -1), slow = plan_at_spread(p, spreads, +1);
  const auto client_forward = [](const Plan& q) {
    return Plan::forward_total(q.forward_pass(0, Plan::kOwnCosts, 0));
  };
  EXPECT_NEAR(client_forward(fast), 0.9 * 0.9 + 0.1, 1e-12);
  EXPECT_NEAR(client_forward(slow), 0.9 * 1.1 + 0.1, 1e-12);
  EXPECT_NEAR(fast.stages[1].bwd_s[0], 2.0 * 0.8, 1e-12);
  EXPECT_NEAR(slow.stages[1].bwd_s[0], 2.0 * 1.2, 1e-12);
  EXPECT_NEAR(slow.stages[1].update_s, 0.5 * 1.2, 1e-12);
  EXPECT_DOUBLE_EQ(slow.boundaries[0].forward.encode_s[0], 0.1);
  EXPECT_THROW(plan_at_spread(p, spreads, 0), std::invalid_argument);
}

TEST(SpreadTest, ATieIsTwoKnownSpreadsThatOverlap) {
  EXPECT_TRUE(predicted_tie({1.0, 1.2}, {1.1, 1.3}));
  EXPECT_TRUE(predicted_tie({1.1, 1.3}, {1.0, 1.2}));
  EXPECT_TRUE(predicted_tie({1.0, 1.2}, {1.2, 1.4}));  // touching
  EXPECT_FALSE(predicted_tie({1.0, 1.2}, {1.21, 1.4}));
  EXPECT_FALSE(predicted_tie({1.0, 1.2}, TimeSpread{}));
  EXPECT_TRUE(predicted_tie({1.0, 1.0}, {1.0, 1.0}));  // no spread: equal times only
}

}  // namespace
}  // namespace splitsim
