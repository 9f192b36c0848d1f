#pragma once
// WaiterPool: threads that wait for transfers, kept for the process's life
// (exec/README.md "Design": the transport). A thread started per transfer
// costs its creation, its stack's mapping, page faults and unmapping (with a
// TLB flush) on the party's core, ~50 times a batch at 8 micro-batches: on a
// VM whose system calls are dear, 7-9% of a party's core and a fifth of the
// time per batch (exec/validate/README.md "Where a micro-batch's time goes").
// A job goes to an idle thread, or to a new one when every thread is busy,
// so each transfer in flight has its own waiter and its completion is
// stamped as it happens; a finished waiter takes the next job.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace splitsim::exec_internal {

class WaiterPool {
 public:
  using Job = std::function<void()>;
  // The process's pool. Never destroyed: a waiter may sit in an aborted
  // transfer's wait until Gloo's timeout, left to the process's exit.
  static WaiterPool& instance();

  // Runs `job` on an idle thread of the pool, or on a new one.
  void run(Job job);
  // Threads started so far (each lives on, idle or running a job).
  size_t threads() const;

 private:
  void serve();

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> jobs_;
  size_t idle_ = 0;  // threads waiting for a job
  size_t threads_ = 0;
};

}  // namespace splitsim::exec_internal
