#include "waiter_pool.h"

#include <thread>
#include <utility>

namespace splitsim::exec_internal {

WaiterPool& WaiterPool::instance() {
  static WaiterPool* pool = new WaiterPool;  // NOLINT: never destroyed (waiter_pool.h)
  return *pool;
}

void WaiterPool::run(Job job) {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_.push_back(std::move(job));
  // A woken thread counts as idle until it takes its job, so every queued
  // job has a thread of its own.
  if (idle_ >= jobs_.size()) {
    ready_.notify_one();
    return;
  }
  ++threads_;
  std::thread([this] { serve(); }).detach();
}

size_t WaiterPool::threads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return threads_;
}

void WaiterPool::serve() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    ++idle_;
    ready_.wait(lock, [this] { return !jobs_.empty(); });
    --idle_;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    job = nullptr;  // what it holds is released before the thread waits again
    lock.lock();
  }
}

}  // namespace splitsim::exec_internal
