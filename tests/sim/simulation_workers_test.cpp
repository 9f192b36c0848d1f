// The simulation workers (sim/src/worker.h, sim/src/isolate.cpp): what a
// worker computes is what this process would compute, for any number of
// jobs, and a failing simulation or worker fails alone.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "test_plans.h"

namespace splitsim {
namespace {

using testing::equal_stages;
using testing::group_costs;
using testing::set_wire_bytes;
using testing::ushape;

std::string dump(const Metrics& m) { return nlohmann::json(m).dump(); }

// Plans that use every part of the simulator: latency, a token bucket,
// up/down rates, host work (the CPU model), per-party host work, a shared
// machine's slowdown, several clients, client groups behind a server link,
// the asynchronous schedules.
std::vector<Plan> varied_plans() {
  std::vector<Plan> plans;
  Plan a = ushape(1e-3, 2e-3, 4e-3, 8e-3, Schedule::k1F1B, 4);
  a.network.latency_s = 1e-4;
  set_wire_bytes(&a, 0, 123457, 98765);
  set_wire_bytes(&a, 1, 4321, 4321);
  a.variant = "1f1b";
  plans.push_back(a);
  Plan b = a;
  b.variant = "host work";
  b.network.burst_bytes = 50000;
  b.network.burst_packet_bytes = 64000;
  b.network.up_bandwidth_bit_per_s = 2e9;
  b.platform.cpu_s_per_byte_sent = 2e-9;
  b.platform.cpu_s_per_message_received = 1e-5;
  b.platform.parties["server"].cpu_s_per_byte_received = 1e-9;
  b.platform.shared_machine = true;
  b.platform.co_compute_slowdown = 1.2;
  b.platform.wake_cost = {{1e-3, 2e-4}, {1e-2, 5e-4}};
  plans.push_back(b);
  Plan c = ushape(1e-3, 2e-3, 1e-3, 2e-3, Schedule::kGpipe, 2);
  c.variant = "3 clients";
  c.clients = 3;
  set_wire_bytes(&c, 0, 200000, 200000);
  plans.push_back(c);
  Plan g = c;
  g.variant = "groups behind a server link";
  g.network.server_bandwidth_bit_per_s = 2e9;
  g.network.server_latency_s = 1e-3;
  g.client_groups = {
      {"a", "dev", 2, {4e9, 1e9}, {1e-4, 2e-3}, {group_costs(0, {2e-3, 2e-3}, {3e-3, 3e-3}, 1e-4)}},
      {"b", "", 1, {}, {}, {}}};
  plans.push_back(g);
  for (Schedule s : {Schedule::kPipeDream, Schedule::kDdg, Schedule::kFr}) {
    Plan d = equal_stages(3, 2, 1e-3, 2e-3, s, 8, 2);
    d.variant = schedule_name(s);
    set_wire_bytes(&d, 1, 1000, 1000);
    plans.push_back(d);
  }
  return plans;
}

TEST(SimulationWorkersTest, MetricsFromTheWorkerAreThoseOfTheTimeline) {
  const std::vector<Plan> plans = varied_plans();
  const std::vector<Metrics> metrics = simulate_metrics(plans, {}, 2);
  ASSERT_EQ(metrics.size(), plans.size());
  for (size_t i = 0; i < plans.size(); ++i)
    EXPECT_EQ(dump(metrics[i]),
              dump(compute_metrics(simulate(plans[i]), plans[i], plans[i].warmup)))
        << plans[i].variant;
}

TEST(SimulationWorkersTest, ResultsAreTheSameForAnyNumberOfJobs) {
  std::vector<Plan> plans;
  for (const Plan& p : varied_plans())
    for (double latency : {0.0, 1e-4, 3e-3}) {
      Plan q = p;
      q.network.latency_s = latency;
      plans.push_back(q);
    }
  const std::vector<Metrics> one = simulate_metrics(plans, {}, 1);
  for (int jobs : {2, 5}) {
    const std::vector<Metrics> many = simulate_metrics(plans, {}, jobs);
    for (size_t i = 0; i < plans.size(); ++i) EXPECT_EQ(dump(many[i]), dump(one[i])) << jobs;
  }
  const std::vector<Timeline> t1 = simulate_many(plans, {}, 1), t3 = simulate_many(plans, {}, 3);
  for (size_t i = 0; i < plans.size(); ++i) {
    ASSERT_EQ(t1[i].events.size(), t3[i].events.size());
    for (size_t k = 0; k < t1[i].events.size(); ++k) {
      EXPECT_EQ(t1[i].events[k].start_s, t3[i].events[k].start_s);
      EXPECT_EQ(t1[i].events[k].end_s, t3[i].events[k].end_s);
    }
  }
}

// The plan travels to the worker as raw bytes: the worker must simulate
// exactly what this process would (every field that matters arrives).
TEST(SimulationWorkersTest, TheWorkerSimulatesThePlanThisProcessHolds) {
  for (const Plan& p : varied_plans()) {
    const std::string expected = dump(simulate_metrics({p}, {}, 1).front());
    EXPECT_EXIT(
        {
          const std::string here = dump(compute_metrics(simulate_in_process(p), p, p.warmup));
          std::_Exit(here == expected ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "")
        << p.variant;
  }
}

TEST(SimulationWorkersTest, AFailingSimulationLeavesTheWorkersServing) {
  // Never finishes (SimulatorLimitsTest.UnfinishedSimulationIsAnError).
  Plan bad = equal_stages(2, 1, 1e-3, 2e-3, Schedule::kSequential, 4, 1, {"client", "server"});
  bad.variant = "stuck";
  bad.network.bandwidth_bit_per_s = 1e-300;
  set_wire_bytes(&bad, 0, 1000000000000, 1000000000000);
  const Plan good = equal_stages(2, 1, 1e-3, 2e-3, Schedule::kSequential);
  try {
    simulate_metrics({good, bad, good}, {}, 2);
    ADD_FAILURE() << "a stuck simulation gave metrics";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("\"stuck\""), std::string::npos) << e.what();
  }
  const Metrics m = simulate_metrics({good}, {}, 2).front();
  EXPECT_NEAR(m.time_per_batch_s, 2 * (1e-3 + 2e-3), 1e-12);
}

// The tests below change how workers start, which a process decides once:
// each runs in a fresh copy of this test binary.
class SimulationWorkersStartTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(SimulationWorkersStartTest, WithoutTheWorkerExecutableAForkedCopyServes) {
  EXPECT_EXIT(
      {
        ::setenv("SPLITSIM_SIMWORKER", "fork", 1);
        const Plan p = equal_stages(2, 1, 1e-3, 2e-3, Schedule::kSequential);
        const std::vector<Metrics> m = simulate_metrics({p, p}, {}, 2);
        std::_Exit(std::abs(m[0].time_per_batch_s - 6e-3) < 1e-12 && dump(m[0]) == dump(m[1]) ? 0
                                                                                              : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(SimulationWorkersStartTest, AWorkerPathThatIsNoExecutableIsAnError) {
  EXPECT_EXIT(
      {
        ::setenv("SPLITSIM_SIMWORKER", "/nonexistent/splitsim-simworker", 1);
        try {
          simulate(equal_stages(2, 1, 1e-3, 2e-3, Schedule::kSequential));
        } catch (const std::runtime_error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::_Exit(0);
        }
        std::_Exit(1);
      },
      ::testing::ExitedWithCode(0), "SPLITSIM_SIMWORKER is \"/nonexistent/splitsim-simworker\"");
}

TEST_F(SimulationWorkersStartTest, AWorkerThatDiesFailsItsSimulationWithItsName) {
  char dir[] = "/tmp/splitsim-worker-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string script = std::string(dir) + "/dies";
  std::ofstream(script) << "#!/bin/sh\nexit 3\n";
  ::chmod(script.c_str(), 0700);
  // The death test's child runs this body again from the start (its own directory), so it
  // removes its directory before it exits.
  const auto remove_script = [&] {
    ::unlink(script.c_str());
    ::rmdir(dir);
  };
  EXPECT_EXIT(
      {
        ::setenv("SPLITSIM_SIMWORKER", script.c_str(), 1);
        Plan p = equal_stages(2, 1, 1e-3, 2e-3, Schedule::kSequential);
        p.variant = "lost";
        try {
          simulate_metrics({p}, {}, 1);
        } catch (const std::runtime_error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          remove_script();
          std::_Exit(0);
        }
        remove_script();
        std::_Exit(1);
      },
      ::testing::ExitedWithCode(0), "simulation of \"lost\" failed: the simulation worker died");
  remove_script();
}

}  // namespace
}  // namespace splitsim
