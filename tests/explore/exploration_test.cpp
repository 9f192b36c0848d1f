// run_exploration on the synthetic chain: every survivor of the screen is
// simulated, the ranking and front follow, and the result is independent of
// the number of simulations at once.
#include "splitsim/explore/exploration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "chain_model.h"
#include "splitsim/explore/report.h"

namespace splitsim {
namespace {

ExploreSpace ushape_space() {
  ExploreSpace sp;
  sp.kinds = {CutKind::kUShape};
  const auto all = default_codec_options();
  sp.codecs = {all[0], all[2]};  // none, q8
  sp.chunks = {1, 2};
  return sp;
}

ExploreOptions options(int jobs, int max_simulations = 1000) {
  ExploreOptions o;
  o.jobs = jobs;
  o.max_simulations = max_simulations;
  return o;
}

TEST(ExplorationTest, EverySurvivorGetsASimulatedTimeWithinItsBounds) {
  std::vector<ExploreProgress> steps;
  ExploreOptions o = options(1);
  o.progress = [&](const ExploreProgress& p) { steps.push_back(p); };
  // Wide enough for more than one batch of simulations.
  ExploreSpace sp = ushape_space();
  sp.kinds = {CutKind::kSingle, CutKind::kUShape};
  sp.codecs = default_codec_options();
  sp.chunks = {1, 2, 4};
  sp.bandwidths_bit_per_s = {2e6, 8e6, 3.2e7};
  sp.schedules = {Schedule::kGpipe, Schedule::kZbH1};
  const Exploration e = run_exploration(base(), chain(), devices(), sp, o);
  const auto& c = e.result.candidates;
  ASSERT_FALSE(c.empty());
  size_t survivors = 0;
  for (const auto& x : c) {
    if (x.screened_out) {
      EXPECT_TRUE(std::isnan(x.time_per_batch_s)) << x.label;
      continue;
    }
    ++survivors;
    ASSERT_TRUE(std::isfinite(x.time_per_batch_s)) << x.label;
    EXPECT_GT(x.time_per_batch_s, 0) << x.label;
    // The screen's bounds hold for the simulated time.
    EXPECT_LE(x.lower_bound_s, x.time_per_batch_s * (1 + 1e-9)) << x.label;
    EXPECT_GE(x.upper_bound_s * (1 + 1e-9), x.time_per_batch_s) << x.label;
  }
  EXPECT_EQ(e.simulated, survivors);
  EXPECT_EQ(e.not_simulated_over_cap, 0u);
  EXPECT_EQ(e.objective, Objective::kTime);
  EXPECT_GT(e.wall_s, 0);
  // The ranking holds every simulated candidate, fastest first; the front is
  // candidate_front()'s and holds the fastest.
  ASSERT_EQ(e.ranking.size(), survivors);
  for (size_t k = 1; k < e.ranking.size(); ++k)
    EXPECT_LE(c[e.ranking[k - 1]].time_per_batch_s, c[e.ranking[k]].time_per_batch_s);
  EXPECT_EQ(e.front, candidate_front(c));
  EXPECT_NE(std::find(e.front.begin(), e.front.end(), e.ranking.front()), e.front.end());
  // One progress report per batch of simulations (here more than one), the
  // last one complete.
  EXPECT_GT(survivors, kExploreSimulationBatch);
  ASSERT_EQ(steps.size(), (survivors + kExploreSimulationBatch - 1) / kExploreSimulationBatch);
  EXPECT_EQ(steps.back().simulated, survivors);
  for (const auto& s : steps) {
    EXPECT_EQ(s.to_simulate, survivors);
    EXPECT_EQ(s.candidates, c.size());
  }
  EXPECT_EQ(progress_line(steps.back()), "explore: " + std::to_string(c.size()) + " screened, " +
                                             std::to_string(survivors) + "/" +
                                             std::to_string(survivors) + " simulated");
}

TEST(ExplorationTest, ResultDoesNotDependOnJobs) {
  const Exploration one = run_exploration(base(), chain(), devices(), ushape_space(), options(1));
  const Exploration two = run_exploration(base(), chain(), devices(), ushape_space(), options(2));
  ASSERT_EQ(one.result.candidates.size(), two.result.candidates.size());
  for (size_t i = 0; i < one.result.candidates.size(); ++i) {
    const double a = one.result.candidates[i].time_per_batch_s;
    const double b = two.result.candidates[i].time_per_batch_s;
    EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << i << ": " << a << " vs " << b;
  }
  EXPECT_EQ(one.ranking, two.ranking);
  EXPECT_EQ(one.front, two.front);
  // And so do the reports, but for the wall time.
  auto csv = [](const Exploration& e) {
    std::ostringstream out;
    write_explore_csv(out, e);
    return out.str();
  };
  EXPECT_EQ(csv(one), csv(two));
}

TEST(ExplorationTest, CapSimulatesTheLowestBoundsAndRankingFollowsTheObjective) {
  ExploreSpace sp = ushape_space();
  sp.objective = Objective::kBytes;
  const Exploration e = run_exploration(base(), chain(), devices(), sp, options(2, 5));
  const auto& c = e.result.candidates;
  std::vector<double> simulated, waiting;
  for (const auto& x : c)
    if (!x.screened_out)
      (std::isnan(x.time_per_batch_s) ? waiting : simulated).push_back(x.lower_bound_s);
  ASSERT_EQ(simulated.size(), 5u);
  EXPECT_EQ(e.simulated, 5u);
  EXPECT_EQ(e.not_simulated_over_cap, waiting.size());
  ASSERT_FALSE(waiting.empty());
  EXPECT_LE(*std::max_element(simulated.begin(), simulated.end()),
            *std::min_element(waiting.begin(), waiting.end()));
  ASSERT_EQ(e.ranking.size(), 5u);
  for (size_t k = 1; k < e.ranking.size(); ++k)
    EXPECT_LE(c[e.ranking[k - 1]].wire_bytes_per_batch, c[e.ranking[k]].wire_bytes_per_batch);
  // The table says how many were left over; JSON and CSV carry the numbers.
  std::ostringstream table, json, csv;
  write_explore_table(table, "chain", e, 3, nlohmann::json());
  EXPECT_NE(
      table.str().find(std::to_string(waiting.size()) + " over --max-simulations not simulated"),
      std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("-- ranking by bytes (top 3)"), std::string::npos) << table.str();
  write_explore_json(json, "chain", e, 3, nlohmann::json());
  const auto j = nlohmann::json::parse(json.str());
  EXPECT_EQ(j.at("not_simulated_over_cap"), waiting.size());
  EXPECT_EQ(j.at("ranking").size(), 3u);
  EXPECT_EQ(j.at("ranking")[0].at("label"), c[e.ranking[0]].label);
  EXPECT_FALSE(j.contains("validation"));
  write_explore_csv(csv, e);
  const std::string rows = csv.str();
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 1 + 5);
}

TEST(ExplorationTest, TheRankingsFirstRowsGetASpreadAndTiesWithTheFirstAreCounted) {
  // No device measured a timing spread: each spread is the time itself,
  // and the table says that no tie is declared.
  ExploreOptions o = options(2);
  o.spread_top = 4;
  Exploration e = run_exploration(base(), chain(), devices(), ushape_space(), o);
  const auto* c = &e.result.candidates;
  ASSERT_GE(e.ranking.size(), 6u);
  EXPECT_DOUBLE_EQ(e.spreads.at("*"), 0.0);
  for (size_t k = 0; k < 4; ++k) {
    const Candidate& x = (*c)[e.ranking[k]];
    EXPECT_EQ(x.spread.low_s, x.time_per_batch_s) << x.label;
    EXPECT_EQ(x.spread.high_s, x.time_per_batch_s) << x.label;
  }
  EXPECT_FALSE((*c)[e.ranking[4]].spread.known());
  std::ostringstream table;
  write_explore_table(table, "chain", e, 4, nlohmann::json());
  EXPECT_NE(table.str().find("no device profile measured a timing spread"), std::string::npos)
      << table.str();

  // Every party's compute within 30%: both ends bracket the time, and the
  // plans whose ranges reach the first's are its ties, in the table and JSON.
  o.spread = 0.3;
  e = run_exploration(base(), chain(), devices(), ushape_space(), o);
  c = &e.result.candidates;
  const Candidate& first = (*c)[e.ranking[0]];
  size_t ties = 0;
  for (size_t k = 0; k < 4; ++k) {
    const Candidate& x = (*c)[e.ranking[k]];
    ASSERT_TRUE(x.spread.known()) << x.label;
    EXPECT_LT(x.spread.low_s, x.time_per_batch_s) << x.label;
    EXPECT_GT(x.spread.high_s, x.time_per_batch_s) << x.label;
    if (k > 0 && predicted_tie(first.spread, x.spread)) ++ties;
  }
  EXPECT_EQ(e.tied_with_best, ties);
  EXPECT_GT(ties, 0u);  // 30% either side: the next plans overlap the first
  table.str("");
  write_explore_table(table, "chain", e, 4, nlohmann::json());
  EXPECT_NE(table.str().find("up to +-30.0%"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find(std::to_string(ties) + " plan(s) tie the first"), std::string::npos)
      << table.str();
  size_t marked = 0;
  for (size_t at = 0; (at = table.str().find("tie #1", at)) != std::string::npos; ++at) ++marked;
  EXPECT_EQ(marked, ties);
  std::ostringstream json;
  write_explore_json(json, "chain", e, 4, nlohmann::json());
  const auto j = nlohmann::json::parse(json.str());
  EXPECT_EQ(j.at("tied_with_best"), ties);
  EXPECT_DOUBLE_EQ(j.at("spreads").at("client").get<double>(), 0.3);
  EXPECT_EQ(j.at("ranking")[0].at("time_per_batch_spread_s"),
            nlohmann::json({first.spread.low_s, first.spread.high_s}));
}

}  // namespace
}  // namespace splitsim
