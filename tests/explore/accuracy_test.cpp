// explore --accuracy: train reports read back, candidates matched to the
// run with their codecs, ranked by batches to the target x simulated time
// per batch, the accuracy drop against the uncompressed run enforced.
#include "splitsim/explore/accuracy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

CodecSpec quantize(int bits) {
  CodecSpec c;
  c.method = CodecMethod::kQuantize;
  c.bits = bits;
  return c;
}

std::vector<BoundaryCodecs> both(const CodecSpec& c) { return {{c, c}}; }

// A train run as `splitsim train` reports it: (batches, test accuracy) per epoch.
nlohmann::json run_json(const std::string& variant, const CodecSpec& c, int64_t chunks,
                        const std::vector<std::pair<int64_t, double>>& curve) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& [b, a] : curve) epochs.push_back({{"batches", b}, {"test_accuracy", a}});
  return {{"schema", "splitsim.train/1"},
          {"variant", variant},
          {"chunks", chunks},
          {"compression", {{{"forward", codec_to_json(c)}, {"backward", codec_to_json(c)}}}},
          {"evaluations", epochs}};
}

struct AccuracyTest : ::testing::Test {
  void SetUp() override {
    file = (std::filesystem::temp_directory_path() /
            ("splitsim_accuracy_" + std::to_string(::getpid()) + ".json"))
               .string();
    nlohmann::json runs = {
        run_json("none", CodecSpec{}, 1, {{100, 0.6}, {200, 0.75}, {300, 0.8}}),
        run_json("q8", quantize(8), 1, {{100, 0.55}, {200, 0.68}, {300, 0.78}}),
        run_json("q8 chunks 4", quantize(8), 4, {{100, 0.72}, {200, 0.74}, {300, 0.77}}),
        run_json("q4", quantize(4), 1, {{100, 0.4}, {200, 0.5}, {300, 0.6}}),
        run_json("none chunks 4", CodecSpec{}, 4, {{100, 0.5}, {200, 0.6}, {300, 0.7}})};
    std::ofstream(file) << nlohmann::json{{"schema", "splitsim.train_sweep/1"}, {"runs", runs}};
  }
  void TearDown() override { std::filesystem::remove(file); }

  // Candidates in the exploration's ranking order (by time per batch).
  Exploration exploration() const {
    Exploration e;
    auto add = [&](const std::string& label, const CodecSpec& c, int64_t chunks, double t) {
      Candidate k;
      k.label = label;
      k.compression = both(c);
      k.chunks = chunks;
      k.time_per_batch_s = t;
      e.result.candidates.push_back(k);
    };
    CodecSpec pi;
    pi.method = CodecMethod::kPowerIteration;
    pi.rank = 4;
    add("q4", quantize(4), 1, 0.2);
    add("pi4", pi, 1, 0.3);
    add("q8 chunks=4", quantize(8), 4, 0.4);
    add("q8", quantize(8), 1, 0.5);
    add("none", CodecSpec{}, 1, 1.0);
    for (size_t i = 0; i < e.result.candidates.size(); ++i) e.ranking.push_back(i);
    return e;
  }
  std::string file;
};

TEST_F(AccuracyTest, ReadsASweepReportWithCanonicalCodecKeys) {
  const auto runs = read_accuracy_report(file);
  ASSERT_EQ(runs.size(), 5u);
  EXPECT_EQ(runs[1].variant, "q8");
  EXPECT_EQ(runs[1].codecs, codecs_key(both(quantize(8))));
  EXPECT_NE(runs[1].codecs, codecs_key(both(quantize(4))));
  EXPECT_EQ(runs[2].chunks, 4);
  EXPECT_DOUBLE_EQ(runs[0].best_accuracy, 0.8);
  EXPECT_EQ(batches_to_reach(runs[1], 0.7), 300);
  EXPECT_EQ(batches_to_reach(runs[3], 0.7), -1);
}

