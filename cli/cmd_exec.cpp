// `splitsim exec SCENARIO --role PARTY`: one party of a real training run.
// The server (rank 0) listens, every other party connects; the same binary
// and scenario on every side. stdout carries only the metrics JSON with
// --json (rank 0: the merged run; other ranks: their own events); progress
// and errors go to stderr. Exit codes: 0 ok, 1 transport failure, refused
// handshake or a peer lost mid-run (partial metrics still written, marked
// "complete": false), 2 bad input.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/exec/gloo_transport.h"
#include "splitsim/exec/runner.h"
#include "splitsim/exec/session.h"
#include "splitsim/sim/trace.h"
#include "workspace.h"

namespace splitsim {
namespace {

struct ExecArgs {
  std::string scenario, variant, role, listen, connect, trace, device = "cpu", data;
  int client_index = 0;
  bool json = false;
  int threads = 1;
  double timeout_s = 60;
  int64_t iterations = 0;
  std::string token;  // --token, else $SPLITSIM_TOKEN
};

// The shared secret: --token, else $SPLITSIM_TOKEN (preferred: the command
// line is visible to every user in ps), else none.
std::string exec_token(const ExecArgs& args) {
  std::string token = args.token;
  if (token.empty()) {
    if (const char* env = std::getenv("SPLITSIM_TOKEN"); env != nullptr) token = env;
  }
  if (token.size() > kMaxTokenBytes) {
    throw InputError(args.token.empty() ? "SPLITSIM_TOKEN" : "--token",
                     "the token is " + std::to_string(token.size()) + " bytes; the limit is " +
                         std::to_string(kMaxTokenBytes));
  }
  return token;
}

// The most events a rank can legitimately report: per batch (warm-up and
// the ones after included) and stage, each micro-batch's forward, backward,
// recompute, codec work and transfers, and an update.
int64_t max_events_per_rank(const Plan& plan) {
  const int64_t stages = static_cast<int64_t>(plan.stages.size());
  const int64_t per_batch = stages * (plan.chunks() * 16 + 4);
  return (plan.iterations + stages + 2) * per_batch * plan.clients + 1024;
}

void write_outputs(const ExecArgs& args, const Plan& plan, const RunResult& r) {
  const nlohmann::json j = exec_metrics_json(plan, r);
  if (!args.trace.empty()) {
    std::ofstream out(args.trace);
    write_chrome_trace(r.timeline, out);
    if (!out) std::cerr << "error: --trace: cannot write \"" << args.trace << "\"\n";
  }
  if (args.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::ostringstream os;
    os << "exec " << plan.scenario << " [" << plan.variant << "]: " << j["batches_completed"]
       << " batches" << (r.complete ? "" : " (incomplete)");
    if (j.contains("time_per_batch_s"))
      os << ", time/batch " << j["time_per_batch_s"].get<double>() << " s, compute "
         << j["computation_time_s"].get<double>() << " s";
    if (j["training"].contains("loss_last"))
      os << ", loss " << j["training"]["loss_first"].get<double>() << " -> "
         << j["training"]["loss_last"].get<double>() << ", accuracy (last batch) "
         << j["training"]["accuracy_last"].get<double>();
    std::cout << os.str() << "\n";
  }
  std::cout.flush();
}

int run_exec(const ExecArgs& args) {
  torch::set_num_threads(args.threads);
  auto progress = [](const std::string& line) { std::cerr << line << "\n"; };
  Workspace ws(args.scenario, progress);
  ws.select(args.variant);
  if (ws.variants().size() != 1) {
    std::string labels;
    for (const auto& v : ws.variants()) labels += (labels.empty() ? "\"" : ", \"") + v.label + "\"";
    throw InputError("--variant", "exec runs exactly one variant, " +
                                      std::to_string(ws.variants().size()) +
                                      " match; pick one of " + labels);
  }
  const ScenarioVariant& v = ws.variants().front();
  Scenario sc = v.scenario;
  nlohmann::json identity_json = v.json;
  Plan plan = ws.plan(v);
  if (args.iterations > 0) {
    sc.iterations = plan.iterations = args.iterations;
    plan.warmup = sc.warmup = std::min(sc.warmup, args.iterations - 1);
    identity_json["iterations"] = args.iterations;
  }
  const std::string token = exec_token(args);
  const ExecTopology topo = make_topology(plan);
  if (topo.world_size() < 2) throw InputError("$.partition", "exec needs at least two parties");
  const int rank = rank_of_role(topo, args.role, args.client_index);
  GlooOptions go;
  go.rank = rank;
  go.world_size = topo.world_size();
  go.timeout = std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000));
  if (rank == 0 && args.listen.empty())
    throw InputError("--listen", "rank 0 (party \"" + topo.server_party +
                                     "\") listens: pass --listen ADDR:PORT");
  if (rank != 0 && args.connect.empty())
    throw InputError("--connect", "party \"" + args.role +
                                      "\" connects to the server: pass "
                                      "--connect ADDR:PORT");
  parse_address(rank == 0 ? args.listen : args.connect, rank == 0 ? "--listen" : "--connect",
                &go.host, &go.port);
  RunOptions ro;
  ro.timeout = go.timeout;
  ro.data_dir = args.data;
  ro.device = args.device;
  if (args.device == "cuda" && !torch::cuda::is_available())
    throw InputError("--device",
                     "cuda requested but this LibTorch build or machine has no CUDA "
                     "device; use --device cpu");
  std::cerr << "exec: rank " << rank << " of " << go.world_size << " (" << args.role << "), "
            << (rank == 0 ? "listening on " : "connecting to ") << go.host << ":" << go.port
            << ", timeout " << args.timeout_s << " s\n";
  std::unique_ptr<GlooTransport> transport = GlooTransport::connect(go);
  RunResult result;
  try {
    handshake(*transport, {v.label, identity_json.dump(), SPLITSIM_VERSION, token}, go.timeout);
    std::vector<double> offsets;
    const ExecClock::time_point start = synchronise(*transport, go.timeout, &offsets);
    std::cerr << "exec: connected, training " << plan.iterations << " batches\n";
    result = run_party(sc, plan, *transport, rank, ro, start);
    if (result.complete)
      gather(*transport, offsets, &result, go.timeout, max_events_per_rank(plan));
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    result.complete = false;
    // One line: LibTorch's and Gloo's errors append a backtrace.
    if (result.error.empty())
      result.error = std::string(e.what()).substr(0, std::string(e.what()).find('\n'));
  }
  write_outputs(args, plan, result);
  if (!result.complete) {
    std::cerr << "error: " << result.error << "\n";
    std::cerr.flush();
    // A failed Gloo pair may block in its destructor: leave at once.
    std::_Exit(1);
  }
  std::cerr << "exec: done\n";
  return 0;
}

}  // namespace

Command add_exec_command(CLI::App& app) {
  auto args = std::make_shared<ExecArgs>();
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
      ->check(number_range(0, 86400, true))
      ->capture_default_str();
  sub->add_option("--iterations", args->iterations, "Batches to run (overrides the scenario)")
      ->check(int_range(1, limits::kMaxIterations));
  sub->add_option("--device", args->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--data", args->data, "Dataset directory (fashion_mnist, cifar10)");
  sub->add_option("--token", args->token,
                  "Shared secret every side must present in the handshake (else "
                  "$SPLITSIM_TOKEN; prefer the variable: a command line is visible in ps)");
  return {sub, [args] { return run_exec(*args); }};
}

}  // namespace splitsim
