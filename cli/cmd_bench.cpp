// `splitsim bench`: how fast the simulator is (run_simulator_bench,
// sim/include/splitsim/sim/bench.h), on the plans of a scenario (by default
// the shipped MobileNetV2 U-shape, found in data_dir()); the model is
// measured once, outside the timings. Then how fast and how small `plan` is
// on the shipped big models (a 7B decoder, a 1.3B encoder), each run a
// process of its own whose peak RSS the kernel reports.
#include <algorithm>
#include <chrono>
#include <cstdio>
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
#include "splitsim/costmodel/subprocess.h"
#include "splitsim/costmodel/workspace.h"
#include "splitsim/sim/bench.h"

namespace splitsim {
namespace {

struct BenchArgs {
  std::string scenario;  // "": default_scenario_file()
  int repeat = 3;
  int jobs = 0;
  std::string what = "all";  // sim | plan | all
};

const ScenarioVariant& find_variant(const Workspace& ws, const std::string& label) {
  for (const auto& v : ws.variants())
    if (v.label.find(label) != std::string::npos) return v;
  return ws.variants().front();
}

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

// `plan` on the shipped big models: the median wall time of `repeat` runs
// (min..max) and the largest peak RSS, beside the targets.
void run_plan_bench(int repeat) {
  struct Case {
    const char* file;  // in data_dir()
    const char* variant;
    double target_s;
    double target_gb;  // 0: none
  };
  const Case cases[] = {{"big_models/llama_7b_ushape.json", "lora", 10, 2},
                        {"big_models/roberta_1_3b_split.json", "none", 5, 0}};
  std::cout << "planning big models (`splitsim plan FILE --variant V`, a process each, " << repeat
            << " runs):\n";
  for (const Case& c : cases) {
    const std::string file = (std::filesystem::path(data_dir()) / c.file).string();
    std::vector<double> wall;
    int64_t rss = 0;
    for (int r = 0; r < repeat; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      rss = std::max(rss, run_self({"plan", file, "--variant", c.variant}));
      wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(wall.begin(), wall.end());
    const double median = wall[wall.size() / 2], gb = static_cast<double>(rss) / 1e9;
    char line[512];
    std::snprintf(line, sizeof line,
                  "  %-36s %6.2f s (%.2f..%.2f)   (target <= %.0f s%s)   peak RSS %.2f GB", c.file,
                  median, wall.front(), wall.back(), c.target_s,
                  median <= c.target_s ? "" : ", MISSED", gb);
    std::cout << line;
    if (c.target_gb > 0)
      std::cout << "   (target <= " << c.target_gb << " GB" << (gb <= c.target_gb ? "" : ", MISSED")
                << ")";
    std::cout << "\n" << std::flush;
  }
}

int run_bench(const BenchArgs& args) {
  if (args.repeat < 1) throw InputError("--repeat", "must be at least 1");
  if (args.what == "plan") {
    run_plan_bench(args.repeat);
    return 0;
  }
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
  if (args.what == "all") run_plan_bench(args.repeat);
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
  return {sub, [args] { return run_bench(*args); }};
}

}  // namespace splitsim
