// run_bench and run_plan_bench (bench.h): what `splitsim bench` runs around
// run_simulator_bench.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <ostream>

#include "splitsim/costmodel/data_dir.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/sim/bench.h"

namespace splitsim {
namespace {

const Plan& find_plan(const std::vector<Plan>& plans, const std::string& label) {
  for (const Plan& p : plans)
    if (p.variant.find(label) != std::string::npos) return p;
  return plans.front();
}

}  // namespace

BenchPlans bench_plans(std::vector<Plan> all) {
  BenchPlans plans;
  plans.base = find_plan(all, "chunks=1 compression=none");
  plans.chunked = find_plan(all, "chunks=8 compression=none");
  plans.variants = std::move(all);
  return plans;
}

void run_plan_bench(int repeat, const RunSelf& run_self, std::ostream& out) {
  struct Case {
    const char* file;  // in data_dir()
    const char* variant;
    double target_s;
    double target_gb;  // 0: none
  };
  const Case cases[] = {{"big_models/llama_7b_ushape.json", "lora", 10, 2},
                        {"big_models/roberta_1_3b_split.json", "none", 5, 0}};
  out << "planning big models (`splitsim plan FILE --variant V`, a process each, " << repeat
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
    out << line;
    if (c.target_gb > 0)
      out << "   (target <= " << c.target_gb << " GB" << (gb <= c.target_gb ? "" : ", MISSED")
          << ")";
    out << "\n" << std::flush;
  }
}

void run_bench(const BenchOptions& options, const PlansOf& plans_of, const RunSelf& run_self,
               std::ostream& out) {
  if (options.repeat < 1) throw InputError("repeat", "must be at least 1");
  if (options.what == "plan") {
    run_plan_bench(options.repeat, run_self, out);
    return;
  }
  const std::string scenario =
      options.scenario.empty() ? default_scenario_file() : options.scenario;
  const BenchPlans plans = bench_plans(plans_of(scenario));
  // The explorer's default search as a user runs it: a process of its own,
  // the model measured in it (the target is for the whole command).
  const std::vector<std::string> explore = {"explore", scenario,   "--kinds",
                                            "ushape",  "--chunks", "1,4,8"};
  const std::vector<BenchCommand> commands = {
      {"`splitsim explore SCENARIO --kinds ushape --chunks 1,4,8`",
       [explore, &run_self] { run_self(explore); }, 3.0}};
  run_simulator_bench(plans, options.repeat, options.jobs, out, commands);
  if (options.what == "all") run_plan_bench(options.repeat, run_self, out);
}

}  // namespace splitsim
