#pragma once
// Private to planner.cpp: the seconds of one boundary's codec work for one
// micro-batch, on the sending and the receiving party's devices.
#include <cstdint>
#include <vector>

#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {

struct BoundaryCodecSeconds {
  double encode = 0, decode = 0;            // the activation: sender, receiver
  double grad_encode = 0, grad_decode = 0;  // its gradient: receiver, sender
  // The backward through a trainable insert: carry (sender), expand (receiver).
  double sender_backward = 0, receiver_backward = 0;
};

// For `batch` samples of per-sample `shape` (the gradient at `carried`):
// each device's measured timing (DeviceProfile::codec_timings) where it has
// one for the codec, shape and batch, else the codec's formula.
BoundaryCodecSeconds boundary_codec_seconds(const BoundaryCodecs& codecs,
                                            const std::vector<int64_t>& shape,
                                            const std::vector<int64_t>& carried, int64_t batch,
                                            const DeviceProfile& sender,
                                            const DeviceProfile& receiver);

}  // namespace splitsim
