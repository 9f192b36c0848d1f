// Printing a validation matrix: a row per run, then the summary of
// matrix_summary.cpp against its targets (exec/validate/README.md "--matrix").
#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "matrix_targets.h"
#include "splitsim/validate/comparison.h"

namespace splitsim {
namespace {

using namespace matrix_targets;  // NOLINT: the targets and met()

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
