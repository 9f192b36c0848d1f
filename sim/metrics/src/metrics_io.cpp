// Metrics as JSON ("splitsim.metrics/1") and CSV.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "splitsim/sim/metrics.h"

namespace splitsim {

void to_json(nlohmann::json& j, const Metrics& m) {
  nlohmann::json parties = nlohmann::json::object();
  for (const auto& p : m.parties)
    parties[p.name] = {{"client", p.client},
                       {"bytes_sent_per_batch", p.bytes_sent_per_batch},
                       {"bytes_received_per_batch", p.bytes_received_per_batch},
                       {"bandwidth_avg_send_Bps", p.bandwidth_avg_send_Bps},
                       {"bandwidth_avg_recv_Bps", p.bandwidth_avg_recv_Bps},
                       {"send_Bps_over_time_per_batch", p.send_Bps_over_time_per_batch},
                       {"recv_Bps_over_time_per_batch", p.recv_Bps_over_time_per_batch},
                       {"peak_send_Bps", p.peak_send_Bps},
                       {"peak_recv_Bps", p.peak_recv_Bps},
                       {"busy_s_per_batch", p.busy_s_per_batch},
                       {"utilisation", p.utilisation}};
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : m.links)
    links.push_back({{"from", l.from},
                     {"to", l.to},
                     {"bytes_per_batch", l.bytes_per_batch},
                     {"busy_s_per_batch", l.busy_s_per_batch},
                     {"utilisation", l.utilisation},
                     {"peak_Bps", l.peak_Bps}});
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : m.stages)
    stages.push_back({{"stage", s.stage},
                      {"party", s.party},
                      {"busy_s_per_batch", s.busy_s_per_batch},
                      {"peak_stashed_microbatches", s.peak_stashed_microbatches},
                      {"peak_stash_bytes", s.peak_stash_bytes}});
  j = {{"schema", "splitsim.metrics/1"},
       {"source", m.source},
       {"scenario", m.scenario},
       {"variant", m.variant},
       {"schedule", m.schedule},
       {"batches", m.batches},
       {"warmup_batches", m.warmup_batches},
       {"clients", m.clients},
       {"time_per_batch_s", m.time_per_batch_s},
       {"time_per_batch_spread_s",
        {{"min", m.time_per_batch_spread.min_s},
         {"median", m.time_per_batch_spread.median_s},
         {"max", m.time_per_batch_spread.max_s}}},
       {"computation_time_s", m.computation_time_s},
       {"makespan_s", m.makespan_s},
       {"throughput_batches_per_s", m.throughput_batches_per_s},
       {"parties", parties},
       {"bandwidth_peak_client_Bps", m.bandwidth_peak_client_Bps},
       {"bandwidth_peak_server_Bps", m.bandwidth_peak_server_Bps},
       {"links", links},
       {"stages", stages},
       {"bubble_fraction", m.bubble_fraction},
       {"busiest_resource", m.busiest_resource},
       {"busiest_utilisation", m.busiest_utilisation}};
  if (!m.client_groups.empty()) {
    nlohmann::json groups = nlohmann::json::array();
    for (const auto& g : m.client_groups)
      groups.push_back({{"name", g.name},
                        {"clients", g.clients},
                        {"time_per_batch_s",
                         {{"min", g.time_per_batch.min_s},
                          {"median", g.time_per_batch.median_s},
                          {"max", g.time_per_batch.max_s}}},
                        {"busy_s_per_batch", g.busy_s_per_batch},
                        {"bytes_sent_per_batch", g.bytes_sent_per_batch},
                        {"bytes_received_per_batch", g.bytes_received_per_batch},
                        {"last_in_round", g.last_in_round}});
    j["client_groups"] = groups;
    j["round_wait_s"] = {{"min", m.round_wait_spread.min_s},
                         {"median", m.round_wait_spread.median_s},
                         {"max", m.round_wait_spread.max_s}};
  }
}

namespace {

Spread spread_from_json(const nlohmann::json& s) {
  return {s.at("min").get<double>(), s.at("median").get<double>(), s.at("max").get<double>()};
}

}  // namespace

