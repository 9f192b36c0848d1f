#include "validation.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <ostream>

#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

MetricError make_error(const std::string& name, double predicted, double measured) {
  double error = 0;
  if (measured != 0)
    error = (predicted - measured) / measured;
  else if (predicted != 0)
    error = kNaN;
  return {name, predicted, measured, error};
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nullptr; }

std::string si(double v) {
  const char* prefixes[] = {"", "k", "M", "G", "T"};
  int p = 0;
  while (std::fabs(v) >= 1000 && p < 4) {
    v /= 1000;
    ++p;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g%s", v, prefixes[p]);
  return buf;
}

}  // namespace

double parse_link_rate(const std::string& text, const std::string& flag) {
  const std::string allowed =
      "expected a rate like 50mbit, 200mbit, 1gbit, 500kbit or a number of bit/s (1e8)";
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(lower, &used);
  } catch (const std::exception&) {
    throw InputError(flag, allowed + ", got \"" + text + "\"");
  }
  const std::string unit = lower.substr(used);
  double scale = 0;
  if (unit.empty() || unit == "bit" || unit == "bps")
    scale = 1;
  else if (unit == "kbit")
    scale = 1e3;
  else if (unit == "mbit")
    scale = 1e6;
  else if (unit == "gbit")
    scale = 1e9;
  else
    throw InputError(flag, allowed + ", got \"" + text + "\" (unknown unit \"" + unit + "\")");
  const double rate = value * scale;
  if (!(rate > 0) || !std::isfinite(rate))
    throw InputError(flag, "the rate must be > 0 and finite, got \"" + text + "\"; " + allowed);
  check_link_rate(rate, flag);
  return rate;
}

void check_link_rate(double rate_bit_per_s, const std::string& where) {
  if (rate_bit_per_s >= kMinLinkRateBitPerS && rate_bit_per_s <= kMaxLinkRateBitPerS) return;
  throw InputError(where, format_link_rate(rate_bit_per_s) +
                              " is outside what tc tbf on the veth pair shapes: allowed 8kbit "
                              "to 100gbit (below, tc's rate tables lose precision; above, the "
                              "veth pair itself is slower and the token bucket overflows)");
}

std::string format_link_rate(double bit_per_s) {
  const std::pair<double, const char*> units[] = {{1e9, "gbit"}, {1e6, "mbit"}, {1e3, "kbit"}};
  char buf[64];
  for (const auto& [scale, name] : units) {
    if (bit_per_s >= scale) {
      std::snprintf(buf, sizeof buf, "%.6g%s", bit_per_s / scale, name);
      return buf;
    }
  }
  std::snprintf(buf, sizeof buf, "%.6gbit", bit_per_s);
  return buf;
}

std::vector<MetricError> compare_metrics(const Metrics& predicted, const Metrics& measured) {
  std::vector<MetricError> rows = {
      make_error("time_per_batch_s", predicted.time_per_batch_s, measured.time_per_batch_s),
      make_error("computation_time_s", predicted.computation_time_s, measured.computation_time_s),
      make_error("bandwidth_peak_client_Bps", predicted.bandwidth_peak_client_Bps,
                 measured.bandwidth_peak_client_Bps),
      make_error("bandwidth_peak_server_Bps", predicted.bandwidth_peak_server_Bps,
                 measured.bandwidth_peak_server_Bps),
  };
  for (const auto& p : predicted.parties) {
    const PartyMetrics* m = measured.party(p.name);
    const PartyMetrics zero;
    if (m == nullptr) m = &zero;
    const std::string prefix = "parties." + p.name + ".";
    rows.push_back(make_error(prefix + "bytes_sent_per_batch", p.bytes_sent_per_batch,
                              m->bytes_sent_per_batch));
    rows.push_back(make_error(prefix + "bytes_received_per_batch", p.bytes_received_per_batch,
                              m->bytes_received_per_batch));
    rows.push_back(make_error(prefix + "bandwidth_avg_send_Bps", p.bandwidth_avg_send_Bps,
                              m->bandwidth_avg_send_Bps));
    rows.push_back(make_error(prefix + "bandwidth_avg_recv_Bps", p.bandwidth_avg_recv_Bps,
                              m->bandwidth_avg_recv_Bps));
    rows.push_back(
        make_error(prefix + "busy_s_per_batch", p.busy_s_per_batch, m->busy_s_per_batch));
  }
  return rows;
}

