#pragma once
// Turnstile (interleaved_1f1b): a party's stages take their ops in the
// party's one order (device_ops, costmodel/core/include/splitsim/costmodel/
// schedule.h). Runs inside SimGrid actors, as HostArbiter: no lock needed.
#include <cstddef>
#include <map>
#include <simgrid/s4u/Semaphore.hpp>
#include <utility>
#include <vector>

namespace splitsim::sim_internal {

// An instance waits until the next op of the party's order is its stage's,
// and passes the turn on when its op is done.
class Turnstile {
 public:
  explicit Turnstile(std::vector<int> stages) : stages_(std::move(stages)) {}
  // Blocks until the party's next op is `stage`'s; `wake`: the caller's own
  // semaphore (initial capacity 0).
  void wait(int stage, simgrid::s4u::Semaphore* wake);
  void pass();

 private:
  std::vector<int> stages_;  // the stage of each op of the party's order
  size_t next_ = 0;
  std::map<int, simgrid::s4u::Semaphore*> waiting_;  // by stage
};

}  // namespace splitsim::sim_internal
