// `splitsim validate SCENARIO`: predict a variant on this machine's measured
// CPU profile and the real link's rate, run it for real (`splitsim exec`
// server + client, each pinned to its own core, joined by a shaped veth link
// between two network namespaces, or loopback without root) and print
// predicted vs measured per metric. `--matrix` does this for every variant
// and summarises the errors.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "awake_cores.h"
#include "commands.h"
#include "exec_pair.h"
#include "flag_checks.h"
#include "netns_link.h"
#include "profile_cache.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/costmodel/planner.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "validation.h"
#include "workspace.h"

namespace splitsim {
namespace {

struct ValidateArgs {
  std::string scenario, variant, link_rate = "200mbit", report, exec_bin, profile_cache;
  bool link_rate_given = false;
  int threads = 1;
  int64_t iterations = 0;
  double timeout_s = 300;
  bool json = false, matrix = false, keep_going = false, reprofile = false;
  bool let_cores_idle = false;
};

void log(const std::string& line) { std::cerr << "validate: " << line << "\n"; }

// The binary whose `exec` subcommand runs: --exec-bin, $SPLITSIM_EXEC_BIN, or this one.
std::string exec_binary(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (const char* env = std::getenv("SPLITSIM_EXEC_BIN"); env != nullptr && *env) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "splitsim" : self.string();
}

bool deterministic_bytes(const Scenario& s) {
  for (const auto& b : s.compression)
    for (const CodecSpec* c : {&b.forward, &b.backward})
      if (std::string(method_name(c->method)) == "decaying_linear") return false;
  return true;
}

// Everything one validation needs across variants.
class Validator {
 public:
  Validator(const ValidateArgs& args, Workspace& ws) : args_(args), ws_(ws) {
    cache_dir_ = args.profile_cache.empty() ? default_profile_cache_dir() : args.profile_cache;
    exec_bin_ = exec_binary(args.exec_bin);
    const int cpus = std::max(1u, std::thread::hardware_concurrency());
    for (int i = 0; i < args.threads; ++i) {
      endpoints_.server_cpus.push_back(i % cpus);
      endpoints_.client_cpus.push_back((args.threads + i) % cpus);
    }
    if (cpus < 2 * args.threads)
      log("warning: " + std::to_string(cpus) + " CPU(s) for 2 x " + std::to_string(args.threads) +
          " thread(s): server and client share cores");
  }

  // The CPUs of the other party's load while profiling: the client's, when
  // they are not the server's (else the run itself shares cores too). Used
  // only when the schedule keeps more than one micro-batch in flight: with
  // one, the parties take turns and never compute at the same time.
  std::vector<int> companion_cpus() const {
    for (int c : endpoints_.client_cpus)
      for (int s : endpoints_.server_cpus)
        if (c == s) return {};
    return endpoints_.client_cpus;
  }

  // Builds the shaped link (or decides on loopback) at `rate`.
  void open_link(double rate) {
    const int stale = NetnsLink::remove_stale();
    if (stale > 0) log("removed " + std::to_string(stale) + " stale namespace(s) of dead runs");
    const std::string reason = NetnsLink::unavailable_reason();
    if (!reason.empty()) {
      link_info_ = {"loopback (not shaped: " + reason + ")", false, rate, 0};
      endpoints_.server_address = "127.0.0.1";
      log("WARNING: the real run uses loopback 127.0.0.1, NOT shaped (" + reason +
          "); the prediction still assumes " + format_link_rate(rate));
      return;
    }
    link_ = std::make_unique<NetnsLink>(rate);
    endpoints_.server_netns = link_->server_netns();
    endpoints_.client_netns = link_->client_netns();
    endpoints_.server_address = link_->server_address();
    endpoints_.port = 29500;
    log("link: " + link_->description());
  }

