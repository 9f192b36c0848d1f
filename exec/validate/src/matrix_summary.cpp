// The summary of a validation matrix: errors over all runs and per model
// family, busy times, the machine's conditions, bytes and overlap, and its
// JSON report (exec/validate/README.md "--matrix"); matrix_print.cpp prints it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "matrix_targets.h"
#include "splitsim/validate/comparison.h"

namespace splitsim {

using namespace matrix_targets;  // NOLINT: the targets

namespace {

void add_overlap(const ValidationRun& r, MatrixSummary* s) {
  s->overlap_ratios.push_back(*r.overlap_ratio);
  s->max_overlap_ratio = std::max(s->max_overlap_ratio, *r.overlap_ratio);
  auto by = std::find_if(s->overlap_by_chunks.begin(), s->overlap_by_chunks.end(),
                         [&](const auto& b) { return b.chunks == r.chunks; });
  if (by == s->overlap_by_chunks.end())
    by = s->overlap_by_chunks.insert(s->overlap_by_chunks.end(), {r.chunks, 0, 0, 0});
  ++by->runs;
  by->max_ratio = std::max(by->max_ratio, *r.overlap_ratio);
  if (r.predicted_overlap_ratio && *r.predicted_overlap_ratio > 0) {
    s->predicted_overlap_ratios.push_back(*r.predicted_overlap_ratio);
    by->max_predicted_ratio = std::max(by->max_predicted_ratio, *r.predicted_overlap_ratio);
    s->max_overlap_vs_predicted =
        std::max(s->max_overlap_vs_predicted, *r.overlap_ratio / *r.predicted_overlap_ratio);
  }
}

void add_conditions(const ValidationRun& r, MatrixSummary* s) {
  for (const RunConditions& c : r.conditions) {
    ++s->repetitions;
    s->disturbed += !c.disturbed.empty();
    s->retried += c.retried;
    s->max_steal_fraction = std::max(s->max_steal_fraction, c.cpu.steal_fraction);
    s->max_foreign_cpu_fraction = std::max(s->max_foreign_cpu_fraction, c.cpu.foreign_cpu_fraction);
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The bandwidth errors of one run: its peaks, and with the link probe's
// model of one transfer; its parties' averages (a party that sent or
// received nothing has no average to miss).
void add_bandwidth_errors(const ValidationRun& r, std::vector<double>* peak,
                          std::vector<double>* peak_link, std::vector<double>* average) {
  for (const MetricError& m : r.errors) {
    if (!std::isfinite(m.error) || (m.predicted == 0 && m.measured == 0)) continue;
    const bool client = m.metric == "bandwidth_peak_client_Bps";
    if (client || m.metric == "bandwidth_peak_server_Bps") {
      peak->push_back(std::fabs(m.error));
      const double link =
          client ? r.predicted_link_peak_client_Bps : r.predicted_link_peak_server_Bps;
      if (link > 0 && m.measured > 0) peak_link->push_back(std::fabs(link - m.measured) / m.measured);
    }
    else if (m.metric.rfind("parties.", 0) == 0 &&
             (ends_with(m.metric, ".bandwidth_avg_send_Bps") ||
              ends_with(m.metric, ".bandwidth_avg_recv_Bps")))
      average->push_back(std::fabs(m.error));
  }
}

nlohmann::json stats_json(const ErrorStats& e) {
  if (e.n == 0) return nullptr;
  return {{"values", e.n},
          {"median_abs_error_pct", 100 * e.median},
          {"p90_abs_error_pct", 100 * e.p90},
          {"max_abs_error_pct", 100 * e.max}};
}

}  // namespace

ErrorStats error_stats(const std::vector<double>& abs_errors) {
  ErrorStats e;
  if (abs_errors.empty()) return e;
  e.n = static_cast<int>(abs_errors.size());
  e.median = quantile(abs_errors, 0.5);
  e.p90 = quantile(abs_errors, 0.9);
  e.max = *std::max_element(abs_errors.begin(), abs_errors.end());
  return e;
}

MatrixSummary summarise(const std::vector<ValidationRun>& runs) {
  MatrixSummary s;
  s.machine = describe_this_machine();
  std::vector<double> abs_errors, plain, bucket, peak, peak_link, average, lossy, awake;
  std::map<std::string, std::vector<double>> busy, busy_awake, by_model;
  std::vector<std::string> party_order, model_order;
  for (const auto& r : runs) {
    ++s.runs;
    add_conditions(r, &s);
    if (!r.failure.empty()) {
      ++s.failed;
      continue;
    }
    const double e = std::fabs(r.errors.at(0).error);
    abs_errors.push_back(e);
    if (r.loss_rate > 0) lossy.push_back(e);
    const double measured = r.errors.at(0).measured;
    if (r.predicted_plain_time_per_batch_s > 0 && measured > 0)
      plain.push_back(std::fabs(r.predicted_plain_time_per_batch_s - measured) / measured);
    const Metrics& w = r.predicted_without_wake;
    if (w.time_per_batch_s > 0 && measured > 0)
      awake.push_back(std::fabs(w.time_per_batch_s - measured) / measured);
    if (r.predicted_link_time_per_batch_s > 0 && measured > 0)
      bucket.push_back(std::fabs(r.predicted_link_time_per_batch_s - measured) / measured);
    const std::string model = r.model.empty() ? "(model not recorded)" : r.model;
    if (!by_model.count(model)) model_order.push_back(model);
    by_model[model].push_back(e);
    s.inside_spread += predicted_inside_spread(r);
    add_bandwidth_errors(r, &peak, &peak_link, &average);
    for (const MetricError& m : r.errors) {
      const std::string suffix = ".busy_s_per_batch";
      if (m.metric.rfind("parties.", 0) != 0 || !ends_with(m.metric, suffix) ||
          !std::isfinite(m.error))
        continue;
      const std::string party = m.metric.substr(8, m.metric.size() - 8 - suffix.size());
      if (!busy.count(party)) party_order.push_back(party);
      busy[party].push_back(std::fabs(m.error));
      if (const PartyMetrics* p = w.party(party); p != nullptr && w.time_per_batch_s > 0)
        busy_awake[party].push_back(std::fabs(p->busy_s_per_batch - m.measured) / m.measured);
    }
    if (r.deterministic_bytes) {
      ++s.bytes_checked;
      s.bytes_exact += bytes_match(r.predicted, r.measured);
    }
    if (r.overlap_ratio && std::isfinite(*r.overlap_ratio)) add_overlap(r, &s);
    for (const MemoryCheck& m : r.memory) {
      const double e = std::fabs(m.error());
      if (!std::isfinite(e)) continue;
      s.memory_abs_errors.push_back(e);
      s.memory_within_target += e <= kTargetMemory;
    }
  }
  std::sort(s.overlap_by_chunks.begin(), s.overlap_by_chunks.end(),
            [](const auto& a, const auto& b) { return a.chunks < b.chunks; });
  auto median_p90 = [](const std::vector<double>& v, double* median, double* p90) {
    if (v.empty()) return;
    *median = quantile(v, 0.5);
    *p90 = quantile(v, 0.9);
  };
  median_p90(abs_errors, &s.median_abs_error_time_per_batch, &s.p90_abs_error_time_per_batch);
  s.max_abs_error_time_per_batch = error_stats(abs_errors).max;
  s.peak_bandwidth = error_stats(peak);
  s.peak_bandwidth_link = error_stats(peak_link);
  s.average_bandwidth = error_stats(average);
  s.lossy_link = error_stats(lossy);
  median_p90(plain, &s.median_abs_error_plain, &s.p90_abs_error_plain);
  median_p90(bucket, &s.median_abs_error_link, &s.p90_abs_error_link);
  median_p90(awake, &s.median_abs_error_without_wake, &s.p90_abs_error_without_wake);
  for (const auto& party : party_order) {
    s.median_abs_error_busy.push_back({party, quantile(busy[party], 0.5)});
    if (!busy_awake[party].empty())
      s.median_abs_error_busy_without_wake.push_back({party, quantile(busy_awake[party], 0.5)});
  }
  for (const auto& model : model_order) {
    const auto& e = by_model[model];
    s.by_model.push_back({model, static_cast<int>(e.size()), quantile(e, 0.5), quantile(e, 0.9)});
  }
  return s;
}

nlohmann::json matrix_json(const std::vector<ValidationRun>& runs) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& r : runs) all.push_back(validation_json(r));
  const MatrixSummary s = summarise(runs);
  const bool any = s.runs > s.failed;
  nlohmann::json by_chunks = nlohmann::json::array();
  for (const auto& b : s.overlap_by_chunks)
    by_chunks.push_back({{"chunks", b.chunks},
                         {"runs", b.runs},
                         {"max_overlap_ratio", b.max_ratio},
                         {"max_predicted_overlap_ratio", b.max_predicted_ratio}});
  nlohmann::json busy = nlohmann::json::object();
  for (const auto& [party, e] : s.median_abs_error_busy) busy[party] = 100 * e;
  nlohmann::json busy_without_wake = nlohmann::json::object();
  for (const auto& [party, e] : s.median_abs_error_busy_without_wake)
    busy_without_wake[party] = 100 * e;
  nlohmann::json models = nlohmann::json::array();
  for (const auto& m : s.by_model)
    models.push_back({{"model", m.model},
                      {"runs", m.runs},
                      {"median_abs_error_time_per_batch_pct", 100 * m.median},
                      {"p90_abs_error_time_per_batch_pct", 100 * m.p90}});
  return {
      {"schema", "splitsim.validation_matrix/1"},
      {"runs", all},
      {"summary",
       {{"runs", s.runs},
        {"failed", s.failed},
        {"median_abs_error_time_per_batch_pct",
         any ? nlohmann::json(100 * s.median_abs_error_time_per_batch) : nullptr},
        {"p90_abs_error_time_per_batch_pct",
         any ? nlohmann::json(100 * s.p90_abs_error_time_per_batch) : nullptr},
        {"max_abs_error_time_per_batch_pct",
         any ? nlohmann::json(100 * s.max_abs_error_time_per_batch) : nullptr},
        {"median_abs_error_busy_pct", busy},
        {"peak_bandwidth", stats_json(s.peak_bandwidth)},
        {"average_bandwidth", stats_json(s.average_bandwidth)},
        {"lossy_link", stats_json(s.lossy_link)},
        {"without_wake_cost",
         {{"median_abs_error_time_per_batch_pct", 100 * s.median_abs_error_without_wake},
          {"p90_abs_error_time_per_batch_pct", 100 * s.p90_abs_error_without_wake},
          {"median_abs_error_busy_pct", busy_without_wake}}},
        {"without_platform_model",
         {{"median_abs_error_time_per_batch_pct", 100 * s.median_abs_error_plain},
          {"p90_abs_error_time_per_batch_pct", 100 * s.p90_abs_error_plain}}},
        {"with_measured_link",
         {{"median_abs_error_time_per_batch_pct", 100 * s.median_abs_error_link},
          {"p90_abs_error_time_per_batch_pct", 100 * s.p90_abs_error_link},
          {"peak_bandwidth", stats_json(s.peak_bandwidth_link)}}},
        {"by_model", models},
        {"predicted_inside_spread", s.inside_spread},
        {"conditions",
         {{"machine",
           {{"kernel", s.machine.kernel},
            {"cpu_model", s.machine.cpu_model},
            {"cpus", s.machine.cpus}}},
          {"repetitions", s.repetitions},
          {"disturbed", s.disturbed},
          {"retried", s.retried},
          {"max_steal_pct", 100 * s.max_steal_fraction},
          {"max_foreign_cpu_pct", 100 * s.max_foreign_cpu_fraction}}},
        {"bytes_checked", s.bytes_checked},
        {"bytes_exact", s.bytes_exact},
        {"overlap_ratios", s.overlap_ratios},
        {"predicted_overlap_ratios", s.predicted_overlap_ratios},
        {"max_overlap_ratio",
         s.overlap_ratios.empty() ? nullptr : nlohmann::json(s.max_overlap_ratio)},
        {"max_overlap_ratio_exec_over_sim",
         s.predicted_overlap_ratios.empty() ? nullptr : nlohmann::json(s.max_overlap_vs_predicted)},
        {"overlap_by_chunks", by_chunks},
        {"memory",
         {{"party_runs", s.memory_abs_errors.size()},
          {"within_target", s.memory_within_target},
          {"median_abs_error_pct", s.memory_abs_errors.empty()
                                       ? nullptr
                                       : nlohmann::json(100 * quantile(s.memory_abs_errors, 0.5))},
          {"max_abs_error_pct",
           s.memory_abs_errors.empty()
               ? nullptr
               : nlohmann::json(100 * *std::max_element(s.memory_abs_errors.begin(),
                                                        s.memory_abs_errors.end()))}}},
        {"targets",
         {{"median_abs_error_time_per_batch_pct", 100 * kTargetMedian},
          {"p90_abs_error_time_per_batch_pct", 100 * kTargetP90},
          {"max_abs_error_time_per_batch_pct", 100 * kTargetMax},
          {"median_abs_error_busy_pct", 100 * kTargetBusy},
          {"peak_bandwidth_median_abs_error_pct", 100 * kTargetPeakMedian},
          {"peak_bandwidth_p90_abs_error_pct", 100 * kTargetPeakP90},
          {"average_bandwidth_median_abs_error_pct", 100 * kTargetAverageMedian},
          {"bytes_exact", "all deterministic codecs"},
          {"max_overlap_ratio_exec_over_sim", kTargetOverlapVsSim},
          {"memory_abs_error_pct", 100 * kTargetMemory}}}}}};
}

}  // namespace splitsim
