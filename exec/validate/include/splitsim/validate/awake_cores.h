#pragma once
// AwakeCores: keeps CPUs from going idle while a real run measures them.
//
// A party that waits for the network lets its core idle. On a virtual
// machine an idle vCPU is handed back to the host, and the next forward
// starts on a cold core: on this project's 2-vCPU VM exec's compute was
// 15-25% slower than the profile, which measures busy cores
// (exec/validate/README.md "Idle cores"). One thread per CPU, pinned there under SCHED_IDLE, spins
// while the run lasts: any other thread on that CPU preempts it at once, so
// the run gets the core whenever it wants it, and a warm one.
#include <atomic>
#include <thread>
#include <vector>

namespace splitsim {

// The pollers' thread name (top -H shows it; at most 15 characters).
inline constexpr const char* kAwakeThreadName = "splitsim-awake";

class AwakeCores {
 public:
  // Starts one poller per CPU in `cpus` (duplicates ignored). Pollers whose
  // affinity or policy cannot be set end at once: `active()` counts the rest.
  explicit AwakeCores(std::vector<int> cpus);
  ~AwakeCores();  // stops and joins the pollers
  AwakeCores(const AwakeCores&) = delete;
  AwakeCores& operator=(const AwakeCores&) = delete;

  // Pollers spinning now (waits until each has started or given up).
  int active() const;

 private:
  void poll(int cpu);

  std::atomic<bool> stop_{false};
  std::atomic<int> started_{0}, active_{0};
  int expected_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace splitsim
