#include "turnstile.h"

namespace splitsim::sim_internal {

namespace sg4 = simgrid::s4u;

void Turnstile::wait(int stage, sg4::Semaphore* wake) {
  while (next_ < stages_.size() && stages_[next_] != stage) {
    waiting_[stage] = wake;
    wake->acquire();
  }
}

void Turnstile::pass() {
  ++next_;
  if (next_ >= stages_.size()) return;
  const auto it = waiting_.find(stages_[next_]);
  if (it == waiting_.end()) return;
  sg4::Semaphore* wake = it->second;
  waiting_.erase(it);
  wake->release();
}

}  // namespace splitsim::sim_internal
