#pragma once
// What one transfer alone takes on a link, measured, and the link model it
// gives the simulator. The link probe times single messages of a ladder of
// sizes, each after the link has idled (exec/include/splitsim/exec/
// link_probe.h). A shaped link's bucket lets the first bytes after an idle
// spell pass faster than the rate; every message pays a fixed cost
// (latency, the transport's and the receiver's wake-up). The fit is a
// token bucket with a peak rate, the standard arrival curve
// min(P t + M, r t + b) of network calculus:
//   T(S) = L + S / P                        for S <= S*
//   T(S) = L + S* / P + (S - S*) / r        beyond,
// where S* = P b / (P - r) is where a full bucket of b bytes runs dry while
// sending at P and refilling at r. A plain wire is b = 0, P = r.
// A shaper that sends whole packets on credit (tc htb under TCP's
// segmentation offload: packets of up to a GSO packet) is a step instead:
// a message of one packet passes at once, a longer one once the packets
// before its last are paid for beyond the bucket,
//   T(S) = L + max(0, K (ceil(S / K) - 1) - b) / r        (packets of K).
// The fit tries both and keeps the one closer to the samples; two-tensor
// samples (TransferSample::tail_bytes) count their tail as the last packet.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "splitsim/costmodel/scenario.h"

namespace splitsim {

// One message of `bytes`, alone on an idle link: seconds from its send
// being posted to its last byte received (a median over repetitions). With
// `tail_bytes` > 0, a transfer of two tensors: `bytes`, then a tensor of
// `tail_bytes` as a message of its own, as exec sends a quantizer's scale
// after its data (the second packet waits for the bucket to pay for the
// first, which shows the bucket a single message of one packet hides).
struct TransferSample {
  int64_t bytes = 0;
  double seconds = 0;
  int64_t tail_bytes = 0;
  double total_bytes() const { return static_cast<double>(bytes + tail_bytes); }
  double last_tensor_bytes() const {
    return static_cast<double>(tail_bytes > 0 ? tail_bytes : bytes);
  }
};

// Under htb's whole packets (network.burst_packet_bytes): the bytes of a
// message to be paid for at the rate, beyond the bucket's `tokens` (< 0: in
// debt), before its last packet may leave. On an idle connection each
// tensor is its own write, cut into packets of at most `packet`, so the
// last tensor's last packet leaves last (a quantizer's scale waits for its
// data to be paid for) where the tensors before it fit in one packet;
// longer ones are still in TCP's queue when it is written, and it joins
// their last packet (the probe: 8 B after 65-110 kB of data at 300 Mbit/s
// arrive with the data's second packet, 0.97 ms, as a single message of
// that size does). A message posted while the one before it was still on
// its way (`queued`) was held by TCP until that one's last packet had left
// (autocorking) and goes as one stream of packets. The one definition for
// the fit and the simulator's link.
double htb_paced_bytes(double bytes, double last_tensor, double packet, double tokens,
                       bool queued = false);

struct LinkFit {
  double latency_s = 0;        // L: what every message pays
  double rate_Bps = 0;         // r: bytes per second once the bucket is dry
  double peak_Bps = 0;         // P: bytes per second while it holds tokens (= r: none)
  int64_t burst_bytes = 0;     // b: the bucket, 0 on a plain link
  int64_t packet_bytes = 0;    // K: > 0 for the step (then P is unused)
  double rms_rel_error = 0;    // of the fitted T against the samples
  bool valid() const { return rate_Bps > 0; }
};

// Least squares in relative error over the samples: a straight line
// (L + S / r); the two-slope curve, its break anywhere up to the third
// largest size, kept only when the slope before the break is the faster;
// the step, K and b on grids of 16 per octave. Needs at least three
// distinct sizes; otherwise, or when no fit has positive slopes, returns an
// invalid fit (rate 0).
LinkFit fit_link(const std::vector<TransferSample>& samples);

// {"latency_s", "rate_Bps", "peak_Bps", "burst_bytes", "packet_bytes",
//  "rms_rel_error"}: the link probe's report and validate's runs.
nlohmann::json link_fit_json(const LinkFit& fit);

// The fitted time of one message of `bytes` on an idle link, its last
// tensor `last_tensor` bytes (0: one tensor).
double fitted_transfer_s(const LinkFit& fit, double bytes, double last_tensor = 0);

// The fit as the simulator's link: the bucket (network.burst_bytes), its
// peak rate (network.burst_peak_bit_per_s) or its packets
// (network.burst_packet_bytes), and the fixed cost per message
// (network.per_message_overhead_s); the rate is left as the scenario says.
void apply_link_fit(const LinkFit& fit, NetworkSpec* network);

}  // namespace splitsim
