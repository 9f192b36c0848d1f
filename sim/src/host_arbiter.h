#pragma once
// HostArbiter: a party computes one thing at a time. Stage actors on one
// host take turns through it; with several clients waiting, the server
// order decides who goes next. Runs inside SimGrid actors: SimGrid runs one
// actor at a time and switches only at simcalls, so the plain members need
// no lock.
#include <cstdint>
#include <deque>
#include <map>
#include <simgrid/s4u/Semaphore.hpp>

#include "splitsim/sim/simulator.h"

namespace splitsim::sim_internal {

class HostArbiter {
 public:
  explicit HostArbiter(ServerOrder order) : order_(order) {}

  // Blocks the calling actor until the host is its own. `wake` is the
  // caller's private semaphore (initial capacity 0), released to hand over.
  void acquire(int client, simgrid::s4u::Semaphore* wake);
  // Hands the host to the next waiter, or frees it. REQUIRES: the caller holds it.
  void release();

 private:
  struct Waiter {
    int client;
    simgrid::s4u::Semaphore* wake;
  };
  ServerOrder order_;
  bool busy_ = false;
  int last_client_ = -1;
  std::deque<Waiter> fifo_;                      // kFifo: arrival order
  std::map<int, std::deque<Waiter>> by_client_;  // kRoundRobin: per client, arrival order
};

}  // namespace splitsim::sim_internal