  ValidationRun run(const ScenarioVariant& v, double rate) {
    ValidationRun r;
    r.scenario = v.scenario.name;
    r.variant = v.label;
    r.schedule = schedule_name(v.scenario.schedule);
    r.chunks = v.scenario.chunks;
    r.deterministic_bytes = deterministic_bytes(v.scenario);
    if (link_) {
      if (link_->rate_bit_per_s() != rate) link_->set_rate(rate);
      link_info_ = {link_->description(), true, rate, NetnsLink::burst_bytes(rate)};
    } else {
      link_info_.rate_bit_per_s = rate;
    }
    r.link = link_info_;

    // (a) this machine's measured profile at the micro-batch size.
    Scenario s = v.scenario;
    const ModelProfile& model = ws_.model(v);
    const int64_t microbatch = (s.batch_size + s.chunks - 1) / s.chunks;
    // As many micro-batches in flight as the schedule keeps at stage 0, the
    // stage that holds the most.
    const int64_t in_flight =
        stashed_microbatches(s.schedule, 0, static_cast<int>(s.partition.size()), s.chunks);
    auto it = profiles_.find({microbatch, in_flight});
    if (it == profiles_.end()) {
      it = profiles_
               .emplace(std::make_pair(microbatch, in_flight),
                        profile_for_validation(
                            s.model, model, microbatch, in_flight, args_.threads, s.optimizer,
                            cache_dir_, args_.reprofile, endpoints_.server_cpus.front(),
                            in_flight > 1 ? companion_cpus() : std::vector<int>{}, log))
               .first;
      log("profile: " + it->second.origin);
    }
    r.profile = it->second.origin;

    // (b) every party on that profile, the link's rate, no extra latency.
    s.network = NetworkSpec{};
    s.network.bandwidth_bit_per_s = rate;
    if (args_.iterations > 0) s.iterations = args_.iterations;
    if (s.warmup >= s.iterations)
      throw InputError("--iterations", "must be more than the scenario's warm-up (" +
                                           std::to_string(s.warmup) + " batches)");
    std::map<std::string, DeviceProfile> devices;
    for (const auto& [party, name] : s.devices) devices.emplace(party, it->second.device);
    const Plan plan = make_plan(s, model, devices, v.label);

    // (c) predict.
    log("simulating \"" + v.label + "\" at " + format_link_rate(rate));
    r.predicted = compute_metrics(simulate(plan), plan, plan.warmup);

    // (d) run for real.
    ExecPairOptions o;
    o.exec_bin = exec_bin_;
    o.scenario = args_.scenario;
    o.variant = ws_.variants().size() > 1 || v.label != "base" ? v.label : "";
    o.threads = args_.threads;
    o.iterations = s.iterations;
    o.timeout_s = args_.timeout_s;
    if (!link_) endpoints_.port = free_loopback_port();
    try {
      std::optional<AwakeCores> awake;
      if (!args_.let_cores_idle) {
        std::vector<int> cpus = endpoints_.server_cpus;
        cpus.insert(cpus.end(), endpoints_.client_cpus.begin(), endpoints_.client_cpus.end());
        r.awake_cores = awake.emplace(cpus).active();
      }
      const nlohmann::json measured = run_exec_pair(o, endpoints_, log);
      from_json(measured, r.measured);
    } catch (const std::exception& e) {
      if (!args_.keep_going) throw;
      r.failure = e.what();
      log("FAILED \"" + v.label + "\": " + r.failure);
      return r;
    }
    // (e) compare.
    r.errors = compare_metrics(r.predicted, r.measured);
    if (plan.schedule == Schedule::kGpipe && plan.chunks() >= 4) {
      r.overlap_ratio = overlap_ratio(r.measured, plan, rate);
      r.predicted_overlap_ratio = overlap_ratio(r.predicted, plan, rate);
    }
    return r;
  }

 private:
  const ValidateArgs& args_;
  Workspace& ws_;
  std::string cache_dir_, exec_bin_;
  std::unique_ptr<NetnsLink> link_;
  LinkInfo link_info_;
  ExecEndpoints endpoints_;
  std::map<std::pair<int64_t, int64_t>, CachedProfile> profiles_;  // (micro-batch, in flight)
};

std::string awake_text(int awake_cores) {
  return awake_cores > 0 ? std::to_string(awake_cores) +
                               " CPU(s) kept from idling during the run (SCHED_IDLE pollers)"
                         : "left to idle while waiting (--let-cores-idle)";
}

void print_single(std::ostream& os, const ValidationRun& r) {
  os << "== " << r.scenario << " \"" << r.variant << "\": predicted (simulate) vs measured (exec)\n"
     << "link: " << r.link.description << "\nprofile: " << r.profile << "\n"
     << "cores: " << awake_text(r.awake_cores) << "\n";
  print_comparison(os, r.errors);
}

// Refuses a --report path that cannot take the report, before the run: a
// directory, or a file in a directory that does not exist.
void check_report_path(const std::string& report) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(report, ec)) {
    throw InputError("--report", "\"" + report + "\" is a directory; give a file name");
  }
  const fs::path parent = fs::path(report).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw InputError("--report", "directory \"" + parent.string() + "\" does not exist");
  }
}

