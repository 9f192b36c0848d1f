// The explorer on a synthetic unit chain with known costs, against brute force.
#include "splitsim/explore/explore.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "chain_model.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/planner.h"
#include "splitsim/explore/space_flags.h"

namespace splitsim {
namespace {

std::vector<CodecOption> two_codecs() {
  auto all = default_codec_options();
  return {all[0], all[2]};  // none, q8
}

double min_lower(const std::vector<Candidate>& c) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& x : c) best = std::min(best, x.lower_bound_s);
  return best;
}

// make_plan over every split position (invalid ones throw), every codec, chunk count.
double brute_force(const std::vector<std::vector<int>>& starts_list, const ExploreSpace& sp,
                   const std::vector<std::string>& parties, bool steady_only) {
  const ModelProfile m = chain();
  double best = std::numeric_limits<double>::infinity();
  for (const auto& starts : starts_list)
    for (const auto& opt : sp.codecs)
      for (int64_t chunks : sp.chunks) {
        Scenario s = base();
        s.partition.clear();
        s.compression.clear();
        s.chunks = chunks;
        if (!sp.schedules.empty()) s.schedule = sp.schedules.front();
        bool ok = true;
        for (size_t k = 0; k < starts.size(); ++k) {
          const int last = k + 1 < starts.size() ? starts[k + 1] - 1 : 6;
          s.partition.push_back({parties[k], m.units[starts[k]].name, m.units[last].name});
          if (k + 1 < starts.size()) {
            BoundaryCodecs bc;
            ok &= instantiate_codec(opt, m.units[last].output_shape, k, starts.size() - 1, &bc);
            s.compression.push_back(bc);
          }
        }
        if (!ok) continue;
        try {
          const Plan p = make_plan(s, m, devices());
          best = std::min(best, steady_only ? steady_state_bound(p) : screen_bounds(p).lower_s);
        } catch (const InputError&) {  // an invalid cut
        }
      }
  return best;
}

ExploreSpace space(CutKind kind) {
  ExploreSpace sp;
  sp.kinds = {kind};
  sp.codecs = two_codecs();
  sp.chunks = {1, 2, 4};
  return sp;
}

TEST(ExploreTest, SingleCutOptimumEqualsBruteForce) {
  const ExploreSpace sp = space(CutKind::kSingle);
  const ExploreResult r = explore(base(), chain(), devices(), sp);
  std::vector<std::vector<int>> all;
  for (int p = 1; p < 7; ++p) all.push_back({0, p});
  EXPECT_EQ(r.candidates.size(), 5u * 2 * 3);  // 5 valid cuts (not before u4)
  EXPECT_DOUBLE_EQ(min_lower(r.candidates), brute_force(all, sp, {"client", "server"}, false));
}

TEST(ExploreTest, UShapeOptimumEqualsBruteForce) {
  const ExploreSpace sp = space(CutKind::kUShape);
  const ExploreResult r = explore(base(), chain(), devices(), sp);
  std::vector<std::vector<int>> all;
  for (int p = 1; p < 7; ++p)
    for (int q = p + 1; q < 7; ++q) all.push_back({0, p, q});
  EXPECT_EQ(r.candidates.size(), 10u * 2 * 3);  // C(5,2) cut pairs
  EXPECT_DOUBLE_EQ(min_lower(r.candidates),
                   brute_force(all, sp, {"client", "server", "client"}, false));
}

