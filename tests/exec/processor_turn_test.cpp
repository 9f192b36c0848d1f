// A stage's turn on its party's processor (exec/validate/README.md, "A
// stage's turn on the processor"): a forward's decode, compute, encode and
// send call, and a backward's, run as one turn, so the party's other stage
// never computes in between; the simulator's HostArbiter runs them so.
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "exec_test_util.h"
#include "slow_processor.h"

namespace splitsim::testing {
namespace {

bool same_op(const TimelineEvent& a, const TimelineEvent& b) {
  return a.stage == b.stage && a.batch == b.batch && a.microbatch == b.microbatch;
}

TEST(ProcessorTurnTest, AStagesOpIsOneTurnOnThePartysProcessor) {
  // U-shape: the client (rank 0) holds stages 0 and 2, which take turns.
  const Scenario sc = small_scenario("resnet20", 8);
  const Plan plan = make_test_plan(sc, {0, 6}, CodecSpec{}, CodecSpec{}, 4, Schedule::kGpipe, 4);
  RunOptions o;
  o.timeout = std::chrono::milliseconds(20000);
  const auto results = run_loopback(sc, plan, o);
  std::vector<TimelineEvent> turn, sends;  // the client's, from the rank that ran them
  for (const auto& r : results) {
    ASSERT_TRUE(r.complete) << r.error;
    const int32_t client = r.timeline.party_index("client");
    for (const auto& e : r.timeline.events) {
      if (e.party != client) continue;
      if (is_compute(e.kind)) turn.push_back(e);
      if (e.kind == EventKind::kSend) sends.push_back(e);
    }
  }
  std::sort(turn.begin(), turn.end(),
            [](const auto& a, const auto& b) { return a.start_s < b.start_s; });
  int checked = 0;
  for (size_t i = 0; i + 1 < turn.size(); ++i) {
    const TimelineEvent& e = turn[i];
    const TimelineEvent& next = turn[i + 1];
    const bool stage_encodes_after_forward = e.kind == EventKind::kForward && e.stage == 0;
    const bool stage_encodes_after_backward = e.kind == EventKind::kBackward && e.stage == 2;
    const bool decode = e.kind == EventKind::kDecode;
    if (!stage_encodes_after_forward && !stage_encodes_after_backward && !decode) continue;
    ++checked;
    // The event's own next step follows it, not the other stage's compute.
    EXPECT_TRUE(same_op(e, next)) << "stage " << next.stage << " computed between stage " << e.stage
                                  << "'s steps of batch " << e.batch << " micro-batch "
                                  << e.microbatch;
  }
  EXPECT_GE(checked, 3 * 4 * 3);  // a forward and a backward per micro-batch, decodes
  // Each send call is made before the party computes anything else.
  ASSERT_FALSE(sends.empty());
  for (const TimelineEvent& s : sends) {
    const auto encode = std::find_if(turn.begin(), turn.end(), [&](const TimelineEvent& e) {
      return e.kind == EventKind::kEncode && same_op(e, s) && e.backward == s.backward;
    });
    ASSERT_NE(encode, turn.end());
    const auto after = std::next(encode);
    if (after != turn.end()) {
      EXPECT_LE(s.start_s, after->start_s);
    }
    EXPECT_GE(s.start_s, encode->end_s);
  }
}

}  // namespace
// --compute-slowdown F emulates a processor F times slower: every
// computation lasts F times its own CPU time, and the transfers are not
// slowed (their bytes are the same). A coarse bound: the factor is 5, the
// check 2, each side the faster of two interleaved runs: another process
// on the cores (ctest runs two tests at once) stretches the plain run's wall
// time but not the CPU time the slowed run multiplies, so the ratio is
// max(c, 5) / c at a contention c, above 2 while c < 2.5.
TEST(ProcessorTurnTest, ComputeSlowdownStretchesEveryComputationAndNoTransfer) {
  const Scenario sc = small_scenario("resnet20", 8);
  const Plan plan = make_test_plan(sc, {3}, CodecSpec{}, CodecSpec{}, 1, Schedule::kGpipe, 3);
  auto busy = [&](double slowdown, int64_t* bytes) {
    RunOptions o;
    o.timeout = std::chrono::milliseconds(30000);
    o.compute_slowdown = slowdown;
    double s = 0;
    *bytes = 0;
    for (const auto& r : run_loopback(sc, plan, o)) {
      EXPECT_TRUE(r.complete) << r.error;
      for (const auto& e : r.timeline.events) {
        if (is_compute(e.kind)) s += e.end_s - e.start_s;
        if (e.kind == EventKind::kSend) *bytes += e.bytes;
      }
    }
    return s;
  };
  int64_t plain_bytes = 0, slowed_bytes = 0;
  double plain = 1e9, slowed = 1e9;
  for (int round = 0; round < 2; ++round) {
    plain = std::min(plain, busy(1, &plain_bytes));
    slowed = std::min(slowed, busy(5, &slowed_bytes));
  }
  EXPECT_GT(slowed, 2 * plain) << "plain " << plain << " s, slowed " << slowed << " s";
  EXPECT_EQ(slowed_bytes, plain_bytes);
}

// The emulated processor multiplies the CPU time a computation took here,
// not the time it waited for a core: 20 ms of spinning lasts at least 60
// ms at F = 3, 20 ms asleep (descheduled, as when another process holds
// the core) stays 20 ms; with several intra-op threads the wall time is
// multiplied instead.
TEST(ProcessorTurnTest, SlowProcessorMultipliesTheCpuTimeNotTheWaitForACore) {
  auto now = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  auto thread_cpu = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
  };
  exec_internal::SlowProcessor slow(3, 1);
  slow.start();
  double t0 = now();
  for (const double c0 = thread_cpu(); thread_cpu() - c0 < 0.02;) {
  }
  double end = slow.finish(t0, now());
  EXPECT_GE(end - t0, 0.06 - 1e-9);
  EXPECT_GE(now(), end - 1e-4);  // it held the processor until then

  slow.start();
  t0 = now();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  double t1 = now();
  EXPECT_EQ(slow.finish(t0, t1), t1);

  exec_internal::SlowProcessor wall(3, 2);
  wall.start();
  t0 = now();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  t1 = now();
  EXPECT_DOUBLE_EQ(wall.finish(t0, t1), t0 + 3 * (t1 - t0));
  EXPECT_EQ(exec_internal::SlowProcessor(1, 1).finish(t0, t1), t1);  // not slowed
}

}  // namespace splitsim::testing
