// AwakeCores: one SCHED_IDLE poller pinned per CPU while alive, none after.
#include "splitsim/validate/awake_cores.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace splitsim {
namespace {

// Over this process's poller threads (named kAwakeThreadName): how many run
// under SCHED_IDLE (/proc/self/task/*/stat field 41), and the CPU seconds
// of all of them, whatever their policy (utime + stime, fields 14 and 15).
struct Pollers {
  int idle_policy = 0;
  double cpu_s = 0;
};

Pollers pollers() {
  Pollers out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto open = text.find('('), close = text.rfind(')');  // the name may hold spaces
    if (close == std::string::npos || text.substr(open + 1, close - open - 1) != kAwakeThreadName)
      continue;
    std::istringstream fields(text.substr(close + 2));
    std::string f;
    double ticks = 0;
    for (int i = 3; i <= 41 && fields >> f; ++i) {
      if (i == 14 || i == 15) ticks += std::stod(f);
      if (i == 41 && std::stoi(f) == SCHED_IDLE) ++out.idle_policy;
    }
    out.cpu_s += ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return out;
}

TEST(AwakeCoresTest, OnePollerPerDistinctCpuUnderSchedIdleUntilDestroyed) {
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> wanted = {0, cpus - 1, 0};  // a duplicate is ignored
  const int distinct = cpus > 1 ? 2 : 1;
  ASSERT_EQ(pollers().idle_policy, 0);
  {
    AwakeCores awake(wanted);
    EXPECT_EQ(awake.active(), distinct);
    EXPECT_EQ(pollers().idle_policy, distinct);
  }
  EXPECT_EQ(pollers().idle_policy, 0);
}

TEST(AwakeCoresTest, ACpuThatDoesNotExistIsNotPolled) {
  AwakeCores awake({CPU_SETSIZE - 1, -1});
  EXPECT_EQ(awake.active(), 0);
}

TEST(AwakeCoresTest, ThePollerYieldsItsCpuToOrdinaryWork) {
  // A normal thread pinned to the poller's CPU and busy for 0.5 s: CFS gives
  // the SCHED_IDLE poller weight 3 against its 1024, ~0.3% of the CPU, and
  // that share stays tiny whatever else runs there (a normal-policy poller
  // would take half).
  AwakeCores awake({0});
  ASSERT_EQ(awake.active(), 1);
  double work_cpu_s = 0, poller_cpu_s = 0;
  std::thread worker([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof set, &set), 0);
    const double poller0 = pollers().cpu_s;
    const auto w0 = std::chrono::steady_clock::now();
    timespec c0{}, c1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    volatile double x = 0;
    while (std::chrono::steady_clock::now() - w0 < std::chrono::milliseconds(500)) x = x + 1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    work_cpu_s = (c1.tv_sec - c0.tv_sec) + 1e-9 * (c1.tv_nsec - c0.tv_nsec);
    poller_cpu_s = pollers().cpu_s - poller0;
  });
  worker.join();
  ASSERT_GT(work_cpu_s, 0.05);  // the worker ran at all
  // Clock ticks are 10 ms: allow two besides a 5% share.
  EXPECT_LT(poller_cpu_s, 0.05 * work_cpu_s + 0.02) << "worker " << work_cpu_s << " s";
}

}  // namespace
}  // namespace splitsim
