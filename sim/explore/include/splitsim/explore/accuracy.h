#pragma once
// Accuracy beside time. `splitsim train` measures what each codec costs in
// test accuracy (reports splitsim.train/1, or splitsim.train_sweep/1 for a
// sweep); `explore --accuracy` ranks its candidates by the time to a target
// accuracy: the training batches the candidate's codecs needed to reach it
// (measured) times the candidate's simulated time per batch. A candidate
// takes the measured run with the same codecs at every boundary (the same
// chunk count when there is one): the accuracy was measured at the trained
// scenario's cut, and is assumed to carry over to other cuts with the same
// codecs. Candidates whose codecs were not trained are left out of that
// ranking, and so are those that lose more than --max-accuracy-drop against
// the uncompressed run. Documented in sim/explore/README.md.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "splitsim/costmodel/scenario.h"
#include "splitsim/explore/exploration.h"

namespace splitsim {

// One trained variant.
struct MeasuredAccuracy {
  std::string variant;
  std::string codecs;  // codecs_key() of its boundaries
  int64_t chunks = 1;
  double best_accuracy = 0;                       // best test accuracy over its evaluations
  std::vector<std::pair<int64_t, double>> curve;  // (training batches done, test accuracy)
  std::string task;                               // its dataset and one-vs-rest class ("" unnamed)
  std::string where;                              // "FILE: $.runs[i]"
};

// The codecs of every boundary, in order, as one canonical string
// ([{"backward": ..., "forward": ...}, ...] of codec_to_json).
std::string codecs_key(const std::vector<BoundaryCodecs>& codecs);

// The runs of a train report (one run) or a train sweep report. Throws
// InputError naming `field` (or the file's JSON path) when the file is not one.
std::vector<MeasuredAccuracy> read_accuracy_report(const std::string& file,
                                                   const std::string& field = "accuracy");

// The run `c` takes: the one with its codecs_key(), with its chunk count
// when one was trained, else the first; -1 when no run has its codecs.
int matching_accuracy_run(const Candidate& c, const std::vector<MeasuredAccuracy>& runs);

// Training batches before the first evaluation at or above `target`; -1
// when none reached it.
int64_t batches_to_reach(const MeasuredAccuracy& run, double target);

struct AccuracyRow {
  size_t candidate = 0;  // index into the exploration's candidates
  size_t run = 0;        // index into the measured runs
  double accuracy = 0;   // the run's best test accuracy
  int64_t batches = 0;   // to reach the target
  double time_s = 0;     // batches x the candidate's simulated time per batch
};

struct AccuracyRanking {
  double target = 0;     // test accuracy to reach (a fraction)
  double max_drop = -1;  // largest loss against the uncompressed run (fraction; < 0: any)
  // Best accuracy of the uncompressed runs (every codec none; their mean
  // when there are several); NaN without one.
  double reference = std::numeric_limits<double>::quiet_NaN();
  std::vector<AccuracyRow> rows;  // by time to the target, then by rank of the exploration
  size_t unmeasured = 0;          // simulated candidates whose codecs no run trained
  size_t over_drop = 0;           // ... whose run lost more than max_drop
  size_t not_reached = 0;         // ... whose run never reached the target
};

// Ranks the simulated candidates of `e` (in its ranking) by the time to
// `target`. Throws InputError("max_accuracy_drop") when a drop is asked for
// and the runs have no uncompressed one.
AccuracyRanking rank_by_time_to_accuracy(const Exploration& e,
                                         const std::vector<MeasuredAccuracy>& runs, double target,
                                         double max_drop);

// The ranking as JSON (the explore report's "accuracy"), its first `top` rows.
nlohmann::json accuracy_ranking_json(const Exploration& e,
                                     const std::vector<MeasuredAccuracy>& runs,
                                     const AccuracyRanking& r, size_t top);

}  // namespace splitsim
