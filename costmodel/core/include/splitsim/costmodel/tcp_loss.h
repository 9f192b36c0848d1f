#pragma once
// TCP's rate on a lossy link: the steady-state throughput of one connection
// that loses a fraction p of its packets at random, Mathis, Semke, Mahdavi
// and Ott, "The macroscopic behavior of the TCP congestion avoidance
// algorithm" (CCR 27(3), 1997):
//
//   rate = MSS / RTT x sqrt(3 / 2) / sqrt(p)
//
// (a window that halves on each loss and grows by one segment per round
// trip in between). It is a bound a transfer cannot beat, not a queue: the
// link's own rate may be the lower one. sim/README.md "Lossy links" says
// how it compares with measured transfers.

#include <cmath>

namespace splitsim {

// Linux's segment payload on a 1500-byte MTU with timestamps.
constexpr double kTcpSegmentBytes = 1448;

// Bytes per second one TCP connection moves at most with round trip
// `rtt_s` and loss rate `loss` (REQUIRES rtt_s > 0, 0 < loss <= 1).
inline double tcp_rate_under_loss_Bps(double rtt_s, double loss,
                                      double segment_bytes = kTcpSegmentBytes) {
  constexpr double kSqrtThreeHalves = 1.2247448713915890491;
  return segment_bytes / rtt_s * kSqrtThreeHalves / std::sqrt(loss);
}

}  // namespace splitsim
