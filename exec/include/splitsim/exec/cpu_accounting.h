#pragma once
// Where this machine's CPU time went between two moments, from /proc/stat,
// /proc/loadavg and getrusage: how much the hypervisor stole, how much other
// processes used, and how busy given CPUs were. `validate` and the link probe record these
// for the profile and for every real run, to tell a measurement disturbed
// by the machine from one that is not (exec/validate/README.md "Conditions").
#include <cstdint>
#include <string>
#include <vector>

namespace splitsim {

// Jiffies of one /proc/stat "cpu" line (aggregate or one CPU).
struct CpuTimes {
  int64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  int64_t total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
  // Time spent running something (tasks, interrupts), not idle and not stolen.
  int64_t busy() const { return user + nice + system + irq + softirq; }
};

struct CpuSnapshot {
  double wall_s = 0;              // CLOCK_MONOTONIC
  CpuTimes all;                   // the "cpu" line
  std::vector<CpuTimes> per_cpu;  // "cpu0", "cpu1", ...
  double self_cpu_s = 0;          // this process, every thread
  double children_cpu_s = 0;      // its reaped children (getrusage RUSAGE_CHILDREN)
  double children_sys_s = 0;      // the system (kernel) part of it
  double load_1m = 0;             // /proc/loadavg
};

// Reads the current counters. Fields that cannot be read stay 0.
CpuSnapshot take_cpu_snapshot();

// Parses the text of /proc/stat (exposed for tests).
void parse_proc_stat(const std::string& text, CpuTimes* all, std::vector<CpuTimes>* per_cpu);

// What disturbed the interval [a, b].
struct CpuConditions {
  double wall_s = 0;
  // Stolen jiffies / all jiffies of every CPU (0..1).
  double steal_fraction = 0;
  // Task time (user + nice + system) of every CPU that neither this process
  // nor its reaped children used, / (CPUs x wall). Interrupt time (the
  // network's softirq work, whoever caused it) is not counted.
  double foreign_cpu_fraction = 0;
  double load_1m = 0;  // at the end
  // CPU seconds of the children reaped meanwhile (the exec pair), and
  // their kernel part: what their system calls cost (network, page faults).
  double children_cpu_s = 0, children_sys_s = 0;
};
CpuConditions cpu_conditions(const CpuSnapshot& a, const CpuSnapshot& b);

// Busy seconds (CpuTimes::busy) of `cpu` between a and b; 0 when unknown.
double cpu_busy_s(const CpuSnapshot& a, const CpuSnapshot& b, int cpu);

// Interrupt seconds (irq + softirq) of `cpu` between a and b; 0 when unknown.
double cpu_interrupt_s(const CpuSnapshot& a, const CpuSnapshot& b, int cpu);

// CPU seconds (user + system) the kernel thread ksoftirqd/<cpu> has used
// since boot (softirq work deferred to it under load); 0 when not found.
double ksoftirqd_cpu_s(int cpu);

// CPU seconds (user + system) this process, every thread, has used.
double process_cpu_s();

// Which machine measured: its kernel release (uname), its CPU model
// (/proc/cpuinfo's first "model name") and its online CPUs. VMs sold as one
// kind differ in speed and in their kernel's scheduling and network stack
// (exec/validate/README.md "Measured"), so a report names its machine.
// Fields that cannot be read stay empty (0 CPUs).
struct MachineDescription {
  std::string kernel;
  std::string cpu_model;
  int cpus = 0;
};
MachineDescription describe_this_machine();
// The first "model name" of /proc/cpuinfo's text ("" when none; exposed for
// tests).
std::string cpu_model_from_cpuinfo(const std::string& text);
// "Linux 6.1.0-18-amd64, AMD EPYC 7B13, 2 CPUs" (the parts that are known).
std::string machine_text(const MachineDescription& m);

// Thresholds above which a measurement counts as disturbed.
struct DisturbanceLimits {
  double steal_fraction = 0.03;
  double foreign_cpu_fraction = 0.05;
};
// "" when within the limits, else what exceeded them ("steal 4.1%").
std::string disturbance(const CpuConditions& c, const DisturbanceLimits& limits = {});

}  // namespace splitsim
