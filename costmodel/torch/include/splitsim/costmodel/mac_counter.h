#pragma once
// Counts the work of the ATen ops that really run, by observing them with
// RecordFunction (no LibTorch types in this header).
#include "splitsim/costmodel/model_profile.h"

namespace splitsim {

// While an instance is alive, every outermost counted ATen op that runs on
// the constructing thread, or in autograd work it starts, adds to counts().
// Nested ops (conv2d -> convolution -> mkldnn_convolution) count once.
// REQUIRES: at most one MacCounter alive per thread.
class MacCounter {
 public:
  MacCounter();
  ~MacCounter();
  MacCounter(const MacCounter&) = delete;
  MacCounter& operator=(const MacCounter&) = delete;

  OpCounts counts() const;
  void reset();

 private:
  uint64_t handle_;
  OpCounts counts_;  // the callbacks add here through a thread-local pointer
};

}  // namespace splitsim
