#include "splitsim/validate/awake_cores.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>

namespace splitsim {

AwakeCores::AwakeCores(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  for (int cpu : cpus) {
    if (cpu < 0) continue;
    ++expected_;
    threads_.emplace_back([this, cpu] { poll(cpu); });
  }
}

AwakeCores::~AwakeCores() {
  stop_ = true;
  for (auto& t : threads_) t.join();
}

int AwakeCores::active() const {
  while (started_.load() < expected_) std::this_thread::yield();
  return active_.load();
}

void AwakeCores::poll(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_param param{};
  param.sched_priority = 0;
  const bool ok = pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 &&
                  pthread_setschedparam(pthread_self(), SCHED_IDLE, &param) == 0;
  pthread_setname_np(pthread_self(), kAwakeThreadName);
  if (ok) ++active_;
  ++started_;
  if (!ok) return;
  // A plain load loop: no pause instruction, which a hypervisor may take as
  // a spinning lock and answer by descheduling the vCPU.
  while (!stop_.load(std::memory_order_relaxed)) {
  }
  --active_;
}

}  // namespace splitsim
