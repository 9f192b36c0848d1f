#include "splitsim/explore/leakage.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "json_read.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"
#include "train_report.h"

namespace splitsim {
namespace {

namespace jr = json_read;

// A PSNR in dB: 10 log10(range^2 / mse); beyond +-1000 dB (an mse 1e-100
// of the range^2) is not a measurement.
constexpr jr::NumberRange kPsnrRange{-1000, false, 1000, false};

// A finite number >= 0 (a time, an mse, an epoch).
double read_finite(const nlohmann::json& v, const std::string& path) {
  const double x = jr::read_number(v, path, jr::non_negative());
  if (!std::isfinite(x))
    throw InputError(path, "expected a finite non-negative number, got " + jr::show(v));
  return x;
}

void require_keys(const nlohmann::json& j, const std::string& path,
                  const std::vector<std::string>& keys) {
  for (const std::string& key : keys) jr::require_key(j, path, key, "what `splitsim train` writes");
}

// The larger of `worst` and `x`.
void keep_max(std::optional<double>* worst, double x) {
  if (!worst->has_value() || x > **worst) *worst = x;
}

// "forward": the activations' leakage (null: not measured).
void read_forward(const nlohmann::json& f, const std::string& path, LeakageSummary* worst) {
  if (f.is_null()) return;
  jr::require_object(f, path, "the activations' leakage (or null)");
  require_keys(f, path,
               {"samples", "attacker_samples", "distance_correlation", "reconstruction_mse",
                "reconstruction_psnr_db", "baseline_mse", "baseline_psnr_db"});
  jr::read_int(f.at("samples"), path + ".samples", 1, train_report::kMaxBatches);
  jr::read_int(f.at("attacker_samples"), path + ".attacker_samples", 0, train_report::kMaxBatches);
  read_finite(f.at("reconstruction_mse"), path + ".reconstruction_mse");
  read_finite(f.at("baseline_mse"), path + ".baseline_mse");
  jr::read_number(f.at("baseline_psnr_db"), path + ".baseline_psnr_db", kPsnrRange);
  keep_max(&worst->distance_correlation,
           jr::read_number(f.at("distance_correlation"), path + ".distance_correlation",
                           {-1, false, 1, false}));
  keep_max(&worst->psnr_db, jr::read_number(f.at("reconstruction_psnr_db"),
                                            path + ".reconstruction_psnr_db", kPsnrRange));
}

// "backward": the gradients' label leakage (null: no gradient crossed).
void read_backward(const nlohmann::json& b, const std::string& path, LeakageSummary* worst) {
  if (b.is_null()) return;
  jr::require_object(b, path, "the gradients' leakage (or null)");
  require_keys(b, path, {"samples", "label_auc_norm", "label_auc_direction"});
  jr::read_int(b.at("samples"), path + ".samples", 1, train_report::kMaxBatches);
  jr::read_number(b.at("label_auc_norm"), path + ".label_auc_norm", {0, false, 1, false});
  keep_max(&worst->label_auc, jr::read_number(b.at("label_auc_direction"),
                                              path + ".label_auc_direction", {0, false, 1, false}));
}

// Who holds what: the inputs, on the party of the first stage (boundary 0's
// "from"); the labels, on the party of the last stage (the last boundary's
// "to"). Empty where no entry says.
struct Owners {
  std::string inputs, labels;
};

Owners owners_of(const nlohmann::json& entries, size_t boundaries) {
  Owners o;
  for (const auto& e : entries) {
    if (!e.is_object() || !e.contains("boundary") || !e["boundary"].is_number_integer()) continue;
    const int64_t b = e["boundary"].get<int64_t>();
    if (b == 0 && e.contains("from") && e["from"].is_string()) o.inputs = e["from"];
    if (b == static_cast<int64_t>(boundaries) - 1 && e.contains("to") && e["to"].is_string())
      o.labels = e["to"];
  }
  return o;
}

// One measurement: an evaluation's leakage at one boundary of `cuts`. What
// reaches a party that holds it already tells nobody anything new, so it is
// checked but not counted: in a U-shape, the server's output coming back to
// the client that holds the inputs, and the gradient the server returns to
// the client that holds the labels.
void read_entry(const nlohmann::json& e, const std::string& path,
                const std::vector<std::string>& cuts, const Owners& owners, LeakageSummary* worst) {
  jr::require_object(e, path, "a leakage measurement object");
  require_keys(e, path, {"batches", "boundary", "cut", "forward", "backward"});
  jr::read_int(e.at("batches"), path + ".batches", 1, train_report::kMaxBatches);
  const int64_t b =
      jr::read_int(e.at("boundary"), path + ".boundary", 0, static_cast<int64_t>(cuts.size()) - 1);
  const std::string cut = jr::read_label(e.at("cut"), path + ".cut");
  if (cut != cuts[static_cast<size_t>(b)])
    throw InputError(path + ".cut", "\"" + cut + "\" is not the run's cut at boundary " +
                                        std::to_string(b) + " ($.cuts: \"" +
                                        cuts[static_cast<size_t>(b)] + "\")");
  for (const char* key : {"from", "to"})
    if (e.contains(key)) jr::read_label(e.at(key), jr::member_path(path, key));
  for (const char* key : {"epoch", "seconds"})
    if (e.contains(key)) read_finite(e.at(key), jr::member_path(path, key));
  LeakageSummary read;
  read_forward(e.at("forward"), path + ".forward", &read);
  read_backward(e.at("backward"), path + ".backward", &read);
  // Forward reaches the stage after the boundary ("to"), backward the one
  // before it ("from").
  const std::string to = e.value("to", ""), from = e.value("from", "");
  if (owners.inputs.empty() || to != owners.inputs) {
    if (read.psnr_db) keep_max(&worst->psnr_db, *read.psnr_db);
    if (read.distance_correlation)
      keep_max(&worst->distance_correlation, *read.distance_correlation);
  }
  if ((owners.labels.empty() || from != owners.labels) && read.label_auc)
    keep_max(&worst->label_auc, *read.label_auc);
}

std::vector<std::string> read_cuts(const nlohmann::json& j, const std::string& path,
                                   size_t boundaries) {
  const std::string at = path + ".cuts";
  jr::require_array(j.at("cuts"), at, "per boundary, the last unit before it");
  if (j.at("cuts").size() != boundaries)
    throw InputError(at, std::to_string(j.at("cuts").size()) + " cuts for " +
                             std::to_string(boundaries) + " boundaries ($.compression)");
  std::vector<std::string> cuts;
  for (size_t i = 0; i < boundaries; ++i)
    cuts.push_back(jr::read_label(j.at("cuts")[i], jr::index_path(at, i)));
  return cuts;
}

MeasuredLeakage read_leakage_run(const nlohmann::json& j, const std::string& path,
                                 const std::string& file) {
  jr::require_object(j, path, "a train report object");
  require_keys(j, path, {"variant", "chunks", "compression"});
  MeasuredLeakage m;
  m.file = file;
  m.variant = jr::read_label(j.at("variant"), path + ".variant");
  m.task = train_report::task_of(j, path);
  m.where = path;
  if (!j.contains("leakage") || j["leakage"].is_null() ||
      (j["leakage"].is_array() && j["leakage"].empty()))
    throw InputError(path + ".leakage", "no leakage measured: run \"" + m.variant +
                                            "\" was trained without --leakage (splitsim train "
                                            "--leakage)");
  require_keys(j, path, {"cuts"});
  m.chunks = jr::read_int(j.at("chunks"), path + ".chunks", 1, limits::kMaxChunks);
  const std::vector<BoundaryCodecs> codecs = train_report::read_compression(j, path);
  if (codecs.empty())
    throw InputError(path + ".compression", "no boundary: nothing crossed to measure");
  m.codecs = codecs_key(codecs);
  m.cuts = read_cuts(j, path, codecs.size());
  const nlohmann::json& entries = j.at("leakage");
  const std::string lp = path + ".leakage";
  jr::require_array(entries, lp, "one measurement per evaluation and boundary", 1);
  if (entries.size() > train_report::kMaxEvaluations)
    throw InputError(lp, std::to_string(entries.size()) + " measurements; the limit is " +
                             std::to_string(train_report::kMaxEvaluations));
  const Owners owners = owners_of(entries, m.cuts.size());
  for (size_t i = 0; i < entries.size(); ++i)
    read_entry(entries[i], jr::index_path(lp, i), m.cuts, owners, &m.worst);
  m.measurements = entries.size();
  return m;
}

bool within(const std::optional<double>& x, const std::optional<double>& limit) {
  return !x || !limit || *x <= *limit;
}

void check_limit(const std::optional<double>& x, double lo, double hi, const std::string& field) {
  if (x && !(std::isfinite(*x) && *x >= lo && *x <= hi))
    throw InputError(field, "expected a number in [" + jr::show(lo) + ", " + jr::show(hi) +
                                "], got " + jr::show(*x));
}

nlohmann::json optional_json(const std::optional<double>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json(nullptr);
}

// The front's coordinates (all minimised) of a matched candidate: time per
// batch, PSNR (none measured: the lowest) and, with accuracy, -accuracy.
std::vector<double> front_point(const Candidate& c, const MeasuredLeakage& m,
                                std::optional<double> accuracy) {
  std::vector<double> p = {c.time_per_batch_s,
                           m.worst.psnr_db.value_or(-std::numeric_limits<double>::infinity())};
  if (accuracy) p.push_back(-*accuracy);
  return p;
}

}  // namespace

std::vector<std::string> candidate_cuts(const Candidate& c) {
  std::vector<std::string> cuts;
  for (size_t i = 0; i + 1 < c.partition.size(); ++i) cuts.push_back(c.partition[i].to);
  return cuts;
}

std::vector<MeasuredLeakage> read_leakage_report(const std::string& file,
                                                 const std::string& field) {
  std::vector<MeasuredLeakage> out;
  train_report::for_each_run(file, field, [&](const nlohmann::json& run, const std::string& path) {
    out.push_back(read_leakage_run(run, path, file));
  });
  return out;
}

void check_one_task(const std::vector<MeasuredAccuracy>& accuracy,
                    const std::vector<MeasuredLeakage>& leakage) {
  const std::string* first = nullptr;
  const std::string* first_where = nullptr;
  auto check = [&](const std::string& task, const std::string& where) {
    if (task.empty()) return;
    if (first == nullptr) {
      first = &task;
      first_where = &where;
    } else if (task != *first) {
      throw InputError(where, "trained " + task + ", but " + *first_where + " trained " + *first +
                                  ": the reports of one exploration must train one task "
                                  "(the same dataset and --one-vs-rest)");
    }
  };
  for (const MeasuredAccuracy& a : accuracy) check(a.task, a.where);
  for (const MeasuredLeakage& l : leakage) check(l.task, l.where);
}

std::vector<MeasuredLeakage> read_leakage_reports(const std::vector<std::string>& files,
                                                  const std::string& field) {
  std::vector<MeasuredLeakage> out;
  for (const std::string& file : files) {
    std::vector<MeasuredLeakage> runs = read_leakage_report(file, field);
    out.insert(out.end(), runs.begin(), runs.end());
  }
  return out;
}

void check_leakage_limits(const LeakageLimits& limits) {
  check_limit(limits.max_psnr_db, kPsnrRange.lo, kPsnrRange.hi, "max_psnr");
  check_limit(limits.max_distance_correlation, -1, 1, "max_distance_correlation");
  check_limit(limits.max_label_auc, 0, 1, "max_label_auc");
}

bool within_limits(const LeakageSummary& worst, const LeakageLimits& limits) {
  return within(worst.psnr_db, limits.max_psnr_db) &&
         within(worst.distance_correlation, limits.max_distance_correlation) &&
         within(worst.label_auc, limits.max_label_auc);
}

int matching_leakage_run(const Candidate& c, const std::vector<MeasuredLeakage>& runs) {
  const std::string key = codecs_key(c.compression);
  const std::vector<std::string> cuts = candidate_cuts(c);
  int match = -1;
  for (size_t i = 0; i < runs.size(); ++i)
    if (runs[i].codecs == key && runs[i].cuts == cuts &&
        (match < 0 ||
         (runs[i].chunks == c.chunks && runs[static_cast<size_t>(match)].chunks != c.chunks)))
      match = static_cast<int>(i);
  return match;
}

LeakageRanking rank_by_leakage(const Exploration& e, const std::vector<MeasuredLeakage>& runs,
                               const LeakageLimits& limits, const AccuracyRanking* accuracy,
                               const std::vector<MeasuredAccuracy>* accuracy_runs) {
  LeakageRanking r;
  r.limits = limits;
  r.by_time_to_target = accuracy != nullptr;
  std::vector<std::pair<LeakageRow, size_t>> rows;  // with the exploration's rank
  std::vector<size_t> matched;                      // candidates on the front's ground
  std::vector<std::vector<double>> points;
  for (size_t k = 0; k < e.ranking.size(); ++k) {
    const size_t ci = e.ranking[k];
    const Candidate& c = e.result.candidates[ci];
    const int match = matching_leakage_run(c, runs);
    if (match < 0) {
      ++r.unmeasured;
      continue;
    }
    const MeasuredLeakage& m = runs[static_cast<size_t>(match)];
    std::optional<double> trained;  // the test accuracy of its codecs
    if (accuracy_runs != nullptr) {
      const int a = matching_accuracy_run(c, *accuracy_runs);
      if (a >= 0) trained = (*accuracy_runs)[static_cast<size_t>(a)].best_accuracy;
    }
    if (accuracy == nullptr || trained) {
      matched.push_back(ci);
      points.push_back(front_point(c, m, trained));
    }
    if (!within_limits(m.worst, limits)) {
      ++r.over_limit;
      continue;
    }
    LeakageRow row{ci, static_cast<size_t>(match), c.time_per_batch_s, std::nullopt};
    if (accuracy != nullptr) {
      const auto& ar = accuracy->rows;
      const auto it = std::find_if(ar.begin(), ar.end(),
                                   [ci](const AccuracyRow& a) { return a.candidate == ci; });
      if (it == ar.end()) {
        ++r.not_accurate;
        continue;
      }
      row.accuracy = static_cast<size_t>(it - ar.begin());
      row.time_s = it->time_s;
    }
    rows.push_back({row, k});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.first.time_s != b.first.time_s ? a.first.time_s < b.first.time_s : a.second < b.second;
  });
  for (const auto& [row, k] : rows) r.rows.push_back(row);
  for (size_t i : pareto_front(points)) r.front.push_back(matched[i]);
  return r;
}

