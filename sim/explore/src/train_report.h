#pragma once
// The reports of `splitsim train` as the explorer reads them: one run
// (schema splitsim.train/1) or a sweep of them (splitsim.train_sweep/1, in
// "runs"). What accuracy.cpp and leakage.cpp share; internal to
// splitsim_explore.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/limits.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim::train_report {

// Batches of one evaluation: at least 1, at most a training of the longest
// run (limits::kMaxIterations) a thousand times over.
constexpr int64_t kMaxBatches = limits::kMaxIterations * 1000;
// Runs in one report, and evaluations (or measurements) in one run.
constexpr size_t kMaxRuns = 4096;
constexpr size_t kMaxEvaluations = 100000;

// Calls read(run, path) for the run of a train report or each run of a
// sweep, `path` naming it ("FILE: $", "FILE: $.runs[2]"). Throws
// InputError(flag, ...) when `file` is not such a report or holds no run.
void for_each_run(const std::string& file, const std::string& flag,
                  const std::function<void(const nlohmann::json&, const std::string&)>& read);

// REQUIRES: run is an object. What it trained on, which the reports of one
// exploration must agree on: its "dataset" and, from `train --one-vs-rest`,
// the class against the rest ("" where the report names neither). Throws
// InputError at path.dataset or path.one_vs_rest for a value train does
// not write.
std::string task_of(const nlohmann::json& run, const std::string& path);

// REQUIRES: run is an object. Its "compression": one {forward, backward}
// codec object per boundary, each checked at its path.
std::vector<BoundaryCodecs> read_compression(const nlohmann::json& run, const std::string& path);

}  // namespace splitsim::train_report
