// `splitsim train SCENARIO --epochs N`: trains the split model on labeled
// images with a held-out evaluation after every epoch (run_train,
// exec/include/splitsim/exec/train.h), every selected variant in this
// process or, with --role, one variant as one party of a two-process run
// over c10d Gloo; train_report (train_report.h there) adds the simulator's
// time per batch for the deployment and, with --target-accuracy, the time to
// reach it. stdout: the report with --json (splitsim.train/1, or
// splitsim.train_sweep/1 for several variants), else a table; progress on
// stderr. Exit codes: 0 ok, 1 the run failed (the report so far still
// written), 2 bad input.
#include <cstdlib>
#include <iostream>
#include <memory>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/output_file.h"
#include "splitsim/exec/party_exit.h"
#include "splitsim/exec/train.h"
#include "splitsim/exec/train_report.h"

namespace splitsim {
namespace {

struct TrainArgs {
  TrainOptions options;
  bool json = false;
  std::string report;
  double target_accuracy_pct = -1;
  std::vector<std::string> leakage;  // --leakage: evaluation numbers or "last"
};

// --leakage's evaluations: numbers from 1, or "last" (-1).
std::vector<int64_t> leakage_evaluations(const std::vector<std::string>& items) {
  std::vector<int64_t> out;
  for (const std::string& item : items) {
    if (item == "last") {
      out.push_back(-1);
      continue;
    }
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > (int64_t{1} << 40))
      throw InputError("--leakage",
                       "expected evaluation numbers from 1 or \"last\", got \"" + item + "\"");
    out.push_back(v);
  }
  return out;
}

int run_train_command(TrainArgs args) {
  // Refused now rather than after the training.
  if (!args.report.empty()) check_output_path(args.report, "--report");
  args.options.leakage = leakage_evaluations(args.leakage);
  const TrainReport report = train_report(
      run_train(args.options, [](const std::string& line) { std::cerr << line << "\n"; }),
      args.options.scenario, args.target_accuracy_pct);
  if (!args.report.empty()) write_output_file(args.report, report.json.dump(2) + "\n", "--report");
  std::cout << (args.json ? report.json.dump(2) + "\n" : train_table(report.json));
  std::cout.flush();
  if (!report.complete) {
    if (!args.options.role.empty()) exit_after_failed_party(report.error);
    std::cerr << "error: " << report.error << "\n";
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
  sub->add_option("--alpha", o.alpha,
                  "Several clients (the scenario's clients, in a training mode with rounds): "
                  "each class's samples shared out in Dirichlet(ALPHA) proportions; 0: IID, equal "
                  "parts")
      ->check(number_range(0, 1e6))
      ->capture_default_str();
  sub->add_option("--one-vs-rest", o.one_vs_rest,
                  "Train a binary task: label 1 for this class (0-9), 0 for the rest (1 in 10 "
                  "positive; the setting of the norm attack, exec/TRAINING.md \"Leakage\")")
      ->check(int_range(0, 9));
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
  sub->add_option("--checkpoint-dir", o.checkpoint.dir,
                  "Write every party's checkpoints here (its stages' weights, optimizer state "
                  "and records; one variant, one client); a fresh run refuses a directory that "
                  "holds this party's checkpoints");
  sub->add_option("--checkpoint-every", o.checkpoint.every,
                  "Batches between checkpoints (the newest two are kept)")
      ->check(int_range(1, int64_t{1} << 40));
  sub->add_flag("--resume", o.checkpoint.resume,
                "Continue from the newest checkpoint step every party holds in --checkpoint-dir "
                "(from the first batch when there is none); every party passes it");
  sub->add_option("--leakage", args->leakage,
                  "Measure what crosses each boundary says about the client's data at these "
                  "evaluations (1-based, comma-separated, or last): distance correlation and a "
                  "reconstruction attack on the held-out activations, label inference on the "
                  "training gradients since the previous evaluation (exec/TRAINING.md "
                  "\"Leakage\"); one process only")
      ->delimiter(',');
  sub->add_option("--leakage-attack-epochs", o.leakage_attack_epochs,
                  "Passes of the reconstruction attacker's decoder over its samples")
      ->check(int_range(1, 1000))
      ->capture_default_str();
  sub->add_flag("--json", args->json, "Print the report (splitsim.train/1) on stdout");
  sub->add_option("--report", args->report, "Also write the report to FILE");
  return {sub, [args] { return run_train_command(*args); }};
}

}  // namespace splitsim