nlohmann::json leakage_ranking_json(const Exploration& e, const std::vector<MeasuredLeakage>& runs,
                                    const LeakageRanking& r, const AccuracyRanking* accuracy,
                                    size_t top) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < r.rows.size() && i < top; ++i) {
    const LeakageRow& l = r.rows[i];
    const Candidate& c = e.result.candidates[l.candidate];
    const MeasuredLeakage& m = runs[l.run];
    nlohmann::json row = {{"label", c.label},
                          {"time_per_batch_s", c.time_per_batch_s},
                          {"wire_bytes_per_batch", c.wire_bytes_per_batch},
                          {"measured_variant", m.variant},
                          {"reconstruction_psnr_db", optional_json(m.worst.psnr_db)},
                          {"distance_correlation", optional_json(m.worst.distance_correlation)},
                          {"label_auc_direction", optional_json(m.worst.label_auc)}};
    if (accuracy != nullptr && l.accuracy) {
      const AccuracyRow& a = accuracy->rows[*l.accuracy];
      row["test_accuracy"] = a.accuracy;
      row["time_to_target_s"] = a.time_s;
    }
    rows.push_back(row);
  }
  nlohmann::json front = nlohmann::json::array();
  for (size_t i : r.front) front.push_back(e.result.candidates[i].label);
  nlohmann::json j = {
      {"limits",
       {{"max_psnr_db", optional_json(r.limits.max_psnr_db)},
        {"max_distance_correlation", optional_json(r.limits.max_distance_correlation)},
        {"max_label_auc", optional_json(r.limits.max_label_auc)}}},
      {"rank_by", r.by_time_to_target ? "time_to_target" : "time_per_batch"},
      {"ranked", r.rows.size()},
      {"unmeasured", r.unmeasured},
      {"over_limit", r.over_limit},
      {"ranking", rows},
      {"front", front}};
  if (r.by_time_to_target) {
    j["not_accurate"] = r.not_accurate;
    j["target_accuracy"] = accuracy->target;
  }
  return j;
}

}  // namespace splitsim
