#include "host_arbiter.h"

#include <cassert>

namespace splitsim::sim_internal {

void HostArbiter::acquire(int client, simgrid::s4u::Semaphore* wake) {
  if (!busy_) {
    busy_ = true;
    last_client_ = client;
    return;
  }
  if (order_ == ServerOrder::kFifo)
    fifo_.push_back({client, wake});
  else
    by_client_[client].push_back({client, wake});
  wake->acquire();  // release() handed the host over: busy_ stays true
}

void HostArbiter::release() {
  assert(busy_);
  Waiter next{};
  if (order_ == ServerOrder::kFifo) {
    if (fifo_.empty()) {
      busy_ = false;
      return;
    }
    next = fifo_.front();
    fifo_.pop_front();
  } else {
    if (by_client_.empty()) {
      busy_ = false;
      return;
    }
    auto it = by_client_.upper_bound(last_client_);
    if (it == by_client_.end()) it = by_client_.begin();
    next = it->second.front();
    it->second.pop_front();
    if (it->second.empty()) by_client_.erase(it);
  }
  last_client_ = next.client;
  next.wake->release();
}

}  // namespace splitsim::sim_internal
