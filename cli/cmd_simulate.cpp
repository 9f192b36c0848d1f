// `splitsim simulate SCENARIO`: every variant through the SimGrid simulator;
// a table, the metrics JSON, CSV, and a Chrome trace of one variant.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "splitsim/sim/trace.h"
#include "workspace.h"

namespace splitsim {
namespace {

struct SimulateArgs {
  std::string scenario;
  std::string variant;
  bool json = false;
  bool csv = false;
  std::string trace;
  std::string server_order = "fifo";
  int jobs = 0;
};

// 1234567 -> "1.23M" (decimal prefixes).
std::string si(double v) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int p = 0;
  while (v >= 1000 && p < 5) {
    v /= 1000;
    ++p;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, p == 0 ? "%.0f%s" : "%.2f%s", v, prefixes[p]);
  return buf;
}

std::string seconds(double s) {
  char buf[32];
  if (s >= 1)
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  return buf;
}

std::string percent(double f) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * f);
  return buf;
}

// The parties shown in the table: with several clients, client0 stands for
// every client ("client0 (each)"); every other party as itself.
std::string party_bytes(const Metrics& m) {
  std::string out;
  bool client_shown = false;
  for (const auto& p : m.parties) {
    if (p.client && client_shown) continue;
    std::string name = p.name;
    if (p.client && m.clients > 1) name += " (each)";
    client_shown |= p.client;
    out += (out.empty() ? "" : "  ") + name + " " + si(p.bytes_sent_per_batch) + "B/" +
           si(p.bytes_received_per_batch) + "B";
  }
  return out;
}

void print_table(std::ostream& os, const std::vector<Metrics>& all) {
  const Metrics& first = all.front();
  bool same_schedule = true, same_window = true;
  for (const auto& m : all) {
    same_schedule &= m.schedule == first.schedule;
    same_window &= m.batches == first.batches && m.warmup_batches == first.warmup_batches;
  }
  os << "== " << first.scenario << ": " << all.size() << " variant(s)";
  if (same_window)
    os << ", steady state over batches " << first.warmup_batches << ".." << first.batches - 1;
  if (same_schedule) os << ", schedule " << first.schedule;
  if (first.clients > 1) os << ", " << first.clients << " clients";
  os << "\n";
  size_t width = 7;
  for (const auto& m : all) width = std::max(width, m.variant.size());
  char line[1024];
  std::snprintf(line, sizeof line, "%-*s %11s %21s %11s %13s %13s %22s %6s  %-28s %s  %s\n",
                static_cast<int>(width), "variant", "time/batch", "spread (min..max)", "compute",
                "avg send B/s", "avg recv B/s", "peak client/server B/s", "bubble",
                "busiest (utilisation)", "peak stash per stage (B)",
                "bytes sent/received per batch");
  os << line;
  for (const auto& m : all) {
    const PartyMetrics* client = nullptr;
    for (const auto& p : m.parties)
      if (p.client && client == nullptr) client = &p;
    std::string stash;
    for (const auto& s : m.stages) stash += (stash.empty() ? "" : "/") + si(s.peak_stash_bytes);
    const std::string spread =
        seconds(m.time_per_batch_spread.min_s) + ".." + seconds(m.time_per_batch_spread.max_s);
    const std::string peak =
        si(m.bandwidth_peak_client_Bps) + "/" + si(m.bandwidth_peak_server_Bps);
    const std::string busiest = m.busiest_resource + " (" + percent(m.busiest_utilisation) + ")";
    std::snprintf(line, sizeof line, "%-*s %11s %21s %11s %13s %13s %22s %6s  %-28s %s  %s\n",
                  static_cast<int>(width), m.variant.c_str(), seconds(m.time_per_batch_s).c_str(),
                  spread.c_str(), seconds(m.computation_time_s).c_str(),
                  client ? si(client->bandwidth_avg_send_Bps).c_str() : "-",
                  client ? si(client->bandwidth_avg_recv_Bps).c_str() : "-", peak.c_str(),
                  percent(m.bubble_fraction).c_str(), busiest.c_str(), stash.c_str(),
                  party_bytes(m).c_str());
    os << line;
  }
  os << "avg = bytes of the client (the party of stage 0) / computation time (the reports' "
        "definition); peak = the fastest single transfer sent by a client / received by the "
        "server (any other party)\n";
}

