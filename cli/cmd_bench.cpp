// `splitsim bench`: how fast the simulator is, on the default scenario's
// plans (the model is measured once, outside the timings).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "workspace.h"

namespace splitsim {
namespace {

struct BenchArgs {
  std::string scenario = SPLITSIM_DEVICES_DIR "/../mobilenet_v2_ushape.json";
  int repeat = 3;
  int jobs = 0;
};

double cpu_seconds() {
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    ::getrusage(who, &u);
    total +=
        u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  return total;
}

struct Timing {
  double wall_s, cpu_s;  // medians; cpu: this process and its (reaped) children
};

// Medians of `repeat` calls of `fn`.
Timing median_seconds(int repeat, const std::function<void()>& fn) {
  std::vector<double> wall, cpu;
  for (int i = 0; i < repeat; ++i) {
    const double c0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    cpu.push_back(cpu_seconds() - c0);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  return {median(wall), median(cpu)};
}

// Simulates and computes the metrics, as `simulate` does for one variant.
void estimate(const Plan& plan) {
  const Metrics m = compute_metrics(simulate(plan), plan, plan.warmup);
  if (!(m.time_per_batch_s > 0)) throw std::runtime_error("bench: empty simulation");
}

// The same, for a run whose time per batch may be 0.
void estimate_any(const Plan& plan) { compute_metrics(simulate(plan), plan, plan.warmup); }

// One line; target_s <= 0: no target.
void report(const std::string& what, Timing t, double target_s) {
  char line[256];
  std::snprintf(line, sizeof line, "  %-66s %8.3f s wall %8.3f s cpu", what.c_str(), t.wall_s,
                t.cpu_s);
  std::cout << line;
  if (target_s > 0)
    std::cout << "   (target <= " << target_s << " s" << (t.wall_s <= target_s ? "" : ", MISSED")
              << ")";
  std::cout << "\n" << std::flush;
}

const ScenarioVariant& find_variant(const Workspace& ws, const std::string& label) {
  for (const auto& v : ws.variants())
    if (v.label.find(label) != std::string::npos) return v;
  return ws.variants().front();
}

int run_bench(const BenchArgs& args) {
  if (args.repeat < 1) throw InputError("--repeat", "must be at least 1");
  Workspace ws(args.scenario, [](const std::string& line) { std::cerr << line << "\n"; });
  const ScenarioVariant& v1 = find_variant(ws, "chunks=1 compression=none");
  const ScenarioVariant& v8 = find_variant(ws, "chunks=8 compression=none");
  const Plan base = ws.plan(v1);
  const Plan chunked = ws.plan(v8);
  std::vector<Plan> variants;
  for (const auto& v : ws.variants()) variants.push_back(ws.plan(v));
  const int jobs = args.jobs > 0
                       ? args.jobs
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::cout << "splitsim bench: " << base.scenario << ", medians of " << args.repeat
            << " runs (wall clock; cpu = this process and its children); each simulation in its "
               "own child process, simulate + metrics\n";

  Plan empty = base;  // what a child process costs by itself
  empty.iterations = 1;
  empty.warmup = 0;
  for (auto& st : empty.stages) {
    std::fill(st.fwd_s.begin(), st.fwd_s.end(), 0.0);
    std::fill(st.bwd_s.begin(), st.bwd_s.end(), 0.0);
    st.update_s = 0;
  }
  report("overhead: a child process simulating 1 batch at no cost",
         median_seconds(std::max(args.repeat, 5), [&] { estimate_any(empty); }), 0);

  Plan one = base;
  one.iterations = 100;
  report("one scenario, 100 batches [" + one.variant + "]",
         median_seconds(args.repeat, [&] { estimate(one); }), 0.020);

  Plan epoch = chunked;
  epoch.iterations = 782;
  report("one CIFAR-10 epoch, 782 batches [" + epoch.variant + "]",
         median_seconds(args.repeat, [&] { estimate(epoch); }), 2.0);

  Plan crowd = base;
  crowd.clients = 1000;
  crowd.iterations = 10;
  crowd.warmup = std::min<int64_t>(crowd.warmup, 9);
  report("1,000 clients x 10 batches [" + crowd.variant + "]",
         median_seconds(args.repeat, [&] { estimate(crowd); }), 30.0);

  // 300 variants: the scenario's variants x link bandwidths.
  std::vector<Plan> sweep;
  for (int i = 0; sweep.size() < 300; ++i)
    for (const Plan& p : variants) {
      if (sweep.size() == 300) break;
      Plan q = p;
      q.network.bandwidth_bit_per_s = 1e9 * (1 + i);
      q.network.up_bandwidth_bit_per_s = q.network.down_bandwidth_bit_per_s = 0;
      sweep.push_back(q);
    }
  const std::string label = "300-variant sweep (" + std::to_string(variants.size()) +
                            " variants x link 1..; " + std::to_string(jobs) + " jobs)";
  report(label,
         median_seconds(args.repeat,
                        [&] {
                          const auto timelines = simulate_many(sweep, {}, jobs);
                          for (size_t i = 0; i < sweep.size(); ++i)
                            compute_metrics(timelines[i], sweep[i], sweep[i].warmup);
                        }),
         10.0);
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Time the simulator (wall clock, medians): one scenario of 100 batches, one CIFAR-10 epoch "
      "(782 batches, chunks 8), 1,000 clients x 10 batches, a 300-variant sweep.");
  sub->add_option("--scenario", args->scenario,
                  "scenario whose plans are simulated (default: the shipped "
                  "scenarios/mobilenet_v2_ushape.json)");
  sub->add_option("--repeat", args->repeat, "runs per figure")
      ->capture_default_str()
      ->check(int_range(1, 1000));
  sub->add_option("--jobs", args->jobs, "parallel simulations in the sweep (default: CPU count)")
      ->check(int_range(1, 1024));
  return {sub, [args] { return run_bench(*args); }};
}

}  // namespace splitsim