TEST(ExploreTest, KStageDynamicProgramMatchesBruteForceWithAndWithoutPruning) {
  ExploreSpace sp = space(CutKind::kKStage);
  sp.stage_parties = {"d0", "d1", "d2"};
  sp.schedules = {Schedule::kPipeDream};
  std::vector<std::vector<int>> all;
  for (int p = 1; p < 7; ++p)
    for (int q = p + 1; q < 7; ++q) all.push_back({0, p, q});
  for (const auto& codec : sp.codecs)
    for (int64_t chunks : sp.chunks) {
      ExploreSpace one = sp;
      one.codecs = {codec};
      one.chunks = {chunks};
      const double brute = brute_force(all, one, sp.stage_parties, true);
      for (bool prune : {true, false}) {
        one.prune = prune;
        std::vector<PartSpec> parts;
        double bottleneck = 0;
        ASSERT_TRUE(kstage_partition(base(), chain(), devices(), one, codec, &parts, &bottleneck));
        EXPECT_DOUBLE_EQ(bottleneck, brute) << codec.label << " chunks " << chunks;
        ASSERT_EQ(parts.size(), 3u);
        EXPECT_NE(parts[1].from, "u4");
      }
    }
  const ExploreResult r = explore(base(), chain(), devices(), sp);
  ASSERT_EQ(r.candidates.size(), 2u * 3);
  for (const auto& c : r.candidates) EXPECT_DOUBLE_EQ(c.lower_bound_s, steady_state_bound(c.plan));
}

TEST(ExploreTest, ConstraintsAreRespected) {
  ExploreSpace sp = space(CutKind::kUShape);
  const ExploreResult free = explore(base(), chain(), devices(), sp);
  int64_t max_mem = 0;
  for (const auto& c : free.candidates) max_mem = std::max(max_mem, c.client_memory_bytes);
  sp.client_memory_bytes = max_mem / 2;
  sp.max_client_mac_share = 0.4;
  sp.bandwidths_bit_per_s = {1e6, 1e8};
  const ExploreResult r = explore(base(), chain(), devices(), sp);
  EXPECT_GT(r.rejected_by_constraints, 0);
  ASSERT_FALSE(r.candidates.empty());
  int at_low = 0, at_high = 0;
  for (const auto& c : r.candidates) {
    EXPECT_LE(c.client_memory_bytes, sp.client_memory_bytes) << c.label;
    EXPECT_LE(c.client_mac_share, 0.4) << c.label;
    int64_t client = 0;
    for (const auto& st : c.plan.stages)
      if (st.party == "client") client += st.peak_memory_bytes;
    EXPECT_EQ(client, c.client_memory_bytes);
    EXPECT_EQ(c.plan.network.bandwidth_bit_per_s, c.bandwidth_bit_per_s);
    at_low += c.bandwidth_bit_per_s == 1e6;
    at_high += c.bandwidth_bit_per_s == 1e8;
  }
  EXPECT_EQ(at_low, at_high);
  EXPECT_GT(at_low, 0);
  EXPECT_EQ(static_cast<int64_t>(r.candidates.size()) + r.rejected_by_constraints, r.enumerated);
}

TEST(ExploreTest, ScreenNeverDropsAFrontCandidateByItsBounds) {
  const ExploreResult r = explore(base(), chain(), devices(), space(CutKind::kUShape));
  for (const auto& c : r.candidates) EXPECT_LE(c.lower_bound_s, c.upper_bound_s) << c.label;
  // Pretend every candidate ran in its lower bound (the best it could do):
  // no screened-out one may be on the front.
  std::vector<Candidate> sim = r.candidates;
  for (auto& c : sim) c.time_per_batch_s = c.lower_bound_s;
  for (size_t i : candidate_front(sim)) EXPECT_FALSE(sim[i].screened_out) << sim[i].label;
}

TEST(ExploreTest, ParetoFrontOfALiteralExample) {
  const std::vector<std::vector<double>> pts = {{1, 5}, {2, 2}, {3, 1}, {2, 3},
                                                {4, 4}, {2, 2}, {1, 6}};
  // {2,3}, {4,4} and {1,6} are dominated; the duplicate {2,2} stays.
  EXPECT_EQ(pareto_front(pts), (std::vector<size_t>{0, 1, 2, 5}));
}

TEST(ExploreTest, RankingFollowsTheObjective) {
  std::vector<Candidate> c(3);
  c[0].label = "a", c[0].time_per_batch_s = 3, c[0].wire_bytes_per_batch = 10;
  c[0].client_macs_per_batch = 5;
  c[1].label = "b", c[1].time_per_batch_s = 1, c[1].wire_bytes_per_batch = 30;
  c[1].client_macs_per_batch = 7;
  c[2].label = "c", c[2].time_per_batch_s = 2, c[2].wire_bytes_per_batch = 20;
  c[2].client_macs_per_batch = 1;
  EXPECT_EQ(rank(c, Objective::kTime), (std::vector<size_t>{1, 2, 0}));
  EXPECT_EQ(rank(c, Objective::kBytes), (std::vector<size_t>{0, 2, 1}));
  EXPECT_EQ(rank(c, Objective::kClientMacs), (std::vector<size_t>{2, 0, 1}));
  EXPECT_EQ(candidate_front(c).size(), 3u);
}