int run_validate(const ValidateArgs& args) {
  const double rate = parse_link_rate(args.link_rate, "--link-rate");
  if (!args.report.empty()) check_report_path(args.report);
  Workspace ws(args.scenario, log);
  ws.select(args.variant);
  if (!args.matrix && ws.variants().size() > 1) {
    std::string labels;
    for (const auto& v : ws.variants()) labels += (labels.empty() ? "\"" : ", \"") + v.label + "\"";
    throw InputError("--variant", std::to_string(ws.variants().size()) +
                                      " variants are selected; pick one with --variant or run "
                                      "them all with --matrix (labels: " +
                                      labels + ")");
  }
  auto rate_of = [&](const ScenarioVariant& v) {
    return args.matrix && !args.link_rate_given ? v.scenario.network.bandwidth_bit_per_s : rate;
  };
  for (const auto& v : ws.variants()) {
    check_link_rate(rate_of(v), args.link_rate_given ? "--link-rate"
                                                     : "$.network.bandwidth_bit_per_s (variant \"" +
                                                           v.label + "\")");
  }
  Validator validator(args, ws);
  validator.open_link(rate_of(ws.variants().front()));
  std::vector<ValidationRun> runs;
  for (const auto& v : ws.variants()) runs.push_back(validator.run(v, rate_of(v)));

  std::ostringstream out;
  std::string report;
  if (args.matrix) {
    report = matrix_json(runs).dump(2) + "\n";
    if (args.json)
      out << report;
    else
      print_matrix(out, runs);
  } else {
    report = validation_json(runs.front()).dump(2) + "\n";
    if (args.json)
      out << report;
    else
      print_single(out, runs.front());
  }
  if (!args.report.empty()) write_file_atomically(args.report, report, "--report");
  std::cout << out.str();
  const bool failed = std::any_of(runs.begin(), runs.end(),
                                  [](const ValidationRun& r) { return !r.failure.empty(); });
  return failed ? 1 : 0;
}

}  // namespace

Command add_validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* sub = app.add_subcommand(
      "validate",
      "Predict a variant with this machine's measured CPU profile (one thread per party) and the "
      "link's rate, run it for real (splitsim exec: server and client pinned to separate cores, "
      "joined as root by a veth pair between two network namespaces shaped with tc tbf, else by "
      "unshaped loopback), and print predicted vs measured per metric with the error %.");
  sub->add_option("scenario", args->scenario, "scenario JSON file")->required();
  sub->add_option("--variant", args->variant,
                  "the variant whose label contains this text (with --matrix: a filter)");
  sub->add_option_function<std::string>(
      "--link-rate",
      [args](const std::string& v) {
        args->link_rate = v;
        args->link_rate_given = true;
      },
      "rate of the real link, each way: 50mbit, 200mbit, 1gbit, 500kbit (default 200mbit; "
      "--matrix: each variant's network.bandwidth_bit_per_s unless given)");
  sub->add_option("--threads", args->threads, "compute threads per process (and CPUs pinned)")
      ->capture_default_str()
      ->check(int_range(1, 1024));
  sub->add_option("--iterations", args->iterations,
                  "batches per run, warm-up included (default: the scenario's iterations)")
      ->check(int_range(1, limits::kMaxIterations));
  sub->add_option("--timeout-s", args->timeout_s, "wall-clock limit of one real run")
      ->capture_default_str()
      ->check(number_range(0, 86400, true));
  sub->add_flag("--json", args->json,
                "JSON report on stdout (splitsim.validation/1, or splitsim.validation_matrix/1 "
                "with --matrix)");
  sub->add_option("--report", args->report, "also write the JSON report to this file");
  sub->add_flag("--matrix", args->matrix,
                "validate every (selected) variant; print a table and the median and p90 "
                "|error| of time per batch");
  sub->add_flag("--keep-going", args->keep_going,
                "with --matrix: record a failed run and go on (exit code 1 at the end)");
  sub->add_flag("--let-cores-idle", args->let_cores_idle,
                "do not keep the run's CPUs busy with SCHED_IDLE pollers: a waiting party's core "
                "may idle, and on a VM compute after idling runs slower than the profile says");
  sub->add_flag("--reprofile", args->reprofile, "measure this machine again, ignore the cache");
  sub->add_option("--profile-cache", args->profile_cache,
                  "directory of cached profiles (default $SPLITSIM_PROFILE_CACHE, else "
                  "$XDG_CACHE_HOME/splitsim or ~/.cache/splitsim)");
  sub->add_option("--exec-bin", args->exec_bin,
                  "binary to run as `BIN exec ...` (default $SPLITSIM_EXEC_BIN, else this one; "
                  "for tests)");
  return {sub, [args] { return run_validate(*args); }};
}

}  // namespace splitsim