int run_simulate(const SimulateArgs& args) {
  const ServerOrder order = parse_server_order(args.server_order, "--server-order");
  Workspace ws(args.scenario, [](const std::string& line) { std::cerr << line << "\n"; });
  ws.select(args.variant);
  if (!args.trace.empty() && ws.variants().size() > 1) {
    std::string labels;
    for (const auto& v : ws.variants()) labels += (labels.empty() ? "\"" : ", \"") + v.label + "\"";
    throw InputError(
        "--trace", "writes one variant's trace, but " + std::to_string(ws.variants().size()) +
                       " variants are selected; pick one with --variant (labels: " + labels + ")");
  }
  std::vector<Plan> plans;
  for (const auto& v : ws.variants()) plans.push_back(ws.plan(v));
  const int jobs = args.jobs > 0
                       ? args.jobs
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  SimOptions options;
  options.server_order = order;
  std::cerr << "simulating " << plans.size() << " variant(s)\n";
  const std::vector<Timeline> timelines = simulate_many(plans, options, jobs);
  std::vector<Metrics> metrics;
  for (size_t i = 0; i < plans.size(); ++i)
    metrics.push_back(compute_metrics(timelines[i], plans[i], plans[i].warmup));

  if (!args.trace.empty()) {
    std::ofstream out(args.trace);
    if (!out) throw InputError("--trace", "cannot write \"" + args.trace + "\"");
    write_chrome_trace(timelines.front(), out);
    if (!out) throw InputError("--trace", "error while writing \"" + args.trace + "\"");
    std::cerr << "trace of \"" << plans.front().variant << "\" written to " << args.trace << "\n";
  }
  std::ostringstream out;
  if (args.json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& m : metrics) all.push_back(m);
    out << (all.size() == 1 ? all[0] : all).dump(2) << "\n";
  } else if (args.csv) {
    write_csv_header(out);
    for (const auto& m : metrics) write_csv_row(out, m);
  } else {
    print_table(out, metrics);
  }
  std::cout << out.str();
  return 0;
}

}  // namespace

Command add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* sub = app.add_subcommand(
      "simulate",
      "Simulate every variant of the scenario with SimGrid (one host per party, full-duplex "
      "links, one actor per stage running the schedule) and print per batch: time, computation "
      "time, bytes per party, average and peak bandwidth, busiest resource, bubble fraction, peak "
      "stash per stage. Warm-up batches are left out.");
  sub->add_option("scenario", args->scenario, "scenario JSON file")->required();
  sub->add_option("--variant", args->variant,
                  "only the variants whose label contains this text (e.g. \"chunks=4\")");
  auto* json = sub->add_flag("--json", args->json,
                             "metrics JSON (schema splitsim.metrics/1): one object, or an array "
                             "when several variants are selected");
  sub->add_flag("--csv", args->csv, "CSV, one row per variant (for notebooks)")->excludes(json);
  sub->add_option("--trace", args->trace,
                  "write the Chrome trace-event JSON (Perfetto) of the one selected variant");
  sub->add_option("--server-order", args->server_order,
                  "with several clients, which waiting client the server serves next: fifo or "
                  "round-robin")
      ->capture_default_str();
  sub->add_option("--jobs", args->jobs,
                  "simulations run at once, one child process each (default: the CPU count)")
      ->check(int_range(1, 1024));
  return {sub, [args] { return run_simulate(*args); }};
}

}  // namespace splitsim
