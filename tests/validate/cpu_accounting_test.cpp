// Where the CPU time went: /proc/stat parsing, steal and foreign CPU time
// between two snapshots, and when a run counts as disturbed.
#include "splitsim/exec/cpu_accounting.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace splitsim {
namespace {

const char* kStat =
    "cpu  100 5 50 1000 3 0 7 20 0 0\n"
    "cpu0 60 5 20 500 1 0 4 10 0 0\n"
    "cpu1 40 0 30 500 2 0 3 10 0 0\n"
    "intr 12345\nctxt 99\n";

TEST(CpuAccounting, ParsesAggregateAndPerCpuLines) {
  CpuTimes all;
  std::vector<CpuTimes> per_cpu;
  parse_proc_stat(kStat, &all, &per_cpu);
  EXPECT_EQ(all.user, 100);
  EXPECT_EQ(all.steal, 20);
  EXPECT_EQ(all.total(), 100 + 5 + 50 + 1000 + 3 + 0 + 7 + 20);
  ASSERT_EQ(per_cpu.size(), 2u);
  EXPECT_EQ(per_cpu[1].system, 30);
  EXPECT_EQ(per_cpu[0].busy(), 60 + 5 + 20 + 4);
}

TEST(CpuAccounting, StealAndForeignTimeBetweenSnapshots) {
  const double jiffy = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  CpuSnapshot a, b;
  a.per_cpu.resize(2);
  b.per_cpu.resize(2);
  b.wall_s = a.wall_s + 1.0;
  // 200 jiffies on 2 CPUs: 10 stolen, 150 in tasks, 40 idle.
  b.all.user = 150;
  b.all.steal = 10;
  b.all.idle = 40;
  // This process and its children used 100 jiffies' worth of it.
  b.self_cpu_s = 60 * jiffy;
  b.children_cpu_s = 40 * jiffy;
  b.load_1m = 1.5;
  const CpuConditions c = cpu_conditions(a, b);
  EXPECT_NEAR(c.steal_fraction, 10.0 / 200.0, 1e-12);
  EXPECT_NEAR(c.foreign_cpu_fraction, 50 * jiffy / 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(c.load_1m, 1.5);
  b.per_cpu[1].softirq = 30;
  b.per_cpu[1].user = 70;
  EXPECT_NEAR(cpu_interrupt_s(a, b, 1), 30 * jiffy, 1e-12);
  EXPECT_NEAR(cpu_busy_s(a, b, 1), 100 * jiffy, 1e-12);
  EXPECT_EQ(cpu_busy_s(a, b, 7), 0.0);  // no such CPU
}

TEST(CpuAccounting, DisturbedAboveTheLimitsAndSaysWhy) {
  CpuConditions c;
  EXPECT_EQ(disturbance(c), "");
  c.steal_fraction = 0.041;
  EXPECT_EQ(disturbance(c), "steal 4.1%");
  c.foreign_cpu_fraction = 0.2;
  EXPECT_EQ(disturbance(c), "steal 4.1%, other processes 20.0% of the CPUs");
  c.steal_fraction = 0.01;
  EXPECT_EQ(disturbance(c), "other processes 20.0% of the CPUs");
}

TEST(CpuAccounting, ASnapshotOfThisMachineSeesItsCpus) {
  const CpuSnapshot s = take_cpu_snapshot();
  EXPECT_GE(s.per_cpu.size(), 1u);
  EXPECT_GT(s.all.total(), 0);
  EXPECT_GT(s.wall_s, 0);
  EXPECT_GE(process_cpu_s(), 0.0);
}

TEST(CpuAccounting, TheCpuModelIsTheFirstModelNameOfCpuinfo) {
  EXPECT_EQ(cpu_model_from_cpuinfo("processor\t: 0\nvendor_id\t: AuthenticAMD\n"
                                   "model name\t: AMD EPYC 7B13 64-Core Processor  \n"
                                   "processor\t: 1\nmodel name\t: another\n"),
            "AMD EPYC 7B13 64-Core Processor");
  EXPECT_EQ(cpu_model_from_cpuinfo("processor\t: 0\nmodel\t\t: 1\n"), "");  // arm64: no name
  EXPECT_EQ(cpu_model_from_cpuinfo("model name\t:\n"), "");
}

TEST(CpuAccounting, TheMachineNamesItsKernelAndCpus) {
  const MachineDescription m = describe_this_machine();
  EXPECT_EQ(m.kernel.rfind("Linux ", 0), 0u) << m.kernel;
  EXPECT_GT(m.kernel.size(), 6u);
  EXPECT_EQ(m.cpus, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  const std::string text = machine_text(m);
  EXPECT_EQ(text.rfind(m.kernel, 0), 0u) << text;
  EXPECT_NE(text.find(std::to_string(m.cpus) + " CPU"), std::string::npos) << text;
  EXPECT_EQ(machine_text({"Linux 6.1.0", "", 1}), "Linux 6.1.0, 1 CPU");
  EXPECT_EQ(machine_text({}), "unknown");
}

}  // namespace
}  // namespace splitsim
