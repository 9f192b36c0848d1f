// explore --leakage: train reports with leakage read back (the worst over
// every measurement), candidates matched to the run with their cuts and
// codecs, kept within the limits, ranked by time per batch (or time to the
// target accuracy), and the front over time, PSNR (and accuracy).
#include "splitsim/explore/leakage.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

CodecSpec quantized(int bits) {
  CodecSpec c;
  c.method = CodecMethod::kQuantize;
  c.bits = bits;
  return c;
}

nlohmann::json forward(double dcor, double psnr) {
  return {{"samples", 496},
          {"attacker_samples", 496},
          {"distance_correlation", dcor},
          {"reconstruction_mse", 0.01},
          {"reconstruction_psnr_db", psnr},
          {"baseline_mse", 0.09},
          {"baseline_psnr_db", 10.4}};
}

nlohmann::json backward(double auc) {
  return {{"samples", 4000}, {"label_auc_norm", 0.6}, {"label_auc_direction", auc}};
}

nlohmann::json entry(int64_t batches, int boundary, const std::string& cut,
                     const nlohmann::json& fwd, const nlohmann::json& bwd) {
  return {{"batches", batches}, {"epoch", batches / 125.0}, {"boundary", boundary},
          {"cut", cut},         {"from", "client"},         {"to", "server"},
          {"forward", fwd},     {"backward", bwd},          {"seconds", 3.2}};
}

// A one-boundary train run with leakage at cut `cut`: two evaluations.
nlohmann::json leakage_run_json(const std::string& variant, const CodecSpec& c, int64_t chunks,
                                const std::string& cut, double psnr, double dcor, double auc) {
  return {{"schema", "splitsim.train/1"},
          {"variant", variant},
          {"chunks", chunks},
          {"cuts", {cut}},
          {"compression", {{{"forward", codec_to_json(c)}, {"backward", codec_to_json(c)}}}},
          {"evaluations", {{{"batches", 125}, {"test_accuracy", 0.7}}}},
          {"leakage",
           {entry(125, 0, cut, forward(dcor - 0.1, psnr - 1), backward(auc)),
            entry(250, 0, cut, forward(dcor, psnr), backward(auc - 0.1))}}};
}

// A two-boundary run (cuts "a" and "b", codec none) with these leakage entries.
nlohmann::json two_boundary_run(const nlohmann::json& entries) {
  const CodecSpec none;
  const nlohmann::json boundary = {{"forward", codec_to_json(none)},
                                   {"backward", codec_to_json(none)}};
  return {{"schema", "splitsim.train/1"},
          {"variant", "ushape"},
          {"chunks", 1},
          {"cuts", {"a", "b"}},
          {"compression", {boundary, boundary}},
          {"leakage", entries}};
}

// A candidate cut after `cut` (client | server) with codec `c` at its boundary.
Candidate candidate(const std::string& label, const std::string& cut, const CodecSpec& c,
                    int64_t chunks, double time_s) {
  Candidate k;
  k.label = label;
  k.partition = {{"client", "conv1", cut}, {"server", "next", "fc"}};
  k.compression = {{c, c}};
  k.chunks = chunks;
  k.time_per_batch_s = time_s;
  return k;
}

struct LeakageTest : ::testing::Test {
  void SetUp() override {
    file = (std::filesystem::temp_directory_path() /
            ("splitsim_leakage_" + std::to_string(::getpid()) + ".json"))
               .string();
    nlohmann::json runs = {
        leakage_run_json("none", CodecSpec{}, 1, "layer1.2", 20, 0.7, 0.99),
        leakage_run_json("q8", quantized(8), 1, "layer1.2", 19, 0.68, 0.97),
        leakage_run_json("q8 chunks 4", quantized(8), 4, "layer1.2", 18, 0.6, 0.9),
        leakage_run_json("q4", quantized(4), 1, "layer1.2", 12, 0.4, 0.8),
        leakage_run_json("none deep", CodecSpec{}, 1, "layer3.2", 11, 0.3, 0.7)};
    std::ofstream(file) << nlohmann::json{{"schema", "splitsim.train_sweep/1"}, {"runs", runs}};
  }
  void TearDown() override { std::filesystem::remove(file); }