void from_json(const nlohmann::json& j, Metrics& m) {
  if (j.value("schema", "") != "splitsim.metrics/1")
    throw std::invalid_argument("metrics JSON: expected \"schema\": \"splitsim.metrics/1\"");
  m = Metrics{};
  m.source = j.at("source").get<std::string>();
  m.scenario = j.value("scenario", "");
  m.variant = j.value("variant", "");
  m.schedule = j.value("schedule", "");
  m.batches = j.value("batches", int64_t{0});
  m.warmup_batches = j.value("warmup_batches", int64_t{0});
  m.clients = j.value("clients", int64_t{1});
  m.time_per_batch_s = j.at("time_per_batch_s").get<double>();
  if (j.contains("time_per_batch_spread_s")) {
    const auto& s = j.at("time_per_batch_spread_s");
    m.time_per_batch_spread = {s.at("min").get<double>(), s.at("median").get<double>(),
                               s.at("max").get<double>()};
  }
  m.computation_time_s = j.at("computation_time_s").get<double>();
  m.makespan_s = j.value("makespan_s", 0.0);
  m.throughput_batches_per_s = j.value("throughput_batches_per_s", 0.0);
  for (const auto& [name, p] : j.at("parties").items()) {
    PartyMetrics pm;
    pm.name = name;
    pm.client = p.value("client", name.rfind("client", 0) == 0);
    pm.bytes_sent_per_batch = p.at("bytes_sent_per_batch").get<double>();
    pm.bytes_received_per_batch = p.at("bytes_received_per_batch").get<double>();
    pm.bandwidth_avg_send_Bps = p.at("bandwidth_avg_send_Bps").get<double>();
    pm.bandwidth_avg_recv_Bps = p.at("bandwidth_avg_recv_Bps").get<double>();
    pm.send_Bps_over_time_per_batch = p.value("send_Bps_over_time_per_batch", 0.0);
    pm.recv_Bps_over_time_per_batch = p.value("recv_Bps_over_time_per_batch", 0.0);
    pm.peak_send_Bps = p.value("peak_send_Bps", 0.0);
    pm.peak_recv_Bps = p.value("peak_recv_Bps", 0.0);
    pm.busy_s_per_batch = p.at("busy_s_per_batch").get<double>();
    pm.utilisation = p.value("utilisation", 0.0);
    m.parties.push_back(pm);
  }
  m.bandwidth_peak_client_Bps = j.at("bandwidth_peak_client_Bps").get<double>();
  m.bandwidth_peak_server_Bps = j.at("bandwidth_peak_server_Bps").get<double>();
  for (const auto& l : j.value("links", nlohmann::json::array()))
    m.links.push_back({l.at("from").get<std::string>(), l.at("to").get<std::string>(),
                       l.at("bytes_per_batch").get<double>(),
                       l.at("busy_s_per_batch").get<double>(), l.at("utilisation").get<double>(),
                       l.at("peak_Bps").get<double>()});
  for (const auto& s : j.value("stages", nlohmann::json::array()))
    m.stages.push_back({s.at("stage").get<int>(), s.at("party").get<std::string>(),
                        s.at("busy_s_per_batch").get<double>(),
                        s.at("peak_stashed_microbatches").get<int64_t>(),
                        s.at("peak_stash_bytes").get<int64_t>()});
  m.bubble_fraction = j.value("bubble_fraction", 0.0);
  m.busiest_resource = j.value("busiest_resource", "");
  m.busiest_utilisation = j.value("busiest_utilisation", 0.0);
  for (const auto& g : j.value("client_groups", nlohmann::json::array()))
    m.client_groups.push_back(
        {g.at("name").get<std::string>(), g.at("clients").get<int64_t>(),
         spread_from_json(g.at("time_per_batch_s")), g.at("busy_s_per_batch").get<double>(),
         g.at("bytes_sent_per_batch").get<double>(), g.at("bytes_received_per_batch").get<double>(),
         g.value("last_in_round", 0.0)});
  if (j.contains("round_wait_s")) m.round_wait_spread = spread_from_json(j.at("round_wait_s"));
}

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

}  // namespace

