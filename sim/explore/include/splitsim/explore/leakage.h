#pragma once
// Leakage beside time (and accuracy). `splitsim train --leakage` measures
// what crosses each boundary says about the client's data (reports
// splitsim.train/1 or splitsim.train_sweep/1 with "cuts" and "leakage");
// `explore --leakage` keeps the candidates whose measured leakage is within
// limits and ranks them by time per batch (by the time to the target
// accuracy with --accuracy). Leakage depends on where the model is cut: a
// candidate takes the measured run with the same cuts (the last unit before
// each boundary) and the same codecs at every boundary (the same chunk
// count when there is one). Documented in sim/explore/README.md.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "splitsim/explore/accuracy.h"
#include "splitsim/explore/exploration.h"

namespace splitsim {

// The worst a run leaked, over every measurement (evaluation x boundary)
// that reaches a party without the data it is about (activations: the
// first stage's party holds the inputs; gradients: the last stage's holds
// the labels); empty where nothing of that kind was measured.
struct LeakageSummary {
  std::optional<double> psnr_db;               // forward reconstruction_psnr_db, the largest
  std::optional<double> distance_correlation;  // forward, the largest
  std::optional<double> label_auc;             // backward label_auc_direction, the largest
};

// One trained variant with its leakage measured.
struct MeasuredLeakage {
  std::string file;  // the report it came from
  std::string variant;
  std::string codecs;             // codecs_key() of its boundaries
  std::vector<std::string> cuts;  // per boundary: the last unit before it
  int64_t chunks = 1;
  size_t measurements = 0;  // entries of its "leakage"
  LeakageSummary worst;
  std::string task;   // its dataset and one-vs-rest class ("" unnamed)
  std::string where;  // "FILE: $.runs[i]"
};

// Per boundary of `c`'s partition: the last unit before it.
std::vector<std::string> candidate_cuts(const Candidate& c);

// The runs of a train report (one run) or a train sweep report, each
// checked: InputError naming the file and the JSON path, or `field` when the
// file is not a train report. A run trained without --leakage is an error.
std::vector<MeasuredLeakage> read_leakage_report(const std::string& file,
                                                 const std::string& field = "leakage");
// Throws InputError at the first run (its `where`) whose task differs from
// the first named one's, accuracy runs before leakage runs: time, accuracy
// and leakage are weighed for one task (a one-vs-rest run's accuracy is a
// binary one). Runs whose report names no task are not compared.
void check_one_task(const std::vector<MeasuredAccuracy>& accuracy,
                    const std::vector<MeasuredLeakage>& leakage);

// The runs of every file, in order.
std::vector<MeasuredLeakage> read_leakage_reports(const std::vector<std::string>& files,
                                                  const std::string& field = "leakage");

// The most a kept candidate may leak; empty: no limit.
struct LeakageLimits {
  std::optional<double> max_psnr_db;
  std::optional<double> max_distance_correlation;  // in [-1, 1]
  std::optional<double> max_label_auc;             // in [0, 1]
};

// Throws InputError("max_distance_correlation" / "max_label_auc" /
// "max_psnr") for a limit out of its range (or not finite).
void check_leakage_limits(const LeakageLimits& limits);

// Whether `worst` is within `limits`; a part not measured is within.
bool within_limits(const LeakageSummary& worst, const LeakageLimits& limits);

// The run `c` takes: the one with its cuts and codecs_key(), with its chunk
// count when one was measured, else the first; -1 when none.
int matching_leakage_run(const Candidate& c, const std::vector<MeasuredLeakage>& runs);

struct LeakageRow {
  size_t candidate = 0;            // index into the exploration's candidates
  size_t run = 0;                  // index into the measured runs
  double time_s = 0;               // time per batch, or time to the target with accuracy
  std::optional<size_t> accuracy;  // index into the accuracy ranking's rows
};

struct LeakageRanking {
  LeakageLimits limits;
  bool by_time_to_target = false;  // ranked by the accuracy ranking's time to the target
  // Within the limits (and in the accuracy ranking when by_time_to_target),
  // by time, then by rank of the exploration.
  std::vector<LeakageRow> rows;
  size_t unmeasured = 0;    // simulated candidates no run matches (cuts and codecs)
  size_t over_limit = 0;    // ... whose run leaked more than a limit
  size_t not_accurate = 0;  // ... within the limits, not in the accuracy ranking
  // Matched candidates no other matched one dominates over (time per batch,
  // reconstruction PSNR, and test accuracy (higher better) when ranked by
  // time to the target; then only those whose codecs were trained),
  // indices into the candidates, in the exploration's ranking order.
  std::vector<size_t> front;
};

// Ranks the simulated candidates of `e` within `limits`. With `accuracy`
// (rank_by_time_to_accuracy() over `accuracy_runs`), a candidate must be in
// its ranking too and is ranked by its time to the target.
LeakageRanking rank_by_leakage(const Exploration& e, const std::vector<MeasuredLeakage>& runs,
                               const LeakageLimits& limits,
                               const AccuracyRanking* accuracy = nullptr,
                               const std::vector<MeasuredAccuracy>* accuracy_runs = nullptr);

// The ranking as JSON (the explore report's "leakage"), its first `top` rows.
nlohmann::json leakage_ranking_json(const Exploration& e, const std::vector<MeasuredLeakage>& runs,
                                    const LeakageRanking& r, const AccuracyRanking* accuracy,
                                    size_t top);

}  // namespace splitsim