void expect_error_at(const std::function<void()>& fn, const std::string& where) {
  try {
    fn();
    ADD_FAILURE() << "no InputError at " << where;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), where) << e.what();
  }
}

TEST(ExploreTest, BadSpacesNameTheFlagOrPath) {
  using nlohmann::json;
  const json ok = {{"schema", "splitsim.explore/1"}};
  EXPECT_NO_THROW(parse_space(ok));
  json j = ok;
  j["objective"] = "speed";
  expect_error_at([&] { parse_space(j); }, "$.objective");
  j = ok;
  j["constraints"] = {{"max_client_mac_share", 1.5}};
  expect_error_at([&] { parse_space(j); }, "$.constraints.max_client_mac_share");
  j = ok;
  j["constraints"] = {{"client_memory_bytes", -1}};
  expect_error_at([&] { parse_space(j); }, "$.constraints.client_memory_bytes");
  j = ok;
  j["chunks"] = {1, 0};
  expect_error_at([&] { parse_space(j); }, "$.chunks[1]");
  j = ok;
  j["kinds"] = {"kstage"};
  expect_error_at([&] { parse_space(j); }, "$.stage_parties");
  j = ok;
  j["colour"] = 1;
  expect_error_at([&] { parse_space(j); }, "$.colour");
  expect_error_at([] { parse_objective("fast", "--objective"); }, "--objective");
  ExploreSpace s;
  s.max_client_mac_share = 0;
  expect_error_at([&] { check_space(s); }, "max_client_mac_share");
  s = {};
  s.client_memory_bytes = -5;
  expect_error_at([&] { check_space(s); }, "client_memory_bytes");
  s = {};
  s.bandwidths_bit_per_s = {-1};
  expect_error_at([&] { check_space(s); }, "bandwidth_bit_per_s");
}

// Runs `fn`, expecting InputError at `where` with `phrase` in its message.
void expect_error_saying(const std::function<void()>& fn, const std::string& where,
                         const std::string& phrase) {
  try {
    fn();
    ADD_FAILURE() << "no InputError at " << where;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), where) << e.what();
    EXPECT_NE(e.message().find(phrase), std::string::npos) << e.what();
  }
}

std::string write_space(const nlohmann::json& j) {
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("splitsim_space_" + std::to_string(::getpid()) + ".json"))
                               .string();
  std::ofstream(file) << j.dump();
  return file;
}

TEST(ExploreTest, SpaceFileValuesAreNamedByTheFileAndPathNotAFlag) {
  SpaceFlags flags;
  flags.space_file = write_space({{"schema", "splitsim.explore/1"}, {"chunks", {4, 5000}}});
  const std::string f = flags.space_file;
  expect_error_saying([&] { make_space(flags, Scenario{}); }, f + " $.chunks[1]",
                      "from 1 to 1024, got 5000");
  write_space({{"schema", "splitsim.explore/1"}, {"bandwidths_bit_per_s", {1e20}}});
  expect_error_saying([&] { make_space(flags, Scenario{}); }, f + " $.bandwidths_bit_per_s[0]",
                      "got 1e+20");
  std::ofstream(f) << R"({"schema": "splitsim.explore/1", "chunks": [1], "chunks": [2]})";
  expect_error_saying([&] { make_space(flags, Scenario{}); }, "space", "duplicate key");
  write_space({{"schema", "splitsim.explore/1"}, {"chunks", {1, 4}}});
  EXPECT_EQ(make_space(flags, Scenario{}).chunks, (std::vector<int64_t>{1, 4}));
  std::filesystem::remove(f);
}