  // Candidates in the exploration's ranking order (by time per batch).
  static Exploration exploration() {
    Exploration e;
    e.result.candidates = {candidate("q4 shallow", "layer1.2", quantized(4), 1, 0.2),
                           candidate("q4 deep", "layer3.2", quantized(4), 1, 0.25),
                           candidate("q8 chunks=4", "layer1.2", quantized(8), 4, 0.4),
                           candidate("q8", "layer1.2", quantized(8), 1, 0.5),
                           candidate("none deep", "layer3.2", CodecSpec{}, 1, 0.9),
                           candidate("none", "layer1.2", CodecSpec{}, 1, 1.0)};
    for (size_t i = 0; i < e.result.candidates.size(); ++i) e.ranking.push_back(i);
    return e;
  }
  static std::vector<std::string> labels(const Exploration& e, const LeakageRanking& r) {
    std::vector<std::string> out;
    for (const LeakageRow& row : r.rows) out.push_back(e.result.candidates[row.candidate].label);
    return out;
  }
  std::string file;
};

TEST_F(LeakageTest, ReadsTheWorstOverEveryMeasurementAndBoundary) {
  const auto runs = read_leakage_report(file);
  ASSERT_EQ(runs.size(), 5u);
  EXPECT_EQ(runs[1].variant, "q8");
  EXPECT_EQ(runs[1].file, file);
  EXPECT_EQ(runs[1].codecs, codecs_key({{quantized(8), quantized(8)}}));
  EXPECT_EQ(runs[1].cuts, std::vector<std::string>{"layer1.2"});
  EXPECT_EQ(runs[1].measurements, 2u);
  EXPECT_DOUBLE_EQ(*runs[1].worst.psnr_db, 19);
  EXPECT_DOUBLE_EQ(*runs[1].worst.distance_correlation, 0.68);
  EXPECT_DOUBLE_EQ(*runs[1].worst.label_auc, 0.97);
  // Two boundaries (U-shape): the worst of both; no gradient crossed the
  // second (backward null), a forward left unmeasured on the first.
  const nlohmann::json ushape = two_boundary_run({entry(100, 0, "a", nullptr, backward(0.6)),
                                                  entry(100, 1, "b", forward(0.5, 14), nullptr),
                                                  entry(200, 1, "b", forward(0.2, 16), nullptr)});
  std::ofstream(file) << ushape.dump();
  const auto u = read_leakage_report(file);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].cuts, (std::vector<std::string>{"a", "b"}));
  EXPECT_DOUBLE_EQ(*u[0].worst.psnr_db, 16);
  EXPECT_DOUBLE_EQ(*u[0].worst.distance_correlation, 0.5);
  EXPECT_DOUBLE_EQ(*u[0].worst.label_auc, 0.6);
  // Nothing crossed back at all: no label AUC.
  nlohmann::json forward_only = ushape;
  forward_only["leakage"][0]["backward"] = nullptr;
  forward_only["leakage"][0]["forward"] = forward(0.1, 10);
  std::ofstream(file) << forward_only.dump();
  EXPECT_FALSE(read_leakage_report(file)[0].worst.label_auc.has_value());
  // Several files: their runs in order.
  std::ofstream(file + ".2")
      << leakage_run_json("q8 other", quantized(8), 1, "x", 1, 0.1, 0.5).dump();
  const auto both = read_leakage_reports({file, file + ".2"});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1].variant, "q8 other");
  EXPECT_EQ(both[1].file, file + ".2");
  std::filesystem::remove(file + ".2");
}

