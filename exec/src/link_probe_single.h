#pragma once
// The link probe's timed transfers after idle (link_probe.h): for each size
// of a ladder (1 KiB, four per octave), each way, one transfer after the
// link has idled, timed from its send being posted to its receive's
// completion; the single messages first, then transfers of two tensors.
#include <cstdint>
#include <vector>

#include "splitsim/costmodel/link_fit.h"
#include "splitsim/exec/link_probe.h"
#include "splitsim/exec/transport.h"

namespace splitsim {

// Runs them on both ranks; each returns {posted, completed} of what it sent
// (the client's up, the server's down), in the ladders' order, in seconds
// since its `start`.
std::vector<double> single_messages(Transport& t, const LinkProbeOptions& o,
                                    ExecClock::time_point start);

// Medians per size of one way's times (as single_messages returns them,
// from `*at` on, which it advances past the ladder up to `max_bytes`):
// completed - posted, the receiver's clock brought to the sender's by
// `offset_s` (receiver's clock - sender's).
std::vector<TransferSample> timed_samples(const std::vector<double>& times, size_t* at, int repeats,
                                          int64_t max_bytes, int64_t tail_bytes, double offset_s);

}  // namespace splitsim
