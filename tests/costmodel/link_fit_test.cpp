// The link's model of one transfer, fitted to single messages by size
// (splitsim/costmodel/link_fit.h), on samples made from known links.
#include "splitsim/costmodel/link_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace splitsim {
namespace {

// Sizes from 1 KiB to 4 MiB, `per_octave` of them per octave.
std::vector<TransferSample> ladder(const LinkFit& link, double noise = 0, int per_octave = 1) {
  std::vector<TransferSample> v;
  for (int i = 0; i <= 12 * per_octave; ++i) {
    const int64_t bytes = std::llround(1024 * std::pow(2.0, static_cast<double>(i) / per_octave));
    // A deterministic wobble of +-noise, alternating.
    const double wobble = 1 + (i % 2 ? noise : -noise);
    v.push_back({bytes, fitted_transfer_s(link, static_cast<double>(bytes)) * wobble});
  }
  return v;
}

TEST(LinkFit, RecoversABucketWithAPeakRate) {
  // 100 us a message; 100 Mbit/s; a 1 ms bucket plus a 64 KiB packet
  // passing at 2 Gbit/s.
  LinkFit link;
  link.latency_s = 1e-4;
  link.rate_Bps = 12.5e6;
  link.peak_Bps = 250e6;
  link.burst_bytes = 12500 + 65536;
  const LinkFit f = fit_link(ladder(link));
  ASSERT_TRUE(f.valid());
  EXPECT_NEAR(f.latency_s, 1e-4, 1e-6);
  EXPECT_NEAR(f.rate_Bps / 12.5e6, 1.0, 1e-3);
  EXPECT_NEAR(f.peak_Bps / 250e6, 1.0, 1e-2);
  EXPECT_NEAR(static_cast<double>(f.burst_bytes) / link.burst_bytes, 1.0, 1e-2);
  EXPECT_LT(f.rms_rel_error, 1e-3);
  // The knee: a bucket's worth of bytes at the peak, the bucket refilling.
  const double knee = 250e6 * link.burst_bytes / (250e6 - 12.5e6);
  EXPECT_NEAR(fitted_transfer_s(f, knee), 1e-4 + knee / 250e6, 2e-6);
}

TEST(LinkFit, APlainWireHasNoBucket) {
  LinkFit wire;
  wire.latency_s = 5e-5;
  wire.rate_Bps = wire.peak_Bps = 125e6;
  const LinkFit f = fit_link(ladder(wire));
  ASSERT_TRUE(f.valid());
  EXPECT_NEAR(f.rate_Bps / 125e6, 1.0, 1e-6);
  EXPECT_NEAR(f.latency_s, 5e-5, 1e-8);
  // A bucket, if any, carries nothing a wire would not: the peak rate is the rate.
  EXPECT_NEAR(fitted_transfer_s(f, 3e6), 5e-5 + 3e6 / 125e6, 1e-7);
  NetworkSpec n;
  apply_link_fit(f, &n);
  EXPECT_NEAR(n.per_message_overhead_s, 5e-5, 1e-8);
}

TEST(LinkFit, NoiseMovesTheFitByLessThanTheNoise) {
  LinkFit link;
  link.latency_s = 2e-4;
  link.rate_Bps = 37.5e6;
  link.peak_Bps = 400e6;
  link.burst_bytes = 100000;
  const LinkFit f = fit_link(ladder(link, 0.05));
  ASSERT_TRUE(f.valid());
  EXPECT_NEAR(f.rate_Bps / 37.5e6, 1.0, 0.05);
  for (double bytes : {4e3, 64e3, 256e3, 2e6})
    EXPECT_NEAR(fitted_transfer_s(f, bytes) / fitted_transfer_s(link, bytes), 1.0, 0.06) << bytes;
}

// Two-tensor transfers (data, then 8 B as a message of its own): the tail
// is the last packet, so it waits for the data beyond the bucket, however
// small the data. With them the fit finds the bucket too.
TEST(LinkFit, TwoTensorTransfersShowTheBucket) {
  LinkFit htb;  // htb at 300 Mbit/s: 1 ms of bucket, GSO packets
  htb.latency_s = 9e-5;
  htb.rate_Bps = htb.peak_Bps = 37.5e6;
  htb.burst_bytes = 37500;
  htb.packet_bytes = 65160;
  // 32 KiB of data: one packet alone passes at once; with a tail behind it,
  // still at once (the bucket holds the data); 48 KiB of data with a tail
  // waits for the 11,652 B beyond the bucket.
  EXPECT_DOUBLE_EQ(fitted_transfer_s(htb, 32768), 9e-5);
  EXPECT_DOUBLE_EQ(fitted_transfer_s(htb, 32776, 8), 9e-5);
  EXPECT_NEAR(fitted_transfer_s(htb, 49160, 8), 9e-5 + (49152 - 37500) / 37.5e6, 1e-12);
  // Data of two packets is still queued when the tail is written: the tail
  // joins its last packet, as in one message of that size.
  EXPECT_DOUBLE_EQ(fitted_transfer_s(htb, 110226, 8), fitted_transfer_s(htb, 110226));
  EXPECT_NEAR(fitted_transfer_s(htb, 110226), 9e-5 + (65160 - 37500) / 37.5e6, 1e-12);
  std::vector<TransferSample> samples = ladder(htb, 0, 4);
  for (int i = 0; i <= 8 * 4; ++i) {
    const int64_t bytes = std::llround(1024 * std::pow(2.0, i / 4.0));
    samples.push_back({bytes, fitted_transfer_s(htb, static_cast<double>(bytes + 8), 8), 8});
  }
  const LinkFit f = fit_link(samples);
  ASSERT_TRUE(f.valid());
  EXPECT_NEAR(f.packet_bytes / 65160.0, 1.0, 0.05);
  EXPECT_NEAR(f.burst_bytes / 37500.0, 1.0, 0.05);
  EXPECT_NEAR(f.rate_Bps / 37.5e6, 1.0, 0.04);  // K and b on grids of 16 per octave
  EXPECT_LT(f.rms_rel_error, 0.05);
  for (double data : {20e3, 36e3, 45e3, 60e3, 200e3})
    EXPECT_NEAR(fitted_transfer_s(f, data + 8, 8) / fitted_transfer_s(htb, data + 8, 8), 1.0, 0.05)
        << data;
}

TEST(LinkFit, RecoversTheStepOfAShaperSendingWholePackets) {
  // tc htb at 100 Mbit/s under segmentation offload: packets of 65,160 B, a
  // bucket of 12,500 B; 250 us a message; payload at 12.1 MB/s.
  LinkFit htb;
  htb.latency_s = 2.5e-4;
  htb.rate_Bps = htb.peak_Bps = 12.1e6;
  htb.burst_bytes = 12500;
  htb.packet_bytes = 65160;
  // A message of one packet passes at once; three packets wait for two
  // less the bucket.
  EXPECT_DOUBLE_EQ(fitted_transfer_s(htb, 60000), 2.5e-4);
  EXPECT_NEAR(fitted_transfer_s(htb, 150000), 2.5e-4 + (2 * 65160 - 12500) / 12.1e6, 1e-12);
  const LinkFit f = fit_link(ladder(htb, 0, 4));
  ASSERT_TRUE(f.valid());
  EXPECT_GT(f.packet_bytes, 0);
  EXPECT_NEAR(f.packet_bytes / 65160.0, 1.0, 0.05);
  EXPECT_LT(f.rms_rel_error, 0.05);  // K and b on grids of 16 per octave
  // Sizes the ladder did not time, within 5%.
  for (double bytes : {20e3, 50e3, 100e3, 300e3, 1e6})
    EXPECT_NEAR(fitted_transfer_s(f, bytes) / fitted_transfer_s(htb, bytes), 1.0, 0.05) << bytes;
  // The simulator gets the packets, not a peak rate.
  NetworkSpec n;
  apply_link_fit(f, &n);
  EXPECT_EQ(n.burst_packet_bytes, f.packet_bytes);
  EXPECT_EQ(n.burst_peak_bit_per_s, 0);
  // A bucket with a peak rate is not mistaken for a step.
  LinkFit smooth;
  smooth.latency_s = 1e-4;
  smooth.rate_Bps = 12.5e6;
  smooth.peak_Bps = 250e6;
  smooth.burst_bytes = 50000;
  EXPECT_EQ(fit_link(ladder(smooth, 0, 4)).packet_bytes, 0);
}

TEST(LinkFit, TooFewSizesOrNonsenseGiveNoFit) {
  EXPECT_FALSE(fit_link({}).valid());
  EXPECT_FALSE(fit_link({{1000, 1e-3}, {2000, 2e-3}}).valid());
  EXPECT_FALSE(fit_link({{1000, 1e-3}, {1000, 1e-3}, {1000, 1e-3}}).valid());  // one size
  // Larger messages faster: no positive rate.
  EXPECT_FALSE(fit_link({{1000, 3e-3}, {2000, 2e-3}, {4000, 1e-3}}).valid());
  // Zero, negative or non-finite samples are left out.
  EXPECT_FALSE(fit_link({{1000, 0}, {2000, -1}, {4000, NAN}, {8000, 1e-3}}).valid());
  NetworkSpec n;
  n.per_message_overhead_s = 7;
  apply_link_fit(LinkFit{}, &n);  // an invalid fit changes nothing
  EXPECT_EQ(n.per_message_overhead_s, 7);
  EXPECT_TRUE(std::isnan(fitted_transfer_s(LinkFit{}, 1000)));
}

TEST(LinkFit, TheSimulatorsLinkGetsTheBucketAndItsPeak) {
  LinkFit f;
  f.latency_s = 1e-4;
  f.rate_Bps = 1e7;
  f.peak_Bps = 1e8;
  f.burst_bytes = 45000;
  NetworkSpec n;
  apply_link_fit(f, &n);
  EXPECT_EQ(n.burst_bytes, 45000);
  EXPECT_DOUBLE_EQ(n.burst_peak_bit_per_s, 8e8);
  EXPECT_DOUBLE_EQ(n.per_message_overhead_s, 1e-4);
  EXPECT_EQ(n.burst_packet_bytes, 0);
}

}  // namespace
}  // namespace splitsim
