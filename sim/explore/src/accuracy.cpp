#include "splitsim/explore/accuracy.h"

#include <algorithm>
#include <cmath>

#include "json_read.h"
#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"
#include "train_report.h"

namespace splitsim {
namespace {

namespace jr = json_read;

// A test accuracy: a fraction in [0, 1]; a value in (1, 100] is named as
// the percentage it likely is.
double read_accuracy(const nlohmann::json& v, const std::string& path) {
  if (v.is_number()) {
    const double a = v.get<double>();
    if (a > 1 && a <= 100)
      throw InputError(path, "expected a fraction in [0, 1], got " + jr::show(v) +
                                 "; give accuracies as fractions (0.8), not percentages");
  }
  return jr::read_number(v, path, {0, false, 1, false});
}

MeasuredAccuracy read_run(const nlohmann::json& j, const std::string& path) {
  jr::require_object(j, path, "a train report object");
  for (const char* key : {"variant", "chunks", "compression", "evaluations"})
    jr::require_key(j, path, key, "what `splitsim train` writes");
  MeasuredAccuracy m;
  m.variant = jr::read_label(j.at("variant"), path + ".variant");
  m.task = train_report::task_of(j, path);
  m.where = path;
  m.chunks = jr::read_int(j.at("chunks"), path + ".chunks", 1, limits::kMaxChunks);
  m.codecs = codecs_key(train_report::read_compression(j, path));
  const nlohmann::json& evals = j.at("evaluations");
  const std::string ep = path + ".evaluations";
  jr::require_array(evals, ep, "the run's evaluations, in order of batches", 1);
  if (evals.size() > train_report::kMaxEvaluations)
    throw InputError(ep, std::to_string(evals.size()) + " evaluations; the limit is " +
                             std::to_string(train_report::kMaxEvaluations));
  for (size_t i = 0; i < evals.size(); ++i) {
    const std::string at = jr::index_path(ep, i);
    const nlohmann::json& e = evals[i];
    jr::require_object(e, at, "an evaluation object");
    jr::require_key(e, at, "batches", "the training batches done");
    jr::require_key(e, at, "test_accuracy", "a fraction in [0, 1]");
    const int64_t batches =
        jr::read_int(e.at("batches"), at + ".batches", 1, train_report::kMaxBatches);
    if (!m.curve.empty() && batches <= m.curve.back().first)
      throw InputError(at + ".batches", "evaluations must come in increasing order of batches; " +
                                            std::to_string(batches) + " follows " +
                                            std::to_string(m.curve.back().first));
    const double a = read_accuracy(e.at("test_accuracy"), at + ".test_accuracy");
    m.curve.push_back({batches, a});
    m.best_accuracy = std::max(m.best_accuracy, a);
  }
  return m;
}

bool all_none(const std::string& key) {
  const nlohmann::json j = nlohmann::json::parse(key);
  for (const auto& b : j)
    if (b.at("forward").at("method") != "none" || b.at("backward").at("method") != "none")
      return false;
  return true;
}

}  // namespace

std::string codecs_key(const std::vector<BoundaryCodecs>& codecs) {
  nlohmann::json j = nlohmann::json::array();
  for (const BoundaryCodecs& b : codecs)
    j.push_back({{"forward", codec_to_json(b.forward)}, {"backward", codec_to_json(b.backward)}});
  return j.dump();
}

std::vector<MeasuredAccuracy> read_accuracy_report(const std::string& file,
                                                   const std::string& flag) {
  std::vector<MeasuredAccuracy> out;
  train_report::for_each_run(file, flag,
                             [&out](const nlohmann::json& run, const std::string& path) {
                               out.push_back(read_run(run, path));
                             });
  return out;
}

int matching_accuracy_run(const Candidate& c, const std::vector<MeasuredAccuracy>& runs) {
  const std::string key = codecs_key(c.compression);
  int match = -1;
  for (size_t i = 0; i < runs.size(); ++i)
    if (runs[i].codecs == key &&
        (match < 0 ||
         (runs[i].chunks == c.chunks && runs[static_cast<size_t>(match)].chunks != c.chunks)))
      match = static_cast<int>(i);
  return match;
}

int64_t batches_to_reach(const MeasuredAccuracy& run, double target) {
  for (const auto& [batches, accuracy] : run.curve)
    if (accuracy >= target) return batches;
  return -1;
}

AccuracyRanking rank_by_time_to_accuracy(const Exploration& e,
                                         const std::vector<MeasuredAccuracy>& runs, double target,
                                         double max_drop) {
  AccuracyRanking r;
  r.target = target;
  r.max_drop = max_drop;
  // The mean over the uncompressed runs (several chunk counts, say): the
  // largest would favour the luckiest of them.
  double sum = 0;
  int n = 0;
  for (const MeasuredAccuracy& m : runs)
    if (all_none(m.codecs)) {
      sum += m.best_accuracy;
      ++n;
    }
  if (n > 0) r.reference = sum / n;
  if (max_drop >= 0 && std::isnan(r.reference))
    throw InputError("max_accuracy_drop",
                     "the accuracy report has no uncompressed run (every codec none) to "
                     "measure the drop against");
  std::vector<std::pair<AccuracyRow, size_t>> rows;  // with the exploration's rank
  for (size_t k = 0; k < e.ranking.size(); ++k) {
    const Candidate& c = e.result.candidates[e.ranking[k]];
    const int match = matching_accuracy_run(c, runs);
    if (match < 0) {
      ++r.unmeasured;
      continue;
    }
    const MeasuredAccuracy& m = runs[static_cast<size_t>(match)];
    if (max_drop >= 0 && m.best_accuracy < r.reference - max_drop) {
      ++r.over_drop;
      continue;
    }
    const int64_t batches = batches_to_reach(m, target);
    if (batches < 0) {
      ++r.not_reached;
      continue;
    }
    rows.push_back({{e.ranking[k], static_cast<size_t>(match), m.best_accuracy, batches,
                     static_cast<double>(batches) * c.time_per_batch_s},
                    k});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.first.time_s != b.first.time_s ? a.first.time_s < b.first.time_s : a.second < b.second;
  });
  for (const auto& [row, k] : rows) r.rows.push_back(row);
  return r;
}

nlohmann::json accuracy_ranking_json(const Exploration& e,
                                     const std::vector<MeasuredAccuracy>& runs,
                                     const AccuracyRanking& r, size_t top) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < r.rows.size() && i < top; ++i) {
    const AccuracyRow& a = r.rows[i];
    const Candidate& c = e.result.candidates[a.candidate];
    rows.push_back({{"label", c.label},
                    {"time_per_batch_s", c.time_per_batch_s},
                    {"wire_bytes_per_batch", c.wire_bytes_per_batch},
                    {"measured_variant", runs[a.run].variant},
                    {"test_accuracy", a.accuracy},
                    {"batches_to_target", a.batches},
                    {"time_to_target_s", a.time_s}});
  }
  return {
      {"target_accuracy", r.target},
      {"max_accuracy_drop", r.max_drop < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.max_drop)},
      {"reference_accuracy",
       std::isnan(r.reference) ? nlohmann::json(nullptr) : nlohmann::json(r.reference)},
      {"ranked", r.rows.size()},
      {"unmeasured", r.unmeasured},
      {"over_drop", r.over_drop},
      {"not_reached", r.not_reached},
      {"ranking", rows}};
}

}  // namespace splitsim
