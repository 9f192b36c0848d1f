// AwakeCores: one SCHED_IDLE poller pinned per CPU while alive, none after.
#include "awake_cores.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace splitsim {
namespace {

// This process's threads whose scheduling policy is SCHED_IDLE
// (/proc/self/task/*/stat field 41).
int idle_policy_threads() {
  int n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');  // the name may hold spaces
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 2));
    std::string f;
    for (int i = 3; i <= 41 && fields >> f; ++i)
      if (i == 41 && std::stoi(f) == SCHED_IDLE) ++n;
  }
  return n;
}

TEST(AwakeCoresTest, OnePollerPerDistinctCpuUnderSchedIdleUntilDestroyed) {
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> wanted = {0, cpus - 1, 0};  // a duplicate is ignored
  const int distinct = cpus > 1 ? 2 : 1;
  ASSERT_EQ(idle_policy_threads(), 0);
  {
    AwakeCores awake(wanted);
    EXPECT_EQ(awake.active(), distinct);
    EXPECT_EQ(idle_policy_threads(), distinct);
  }
  EXPECT_EQ(idle_policy_threads(), 0);
}

TEST(AwakeCoresTest, ACpuThatDoesNotExistIsNotPolled) {
  AwakeCores awake({CPU_SETSIZE - 1, -1});
  EXPECT_EQ(awake.active(), 0);
}

TEST(AwakeCoresTest, ThePollerYieldsItsCpuToOrdinaryWork) {
  // Pinned to the poller's CPU, a normal thread still gets nearly all of it.
  AwakeCores awake({0});
  ASSERT_EQ(awake.active(), 1);
  double work_cpu_s = 0, wall_s = 0;
  std::thread worker([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof set, &set), 0);
    const auto w0 = std::chrono::steady_clock::now();
    timespec c0{}, c1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    volatile double x = 0;
    while (std::chrono::steady_clock::now() - w0 < std::chrono::milliseconds(300)) x = x + 1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    work_cpu_s = (c1.tv_sec - c0.tv_sec) + 1e-9 * (c1.tv_nsec - c0.tv_nsec);
    wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  });
  worker.join();
  // CFS gives a SCHED_IDLE thread weight 3 against 1024: ~0.3%. Other
  // processes on a shared machine take some too, hence the margin.
  EXPECT_GT(work_cpu_s, 0.8 * wall_s);
}

}  // namespace
}  // namespace splitsim
