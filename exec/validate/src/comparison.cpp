#include "splitsim/validate/comparison.h"

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
#include "splitsim/costmodel/format.h"

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
                              " is outside what tc shapes on the veth pair: allowed 8kbit "
                              "to 100gbit (below, tc's rate tables lose precision; above, the "
                              "veth pair itself is slower and the bucket overflows)");
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

DeviceProfile median_profile(const std::vector<DeviceProfile>& profiles) {
  DeviceProfile out = profiles.at(0);
  for (size_t u = 0; u < out.timings.size(); ++u) {
    std::vector<double> fwd, bwd, update;
    for (const DeviceProfile& d : profiles) {
      fwd.push_back(d.timings.at(u).fwd_s);
      bwd.push_back(d.timings.at(u).bwd_s);
      update.push_back(d.timings.at(u).update_s);
    }
    out.timings[u].fwd_s = quantile(fwd, 0.5);
    out.timings[u].bwd_s = quantile(bwd, 0.5);
    out.timings[u].update_s = quantile(update, 0.5);
  }
  return out;
}

std::string format_error_percent(double error) {
  return std::isfinite(error) ? format_signed_percent(error, 1) : "n/a";
}

void print_comparison(std::ostream& os, const std::vector<MetricError>& rows) {
  char line[256];
  std::snprintf(line, sizeof line, "%-42s %14s %14s %9s\n", "metric", "predicted", "measured",
                "error");
  os << line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%-42s %14s %14s %9s\n", r.metric.c_str(),
                  format_si_digits(r.predicted, 4).c_str(), format_si_digits(r.measured, 4).c_str(),
                  format_error_percent(r.error).c_str());
    os << line;
  }
  os << "error = (predicted - measured) / measured; seconds in s, bytes in B, rates in B/s\n";
}

nlohmann::json conditions_json(const RunConditions& c) {
  nlohmann::json j = {{"wall_s", c.cpu.wall_s},
                      {"steal_pct", 100 * c.cpu.steal_fraction},
                      {"foreign_cpu_pct", 100 * c.cpu.foreign_cpu_fraction},
                      {"load_1m", c.cpu.load_1m},
                      {"exec_cpu_s", c.cpu.children_cpu_s},
                      {"exec_sys_s", c.cpu.children_sys_s},
                      {"retried", c.retried}};
  if (!c.disturbed.empty()) j["disturbed"] = c.disturbed;
  return j;
}

void aggregate_repetitions(ValidationRun* r) {
  const std::vector<Metrics>& reps = r->repetitions;
  std::vector<size_t> order(reps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return reps[a].time_per_batch_s < reps[b].time_per_batch_s;
  });
  r->measured = reps[order[(order.size() - 1) / 2]];
  r->measured_min_time_s = reps[order.front()].time_per_batch_s;
  r->measured_max_time_s = reps[order.back()].time_per_batch_s;
  std::vector<std::vector<MetricError>> per_rep;
  for (const Metrics& m : reps) per_rep.push_back(compare_metrics(r->predicted, m));
  r->errors = per_rep.front();
  for (size_t row = 0; row < r->errors.size(); ++row) {
    std::vector<double> values;
    for (const auto& rows : per_rep) values.push_back(rows[row].measured);
    const MetricError& first = r->errors[row];
    r->errors[row] = make_error(first.metric, first.predicted, quantile(values, 0.5));
  }
}

