// profile_this_machine: the in-flight order is recorded, and a companion
// load really computes beside the timing, and stops with it.
#include "splitsim/costmodel/timing.h"

#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <thread>

#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/model_zoo.h"

namespace splitsim {
namespace {

double cpu_s(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

ModelSpec resnet20() {
  ModelSpec spec;
  spec.name = "resnet20";
  spec.num_classes = 10;
  spec.image_size = 32;
  return spec;
}

// CPU seconds that threads other than this one spent during `f`, and the wall time.
template <typename F>
std::pair<double, double> other_threads_cpu(F f) {
  const double p0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID), t0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
  const auto w0 = std::chrono::steady_clock::now();
  f();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  return {(cpu_s(CLOCK_PROCESS_CPUTIME_ID) - p0) - (cpu_s(CLOCK_THREAD_CPUTIME_ID) - t0), wall};
}

TEST(TimingTest, RecordsTheMicroBatchesInFlight) {
  ProfileOptions opts;
  opts.batch = 2;
  opts.repeats = 2;
  opts.in_flight = 3;
  const DeviceProfile d = profile_this_machine(resnet20(), opts, [](const std::string&) {});
  EXPECT_EQ(d.measured_in_flight, 3);
  EXPECT_EQ(d.measured_batch, 2);
  ASSERT_EQ(d.timings.size(), 11u);
  for (const auto& t : d.timings) EXPECT_GT(t.bwd_s, 0) << t.unit;
}

TEST(TimingTest, ACompanionLoadComputesBesideTheTimingAndStopsWithIt) {
  ProfileOptions opts;
  opts.batch = 8;
  opts.repeats = 15;
  auto profile = [&] { profile_this_machine(resnet20(), opts, [](const std::string&) {}); };

  const auto [alone_cpu, alone_wall] = other_threads_cpu(profile);
  EXPECT_LT(alone_cpu, 0.2 * alone_wall) << "one LibTorch thread: nobody else computes";

  opts.load_cpus = {static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) - 1};
  const auto [loaded_cpu, loaded_wall] = other_threads_cpu(profile);
  // On its own CPU the companion is busy nearly all the time; sharing one
  // CPU with the timing, about half of it; a quarter or less when the tests
  // run in parallel and other processes want that CPU too.
  EXPECT_GT(loaded_cpu, alone_cpu + 0.15 * loaded_wall) << "wall " << loaded_wall << " s";

  const auto [after_cpu, after_wall] =
      other_threads_cpu([] { std::this_thread::sleep_for(std::chrono::milliseconds(200)); });
  EXPECT_LT(after_cpu, 0.1 * after_wall) << "the companion stopped with the profile";
}

TEST(TimingTest, WakeCostIsOnePointPerGapAsSlept) {
  std::vector<std::string> lines;
  // Far apart: a loaded machine (ctest -j3 on a VM losing CPU to steal)
  // overslept 1 ms sleeps past the median of 4 ms ones, which then gave no
  // point.
  const std::vector<double> gaps = {1e-3, 20e-3};
  const std::vector<WakePoint> w = measure_wake_cost(
      resnet20(), 4, 1, [&](const std::string& l) { lines.push_back(l); }, gaps, 5);
  ASSERT_EQ(w.size(), 2u);
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_GE(w[i].gap_s, gaps[i]) << "a sleep is never shorter than asked";
    EXPECT_LT(w[i].gap_s, gaps[i] + 0.5) << "the gap as slept, not a time that includes the op";
    EXPECT_GE(w[i].seconds, 0);
    EXPECT_LT(w[i].seconds, 0.5);
  }
  EXPECT_GT(w[1].gap_s, w[0].gap_s);
  // A gap that slept no longer than the one before gives no point.
  EXPECT_EQ(measure_wake_cost(resnet20(), 4, 1, [](const std::string&) {}, {20e-3, 1e-3}, 3).size(),
            1u);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("wake cost (conv1"), std::string::npos) << lines[0];
}

TEST(TimingTest, CodecsAreTimedAsExecRunsThem) {
  CodecSpec q8;
  q8.method = CodecMethod::kQuantize;  // 8 bits
  const CodecTiming t = time_codec(q8, {16, 8, 8}, 4, /*threads=*/1, /*repeats=*/3);
  EXPECT_EQ(t.codec, codec_to_json(q8).dump());
  EXPECT_EQ(t.shape, (std::vector<int64_t>{16, 8, 8}));
  EXPECT_EQ(t.batch, 4);
  EXPECT_GT(t.encode_s, 0.0);
  EXPECT_GT(t.decode_s, 0.0);
  EXPECT_LT(t.encode_s, 1.0);
  // A trainable insert is timed with its carry (the conv) and its expand.
  CodecSpec insert;
  insert.method = CodecMethod::kConvInsert;
  insert.out_channels = 4;
  insert.kernel = 2;
  insert.stride = 2;
  const CodecTiming c = time_codec(insert, {16, 8, 8}, 4, 1, 3);
  EXPECT_GT(c.encode_s, 0.0);
  EXPECT_GT(c.decode_s, 0.0);
  // ... and its backward, which a fixed codec does not have.
  ASSERT_TRUE(c.sender_backward_s.has_value());
  ASSERT_TRUE(c.receiver_backward_s.has_value());
  EXPECT_GT(*c.sender_backward_s, 0.0);
  EXPECT_GT(*c.receiver_backward_s, 0.0);
  EXPECT_LT(*c.sender_backward_s, 1.0);
  EXPECT_FALSE(t.sender_backward_s.has_value());
  EXPECT_FALSE(t.receiver_backward_s.has_value());
}

}  // namespace
}  // namespace splitsim
