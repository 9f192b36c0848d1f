#pragma once
// SlowProcessor: a processor `factor` times slower than this one, the
// party's alone (RunOptions::compute_slowdown). A computation on it lasts
// `factor` times the CPU time it took here: what other processes on this
// machine took from it meanwhile is this machine's sharing, not the
// emulated processor's, so it is not multiplied too (a wall-clock factor
// made four slowed client processes on two cores 11-15% slower than the
// processors they emulate). With several intra-op threads the work is not
// this thread's CPU time alone: the wall time stands for it then.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace splitsim::exec_internal {

class SlowProcessor {
 public:
  // `threads`: the computation's intra-op threads.
  SlowProcessor(double factor, int threads) : factor_(factor), threads_(threads) {}

  bool active() const { return factor_ > 1; }
  // At a computation's start, on its thread.
  void start() {
    if (active()) cpu_at_start_ = thread_cpu_s();
  }
  // The computation began at `t0` and ends now, `t1` (seconds on one
  // clock): holds the processor (sleeps) until it has lasted what it takes
  // on the slower processor, at least as long as it did; returns that end.
  double finish(double t0, double t1) {
    if (!active()) return t1;
    const double work =
        threads_ == 1 && cpu_at_start_ >= 0 ? thread_cpu_s() - cpu_at_start_ : t1 - t0;
    cpu_at_start_ = -1;
    const double end = t0 + std::max(t1 - t0, factor_ * work);
    std::this_thread::sleep_for(std::chrono::duration<double>(end - t1));
    return end;
  }

 private:
  static double thread_cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
  }

  double factor_;
  int threads_;
  double cpu_at_start_ = -1;
};

}  // namespace splitsim::exec_internal
