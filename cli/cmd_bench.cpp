// `splitsim bench`: how fast the simulator is (run_simulator_bench,
// sim/include/splitsim/sim/bench.h), on the plans of a scenario (by default
// the shipped MobileNetV2 U-shape, found in data_dir()); the model is
// measured once, outside the timings.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/data_dir.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/workspace.h"
#include "splitsim/sim/bench.h"

namespace splitsim {
namespace {

struct BenchArgs {
  std::string scenario;  // "": default_scenario_file()
  int repeat = 3;
  int jobs = 0;
};

const ScenarioVariant& find_variant(const Workspace& ws, const std::string& label) {
  for (const auto& v : ws.variants())
    if (v.label.find(label) != std::string::npos) return v;
  return ws.variants().front();
}

extern "C" char** environ;

// Runs this executable with `args`, its output discarded; throws unless it
// exits 0.
void run_self(const std::vector<std::string>& args) {
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw std::runtime_error("bench: cannot find this executable: " + ec.message());
  std::vector<std::string> all = {exe};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("bench: cannot run " + exe + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string line;
    for (const auto& a : args) line += " " + a;
    throw std::runtime_error("bench: `splitsim" + line + "` failed");
  }
}

int run_bench(const BenchArgs& args) {
  if (args.repeat < 1) throw InputError("--repeat", "must be at least 1");
  Workspace ws(args.scenario.empty() ? default_scenario_file() : args.scenario,
               [](const std::string& line) { std::cerr << line << "\n"; });
  BenchPlans plans;
  plans.base = ws.plan(find_variant(ws, "chunks=1 compression=none"));
  plans.chunked = ws.plan(find_variant(ws, "chunks=8 compression=none"));
  for (const auto& v : ws.variants()) plans.variants.push_back(ws.plan(v));
  // The explorer's default search as a user runs it: a process of its own,
  // the model measured in it (the target is for the whole command).
  const std::string scenario = args.scenario.empty() ? default_scenario_file() : args.scenario;
  const std::vector<std::string> explore = {"explore", scenario,   "--kinds",
                                            "ushape",  "--chunks", "1,4,8"};
  std::vector<BenchCommand> commands = {
      {"`splitsim explore SCENARIO --kinds ushape --chunks 1,4,8`",
       [explore] { run_self(explore); }, 3.0}};
  run_simulator_bench(plans, args.repeat, args.jobs, std::cout, commands);
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Time the simulator (wall clock, medians): one scenario of 100 batches, one CIFAR-10 epoch "
      "(782 batches, chunks 8), 1,000 clients x 10 batches, sweeps of 500 and 5,000 variants "
      "(and their rates), and the explorer's search over the scenario (`explore SCENARIO "
      "--kinds ushape --chunks 1,4,8`, end to end); each figure beside its target.");
  sub->add_option("--scenario", args->scenario,
                  "scenario whose plans are simulated (default: the shipped "
                  "scenarios/mobilenet_v2_ushape.json)");
  sub->add_option("--repeat", args->repeat, "runs per figure")
      ->capture_default_str()
      ->check(int_range(1, 1000));
  sub->add_option("--jobs", args->jobs, "parallel simulations in the sweeps (default: CPU count)")
      ->check(int_range(1, 1024));
  return {sub, [args] { return run_bench(*args); }};
}

}  // namespace splitsim
