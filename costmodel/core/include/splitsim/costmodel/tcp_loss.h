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
// link's own rate may be the lower one.
//
// On a short round trip the bound is far above what a connection moves:
// what a lost segment costs there is mostly time, not window. The segments
// after it report the hole (SACK, RACK) and it is sent again within a round
// trip or two, but where nothing after it can report it (its retransmission
// lost too, a message's last segments, their acknowledgement lost) the
// sender waits for a timer: Linux's tail-loss probe with one segment out
// and its retransmission timeout both wait at least 200 ms (TCP_RTO_MIN).
// So a transfer of n segments takes its time at the link's rate plus
// n x loss x the recovery time of one lost segment: a property of the link
// and the stack that `splitsim link-probe` measures on a lossy link
// (network.loss_recovery_s); tcp_loss_recovery_s is the default where
// nobody measured it. sim/README.md "Lossy links" compares both with
// measured transfers.

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

// Linux's minimum retransmission timeout (TCP_RTO_MIN).
constexpr double kTcpMinRtoS = 0.2;

// The time one lost segment costs a connection on average when nobody
// measured it: a round trip to report it and one to repair it, and for the
// share of losses nothing after them can report (taken as twice the loss
// rate: a lost retransmission, a lost tail or its acknowledgement) the
// minimum retransmission timeout. A rough default: sim/README.md "Lossy
// links" gives the measured values, 0.5-16 ms at 0.5-2% loss.
inline double tcp_loss_recovery_s(double rtt_s, double loss) {
  return 2 * rtt_s + 2 * loss * kTcpMinRtoS;
}

// Seconds a transfer of `bytes` loses to a loss rate `loss` when each lost
// segment costs `recovery_s`: its segments x loss x recovery_s.
inline double tcp_loss_delay_s(double bytes, double loss, double recovery_s,
                               double segment_bytes = kTcpSegmentBytes) {
  return std::ceil(bytes / segment_bytes) * loss * recovery_s;
}

// What one lost segment cost a connection that moved a long transfer at
// `lossy_Bps` under `loss` and at `lossless_Bps` on the same link without
// it: the time per byte it lost, per lost segment (0 if it lost none).
inline double tcp_loss_recovery_from_goodput(double lossy_Bps, double lossless_Bps, double loss,
                                             double segment_bytes = kTcpSegmentBytes) {
  const double lost_s_per_byte = 1 / lossy_Bps - 1 / lossless_Bps;
  return lost_s_per_byte > 0 ? lost_s_per_byte * segment_bytes / loss : 0;
}

}  // namespace splitsim