// A U-shape (client | server | client): the client holds the inputs and the
// labels, so what comes back to it counts for nothing; what reaches the
// server counts.
TEST_F(LeakageTest, AUShapeCountsOnlyWhatReachesTheServer) {
  auto at = [](int boundary, const std::string& from, const std::string& to,
               const nlohmann::json& fwd, const nlohmann::json& bwd) {
    nlohmann::json e = entry(100, boundary, boundary == 0 ? "a" : "b", fwd, bwd);
    e["from"] = from;
    e["to"] = to;
    return e;
  };
  const nlohmann::json ushape = two_boundary_run(
      {at(0, "client", "server", forward(0.4, 20), backward(0.99)),    // gradient to the client
       at(1, "server", "client", forward(0.9, 30), backward(0.95))});  // output to the client
  std::ofstream(file) << ushape.dump();
  const auto u = read_leakage_report(file);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_DOUBLE_EQ(*u[0].worst.psnr_db, 20);
  EXPECT_DOUBLE_EQ(*u[0].worst.distance_correlation, 0.4);
  EXPECT_DOUBLE_EQ(*u[0].worst.label_auc, 0.95);
}

// Writes `run` as a one-run report and expects read_leakage_report to refuse
// it at "FILE: `path`" with `phrase` in the message.
void expect_leakage_refused(const std::string& file, const nlohmann::json& run,
                            const std::string& path, const std::string& phrase) {
  std::ofstream(file) << run.dump();
  try {
    read_leakage_report(file);
    ADD_FAILURE() << "accepted " << run.dump();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), file + ": " + path) << e.what();
    EXPECT_NE(e.message().find(phrase), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
  }
}

TEST_F(LeakageTest, ValuesAreCheckedAtTheirPath) {
  const nlohmann::json ok = leakage_run_json("q8", quantized(8), 1, "layer1.2", 19, 0.68, 0.97);
  auto with = [&](const std::string& pointer, const nlohmann::json& v) {
    nlohmann::json j = ok;
    j[nlohmann::json::json_pointer(pointer)] = v;
    return j;
  };
  auto without = [&](const std::string& key) {
    nlohmann::json j = ok;
    j.erase(key);
    return j;
  };
  const std::string l1 = "$.leakage[1]";
  expect_leakage_refused(file, without("leakage"), "$.leakage", "trained without --leakage");
  expect_leakage_refused(file, with("/leakage", nlohmann::json::array()), "$.leakage",
                         "trained without --leakage");
  expect_leakage_refused(file, without("cuts"), "$.cuts", "missing");
  expect_leakage_refused(file, with("/cuts", {"a", "b"}), "$.cuts", "2 cuts for 1 boundaries");
  expect_leakage_refused(file, with("/cuts/0", 3), "$.cuts[0]", "expected a string");
  expect_leakage_refused(file, with("/leakage/1/cut", "layer2.0"), l1 + ".cut",
                         "not the run's cut at boundary 0");
  expect_leakage_refused(file, with("/leakage/1/boundary", 1), l1 + ".boundary", "from 0 to 0");
  expect_leakage_refused(file, with("/leakage/1/batches", 0), l1 + ".batches", "from 1 to");
  expect_leakage_refused(file, with("/leakage/1/seconds", -1), l1 + ".seconds", "got -1");
  expect_leakage_refused(file, with("/leakage/1/forward", "yes"), l1 + ".forward", "got \"yes\"");
  expect_leakage_refused(file, with("/leakage/1/forward/distance_correlation", 1.5),
                         l1 + ".forward.distance_correlation",
                         "expected a number in [-1, 1], got 1.5");
  expect_leakage_refused(file, with("/leakage/1/forward/reconstruction_psnr_db", nullptr),
                         l1 + ".forward.reconstruction_psnr_db", "got null");
  expect_leakage_refused(file, with("/leakage/1/forward/reconstruction_psnr_db", 1e308),
                         l1 + ".forward.reconstruction_psnr_db", "got 1e+308");
  expect_leakage_refused(file, with("/leakage/1/forward/reconstruction_mse", -0.1),
                         l1 + ".forward.reconstruction_mse", "got -0.1");
  expect_leakage_refused(file, with("/leakage/1/backward/label_auc_direction", 2),
                         l1 + ".backward.label_auc_direction",
                         "expected a number in [0, 1], got 2");
  expect_leakage_refused(file, with("/leakage/0/backward/samples", 0),
                         "$.leakage[0].backward.samples", "from 1 to");
  expect_leakage_refused(file, with("/chunks", 0), "$.chunks", "from 1 to 1024");
  expect_leakage_refused(file, with("/variant", "q8\x1b[2J"), "$.variant", "control character");
  expect_leakage_refused(file, with("/compression", nlohmann::json::array()), "$.compression",
                         "no boundary");
  const nlohmann::json sweep = {{"schema", "splitsim.train_sweep/1"},
                                {"runs", {ok, with("/leakage/0/forward/samples", "4")}}};
  expect_leakage_refused(file, sweep, "$.runs[1].leakage[0].forward.samples", "got \"4\"");
  // Not a train report: the field is named.
  std::ofstream(file) << R"({"schema": "splitsim.metrics/1"})";
  try {
    read_leakage_report(file);
    ADD_FAILURE() << "accepted a metrics file";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "leakage");
  }
  std::ofstream(file) << ok.dump();
  EXPECT_EQ(read_leakage_report(file).at(0).measurements, 2u);  // the valid run still reads
}