double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double pos = q * (values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (pos - lo) * (values[hi] - values[lo]);
}

std::string format_error_percent(double error) {
  if (!std::isfinite(error)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * error);
  return buf;
}

void print_comparison(std::ostream& os, const std::vector<MetricError>& rows) {
  char line[256];
  std::snprintf(line, sizeof line, "%-42s %14s %14s %9s\n", "metric", "predicted", "measured",
                "error");
  os << line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%-42s %14s %14s %9s\n", r.metric.c_str(),
                  si(r.predicted).c_str(), si(r.measured).c_str(),
                  format_error_percent(r.error).c_str());
    os << line;
  }
  os << "error = (predicted - measured) / measured; seconds in s, bytes in B, rates in B/s\n";
}

double wire_lower_bound_s(const Plan& plan, double rate_bit_per_s) {
  // Bytes per batch per direction (sender -> receiver), forward and backward.
  std::map<std::pair<std::string, std::string>, double> fwd, bwd;
  for (const PlanBoundary& b : plan.boundaries) {
    const std::string& from = plan.stages[b.from_stage].party;
    const std::string& to = plan.stages[b.to_stage].party;
    if (from == to) continue;  // no link between a party and itself
    fwd[{from, to}] += b.forward.wire_bytes_per_batch;
    bwd[{to, from}] += b.backward.wire_bytes_per_batch;
  }
  const auto busier = [](const auto& per_direction) {
    double most = 0;
    for (const auto& [direction, bytes] : per_direction) most = std::max(most, bytes);
    return most;
  };
  double bytes = 0;
  if (plan.schedule == Schedule::kGpipe) {
    bytes = busier(fwd) + busier(bwd);
  } else {
    auto both = fwd;
    for (const auto& [direction, b] : bwd) both[direction] += b;
    bytes = busier(both);
  }
  return bytes / (rate_bit_per_s / 8);
}

double overlap_ratio(const Metrics& measured, const Plan& plan, double rate_bit_per_s) {
  double busiest = 0;
  for (const auto& p : measured.parties) busiest = std::max(busiest, p.busy_s_per_batch);
  const double bound = std::max(busiest, wire_lower_bound_s(plan, rate_bit_per_s));
  return bound > 0 ? measured.time_per_batch_s / bound : kNaN;
}

bool bytes_match(const Metrics& predicted, const Metrics& measured) {
  for (const auto& p : predicted.parties) {
    const PartyMetrics* m = measured.party(p.name);
    if (m == nullptr ||
        std::llround(m->bytes_sent_per_batch) != std::llround(p.bytes_sent_per_batch) ||
        std::llround(m->bytes_received_per_batch) != std::llround(p.bytes_received_per_batch))
      return false;
  }
  return true;
}

