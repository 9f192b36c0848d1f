#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "splitsim/costmodel/format.h"
#include "splitsim/validate/clients_validation.h"

namespace splitsim {
namespace {

double error_of(double predicted, double measured) {
  if (measured == 0) return predicted == 0 ? 0 : std::nan("");
  return (predicted - measured) / measured;
}

const ClientGroupMetrics* group_named(const Metrics& m, const std::string& name) {
  for (const ClientGroupMetrics& g : m.client_groups)
    if (g.name == name) return &g;
  return nullptr;
}

// The row of `metric`: `value` of the prediction against each repetition.
template <typename Value>
ClientsRow row(const ClientsValidationRun& run, const std::string& metric, Value value) {
  std::vector<double> measured;
  for (const Metrics& m : run.repetitions) measured.push_back(value(m));
  ClientsRow r;
  r.median.metric = metric;
  r.median.predicted = value(run.predicted);
  r.median.measured = quantile(measured, 0.5);
  r.median.error = error_of(r.median.predicted, r.median.measured);
  r.min = *std::min_element(measured.begin(), measured.end());
  r.max = *std::max_element(measured.begin(), measured.end());
  return r;
}

bool is_bytes(const std::string& metric) { return metric.find(".bytes_") != std::string::npos; }
bool is_group_time(const std::string& metric) {
  const std::string tail = ".time_per_batch_s";
  return metric.size() > tail.size() &&
         metric.compare(metric.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<ClientsRow> clients_rows(const ClientsValidationRun& run) {
  std::vector<ClientsRow> rows;
  rows.push_back(row(run, "time_per_round_s", [](const Metrics& m) { return m.time_per_batch_s; }));
  rows.push_back(
      row(run, "round_wait_s", [](const Metrics& m) { return m.round_wait_spread.median_s; }));
  for (const ClientGroupMetrics& g : run.predicted.client_groups) {
    const std::string name = g.name;
    auto of = [name](double ClientGroupMetrics::*field) {
      return [name, field](const Metrics& m) {
        const ClientGroupMetrics* found = group_named(m, name);
        return found ? found->*field : 0.0;
      };
    };
    rows.push_back(row(run, name + ".time_per_batch_s", [name](const Metrics& m) {
      const ClientGroupMetrics* found = group_named(m, name);
      return found ? found->time_per_batch.median_s : 0.0;
    }));
    rows.push_back(
        row(run, name + ".bytes_sent_per_batch", of(&ClientGroupMetrics::bytes_sent_per_batch)));
    rows.push_back(row(run, name + ".bytes_received_per_batch",
                       of(&ClientGroupMetrics::bytes_received_per_batch)));
  }
  return rows;
}

std::string straggler(const Metrics& m) {
  if (m.client_groups.size() < 2) return "";
  const auto last = std::max_element(m.client_groups.begin(), m.client_groups.end(),
                                     [](const ClientGroupMetrics& a, const ClientGroupMetrics& b) {
                                       return a.last_in_round < b.last_in_round;
                                     });
  char share[48];
  std::snprintf(share, sizeof share, " (%.0f%% of rounds)", 100 * last->last_in_round);
  return last->name + share;
}

void print_clients_run(std::ostream& os, const ClientsValidationRun& run) {
  os << "== " << run.scenario << " \"" << run.variant << "\": " << run.predicted.clients
     << " client processes, predicted (simulate) vs measured (exec)\n"
     << "link: " << run.link << "\nprofile: " << run.profile << "\n";
  for (const auto& [group, factor] : run.slowdowns)
    os << "group " << group << ": each computation " << format_si_digits(factor, 3)
       << " x as long (exec --compute-slowdown)\n";
  if (!run.failure.empty()) {
    os << "FAILED: " << run.failure << "\n";
    return;
  }
  char line[256];
  std::snprintf(line, sizeof line, "%-40s %12s %12s %23s %9s\n", "metric", "predicted", "measured",
                "(min..max)", "error");
  os << line;
  for (const ClientsRow& r : clients_rows(run)) {
    const std::string range =
        "(" + format_si_digits(r.min, 4) + ".." + format_si_digits(r.max, 4) + ")";
    std::snprintf(line, sizeof line, "%-40s %12s %12s %23s %9s\n", r.median.metric.c_str(),
                  format_si_digits(r.median.predicted, 4).c_str(),
                  format_si_digits(r.median.measured, 4).c_str(), range.c_str(),
                  format_error_percent(r.median.error).c_str());
    os << line;
  }
  if (run.predicted.client_groups.size() > 1) {
    os << "straggler: predicted " << straggler(run.predicted) << "; measured";
    for (size_t i = 0; i < run.repetitions.size(); ++i)
      os << (i ? ", " : " ") << straggler(run.repetitions[i]);
    os << "\n";
  }
  print_memory_checks(os, run.memory);
  double steal = 0;
  for (const RunConditions& c : run.conditions) steal = std::max(steal, c.cpu.steal_fraction);
  std::snprintf(line, sizeof line,
                "%zu repetitions, CPU steal at most %.1f%%; error = (predicted - measured) / "
                "measured, the median of the repetitions; s and B\n",
                run.repetitions.size(), 100 * steal);
  os << line;
}

ClientsSummary summarize_clients(const std::vector<ClientsValidationRun>& runs) {
  ClientsSummary s;
  std::vector<double> rounds, groups;
  for (const ClientsValidationRun& run : runs) {
    if (!run.failure.empty() || run.repetitions.empty()) continue;
    for (const ClientsRow& r : clients_rows(run)) {
      const std::string& metric = r.median.metric;
      if (metric == "time_per_round_s") rounds.push_back(std::abs(r.median.error));
      if (is_group_time(metric)) groups.push_back(std::abs(r.median.error));
      if (is_bytes(metric)) {
        ++s.bytes_compared;
        if (r.median.predicted == r.median.measured) ++s.bytes_exact;
      }
    }
    const std::string predicted = straggler(run.predicted);
    if (predicted.empty()) continue;
    const std::string group = predicted.substr(0, predicted.find(" ("));
    for (const Metrics& m : run.repetitions) {
      ++s.straggler_runs;
      if (straggler(m).rfind(group + " (", 0) == 0) ++s.straggler_named;
    }
  }
  const double nan = std::nan("");
  s.round_median_abs_error = rounds.empty() ? nan : quantile(rounds, 0.5);
  s.group_median_abs_error = groups.empty() ? nan : quantile(groups, 0.5);
  s.group_max_abs_error = groups.empty() ? nan : *std::max_element(groups.begin(), groups.end());
  return s;
}

void print_clients_summary(std::ostream& os, const ClientsSummary& s) {
  char line[320];
  std::snprintf(line, sizeof line,
                "summary: time per round median |error| %.1f%%; a group's time per batch median "
                "|error| %.1f%% (max %.1f%%); bytes exact in %d of %d; the predicted straggler "
                "measured in %d of %d repetitions\n",
                100 * s.round_median_abs_error, 100 * s.group_median_abs_error,
                100 * s.group_max_abs_error, s.bytes_exact, s.bytes_compared, s.straggler_named,
                s.straggler_runs);
  os << line;
}

nlohmann::json clients_validation_json(const std::vector<ClientsValidationRun>& runs) {
  nlohmann::json variants = nlohmann::json::array();
  for (const ClientsValidationRun& run : runs) {
    nlohmann::json v = {{"scenario", run.scenario},
                        {"variant", run.variant},
                        {"link", run.link},
                        {"profile", run.profile},
                        {"slowdowns", run.slowdowns}};
    if (!run.failure.empty()) {
      v["failure"] = run.failure;
      variants.push_back(v);
      continue;
    }
    for (const ClientsRow& r : clients_rows(run))
      v["rows"].push_back({{"metric", r.median.metric},
                           {"predicted", r.median.predicted},
                           {"measured_median", r.median.measured},
                           {"measured_min", r.min},
                           {"measured_max", r.max},
                           {"error", std::isfinite(r.median.error) ? nlohmann::json(r.median.error)
                                                                   : nlohmann::json()}});
    v["straggler"]["predicted"] = straggler(run.predicted);
    for (const Metrics& m : run.repetitions) v["straggler"]["measured"].push_back(straggler(m));
    v["predicted"] = run.predicted;
    v["repetitions"] = run.repetitions;
    for (const RunConditions& c : run.conditions) v["conditions"].push_back(conditions_json(c));
    for (const MemoryCheck& m : run.memory)
      v["memory"][m.party] = {{"predicted_peak_bytes", m.predicted_bytes},
                              {"measured_peak_tensor_bytes", m.measured_bytes}};
    variants.push_back(v);
  }
  const ClientsSummary s = summarize_clients(runs);
  auto finite = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(); };
  return {{"schema", "splitsim.validation_clients/1"},
          {"variants", variants},
          {"summary",
           {{"time_per_round_median_abs_error", finite(s.round_median_abs_error)},
            {"group_time_per_batch_median_abs_error", finite(s.group_median_abs_error)},
            {"group_time_per_batch_max_abs_error", finite(s.group_max_abs_error)},
            {"bytes_exact", s.bytes_exact},
            {"bytes_compared", s.bytes_compared},
            {"straggler_named", s.straggler_named},
            {"straggler_repetitions", s.straggler_runs}}}};
}

}  // namespace splitsim
