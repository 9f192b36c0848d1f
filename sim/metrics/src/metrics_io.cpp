// Metrics as JSON ("splitsim.metrics/1") and CSV.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>
#include <string>

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
                        {"bytes_received_per_batch", g.bytes_received_per_batch}});
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
    m.client_groups.push_back({g.at("name").get<std::string>(), g.at("clients").get<int64_t>(),
                               spread_from_json(g.at("time_per_batch_s")),
                               g.at("busy_s_per_batch").get<double>(),
                               g.at("bytes_sent_per_batch").get<double>(),
                               g.at("bytes_received_per_batch").get<double>()});
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

void write_csv_header(std::ostream& os) {
  os << "source,scenario,variant,schedule,clients,batches,warmup_batches,time_per_batch_s,"
        "time_per_batch_min_s,time_per_batch_median_s,time_per_batch_max_s,computation_time_s,"
        "client_bytes_sent_per_batch,client_bytes_received_per_batch,"
        "server_bytes_sent_per_batch,server_bytes_received_per_batch,"
        "client_bandwidth_avg_send_Bps,client_bandwidth_avg_recv_Bps,"
        "bandwidth_peak_client_Bps,bandwidth_peak_server_Bps,client_busy_s_per_batch,"
        "server_busy_s_per_batch,bubble_fraction,busiest_resource,busiest_utilisation,"
        "peak_stash_bytes_per_stage\n";
}

// Client columns: one client (the mean over client parties). Server columns:
// every non-client party summed.
void write_csv_row(std::ostream& os, const Metrics& m) {
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
  std::string stash;
  for (const auto& s : m.stages)
    stash += (stash.empty() ? "" : ";") + std::to_string(s.peak_stash_bytes);
  os << csv_field(m.source) << ',' << csv_field(m.scenario) << ',' << csv_field(m.variant) << ','
     << csv_field(m.schedule) << ',' << m.clients << ',' << m.batches << ',' << m.warmup_batches
     << ',' << num(m.time_per_batch_s) << ',' << num(m.time_per_batch_spread.min_s) << ','
     << num(m.time_per_batch_spread.median_s) << ',' << num(m.time_per_batch_spread.max_s) << ','
     << num(m.computation_time_s) << ',' << num(c_sent / n) << ',' << num(c_recv / n) << ','
     << num(s_sent) << ',' << num(s_recv) << ',' << num(c_avg_s / n) << ',' << num(c_avg_r / n)
     << ',' << num(m.bandwidth_peak_client_Bps) << ',' << num(m.bandwidth_peak_server_Bps) << ','
     << num(c_busy / n) << ',' << num(s_busy) << ',' << num(m.bubble_fraction) << ','
     << csv_field(m.busiest_resource) << ',' << num(m.busiest_utilisation) << ',' << stash << '\n';
}

}  // namespace splitsim