TEST(ExploreTest, TheSpaceSizeIsBoundedNamingTheProduct) {
  nlohmann::json bandwidths = nlohmann::json::array();
  for (int i = 0; i < 2000; ++i) bandwidths.push_back(1e6 + i);
  // Every schedule but interleaved_1f1b, which no cut kind can run.
  std::vector<std::string> schedules = schedule_names();
  schedules.erase(std::find(schedules.begin(), schedules.end(), "interleaved_1f1b"));
  SpaceFlags flags;
  flags.space_file = write_space({{"schema", "splitsim.explore/1"},
                                  {"bandwidths_bit_per_s", bandwidths},
                                  {"schedules", schedules}});
  flags.chunks = "1,2,3,4,5,6,7,8";
  const std::string f = flags.space_file;
  expect_error_saying([&] { make_space(flags, Scenario{}); }, f,
                      "5 codec options (the default ones) x 8 chunk counts (--chunks) x 7 "
                      "schedules ($.schedules in " +
                          f + ") x 2000 bandwidths ($.bandwidths_bit_per_s in " + f +
                          ") = 560000 combinations per cut; the limit is 1024");
  write_space({{"schema", "splitsim.explore/1"}, {"schedules", schedules}});
  EXPECT_EQ(space_combinations(make_space(flags, Scenario{})), 5 * 8 * 7);
  write_space({{"schema", "splitsim.explore/1"}, {"schedules", {"1f1b", "interleaved_1f1b"}}});
  expect_error_saying([&] { make_space(flags, Scenario{}); }, f + " $.schedules[1]",
                      "no cut kind of the explorer");
  write_space({{"schema", "splitsim.explore/1"}, {"schedules", {"1f1b", "pipedream"}}});
  Scenario splitfed;
  splitfed.training = "splitfed_v1";
  EXPECT_EQ(make_space(flags, Scenario{}).schedules.size(), 2u);
  expect_error_saying([&] { make_space(flags, splitfed); }, f + " $.schedules[1]",
                      "pipedream overlaps batches");
  std::filesystem::remove(f);
}

TEST(ExploreTest, FlagListsAreDecimal) {
  SpaceFlags flags;
  for (const char* bad : {"0x10", "1.5", "4,inf", "1e1"}) {
    flags.chunks = bad;
    expect_error_saying([&] { make_space(flags, Scenario{}); }, "chunks",
                        "is not a positive decimal integer");
  }
  flags.chunks = "16";
  EXPECT_EQ(make_space(flags, Scenario{}).chunks, (std::vector<int64_t>{16}));
  for (const char* bad : {"0x1p30", "inf", "nan", "1e9,-4e9"}) {
    flags.bandwidths = bad;
    expect_error_saying([&] { make_space(flags, Scenario{}); }, "bandwidth_bit_per_s",
                        "is not a positive decimal number");
  }
  flags.bandwidths = "1e9,4e9";
  EXPECT_EQ(make_space(flags, Scenario{}).bandwidths_bit_per_s.size(), 2u);
}

TEST(ExploreTest, BestCandidateBecomesAValidScenario) {
  const ExploreResult r = explore(base(), chain(), devices(), space(CutKind::kUShape));
  const Candidate& c = r.candidates.front();
  nlohmann::json b = {
      {"schema", "splitsim.scenario/1"},           {"name", "x"},
      {"model", {{"name", "resnet20"}}},           {"batch_size", 8},
      {"partition", nlohmann::json::array()},      {"devices", {{"client", "c"}, {"server", "s"}}},
      {"network", {{"bandwidth_bit_per_s", 1e9}}}, {"sweep", {{"chunks", {1, 2}}}}};
  const nlohmann::json out = candidate_scenario_json(b, c);
  EXPECT_FALSE(out.contains("sweep"));
  const Scenario s = parse_scenario(out);
  EXPECT_EQ(s.chunks, c.chunks);
  ASSERT_EQ(s.partition.size(), 3u);
  EXPECT_EQ(s.partition[1].from, c.partition[1].from);
  EXPECT_EQ(s.compression[0].forward, c.compression[0].forward);
}

}  // namespace
}  // namespace splitsim
