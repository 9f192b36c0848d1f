#pragma once
// `splitsim train`'s report: the runs of run_train (train.h), each with the
// simulator's time per batch for its scenario's deployment and, given a
// target accuracy, the batches and predicted time to reach it; as JSON and as
// the table a terminal shows. No LibTorch in this header.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "splitsim/exec/train.h"

namespace splitsim {

struct TrainReport {
  // splitsim.train/1 for one run, splitsim.train_sweep/1 for several
  // (exec/README.md).
  nlohmann::json json;
  bool complete = true;  // every run finished
  std::string error;     // else the failed run's error
};

// The report of `runs` (of `scenario`); target_accuracy_pct < 0: no target.
// Simulates each run's plan that has evaluations.
TrainReport train_report(const std::vector<TrainOutcome>& runs, const std::string& scenario,
                         double target_accuracy_pct);

// The report as a table: one row per evaluation for one run, one row per
// run for a sweep; "" for a report without evaluations (a client process).
std::string train_table(const nlohmann::json& report);

}  // namespace splitsim