TEST_F(AccuracyTest, RanksByTimeToTheTargetWithinTheDrop) {
  const Exploration e = exploration();
  const auto runs = read_accuracy_report(file);
  const AccuracyRanking r = rank_by_time_to_accuracy(e, runs, 0.7, 0.05);
  EXPECT_DOUBLE_EQ(r.reference, 0.75);  // the mean of the two uncompressed runs
  // q8 chunks=4: 100 batches x 0.4 s; none: 200 x 1.0; q8 (chunks 1): 300 x 0.5.
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(e.result.candidates[r.rows[0].candidate].label, "q8 chunks=4");
  EXPECT_EQ(r.rows[0].batches, 100);
  EXPECT_DOUBLE_EQ(r.rows[0].time_s, 40);
  EXPECT_EQ(runs[r.rows[0].run].variant, "q8 chunks 4");  // the run with its chunk count
  EXPECT_EQ(e.result.candidates[r.rows[1].candidate].label, "q8");
  EXPECT_DOUBLE_EQ(r.rows[1].time_s, 150);
  EXPECT_EQ(e.result.candidates[r.rows[2].candidate].label, "none");
  EXPECT_EQ(r.unmeasured, 1u);  // pi4 was not trained
  EXPECT_EQ(r.over_drop, 1u);   // q4: 0.6 against 0.75
  EXPECT_EQ(r.not_reached, 0u);
  // Without a drop limit q4 is in, and never reached 70%.
  const AccuracyRanking any = rank_by_time_to_accuracy(e, runs, 0.7, -1);
  EXPECT_EQ(any.over_drop, 0u);
  EXPECT_EQ(any.not_reached, 1u);
  const nlohmann::json j = accuracy_ranking_json(e, runs, r, 2);
  EXPECT_EQ(j["ranking"].size(), 2u);
  EXPECT_EQ(j["ranked"], 3);
  EXPECT_EQ(j["ranking"][0]["measured_variant"], "q8 chunks 4");
}

TEST_F(AccuracyTest, RefusesWhatIsNotATrainReportAndADropWithoutReference) {
  const std::string bad = file + ".bad";
  std::ofstream(bad) << R"({"schema": "splitsim.metrics/1"})";
  EXPECT_THROW(read_accuracy_report(bad), InputError);
  std::filesystem::remove(bad);
  std::ofstream(file) << run_json("q8", quantize(8), 1, {{100, 0.8}}).dump();
  const auto runs = read_accuracy_report(file);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_THROW(rank_by_time_to_accuracy(exploration(), runs, 0.7, 0.01), InputError);
  EXPECT_EQ(rank_by_time_to_accuracy(exploration(), runs, 0.7, -1).rows.size(), 2u);
}

// Writes `run` as a one-run report and expects read_accuracy_report to
// refuse it at "FILE: `path`" with `phrase` in the message.
void expect_refused(const std::string& file, const nlohmann::json& run, const std::string& path,
                    const std::string& phrase) {
  std::ofstream(file) << run.dump();
  try {
    read_accuracy_report(file);
    ADD_FAILURE() << "accepted " << run.dump();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), file + ": " + path) << e.what();
    EXPECT_NE(e.message().find(phrase), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
  }
}

TEST_F(AccuracyTest, ValuesAreCheckedAtTheirPath) {
  const nlohmann::json ok = run_json("q8", quantize(8), 1, {{100, 0.6}, {200, 0.8}});
  auto with = [&](const std::string& pointer, const nlohmann::json& v) {
    nlohmann::json j = ok;
    j[nlohmann::json::json_pointer(pointer)] = v;
    return j;
  };
  const std::string e1 = "$.evaluations[1]";
  expect_refused(file, with("/evaluations/0/batches", 0), "$.evaluations[0].batches",
                 "expected an integer from 1 to");
  expect_refused(file, with("/evaluations/1/batches", 100), e1 + ".batches",
                 "increasing order of batches; 100 follows 100");
  expect_refused(file, with("/evaluations/1/test_accuracy", 1e308), e1 + ".test_accuracy",
                 "expected a number in [0, 1], got 1e+308");
  expect_refused(file, with("/evaluations/1/test_accuracy", 80), e1 + ".test_accuracy",
                 "give accuracies as fractions (0.8), not percentages");
  expect_refused(file, with("/evaluations/1/test_accuracy", -0.1), e1 + ".test_accuracy",
                 "got -0.1");
  expect_refused(file, with("/evaluations/1/test_accuracy", "0.8"), e1 + ".test_accuracy",
                 "got \"0.8\"");
  expect_refused(file, with("/evaluations/1/batches", 2.5), e1 + ".batches", "got 2.5");
  expect_refused(file, with("/chunks", "4"), "$.chunks", "got \"4\"");
  expect_refused(file, with("/chunks", 0), "$.chunks", "from 1 to 1024");
  expect_refused(file, with("/variant", 7), "$.variant", "expected a string");
  expect_refused(file, with("/variant", "q8\x1b[2J"), "$.variant", "control character");
  expect_refused(file, with("/evaluations", nlohmann::json::array()), "$.evaluations",
                 "got 0 entries");
  expect_refused(file, with("/compression", {1}), "$.compression[0]", "got 1");
  nlohmann::json sweep = {{"schema", "splitsim.train_sweep/1"},
                          {"runs", {ok, with("/evaluations/0/test_accuracy", nullptr)}}};
  expect_refused(file, sweep, "$.runs[1].evaluations[0].test_accuracy", "got null");
  std::ofstream(file) << ok.dump();
  EXPECT_EQ(read_accuracy_report(file).at(0).curve.size(), 2u);  // the valid run still reads
}

}  // namespace
}  // namespace splitsim