bool predicted_inside_spread(const ValidationRun& r) {
  const double p = r.predicted.time_per_batch_s;
  return r.failure.empty() && p >= r.measured_min_time_s && p <= r.measured_max_time_s;
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
        {"burst_bytes", run.link.burst_bytes},
        {"burst_packet_bytes", run.link.burst_packet_bytes},
        {"tcp_congestion_control", run.tcp_congestion_control}}},
      {"profile", run.profile},
      {"profile_unit_s", run.profile_unit_s},
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
  if (!run.model.empty()) j["model"] = run.model;
  if (!run.repetitions.empty()) {
    nlohmann::json reps = nlohmann::json::array();
    for (size_t i = 0; i < run.repetitions.size(); ++i) {
      const Metrics& m = run.repetitions[i];
      nlohmann::json busy = nlohmann::json::object();
      for (const auto& p : m.parties) busy[p.name] = p.busy_s_per_batch;
      nlohmann::json rep = {{"time_per_batch_s", m.time_per_batch_s},
                            {"computation_time_s", m.computation_time_s},
                            {"busy_s_per_batch", busy}};
      if (i < run.conditions.size()) rep["conditions"] = conditions_json(run.conditions[i]);
      reps.push_back(rep);
    }
    j["repetitions"] = reps;
    j["measured_time_per_batch_spread_s"] = {run.measured_min_time_s, run.measured_max_time_s};
    j["predicted_inside_spread"] = predicted_inside_spread(run);
  }
  if (run.predicted_spread.known())
    j["predicted_time_per_batch_spread_s"] = {run.predicted_spread.low_s,
                                              run.predicted_spread.high_s};
  if (run.predicted_plain_time_per_batch_s > 0)
    j["predicted_without_platform_time_per_batch_s"] = run.predicted_plain_time_per_batch_s;
  if (run.predicted_without_wake.time_per_batch_s > 0) {
    nlohmann::json& w = j["predicted_without_wake_cost"];
    w["time_per_batch_s"] = run.predicted_without_wake.time_per_batch_s;
    for (const PartyMetrics& p : run.predicted_without_wake.parties)
      w["busy_s_per_batch"][p.name] = p.busy_s_per_batch;
  }
  if (run.link_fit.valid()) j["link_fit"] = link_fit_json(run.link_fit);
  j["goodput_fraction"] = run.goodput_fraction;
  if (run.loss_rate > 0) {
    j["loss_rate"] = run.loss_rate;
    j["loss_recovery_s"] = run.loss_recovery_s;
  }
  if (run.predicted_link_time_per_batch_s > 0)
    j["predicted_with_measured_link"] = {
        {"time_per_batch_s", run.predicted_link_time_per_batch_s},
        {"bandwidth_peak_client_Bps", run.predicted_link_peak_client_Bps},
        {"bandwidth_peak_server_Bps", run.predicted_link_peak_server_Bps}};
  j["platform"] = {{"cpu_s_per_byte_sent", run.platform.cpu_s_per_byte_sent},
                   {"cpu_s_per_byte_received", run.platform.cpu_s_per_byte_received},
                   {"cpu_s_per_message_sent", run.platform.cpu_s_per_message_sent},
                   {"cpu_s_per_message_received", run.platform.cpu_s_per_message_received},
                   {"shared_machine", run.platform.shared_machine},
                   {"co_compute_slowdown", run.platform.co_compute_slowdown}};
  for (const WakePoint& w : run.platform.wake_cost)
    j["platform"]["wake_cost"].push_back({{"gap_s", w.gap_s}, {"seconds", w.seconds}});
  if (!run.memory.empty()) {
    nlohmann::json memory = nlohmann::json::object();
    for (const MemoryCheck& m : run.memory)
      memory[m.party] = {{"predicted_peak_bytes", m.predicted_bytes},
                         {"measured_peak_tensor_bytes", m.measured_bytes},
                         {"error_pct", number_or_null(100 * m.error())}};
    j["memory"] = memory;
  }
  if (!run.failure.empty()) j["failure"] = run.failure;
  return j;
}

double MemoryCheck::error() const {
  if (measured_bytes == 0) return predicted_bytes == 0 ? 0.0 : std::nan("");
  return static_cast<double>(predicted_bytes - measured_bytes) /
         static_cast<double>(measured_bytes);
}

std::vector<MemoryCheck> memory_checks(const nlohmann::json& exec_metrics) {
  std::vector<MemoryCheck> out;
  const auto it = exec_metrics.find("memory");
  if (it == exec_metrics.end() || !it->is_object()) return out;
  for (const auto& [party, m] : it->items()) {
    if (!m.is_object() || !m.contains("measured_peak_tensor_bytes") ||
        !m.contains("predicted_peak_bytes"))
      continue;
    out.push_back({party, m.at("predicted_peak_bytes").get<int64_t>(),
                   m.at("measured_peak_tensor_bytes").get<int64_t>()});
  }
  return out;
}

void print_memory_checks(std::ostream& os, const std::vector<MemoryCheck>& memory) {
  for (const MemoryCheck& m : memory)
    os << "peak memory of " << m.party << ": planned " << m.predicted_bytes / 1e6
       << " MB, exec's tensors " << m.measured_bytes / 1e6 << " MB ("
       << format_error_percent(m.error()) << ")\n";
}

}  // namespace splitsim