nlohmann::json validation_json(const ValidationRun& run) {
  nlohmann::json errors = nlohmann::json::object();
  for (const auto& e : run.errors)
    errors[e.metric] = {{"predicted", e.predicted},
                        {"measured", e.measured},
                        {"error_pct", number_or_null(100 * e.error)}};
  nlohmann::json j = {
      {"schema", "splitsim.validation/1"},
      {"scenario", run.scenario},
      {"variant", run.variant},
      {"link",
       {{"description", run.link.description},
        {"shaped", run.link.shaped},
        {"rate_bit_per_s", run.link.rate_bit_per_s},
        {"burst_bytes", run.link.burst_bytes}}},
      {"profile", run.profile},
      {"awake_cores", run.awake_cores},
      {"schedule", run.schedule},
      {"chunks", run.chunks},
      {"predicted", run.predicted},
      {"measured", run.failure.empty() ? nlohmann::json(run.measured) : nlohmann::json(nullptr)},
      {"errors", errors},
      {"deterministic_bytes", run.deterministic_bytes},
      {"bytes_exact", run.failure.empty() && bytes_match(run.predicted, run.measured)},
      {"overlap_ratio", run.overlap_ratio ? number_or_null(*run.overlap_ratio) : nullptr},
      {"predicted_overlap_ratio",
       run.predicted_overlap_ratio ? number_or_null(*run.predicted_overlap_ratio) : nullptr},
  };
  if (!run.failure.empty()) j["failure"] = run.failure;
  return j;
}

MatrixSummary summarise(const std::vector<ValidationRun>& runs) {
  MatrixSummary s;
  std::vector<double> abs_errors;
  for (const auto& r : runs) {
    ++s.runs;
    if (!r.failure.empty()) {
      ++s.failed;
      continue;
    }
    abs_errors.push_back(std::fabs(r.errors.at(0).error));
    if (r.deterministic_bytes) {
      ++s.bytes_checked;
      s.bytes_exact += bytes_match(r.predicted, r.measured);
    }
    if (r.overlap_ratio && std::isfinite(*r.overlap_ratio)) {
      s.overlap_ratios.push_back(*r.overlap_ratio);
      s.max_overlap_ratio = std::max(s.max_overlap_ratio, *r.overlap_ratio);
      auto by = std::find_if(s.overlap_by_chunks.begin(), s.overlap_by_chunks.end(),
                             [&](const auto& b) { return b.chunks == r.chunks; });
      if (by == s.overlap_by_chunks.end())
        by = s.overlap_by_chunks.insert(s.overlap_by_chunks.end(), {r.chunks, 0, 0, 0});
      ++by->runs;
      by->max_ratio = std::max(by->max_ratio, *r.overlap_ratio);
      if (r.predicted_overlap_ratio && *r.predicted_overlap_ratio > 0) {
        s.predicted_overlap_ratios.push_back(*r.predicted_overlap_ratio);
        by->max_predicted_ratio = std::max(by->max_predicted_ratio, *r.predicted_overlap_ratio);
        s.max_overlap_vs_predicted =
            std::max(s.max_overlap_vs_predicted, *r.overlap_ratio / *r.predicted_overlap_ratio);
      }
    }
  }
  std::sort(s.overlap_by_chunks.begin(), s.overlap_by_chunks.end(),
            [](const auto& a, const auto& b) { return a.chunks < b.chunks; });
  if (!abs_errors.empty()) {
    s.median_abs_error_time_per_batch = quantile(abs_errors, 0.5);
    s.p90_abs_error_time_per_batch = quantile(abs_errors, 0.9);
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
        {"bytes_checked", s.bytes_checked},
        {"bytes_exact", s.bytes_exact},
        {"overlap_ratios", s.overlap_ratios},
        {"predicted_overlap_ratios", s.predicted_overlap_ratios},
        {"max_overlap_ratio",
         s.overlap_ratios.empty() ? nullptr : nlohmann::json(s.max_overlap_ratio)},
        {"max_overlap_ratio_exec_over_sim",
         s.predicted_overlap_ratios.empty() ? nullptr : nlohmann::json(s.max_overlap_vs_predicted)},
        {"overlap_by_chunks", by_chunks},
        {"targets",
         {{"median_abs_error_time_per_batch_pct", 10},
          {"bytes_exact", "all deterministic codecs"},
          {"max_overlap_ratio", 1.15}}}}}};
}

