// Regression tests of issue #12 for the simulator: a simulation that stops
// before finishing its batches is an error, never zeros with exit code 0;
// values at the edge of SimGrid's range and non-regular trace files are
// refused before SimGrid sees them.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "splitsim/costmodel/errors.h"
#include "splitsim/sim/simulator.h"
#include "test_plans.h"

namespace splitsim {
namespace {

namespace fs = std::filesystem;
using splitsim::testing::equal_stages;
using splitsim::testing::set_wire_bytes;

template <class F>
std::string input_error_where(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.where();
  }
  return "(none)";
}

TEST(SimulatorLimitsTest, UnfinishedSimulationIsAnError) {
  // 1e12 bytes at 1e-300 bit/s take longer than a double holds: SimGrid
  // never completes the transfer and finds every actor blocked. The parser
  // refuses such a bandwidth; a Plan built by a library user reaches the
  // simulator.
  Plan p = equal_stages(2, 1, 1e-3, 2e-3, Schedule::kSequential, 4, 1, {"client", "server"});
  p.network.bandwidth_bit_per_s = 1e-300;
  set_wire_bytes(&p, 0, 1000000000000, 1000000000000);
  try {
    simulate(p);
    ADD_FAILURE() << "a deadlocked simulation returned a timeline";
  } catch (const InputError& e) {
    ADD_FAILURE() << "not an input error: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the simulation stopped after"), std::string::npos)
        << e.what();
  }
}

TEST(SimulatorLimitsTest, EdgeValuesAreRefusedBeforeSimGrid) {
  Plan p = equal_stages(2, 1, 1e-3, 2e-3, Schedule::kSequential, 4, 1, {"client", "server"});
  Plan huge_latency = p;
  huge_latency.network.latency_s = 1e308;
  EXPECT_EQ(input_error_where([&] { check_simulatable(huge_latency); }), "$.network");
  Plan huge_overhead = p;
  huge_overhead.network.per_message_overhead_s = 1e308;
  EXPECT_EQ(input_error_where([&] { check_simulatable(huge_overhead); }), "$.network");
  Plan endless_task = p;
  endless_task.stages[1].bwd_s[0] = 1e300;  // a device profile with peak_flops 1e-280
  EXPECT_EQ(input_error_where([&] { check_simulatable(endless_task); }), "$.devices");
}

TEST(SimulatorLimitsTest, TraceMustBeABoundedRegularFile) {
  Plan p = equal_stages(2, 1, 1e-3, 2e-3, Schedule::kSequential, 4, 1, {"client", "server"});
  const fs::path dir = fs::temp_directory_path() / ("splitsim_trace_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const fs::path tiny = dir / "tiny.txt";
  std::ofstream(tiny) << "0 1\n1 1e-9\n";
  const fs::path late = dir / "late.txt";
  std::ofstream(late) << "0 1\n1e300 0.5\n";
  for (const fs::path& trace : {fs::path("/dev/zero"), fifo, dir, tiny, late}) {
    p.network.bandwidth_trace = trace.string();
    EXPECT_EQ(input_error_where([&] { check_simulatable(p); }), "$.network.bandwidth_trace")
        << trace;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace splitsim
