// `splitsim exec SCENARIO --role PARTY`: one party of a real training run
// (exec/README.md). The server (rank 0) listens, every other party connects;
// the same binary and scenario on every side. stdout carries only the
// metrics JSON with --json (rank 0: the merged run; other ranks: their own
// events); progress and errors go to stderr. Exit codes: 0 ok, 1 transport
// failure, refused handshake or a peer lost mid-run (partial metrics still
// written, marked "complete": false), 2 bad input. The run itself:
// run_exec_party (exec/include/splitsim/exec/party.h).
#include <iostream>
#include <memory>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/exec/party.h"
#include "splitsim/exec/party_exit.h"

namespace splitsim {
namespace {

int run_exec(const ExecPartyOptions& args) {
  const PartyOutcome outcome =
      run_exec_party(args, std::cout, [](const std::string& line) { std::cerr << line << "\n"; });
  if (!outcome.complete) exit_after_failed_party(outcome.error);
  std::cerr << "exec: done\n";
  return 0;
}

}  // namespace

Command add_exec_command(CLI::App& app) {
  auto args = std::make_shared<ExecPartyOptions>();
  args->version = SPLITSIM_VERSION;
  CLI::App* sub = app.add_subcommand(
      "exec",
      "Run one party of the scenario for real (c10d Gloo between processes): the server "
      "listens, the others connect");
  sub->add_option("scenario", args->scenario, "Scenario JSON file")->required();
  sub->add_option("--role", args->role,
                  "Party to run: server (rank 0), client, or any party of the plan")
      ->required();
  sub->add_option("--listen", args->listen, "Rank 0: ADDR:PORT to listen on");
  sub->add_option("--connect", args->connect, "Other ranks: the server's ADDR:PORT");
  sub->add_option("--client-index", args->client_index,
                  "With several clients: which one this process is (0-based)")
      ->check(int_range(0, limits::kMaxClients - 1));
  sub->add_option("--variant", args->variant, "Select the one variant whose label contains TEXT");
  sub->add_flag("--json", args->json, "Print the metrics JSON (splitsim.metrics/1) on stdout");
  sub->add_option("--trace", args->trace, "Write a Chrome trace of the run to FILE");
  sub->add_option("--threads", args->threads, "torch intra-op threads")
      ->check(int_range(1, 1024))
      ->capture_default_str();
  sub->add_option("--timeout-s", args->timeout_s, "Connect and per-transfer timeout (s)")
      ->check(number_range(kMinTimeoutS, 86400))
      ->capture_default_str();
  sub->add_option("--iterations", args->iterations, "Batches to run (overrides the scenario)")
      ->check(int_range(1, limits::kMaxIterations));
  sub->add_option("--device", args->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--data", args->data, "Dataset directory (fashion_mnist, cifar10)");
  sub->add_option("--distinct-batches", args->distinct_batches,
                  "Synthetic data: repeat after N batches, a check that training works (the loss "
                  "falls as the model fits them; random labels are not learnable otherwise). "
                  "Every party passes the same N")
      ->check(int_range(1, limits::kMaxIterations));
  add_congestion_control_flag(sub, &args->congestion_control);
  sub->add_option("--compute-slowdown", args->compute_slowdown,
                  "Emulate a processor F times slower in this process (a slow client on a fast "
                  "machine): each computation holds the party's processor, idle, until it has "
                  "lasted F times what it took; transfers are not slowed")
      ->check(number_range(1, 1000))
      ->capture_default_str();
  sub->add_option("--checkpoint-dir", args->checkpoint.dir,
                  "Write this party's checkpoints here (its stages' weights, optimizer state; a "
                  "synchronous schedule, one client); a fresh run refuses a directory that holds "
                  "them");
  sub->add_option("--checkpoint-every", args->checkpoint.every,
                  "Batches between checkpoints (the newest two are kept)")
      ->check(int_range(1, limits::kMaxIterations));
  sub->add_flag("--resume", args->checkpoint.resume,
                "Continue from the newest checkpoint step every party holds (from the first "
                "batch when there is none); every party passes it; the metrics are of the "
                "batches run after it");
  sub->add_option("--token", args->token,
                  "Shared secret every side must present in the handshake (else "
                  "$SPLITSIM_TOKEN; prefer the variable: a command line is visible in ps)");
  return {sub, [args] { return run_exec(*args); }};
}

}  // namespace splitsim