TEST_F(LeakageTest, MatchesByCutsAndCodecsPreferringTheChunkCount) {
  const auto runs = read_leakage_report(file);
  const Exploration e = exploration();
  const auto& c = e.result.candidates;
  EXPECT_EQ(candidate_cuts(c[0]), std::vector<std::string>{"layer1.2"});
  EXPECT_EQ(matching_leakage_run(c[0], runs), 3);   // q4 at layer1.2
  EXPECT_EQ(matching_leakage_run(c[1], runs), -1);  // q4 at layer3.2: another cut
  EXPECT_EQ(matching_leakage_run(c[2], runs), 2);   // q8 chunks 4
  EXPECT_EQ(matching_leakage_run(c[3], runs), 1);   // q8 chunks 1
  EXPECT_EQ(matching_leakage_run(c[4], runs), 4);   // none at layer3.2
  EXPECT_EQ(matching_leakage_run(c[5], runs), 0);   // none at layer1.2
  // Chunks do not have to match: another chunk count takes the first.
  Candidate eight = c[3];
  eight.chunks = 8;
  EXPECT_EQ(matching_leakage_run(eight, runs), 1);
  // A U-shape candidate has two cuts: a one-boundary run does not match it.
  Candidate ushape = c[5];
  ushape.partition.push_back({"client", "x", "y"});
  ushape.compression.push_back(ushape.compression.front());
  EXPECT_EQ(candidate_cuts(ushape), (std::vector<std::string>{"layer1.2", "fc"}));
  EXPECT_EQ(matching_leakage_run(ushape, runs), -1);
}

TEST_F(LeakageTest, KeepsThePlansWithinTheLimitsByTime) {
  const auto runs = read_leakage_report(file);
  const Exploration e = exploration();
  const LeakageRanking any = rank_by_leakage(e, runs, {});
  EXPECT_EQ(labels(e, any),
            (std::vector<std::string>{"q4 shallow", "q8 chunks=4", "q8", "none deep", "none"}));
  EXPECT_EQ(any.unmeasured, 1u);  // q4 deep
  EXPECT_EQ(any.over_limit, 0u);
  LeakageLimits limits;
  limits.max_psnr_db = 18.5;  // q8 (19) and none (20) leak more
  const LeakageRanking psnr = rank_by_leakage(e, runs, limits);
  EXPECT_EQ(labels(e, psnr), (std::vector<std::string>{"q4 shallow", "q8 chunks=4", "none deep"}));
  EXPECT_EQ(psnr.over_limit, 2u);
  limits.max_label_auc = 0.85;             // q8 chunks 4 (0.9) too
  limits.max_distance_correlation = 0.35;  // q4 (0.4) too
  const LeakageRanking all = rank_by_leakage(e, runs, limits);
  EXPECT_EQ(labels(e, all), std::vector<std::string>{"none deep"});
  EXPECT_EQ(all.over_limit, 4u);
  EXPECT_DOUBLE_EQ(all.rows[0].time_s, 0.9);
  // A part not measured is within its limit.
  EXPECT_TRUE(within_limits(LeakageSummary{}, limits));
  LeakageSummary leaky;
  leaky.label_auc = 0.9;
  EXPECT_FALSE(within_limits(leaky, limits));
  const nlohmann::json j = leakage_ranking_json(e, runs, all, nullptr, 10);
  EXPECT_EQ(j["ranked"], 1);
  EXPECT_EQ(j["unmeasured"], 1);
  EXPECT_EQ(j["over_limit"], 4);
  EXPECT_EQ(j["rank_by"], "time_per_batch");
  EXPECT_DOUBLE_EQ(j["limits"]["max_psnr_db"].get<double>(), 18.5);
  EXPECT_EQ(j["ranking"][0]["measured_variant"], "none deep");
  EXPECT_DOUBLE_EQ(j["ranking"][0]["reconstruction_psnr_db"].get<double>(), 11);
  EXPECT_DOUBLE_EQ(j["ranking"][0]["label_auc_direction"].get<double>(), 0.7);
  EXPECT_FALSE(j["ranking"][0].contains("test_accuracy"));
}

