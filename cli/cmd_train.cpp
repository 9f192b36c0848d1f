// `splitsim train SCENARIO --epochs N`: trains the split model on labeled
// images with a held-out evaluation after every epoch (run_train,
// exec/include/splitsim/exec/train.h), every selected variant in this
// process or, with --role, one variant as one party of a two-process run
// over c10d Gloo; adds the simulator's time per batch for the scenario's
// deployment and, with --target-accuracy, the time to reach it. stdout: the
// report with --json (splitsim.train/1, or splitsim.train_sweep/1 for
// several variants), else a table; progress on stderr. Exit codes: 0 ok, 1
// the run failed (the report so far still written), 2 bad input.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/output_file.h"
#include "splitsim/exec/party_exit.h"
#include "splitsim/exec/train.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"

namespace splitsim {
namespace {

struct TrainArgs {
  TrainOptions options;
  bool json = false;
  std::string report;
  double target_accuracy_pct = -1;
};

std::string table(const nlohmann::json& r) {
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

int run_train_command(const TrainArgs& args) {
  // Refused now rather than after the training.
  if (!args.report.empty()) check_output_path(args.report, "--report");
  const std::vector<TrainOutcome> outs =
      run_train(args.options, [](const std::string& line) { std::cerr << line << "\n"; });
  nlohmann::json runs = nlohmann::json::array();
  bool complete = true;
  std::string error;
  for (const TrainOutcome& o : outs) {
    nlohmann::json r = o.report;
    if (r.contains("evaluations")) add_prediction(o.plan, args.target_accuracy_pct, &r);
    runs.push_back(r);
    if (!o.complete) {
      complete = false;
      error = o.error;
    }
  }
  const bool sweep = runs.size() > 1;
  const nlohmann::json report = sweep ? nlohmann::json{{"schema", "splitsim.train_sweep/1"},
                                                       {"scenario", args.options.scenario},
                                                       {"runs", runs}}
                                      : runs.front();
  if (!args.report.empty()) write_output_file(args.report, report.dump(2) + "\n", "--report");
  if (args.json)
    std::cout << report.dump(2) << "\n";
  else if (sweep)
    std::cout << sweep_table(runs);
  else if (report.contains("evaluations"))
    std::cout << table(report);
  std::cout.flush();
  if (!complete) {
    if (!args.options.role.empty()) exit_after_failed_party(error);
    std::cerr << "error: " << error << "\n";
    return 1;
  }
  std::cerr << "train: done\n";
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  TrainOptions& o = args->options;
  o.version = SPLITSIM_VERSION;
  CLI::App* sub = app.add_subcommand(
      "train",
      "Train the split model on labeled images (the codecs on the wire) with held-out test "
      "accuracy after every epoch; in this process, or one party of two with --role");
  sub->add_option("scenario", o.scenario, "Scenario JSON file")->required();
  sub->add_option("--variant", o.variant,
                  "Train the variants whose label contains TEXT, one after the other (one row "
                  "each); with --role exactly one");
  sub->add_option("--epochs", o.epochs, "Passes over the training samples")
      ->check(int_range(1, 100000))
      ->capture_default_str();
  sub->add_option("--eval-every", o.eval_every,
                  "Training batches between held-out evaluations (default: one epoch)")
      ->check(int_range(1, int64_t{1} << 40));
  sub->add_option("--dataset", o.dataset,
                  "fashion_mnist or cifar10 (default: the scenario's dataset)")
      ->check(CLI::IsMember({"fashion_mnist", "cifar10"}));
  sub->add_option("--data", o.data,
                  "Dataset directory (default for fashion_mnist: the Debian package's)");
  sub->add_option("--train-samples", o.train_samples,
                  "Train on the first N training samples (0: all)")
      ->check(int_range(0, int64_t{1} << 40));
  sub->add_option("--test-samples", o.test_samples,
                  "Evaluate on the first N test samples, whole batches (0: all)")
      ->check(int_range(0, int64_t{1} << 40));
  sub->add_option("--target-accuracy", args->target_accuracy_pct,
                  "Report the batches to reach this test accuracy (percent) and the "
                  "simulator's time for them")
      ->check(number_range(0, 100));
  sub->add_option("--seed", o.seed,
                  "In place of the scenario's seed: initial weights, data order, codecs")
      ->check(int_range(0, int64_t{1} << 62));
  sub->add_option("--threads", o.threads, "torch intra-op threads")
      ->check(int_range(1, 1024))
      ->capture_default_str();
  sub->add_option("--timeout-s", o.timeout_s, "Connect and per-transfer timeout (s)")
      ->check(number_range(kMinTimeoutS, 86400))
      ->capture_default_str();
  sub->add_option("--role", o.role,
                  "Two processes: server (rank 0, listens) or the other party (connects); "
                  "default: every party in this process");
  sub->add_option("--listen", o.listen, "With --role server: ADDR:PORT to listen on");
  sub->add_option("--connect", o.connect, "With another --role: the server's ADDR:PORT");
  sub->add_option("--token", o.token, "Shared secret both sides present (else $SPLITSIM_TOKEN)");
  sub->add_flag("--json", args->json, "Print the report (splitsim.train/1) on stdout");
  sub->add_option("--report", args->report, "Also write the report to FILE");
  return {sub, [args] { return run_train_command(*args); }};
}

}  // namespace splitsim
