#include "splitsim/exec/train_report.h"

#include <cstdio>
#include <sstream>

#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"

namespace splitsim {
namespace {

constexpr const char* kSweepSchema = "splitsim.train_sweep/1";

std::string run_table(const nlohmann::json& r) {
  std::ostringstream os;
  char line[200];
  os << "train " << r["scenario"].get<std::string>() << " [" << r["variant"].get<std::string>()
     << "] on " << r["dataset"].get<std::string>() << " (" << r["mode"].get<std::string>()
     << ")\n  epoch  batches  train loss  train acc  test loss  test acc   train s\n";
  for (const auto& e : r["evaluations"]) {
    std::snprintf(line, sizeof line, "  %5.2f  %7lld  %10.4f  %8.2f%%  %9.4f  %7.2f%%  %8.1f\n",
                  e["epoch"].get<double>(), e["batches"].get<long long>(),
                  e["train_loss"].get<double>(), 100 * e["train_accuracy"].get<double>(),
                  e["test_loss"].get<double>(), 100 * e["test_accuracy"].get<double>(),
                  e["train_s"].get<double>());
    os << line;
  }
  std::snprintf(line, sizeof line,
                "best test accuracy %.2f%% (after %lld batches); wire %.0f B/batch; predicted %.4f "
                "s/batch for the scenario's deployment\n",
                100 * r["best_test_accuracy"].get<double>(),
                r["best_after_batches"].get<long long>(), r["wire_bytes_per_batch"].get<double>(),
                r["predicted_time_per_batch_s"].get<double>());
  os << line;
  if (r.contains("time_to_accuracy")) {
    const auto& t = r["time_to_accuracy"];
    if (t["batches"].get<int64_t>() < 0)
      std::snprintf(line, sizeof line, "%.2f%% test accuracy: not reached\n",
                    100 * t["target"].get<double>());
    else
      std::snprintf(line, sizeof line,
                    "%.2f%% test accuracy after %lld batches: predicted %.1f s on the deployment\n",
                    100 * t["target"].get<double>(), t["batches"].get<long long>(),
                    t["predicted_s"].get<double>());
    os << line;
  }
  return os.str();
}

// The simulator's time per batch for the deployment and, with a target,
// the time to reach it, added to one run's report.
void add_prediction(const Plan& plan, double target_pct, nlohmann::json* r) {
  const Metrics m = compute_metrics(simulate(plan), plan, plan.warmup);
  (*r)["predicted_time_per_batch_s"] = m.time_per_batch_s;
  if (target_pct < 0) return;
  const double target = target_pct / 100;
  const int64_t batches = batches_to_accuracy(*r, target);
  nlohmann::json t = {{"target", target},
                      {"batches", batches},
                      {"predicted_s", batches < 0 ? nlohmann::json(nullptr)
                                                  : nlohmann::json(static_cast<double>(batches) *
                                                                   m.time_per_batch_s)}};
  if (r->value("mode", "") == "two_process" && batches >= 0) {
    // The real run's own time: its training up to that evaluation.
    double s = 0;
    for (const auto& e : (*r)["evaluations"])
      if (e["batches"].get<int64_t>() <= batches) s += e["train_s"].get<double>();
    t["measured_s"] = s;
  }
  (*r)["time_to_accuracy"] = t;
}

// One row per variant: the sweep at a glance.
std::string sweep_table(const nlohmann::json& runs) {
  std::ostringstream os;
  char line[300];
  os << "   best acc  last acc   wire B/batch  predicted s/batch  to target: batches  "
        "predicted s  variant\n";
  for (const auto& r : runs) {
    const auto& evals = r["evaluations"];
    const double last = evals.empty() ? 0 : evals.back()["test_accuracy"].get<double>();
    std::string batches = "-", seconds = "-";
    if (r.contains("time_to_accuracy") && r["time_to_accuracy"]["batches"].get<int64_t>() >= 0) {
      batches = std::to_string(r["time_to_accuracy"]["batches"].get<int64_t>());
      std::snprintf(line, sizeof line, "%.1f", r["time_to_accuracy"]["predicted_s"].get<double>());
      seconds = line;
    }
    std::snprintf(line, sizeof line, "  %8.2f%%  %7.2f%%  %13.0f  %17.4f  %18s  %11s  %s\n",
                  100 * r["best_test_accuracy"].get<double>(), 100 * last,
                  r["wire_bytes_per_batch"].get<double>(),
                  r["predicted_time_per_batch_s"].get<double>(), batches.c_str(), seconds.c_str(),
                  r["variant"].get<std::string>().c_str());
    os << line;
  }
  return os.str();
}

// The leakage a run measured (train --leakage), one row per evaluation and
// boundary; "" without.
std::string leakage_table(const nlohmann::json& run) {
  if (!run.contains("leakage") || run["leakage"].empty()) return "";
  std::ostringstream os;
  char line[400];
  auto number = [](const nlohmann::json& v, const char* format) {
    if (!v.is_number()) return std::string("-");
    char out[32];
    std::snprintf(out, sizeof out, format, v.get<double>());
    return std::string(out);
  };
  os << "leakage of " << run["variant"].get<std::string>()
     << " (forward: held-out activations; backward: the training gradients since the "
        "previous evaluation)\n"
        "  batches  boundary                    dist corr  PSNR dB (baseline)  label AUC norm  "
        "direction  seconds\n";
  for (const auto& e : run["leakage"]) {
    const nlohmann::json null;
    const auto& f = e["forward"].is_object() ? e["forward"] : null;
    const auto& b = e["backward"].is_object() ? e["backward"] : null;
    const std::string where = std::to_string(e["boundary"].get<int>()) + " " +
                              e["cut"].get<std::string>() + " " + e["from"].get<std::string>() +
                              ">" + e["to"].get<std::string>();
    const std::string psnr = f.is_null() ? "-"
                                         : number(f["reconstruction_psnr_db"], "%.2f") + " (" +
                                               number(f["baseline_psnr_db"], "%.2f") + ")";
    std::snprintf(line, sizeof line, "  %7lld  %-26s  %9s  %18s  %14s  %9s  %7.1f\n",
                  static_cast<long long>(e["batches"].get<int64_t>()), where.c_str(),
                  f.is_null() ? "-" : number(f["distance_correlation"], "%.3f").c_str(),
                  psnr.c_str(), b.is_null() ? "-" : number(b["label_auc_norm"], "%.3f").c_str(),
                  b.is_null() ? "-" : number(b["label_auc_direction"], "%.3f").c_str(),
                  e["seconds"].get<double>());
    os << line;
  }
  return os.str();
}

}  // namespace

TrainReport train_report(const std::vector<TrainOutcome>& runs, const std::string& scenario,
                         double target_accuracy_pct) {
  TrainReport report;
  nlohmann::json all = nlohmann::json::array();
  for (const TrainOutcome& o : runs) {
    nlohmann::json r = o.report;
    if (r.contains("evaluations")) add_prediction(o.plan, target_accuracy_pct, &r);
    all.push_back(r);
    if (!o.complete) {
      report.complete = false;
      report.error = o.error;
    }
  }
  report.json =
      all.size() > 1
          ? nlohmann::json{{"schema", kSweepSchema}, {"scenario", scenario}, {"runs", all}}
          : all.front();
  return report;
}

std::string train_table(const nlohmann::json& report) {
  if (report.value("schema", "") == kSweepSchema) {
    std::string out = sweep_table(report["runs"]);
    for (const auto& r : report["runs"]) out += leakage_table(r);
    return out;
  }
  return report.contains("evaluations") ? run_table(report) + leakage_table(report) : "";
}

}  // namespace splitsim