TEST_F(LeakageTest, TheFrontIsOverTimeAndPsnr) {
  const auto runs = read_leakage_report(file);
  const Exploration e = exploration();
  // (time, PSNR): q4 shallow (0.2, 12), q8 chunks=4 (0.4, 18), q8 (0.5, 19),
  // none deep (0.9, 11), none (1.0, 20): q4 shallow is faster than the
  // others and leaks less than all but none deep.
  const LeakageRanking r = rank_by_leakage(e, runs, {});
  std::vector<std::string> front;
  for (size_t i : r.front) front.push_back(e.result.candidates[i].label);
  EXPECT_EQ(front, (std::vector<std::string>{"q4 shallow", "none deep"}));
  // The front is over every matched candidate, limits or not.
  LeakageLimits tight;
  tight.max_psnr_db = 5;
  const LeakageRanking none = rank_by_leakage(e, runs, tight);
  EXPECT_TRUE(none.rows.empty());
  EXPECT_EQ(none.front, r.front);
  const nlohmann::json j = leakage_ranking_json(e, runs, r, nullptr, 10);
  EXPECT_EQ(j["front"], nlohmann::json({"q4 shallow", "none deep"}));
}

// With accuracy: ranked by time to the target, a plan must be in both
// rankings, and the front gains test accuracy (higher better).
TEST_F(LeakageTest, WithAccuracyRanksByTimeToTheTargetAndTheFrontWeighsAccuracy) {
  const auto runs = read_leakage_report(file);
  const Exploration e = exploration();
  auto acc = [](const std::string& v, const CodecSpec& c, double at100, double at200) {
    MeasuredAccuracy m;
    m.variant = v;
    m.codecs = codecs_key({{c, c}});
    m.curve = {{100, at100}, {200, at200}};
    m.best_accuracy = std::max(at100, at200);
    return m;
  };
  // q4 never reaches 0.7; q8 after 100 batches, none after 200.
  const std::vector<MeasuredAccuracy> accuracy_runs = {acc("none", CodecSpec{}, 0.6, 0.9),
                                                       acc("q8", quantized(8), 0.75, 0.8),
                                                       acc("q4", quantized(4), 0.5, 0.6)};
  const AccuracyRanking a = rank_by_time_to_accuracy(e, accuracy_runs, 0.7, -1);
  LeakageLimits limits;
  limits.max_psnr_db = 19.5;  // none at layer1.2 (20) is out
  const LeakageRanking r = rank_by_leakage(e, runs, limits, &a, &accuracy_runs);
  EXPECT_TRUE(r.by_time_to_target);
  // q8 chunks=4: 100 x 0.4; q8: 100 x 0.5; none deep: 200 x 0.9.
  EXPECT_EQ(labels(e, r), (std::vector<std::string>{"q8 chunks=4", "q8", "none deep"}));
  EXPECT_DOUBLE_EQ(r.rows[0].time_s, 40);
  EXPECT_EQ(r.not_accurate, 1u);  // q4 shallow: never reached 70%
  EXPECT_EQ(r.over_limit, 1u);
  EXPECT_EQ(r.unmeasured, 1u);
  // (time, PSNR, -accuracy): q8 chunks=4 (0.4, 18, -0.8) joins q4 shallow
  // (0.2, 12, -0.6) and none deep (0.9, 11, -0.9): more accurate than the
  // first, faster than the second. q8 (0.5, 19, -0.8) is dominated by q8
  // chunks=4, none (1.0, 20, -0.9) by none deep.
  std::vector<std::string> front;
  for (size_t i : r.front) front.push_back(e.result.candidates[i].label);
  EXPECT_EQ(front, (std::vector<std::string>{"q4 shallow", "q8 chunks=4", "none deep"}));
  const nlohmann::json j = leakage_ranking_json(e, runs, r, &a, 2);
  EXPECT_EQ(j["rank_by"], "time_to_target");
  EXPECT_EQ(j["ranking"].size(), 2u);
  EXPECT_EQ(j["not_accurate"], 1);
  EXPECT_DOUBLE_EQ(j["target_accuracy"].get<double>(), 0.7);
  EXPECT_DOUBLE_EQ(j["ranking"][0]["test_accuracy"].get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(j["ranking"][0]["time_to_target_s"].get<double>(), 40);
}

// A one-vs-rest run's accuracy is a binary one and its label AUC that of
// two classes: the reports of one exploration train one task, and the first
// run of another is named.
TEST_F(LeakageTest, ReportsOfAnotherTaskAreRefusedNamingTheRun) {
  nlohmann::json ten = leakage_run_json("q8", quantized(8), 1, "layer1.2", 19, 0.68, 0.97);
  ten["dataset"] = "fashion_mnist";
  ten["one_vs_rest"] = nullptr;
  nlohmann::json binary = ten;
  binary["one_vs_rest"] = 0;
  const std::string other = file + ".binary.json";
  std::ofstream(file) << ten.dump();
  std::ofstream(other) << nlohmann::json{
      {"schema", "splitsim.train_sweep/1"},
      {"runs", {ten, binary}}}.dump();
  const std::vector<MeasuredAccuracy> accuracy = read_accuracy_report(file);
  const std::vector<MeasuredLeakage> leakage = read_leakage_report(other);
  EXPECT_EQ(leakage[1].task, "fashion_mnist with class 0 against the rest");
  try {
    check_one_task(accuracy, leakage);
    ADD_FAILURE() << "a one-vs-rest run beside ten-class ones was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), other + ": $.runs[1]") << e.what();
    EXPECT_NE(e.message().find(file + ": $ trained fashion_mnist:"), std::string::npos) << e.what();
  }
  // One task, or a report that names none (written before train named it): accepted.
  EXPECT_NO_THROW(check_one_task(accuracy, {leakage[0]}));
  nlohmann::json unnamed = binary;
  unnamed.erase("dataset");
  unnamed.erase("one_vs_rest");
  std::ofstream(other) << unnamed.dump();
  EXPECT_NO_THROW(check_one_task(accuracy, read_leakage_report(other)));
  // A value train does not write is refused at its path.
  unnamed["one_vs_rest"] = 12;
  expect_leakage_refused(other, unnamed, "$.one_vs_rest", "a class 0 to 9");
  unnamed["one_vs_rest"] = nullptr;
  unnamed["dataset"] = "fashion mnist\u001b";
  expect_leakage_refused(other, unnamed, "$.dataset", "a dataset's name");
  std::filesystem::remove(other);
}

TEST(LeakageLimitsTest, OutOfRangeLimitsNameTheirField) {
  auto refused = [](const LeakageLimits& l) {
    try {
      check_leakage_limits(l);
    } catch (const InputError& e) {
      return e.where();
    }
    return std::string("accepted");
  };
  LeakageLimits l;
  EXPECT_EQ(refused(l), "accepted");
  l.max_distance_correlation = -1;
  l.max_label_auc = 0.5;
  l.max_psnr_db = -3;
  EXPECT_EQ(refused(l), "accepted");
  l.max_distance_correlation = 1.01;
  EXPECT_EQ(refused(l), "max_distance_correlation");
  l.max_distance_correlation.reset();
  l.max_label_auc = -0.1;
  EXPECT_EQ(refused(l), "max_label_auc");
  l.max_label_auc.reset();
  l.max_psnr_db = std::numeric_limits<double>::infinity();
  EXPECT_EQ(refused(l), "max_psnr");
}

}  // namespace
}  // namespace splitsim
