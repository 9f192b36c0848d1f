// The summary of a validation matrix: errors over all runs and per model
// family, busy times, the machine's conditions, bytes and overlap
// (exec/validate/README.md "--matrix").
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "splitsim/validate/comparison.h"

namespace splitsim {
namespace {

// The targets printed and written in the report.
constexpr double kTargetMedian = 0.04, kTargetP90 = 0.08, kTargetMax = 0.15, kTargetBusy = 0.10;
constexpr double kTargetPeakMedian = 0.10, kTargetPeakP90 = 0.20, kTargetAverageMedian = 0.05;
constexpr double kTargetOverlapVsSim = 1.15;
constexpr double kTargetMemory = 0.15;  // planned peak memory per party against exec's

const char* met(bool ok) { return ok ? "met" : "MISSED"; }

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

namespace {

// One row per run: link, predicted and measured time, spread, error, bytes,
// overlap ratio, what failed or disturbed it.
void print_run_rows(std::ostream& os, const std::vector<ValidationRun>& runs) {
  size_t width = 7;
  for (const auto& r : runs) width = std::max(width, r.variant.size());
  char line[768];
  std::snprintf(line, sizeof line, "%-*s %9s %11s %11s %19s %8s %6s %13s  %s\n",
                static_cast<int>(width), "variant", "link", "predicted", "measured",
                "spread (min..max)", "error", "bytes", "ratio exec/sim", "note");
  os << line;
  for (const auto& r : runs) {
    const bool ok = r.failure.empty();
    const std::string bytes = !ok                                    ? "-"
                              : !r.deterministic_bytes               ? "n/a"
                              : bytes_match(r.predicted, r.measured) ? "exact"
                                                                     : "DIFF";
    char ratio[32] = "-", spread[48] = "-";
    if (ok && r.overlap_ratio)
      std::snprintf(ratio, sizeof ratio, "%.2f/%.2f", *r.overlap_ratio,
                    r.predicted_overlap_ratio.value_or(0.0));
    if (ok && r.repetitions.size() > 1)
      std::snprintf(spread, sizeof spread, "%.4f..%.4f%s", r.measured_min_time_s,
                    r.measured_max_time_s, predicted_inside_spread(r) ? " *" : "");
    std::string note = ok ? "" : "FAILED: " + r.failure.substr(0, 200);
    for (const RunConditions& c : r.conditions)
      if (!c.disturbed.empty()) note += (note.empty() ? "disturbed: " : "; ") + c.disturbed;
    std::snprintf(line, sizeof line, "%-*s %9s %10.4fs %10.4fs %19s %8s %6s %13s  %s\n",
                  static_cast<int>(width), r.variant.c_str(),
                  format_link_rate(r.link.rate_bit_per_s).c_str(), r.predicted.time_per_batch_s,
                  ok ? r.errors.at(0).measured : 0.0, spread,
                  ok ? format_error_percent(r.errors.at(0).error).c_str() : "-", bytes.c_str(),
                  ratio, note.c_str());
    os << line;
  }
}

// The machine's conditions; time per batch over all, without the platform
// model, with the shaper's bucket and per model family.
void print_time_summary(std::ostream& os, const std::vector<ValidationRun>& runs,
                        const MatrixSummary& s) {
  char line[768];
  const auto awake = std::count_if(runs.begin(), runs.end(),
                                   [](const ValidationRun& r) { return r.awake_cores > 0; });
  os << "measured: the median of each variant's repetitions; * = the prediction lies within the "
        "measured min..max\n";
  os << "cores kept from idling (SCHED_IDLE pollers) in " << awake << " of " << runs.size()
     << " run(s)" << (awake == 0 ? " (--let-cores-idle)" : "") << "\n";
  std::snprintf(line, sizeof line,
                "machine: %s; %d repetition(s), max steal %.1f%%, max other processes %.1f%% of "
                "the CPUs; %d retried, %d still disturbed\n",
                machine_text(s.machine).c_str(), s.repetitions, 100 * s.max_steal_fraction,
                100 * s.max_foreign_cpu_fraction, s.retried, s.disturbed);
  os << line;
  const int ok_runs = s.runs - s.failed;
  std::snprintf(line, sizeof line,
                "time per batch |error| over %d variant(s): median %.1f%%, p90 %.1f%%, max "
                "%.1f%% (targets: median <= %.0f%% %s, p90 <= %.0f%% %s, max <= %.0f%% %s); "
                "prediction within the measured spread in %d%s\n",
                ok_runs, 100 * s.median_abs_error_time_per_batch,
                100 * s.p90_abs_error_time_per_batch, 100 * s.max_abs_error_time_per_batch,
                100 * kTargetMedian, met(s.median_abs_error_time_per_batch <= kTargetMedian),
                100 * kTargetP90, met(s.p90_abs_error_time_per_batch <= kTargetP90),
                100 * kTargetMax, met(s.max_abs_error_time_per_batch <= kTargetMax),
                s.inside_spread,
                s.failed ? (", " + std::to_string(s.failed) + " variant(s) FAILED").c_str() : "");
  os << line;
  // The same prediction with a part of the model left out or added (0: not made).
  const auto alternative = [&](const char* what, double median, double p90) {
    if (!(median > 0)) return;
    std::snprintf(line, sizeof line, "  %s: median %.1f%%, p90 %.1f%%\n", what, 100 * median,
                  100 * p90);
    os << line;
  };
  alternative("without the platform model (host work per byte, co-compute slowdown, wake cost)",
              s.median_abs_error_plain, s.p90_abs_error_plain);
  alternative("without the wake cost (the platform model's cost of a computation after a wait)",
              s.median_abs_error_without_wake, s.p90_abs_error_without_wake);
  alternative("with the link probe's model of one transfer in the link", s.median_abs_error_link,
              s.p90_abs_error_link);
  for (const auto& m : s.by_model) {
    std::snprintf(line, sizeof line, "  %s: %d variant(s), median %.1f%%, p90 %.1f%%\n",
                  m.model.c_str(), m.runs, 100 * m.median, 100 * m.p90);
    os << line;
  }
  if (s.lossy_link.n > 0) {
    std::snprintf(line, sizeof line,
                  "  on a lossy link: %d variant(s), median %.1f%%, p90 %.1f%%, max %.1f%% "
                  "(target: median <= %.0f%% %s)\n",
                  s.lossy_link.n, 100 * s.lossy_link.median, 100 * s.lossy_link.p90,
                  100 * s.lossy_link.max, 100 * kTargetLossyLinkMedian,
                  met(s.lossy_link.median <= kTargetLossyLinkMedian));
    os << line;
  }
}

// Per party: busy time, peak and average bandwidth, bytes, memory.
void print_party_summary(std::ostream& os, const MatrixSummary& s) {
  char line[768];
  for (const auto& [party, e] : s.median_abs_error_busy) {
    std::snprintf(line, sizeof line, "busy time of %s |error|: median %.1f%% (target <= 10%% %s)\n",
                  party.c_str(), 100 * e, met(e <= kTargetBusy));
    os << line;
    for (const auto& [p, w] : s.median_abs_error_busy_without_wake)
      if (p == party) {
        std::snprintf(line, sizeof line, "  without the wake cost: median %.1f%%\n", 100 * w);
        os << line;
      }
  }
  if (s.peak_bandwidth.n > 0) {
    const ErrorStats& e = s.peak_bandwidth;
    std::snprintf(line, sizeof line,
                  "peak bandwidth |error| (client send, server receive; one transfer's bytes / "
                  "(last byte received - first byte sent)) over %d value(s): median %.1f%%, p90 "
                  "%.1f%%, max %.1f%% (targets: median <= %.0f%% %s, p90 <= %.0f%% %s)\n",
                  e.n, 100 * e.median, 100 * e.p90, 100 * e.max, 100 * kTargetPeakMedian,
                  met(e.median <= kTargetPeakMedian), 100 * kTargetPeakP90,
                  met(e.p90 <= kTargetPeakP90));
    os << line;
  }
  if (s.peak_bandwidth_link.n > 0) {
    const ErrorStats& e = s.peak_bandwidth_link;
    std::snprintf(line, sizeof line,
                  "  with the link probe's model of one transfer in the link: median %.1f%%, p90 "
                  "%.1f%%, max %.1f%%\n",
                  100 * e.median, 100 * e.p90, 100 * e.max);
    os << line;
  }
  if (s.average_bandwidth.n > 0) {
    const ErrorStats& e = s.average_bandwidth;
    std::snprintf(line, sizeof line,
                  "average bandwidth |error| (every party, send and receive) over %d value(s): "
                  "median %.1f%%, p90 %.1f%%, max %.1f%% (target: median <= %.0f%% %s)\n",
                  e.n, 100 * e.median, 100 * e.p90, 100 * e.max, 100 * kTargetAverageMedian,
                  met(e.median <= kTargetAverageMedian));
    os << line;
  }
  os << "bytes per batch exact for deterministic codecs: " << s.bytes_exact << " of "
     << s.bytes_checked << (s.bytes_exact == s.bytes_checked ? " (target met)" : " (target MISSED)")
     << "\n";
  if (!s.memory_abs_errors.empty()) {
    const int n = static_cast<int>(s.memory_abs_errors.size());
    std::snprintf(line, sizeof line,
                  "peak memory per party, plan against exec's tensor peak: within 15%% in %d of "
                  "%d (target all %s), |error| median %.1f%%, max %.1f%%\n",
                  s.memory_within_target, n, met(s.memory_within_target == n),
                  100 * quantile(s.memory_abs_errors, 0.5),
                  100 * *std::max_element(s.memory_abs_errors.begin(), s.memory_abs_errors.end()));
    os << line;
  }
}

// GPipe with chunks >= 4: how close exec comes to the overlap the schedule allows.
void print_overlap_summary(std::ostream& os, const MatrixSummary& s) {
  char line[768];
  if (s.overlap_ratios.empty()) {
    os << "overlap ratio (gpipe, chunks >= 4): no such run\n";
    return;
  }
  std::snprintf(line, sizeof line,
                "overlap ratio exec time per batch / max(busiest party's compute, wire time "
                "(gpipe: busier direction forward + busier direction backward)), gpipe "
                "chunks >= 4: max %.3f over %zu run(s)\n",
                s.max_overlap_ratio, s.overlap_ratios.size());
  os << line;
  for (const auto& b : s.overlap_by_chunks) {
    std::snprintf(line, sizeof line,
                  "  chunks %lld: max %.3f over %d run(s); the simulator's for the same runs: "
                  "max %.3f\n",
                  static_cast<long long>(b.chunks), b.max_ratio, b.runs, b.max_predicted_ratio);
    os << line;
  }
  if (!s.predicted_overlap_ratios.empty()) {
    std::snprintf(line, sizeof line,
                  "  exec against the schedule: largest exec ratio / simulator's ratio %.3f "
                  "(target <= %.2f %s; 1: exec overlaps transfers and compute exactly as "
                  "simulated)\n",
                  s.max_overlap_vs_predicted, kTargetOverlapVsSim,
                  met(s.max_overlap_vs_predicted <= kTargetOverlapVsSim));
    os << line;
  }
}

}  // namespace

void print_matrix(std::ostream& os, const std::vector<ValidationRun>& runs) {
  print_run_rows(os, runs);
  const MatrixSummary s = summarise(runs);
  print_time_summary(os, runs, s);
  print_party_summary(os, s);
  print_overlap_summary(os, s);
}

}  // namespace splitsim
