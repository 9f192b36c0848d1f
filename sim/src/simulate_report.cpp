#include "splitsim/sim/simulate_report.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <thread>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/output_file.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/metrics_table.h"
#include "splitsim/sim/simulator.h"
#include "splitsim/sim/trace.h"

namespace splitsim {
namespace {

// Throws InputError unless a trace is asked of one plan at most.
void check_one_trace(const SimulateRequest& r, const std::vector<Plan>& plans) {
  if (r.trace.empty() || plans.size() <= 1) return;
  std::string labels;
  for (const auto& p : plans) labels += (labels.empty() ? "\"" : ", \"") + p.variant + "\"";
  throw InputError("trace",
                   "writes one variant's trace, but " + std::to_string(plans.size()) +
                       " variants are selected; pick one with --variant (labels: " + labels + ")");
}

// Every plan's metrics; with r.trace, of the one plan, whose timeline is
// written too.
std::vector<Metrics> simulate_all(const SimulateRequest& r, const std::vector<Plan>& plans,
                                  const SimOptions& options, std::ostream& err) {
  if (r.trace.empty()) {
    const int jobs =
        r.jobs > 0 ? r.jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    return simulate_metrics(plans, options, jobs);
  }
  const Timeline timeline = simulate(plans.front(), options);
  write_output_stream(r.trace, "trace",
                      [&timeline](std::ostream& out) { write_chrome_trace(timeline, out); });
  err << "trace of \"" << plans.front().variant << "\" written to " << r.trace << "\n";
  return {compute_metrics(timeline, plans.front(), plans.front().warmup)};
}

}  // namespace

void simulate_and_report(const SimulateRequest& r, const std::function<std::vector<Plan>()>& load,
                         std::ostream& out, std::ostream& err) {
  SimOptions options;
  options.server_order = parse_server_order(r.server_order, "server_order");
  if (!r.trace.empty()) check_output_path(r.trace, "trace");  // before the simulation
  const std::vector<Plan> plans = load();
  check_one_trace(r, plans);
  err << "simulating " << plans.size() << " variant(s)\n";
  const std::vector<Metrics> metrics = simulate_all(r, plans, options, err);
  std::ostringstream report;
  if (r.json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& m : metrics) all.push_back(m);
    report << (all.size() == 1 ? all[0] : all).dump(2) << "\n";
  } else if (r.csv) {
    write_csv_header(report);
    for (const auto& m : metrics) write_csv_row(report, m);
  } else if (r.wide) {
    print_wide_metrics_table(report, metrics);
  } else {
    print_metrics_table(report, metrics);
  }
  out << report.str();
}

}  // namespace splitsim
