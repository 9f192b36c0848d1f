#include "splitsim/sim/bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>

#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"

namespace splitsim {
namespace {

// CPU seconds the whole machine spent busy (all processes: this one, the
// simulation workers and their children), from /proc/stat.
double cpu_seconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq;
  static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return (user + nice + system + irq + softirq) / ticks;
}

struct Timing {
  double wall_s, cpu_s;  // medians; cpu: the machine's busy CPU time
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
  std::snprintf(line, sizeof line, "  %-82s %8.3f s wall %8.3f s cpu", what.c_str(), t.wall_s,
                t.cpu_s);
  out << line;
  if (target_s > 0)
    out << "   (target <= " << target_s << " s" << (t.wall_s <= target_s ? "" : ", MISSED") << ")";
  out << "\n" << std::flush;
}

}  // namespace

void run_simulator_bench(const BenchPlans& plans, int repeat, int jobs, std::ostream& out,
                         const std::vector<BenchCommand>& commands) {
  const Plan& base = plans.base;
  const std::vector<Plan>& variants = plans.variants;
  if (jobs <= 0) jobs = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  out << "splitsim bench: " << base.scenario << ", medians of " << repeat
      << " runs (wall clock; cpu = the machine's busy CPU time, /proc/stat); each simulation "
         "in a process of its own, simulate + metrics\n";

  Plan empty = base;  // what a child process costs by itself
  empty.iterations = 1;
  empty.warmup = 0;
  for (auto& st : empty.stages) {
    std::fill(st.fwd_s.begin(), st.fwd_s.end(), 0.0);
    std::fill(st.bwd_s.begin(), st.bwd_s.end(), 0.0);
    st.update_s = 0;
  }
  for (auto& bd : empty.boundaries)
    for (auto* v :
         {&bd.forward.encode_s, &bd.forward.decode_s, &bd.backward.encode_s, &bd.backward.decode_s})
      std::fill(v->begin(), v->end(), 0.0);
  report(out, "overhead: a simulation of 1 batch at no cost",
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
  // Their flows share the server's access link, of ten clients' rate.
  crowd.network.server_bandwidth_bit_per_s = 10 * crowd.network.bandwidth_bit_per_s;
  report(out, "1,000 clients x 10 batches, a shared server link [" + crowd.variant + "]",
         median_seconds(repeat, [&] { estimate(crowd); }), 5.0);

  // Sweeps: the scenario's variants x link bandwidths, metrics only (what
  // `simulate` of a scenario and the explorer ask for).
  auto sweep_of = [&](size_t n) {
    std::vector<Plan> sweep;
    for (int i = 0; sweep.size() < n; ++i)
      for (const Plan& p : variants) {
        if (sweep.size() == n) break;
        Plan q = p;
        q.network.bandwidth_bit_per_s = 1e8 * (1 + i);
        q.network.up_bandwidth_bit_per_s = q.network.down_bandwidth_bit_per_s = 0;
        sweep.push_back(q);
      }
    return sweep;
  };
  double rate[2] = {0, 0};
  const size_t sizes[2] = {500, 5000};
  for (int k = 0; k < 2; ++k) {
    const std::vector<Plan> sweep = sweep_of(sizes[k]);
    const std::string label = std::to_string(sweep.size()) + "-variant sweep (" +
                              std::to_string(variants.size()) + " variants x link rates; " +
                              std::to_string(jobs) + " jobs)";
    const Timing t = median_seconds(repeat, [&] { simulate_metrics(sweep, {}, jobs); });
    report(out, label, t, k == 1 ? 10.0 : 0);
    rate[k] = static_cast<double>(sweep.size()) / t.wall_s;
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "  simulations per second: %.0f (500), %.0f (5,000); ratio %.2f   (target >= "
                "0.80%s)\n",
                rate[0], rate[1], rate[1] / rate[0], rate[1] / rate[0] >= 0.8 ? "" : ", MISSED");
  out << line << std::flush;
  for (const BenchCommand& c : commands)
    report(out, c.label, median_seconds(repeat, c.run), c.target_s);
}

}  // namespace splitsim
