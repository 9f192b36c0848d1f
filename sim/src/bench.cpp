#include "splitsim/sim/bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>

#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"

namespace splitsim {
namespace {

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
void report(std::ostream& out, const std::string& what, Timing t, double target_s) {
  char line[256];
  std::snprintf(line, sizeof line, "  %-66s %8.3f s wall %8.3f s cpu", what.c_str(), t.wall_s,
                t.cpu_s);
  out << line;
  if (target_s > 0)
    out << "   (target <= " << target_s << " s" << (t.wall_s <= target_s ? "" : ", MISSED") << ")";
  out << "\n" << std::flush;
}

}  // namespace

void run_simulator_bench(const BenchPlans& plans, int repeat, int jobs, std::ostream& out) {
  const Plan& base = plans.base;
  const std::vector<Plan>& variants = plans.variants;
  if (jobs <= 0) jobs = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  out << "splitsim bench: " << base.scenario << ", medians of " << repeat
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
  report(out, "overhead: a child process simulating 1 batch at no cost",
         median_seconds(std::max(repeat, 5), [&] { estimate_any(empty); }), 0);

  Plan one = base;
  one.iterations = 100;
  report(out, "one scenario, 100 batches [" + one.variant + "]",
         median_seconds(repeat, [&] { estimate(one); }), 0.020);

  Plan epoch = plans.chunked;
  epoch.iterations = 782;
  report(out, "one CIFAR-10 epoch, 782 batches [" + epoch.variant + "]",
         median_seconds(repeat, [&] { estimate(epoch); }), 2.0);

  Plan crowd = base;
  crowd.clients = 1000;
  crowd.iterations = 10;
  crowd.warmup = std::min<int64_t>(crowd.warmup, 9);
  report(out, "1,000 clients x 10 batches [" + crowd.variant + "]",
         median_seconds(repeat, [&] { estimate(crowd); }), 30.0);

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
  report(out, label,
         median_seconds(repeat,
                        [&] {
                          const auto timelines = simulate_many(sweep, {}, jobs);
                          for (size_t i = 0; i < sweep.size(); ++i)
                            compute_metrics(timelines[i], sweep[i], sweep[i].warmup);
                        }),
         10.0);
}

}  // namespace splitsim