// Client columns: one client (the mean over client parties). Server columns:
// every non-client party summed.
nlohmann::ordered_json csv_record(const Metrics& m) {
  double c_sent = 0, c_recv = 0, c_avg_s = 0, c_avg_r = 0, c_busy = 0;
  double s_sent = 0, s_recv = 0, s_busy = 0;
  int n_clients = 0;
  for (const auto& p : m.parties) {
    if (p.client) {
      ++n_clients;
      c_sent += p.bytes_sent_per_batch;
      c_recv += p.bytes_received_per_batch;
      c_avg_s += p.bandwidth_avg_send_Bps;
      c_avg_r += p.bandwidth_avg_recv_Bps;
      c_busy += p.busy_s_per_batch;
    } else {
      s_sent += p.bytes_sent_per_batch;
      s_recv += p.bytes_received_per_batch;
      s_busy += p.busy_s_per_batch;
    }
  }
  const double n = n_clients > 0 ? n_clients : 1;
  std::vector<int64_t> stash;
  for (const auto& s : m.stages) stash.push_back(s.peak_stash_bytes);
  nlohmann::ordered_json r;
  r["source"] = m.source;
  r["scenario"] = m.scenario;
  r["variant"] = m.variant;
  r["schedule"] = m.schedule;
  r["clients"] = m.clients;
  r["batches"] = m.batches;
  r["warmup_batches"] = m.warmup_batches;
  r["time_per_batch_s"] = m.time_per_batch_s;
  r["time_per_batch_min_s"] = m.time_per_batch_spread.min_s;
  r["time_per_batch_median_s"] = m.time_per_batch_spread.median_s;
  r["time_per_batch_max_s"] = m.time_per_batch_spread.max_s;
  r["computation_time_s"] = m.computation_time_s;
  r["client_bytes_sent_per_batch"] = c_sent / n;
  r["client_bytes_received_per_batch"] = c_recv / n;
  r["server_bytes_sent_per_batch"] = s_sent;
  r["server_bytes_received_per_batch"] = s_recv;
  r["client_bandwidth_avg_send_Bps"] = c_avg_s / n;
  r["client_bandwidth_avg_recv_Bps"] = c_avg_r / n;
  r["bandwidth_peak_client_Bps"] = m.bandwidth_peak_client_Bps;
  r["bandwidth_peak_server_Bps"] = m.bandwidth_peak_server_Bps;
  r["client_busy_s_per_batch"] = c_busy / n;
  r["server_busy_s_per_batch"] = s_busy;
  r["bubble_fraction"] = m.bubble_fraction;
  r["busiest_resource"] = m.busiest_resource;
  r["busiest_utilisation"] = m.busiest_utilisation;
  r["peak_stash_bytes_per_stage"] = stash;
  return r;
}

void write_csv_header(std::ostream& os) {
  const nlohmann::ordered_json columns = csv_record(Metrics{});  // items() refers to it
  std::string line;
  for (const auto& item : columns.items()) line += (line.empty() ? "" : ",") + item.key();
  os << line << '\n';
}

// Strings quoted where they must be, integers as they are, other numbers to
// 10 significant digits, the stash list joined with ';'.
void write_csv_row(std::ostream& os, const Metrics& m) {
  const nlohmann::ordered_json record = csv_record(m);  // items() refers to it
  std::string line;
  for (const auto& item : record.items()) {
    const auto& v = item.value();
    std::string field;
    if (v.is_string()) {
      field = csv_field(v.get<std::string>());
    } else if (v.is_array()) {
      for (const auto& x : v)
        field += (field.empty() ? "" : ";") + std::to_string(x.get<int64_t>());
    } else if (v.is_number_integer()) {
      field = std::to_string(v.get<int64_t>());
    } else {
      field = num(v.get<double>());
    }
    line += (line.empty() ? "" : ",") + field;
  }
  os << line << '\n';
}

}  // namespace splitsim
