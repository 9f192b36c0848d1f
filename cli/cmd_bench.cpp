// `splitsim bench`: how fast the simulator is, on the plans of a scenario (by
// default the shipped MobileNetV2 U-shape, found in data_dir()); the model is
// measured once, outside the timings. Then how fast and how small `plan` is
// on the shipped big models (a 7B decoder, a 1.3B encoder), each run a
// process of its own whose peak RSS the kernel reports. The figures:
// run_bench (sim/include/splitsim/sim/bench.h).
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/subprocess.h"
#include "splitsim/costmodel/workspace.h"
#include "splitsim/sim/bench.h"

namespace splitsim {
namespace {

// Runs this executable with `args`, its output discarded; throws unless it
// exits 0. Returns the child's peak resident set size in bytes.
int64_t run_self(const std::vector<std::string>& args) {
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw std::runtime_error("bench: cannot find this executable: " + ec.message());
  std::vector<std::string> argv = {exe};
  argv.insert(argv.end(), args.begin(), args.end());
  LightSpawnOptions options;
  options.discard_stdout = options.discard_stderr = true;
  pid_t pid = -1;
  if (const int rc = spawn_light(exe, argv, options, &pid); rc != 0)
    throw std::runtime_error("bench: cannot run " + exe + ": " + std::strerror(rc));
  int64_t peak_rss_bytes = 0;
  if (wait_exit_code(pid, &peak_rss_bytes) != 0) {
    std::string line;
    for (const auto& a : args) line += " " + a;
    throw std::runtime_error("bench: `splitsim" + line + "` failed");
  }
  return peak_rss_bytes;
}

// Every variant's plan, the model measured once (progress on stderr).
std::vector<Plan> plans_of(const std::string& file) {
  Workspace ws(file, [](const std::string& line) { std::cerr << line << "\n"; });
  std::vector<Plan> plans;
  for (const auto& v : ws.variants()) plans.push_back(ws.plan(v));
  return plans;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Time the simulator (wall clock, medians): one scenario of 100 batches, one CIFAR-10 epoch "
      "(782 batches, chunks 8), 1,000 clients x 10 batches, sweeps of 500 and 5,000 variants "
      "(and their rates), and the explorer's search over the scenario (`explore SCENARIO "
      "--kinds ushape --chunks 1,4,8`, end to end); then `plan` on the shipped big models (a 7B "
      "decoder, a 1.3B encoder): wall time and peak RSS. Each figure beside its target.");
  sub->add_option("--scenario", args->scenario,
                  "scenario whose plans are simulated (default: the shipped "
                  "scenarios/mobilenet_v2_ushape.json)");
  sub->add_option("--repeat", args->repeat, "runs per figure")
      ->capture_default_str()
      ->check(int_range(1, 1000));
  sub->add_option("--what", args->what, "sim: the simulator's figures; plan: planning big models")
      ->capture_default_str()
      ->check(CLI::IsMember({"sim", "plan", "all"}));
  sub->add_option("--jobs", args->jobs, "parallel simulations in the sweeps (default: CPU count)")
      ->check(int_range(1, 1024));
  return {sub, [args] {
            run_bench(*args, plans_of, run_self, std::cout);
            return 0;
          }};
}

}  // namespace splitsim