void print_matrix(std::ostream& os, const std::vector<ValidationRun>& runs) {
  size_t width = 7;
  for (const auto& r : runs) width = std::max(width, r.variant.size());
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %9s %11s %11s %8s %6s %13s  %s\n", static_cast<int>(width),
                "variant", "link", "predicted", "measured", "error", "bytes", "ratio exec/sim",
                "note");
  os << line;
  for (const auto& r : runs) {
    const bool ok = r.failure.empty();
    const std::string bytes = !ok                                    ? "-"
                              : !r.deterministic_bytes               ? "n/a"
                              : bytes_match(r.predicted, r.measured) ? "exact"
                                                                     : "DIFF";
    char ratio[32] = "-";
    if (ok && r.overlap_ratio)
      std::snprintf(ratio, sizeof ratio, "%.2f/%.2f", *r.overlap_ratio,
                    r.predicted_overlap_ratio.value_or(0.0));
    std::snprintf(line, sizeof line, "%-*s %9s %10.4fs %10.4fs %8s %6s %13s  %s\n",
                  static_cast<int>(width), r.variant.c_str(),
                  format_link_rate(r.link.rate_bit_per_s).c_str(), r.predicted.time_per_batch_s,
                  ok ? r.measured.time_per_batch_s : 0.0,
                  ok ? format_error_percent(r.errors.at(0).error).c_str() : "-", bytes.c_str(),
                  ratio, ok ? "" : ("FAILED: " + r.failure.substr(0, 200)).c_str());
    os << line;
  }
  const MatrixSummary s = summarise(runs);
  const auto awake = std::count_if(runs.begin(), runs.end(),
                                   [](const ValidationRun& r) { return r.awake_cores > 0; });
  os << "cores kept from idling (SCHED_IDLE pollers) in " << awake << " of " << runs.size()
     << " run(s)" << (awake == 0 ? " (--let-cores-idle)" : "") << "\n";
  std::snprintf(line, sizeof line,
                "time per batch |error| over %d run(s): median %.1f%%, p90 %.1f%% (target: "
                "median <= 10%%)%s\n",
                s.runs - s.failed, 100 * s.median_abs_error_time_per_batch,
                100 * s.p90_abs_error_time_per_batch,
                s.failed ? (", " + std::to_string(s.failed) + " run(s) FAILED").c_str() : "");
  os << line;
  os << "bytes per batch exact for deterministic codecs: " << s.bytes_exact << " of "
     << s.bytes_checked << (s.bytes_exact == s.bytes_checked ? " (target met)" : " (target MISSED)")
     << "\n";
  if (s.overlap_ratios.empty()) {
    os << "overlap ratio (gpipe, chunks >= 4): no such run\n";
  } else {
    std::snprintf(line, sizeof line,
                  "overlap ratio exec time per batch / max(busiest party's compute, wire time "
                  "(gpipe: busier direction forward + busier direction backward)), gpipe "
                  "chunks >= 4: max %.3f over %zu run(s) (target <= 1.15%s)\n",
                  s.max_overlap_ratio, s.overlap_ratios.size(),
                  s.max_overlap_ratio <= 1.15 ? ", met" : ", MISSED");
    os << line;
    for (const auto& b : s.overlap_by_chunks) {
      std::snprintf(line, sizeof line,
                    "  chunks %lld: max %.3f over %d run(s); the simulator's for the same runs: "
                    "max %.3f\n",
                    static_cast<long long>(b.chunks), b.max_ratio, b.runs, b.max_predicted_ratio);
      os << line;
    }
    if (!s.predicted_overlap_ratios.empty()) {
      const auto& p = s.predicted_overlap_ratios;
      const double max_p = *std::max_element(p.begin(), p.end());
      if (max_p > 1.15)
        os << "  the simulator's ratio is above 1.15 too: the schedule itself (fill and drain of "
              "the pipeline, one GPipe flush per batch) keeps those runs from the bound\n";
      std::snprintf(line, sizeof line,
                    "  exec against the schedule: largest exec ratio / simulator's ratio %.3f "
                    "(1: exec overlaps transfers and compute exactly as simulated)\n",
                    s.max_overlap_vs_predicted);
      os << line;
    }
  }
}

}  // namespace splitsim
