// calibrate (sim/calibrate): hidden parameters recovered from rows simulated
// with them, held parameters named with a reason (the measured-file readers:
// measured_test.cpp).
#include "splitsim/calibrate/calibrate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "../sim/test_plans.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"

namespace splitsim::testing {
namespace {

// U-shapes that differ in chunks, bytes and link rate (with codec work on
// both sides), as a user would measure a few configurations.
std::vector<Plan> testbed_plans() {
  std::vector<Plan> plans;
  int n = 0;
  for (int64_t m : {1, 4}) {
    for (double rate : {1e8, 1e9}) {
      for (int64_t bytes : {20000, 200000}) {
        // The same batch in m micro-batches: each takes 1/m of the compute.
        const double f = 1.0 / static_cast<double>(m);
        Plan p = ushape(0.004 * f, 0.006 * f, 0.020 * f, 0.030 * f, Schedule::kGpipe, m);
        p.network.bandwidth_bit_per_s = rate;
        set_wire_bytes(&p, 0, bytes, bytes);
        set_wire_bytes(&p, 1, bytes / 10, bytes / 10);
        for (PlanBoundary& b : p.boundaries) {  // codec work, added to the stages as planned
          // Codec work grows with the bytes (5 and 2.5 ns per byte), so
          // that it varies apart from the model's compute.
          const double enc = 5e-9 * static_cast<double>(b.forward.wire_bytes[0]);
          b.forward.encode_s.assign(static_cast<size_t>(m), enc);
          b.forward.decode_s.assign(static_cast<size_t>(m), enc / 2);
          for (size_t c = 0; c < static_cast<size_t>(m); ++c) {
            p.stages[static_cast<size_t>(b.from_stage)].fwd_s[c] += enc;
            p.stages[static_cast<size_t>(b.to_stage)].fwd_s[c] += enc / 2;
          }
        }
        p.variant = "v" + std::to_string(n++) + " chunks=" + std::to_string(m);
        plans.push_back(p);
      }
    }
  }
  return plans;
}

Calibration hidden() {
  Calibration c;
  c.parties["client"] = {1.7, 0.0005, 1.5};
  c.parties["server"] = {0.6, 0.002, 0.8};
  c.bandwidth_factor = 0.5;
  c.per_message_overhead_s = 2e-4;
  return c;
}

// Rows of time per batch and both busy times, simulated under `c`, each
// value times (1 + noise * a fixed pseudo-random number in [-1, 1]).
std::vector<MeasuredRow> measured_under(const std::vector<Plan>& plans, const Calibration& c,
                                        double noise) {
  std::vector<MeasuredRow> rows;
  unsigned state = 12345;
  const auto jitter = [&] {
    state = state * 1103515245u + 12345u;
    return 1 + noise * (static_cast<double>((state >> 8) % 20001) / 10000.0 - 1);
  };
  for (const Plan& p : plans) {
    const Plan q = apply_calibration(p, c);
    const Metrics m = compute_metrics(simulate(q), q, q.warmup);
    MeasuredRow r;
    r.label = p.variant;
    r.source = "test";
    r.metrics["time_per_batch_s"] = m.time_per_batch_s * jitter();
    r.metrics["busy_s_per_batch.client"] = m.party("client")->busy_s_per_batch * jitter();
    r.metrics["busy_s_per_batch.server"] = m.party("server")->busy_s_per_batch * jitter();
    rows.push_back(r);
  }
  return rows;
}

const FittedParameter& param(const CalibrationFit& f, const std::string& name) {
  for (const auto& p : f.parameters)
    if (p.name == name) return p;
  throw std::runtime_error("no parameter " + name);
}

CalibrateOptions quiet(bool loo = false) {
  CalibrateOptions o;
  o.jobs = 2;
  o.leave_one_out = loo;
  return o;
}

TEST(CalibrateTest, RecoversHiddenParametersWithoutNoiseWithin2Percent) {
  const std::vector<Plan> plans = testbed_plans();
  const Calibration truth = hidden();
  const CalibrationFit f = calibrate(plans, measured_under(plans, truth, 0.0), quiet());
  const auto near = [](double got, double want) { return std::abs(got - want) <= 0.02 * want; };
  EXPECT_TRUE(near(param(f, "client.compute_scale").value, 1.7))
      << param(f, "client.compute_scale").value;
  EXPECT_TRUE(near(param(f, "server.compute_scale").value, 0.6))
      << param(f, "server.compute_scale").value;
  EXPECT_TRUE(near(param(f, "server.op_overhead_s").value, 0.002))
      << param(f, "server.op_overhead_s").value;
  EXPECT_TRUE(near(param(f, "client.op_overhead_s").value, 0.0005))
      << param(f, "client.op_overhead_s").value;
  EXPECT_TRUE(near(param(f, "bandwidth_factor").value, 0.5)) << param(f, "bandwidth_factor").value;
  EXPECT_TRUE(near(param(f, "per_message_overhead_s").value, 2e-4))
      << param(f, "per_message_overhead_s").value;
  // Every value fitted; as planned, they were far off (median over 10%).
  std::vector<double> before;
  for (const RowResult& r : f.rows) {
    EXPECT_NEAR(r.calibrated, r.measured, 1e-3 * r.measured) << r.label << " " << r.metric;
    before.push_back(std::abs(r.uncalibrated - r.measured) / r.measured);
  }
  std::sort(before.begin(), before.end());
  EXPECT_GT(before[before.size() / 2], 0.10);
}

TEST(CalibrateTest, WithNoiseTheFitStaysWithinTheNoiseAndSaysHowSure) {
  const std::vector<Plan> plans = testbed_plans();
  const CalibrationFit f = calibrate(plans, measured_under(plans, hidden(), 0.01), quiet(true));
  // 1% noise on every value: the scales within a few percent, each with a
  // finite uncertainty; the leave-one-out error of time per batch small.
  EXPECT_NEAR(param(f, "client.compute_scale").value, 1.7, 0.1);
  EXPECT_NEAR(param(f, "server.compute_scale").value, 0.6, 0.03);
  EXPECT_NEAR(param(f, "bandwidth_factor").value, 0.5, 0.03);
  for (const char* name : {"client.compute_scale", "server.compute_scale", "bandwidth_factor"}) {
    EXPECT_TRUE(param(f, name).fitted) << name;
    EXPECT_TRUE(std::isfinite(param(f, name).sigma) && param(f, name).sigma > 0) << name;
  }
  EXPECT_TRUE(std::isfinite(f.loo_median_abs_pct));
  EXPECT_LT(f.loo_median_abs_pct, 3.0);
  EXPECT_GE(f.loo_max_abs_pct, f.loo_median_abs_pct);
  for (const RowResult& r : f.rows)
    if (r.metric == "time_per_batch_s") {
      EXPECT_TRUE(std::isfinite(r.left_out)) << r.label;
    }
}

TEST(CalibrateTest, ParametersNoRowDeterminesAreHeldWithAReason) {
  // One row of time per batch, no transfers that cost anything: the link's
  // parameters and host work per byte are held; so is all but one of what
  // the single value cannot tell apart. A warning says the rows are few.
  std::vector<Plan> plans = {ushape(0.004, 0.006, 0.02, 0.03)};
  plans[0].variant = "only";
  MeasuredRow r;
  r.label = "only";
  r.source = "test";
  r.metrics["time_per_batch_s"] = 0.1;
  const CalibrationFit f = calibrate(plans, {r}, quiet());
  int fitted = 0;
  for (const auto& p : f.parameters) {
    fitted += p.fitted;
    if (!p.fitted) {
      EXPECT_FALSE(p.why.empty()) << p.name;
    }
  }
  EXPECT_EQ(fitted, 1);
  EXPECT_FALSE(param(f, "bandwidth_factor").fitted);
  EXPECT_EQ(param(f, "bandwidth_factor").why, "no measured value depends on it");
  EXPECT_FALSE(f.warnings.empty());
  ASSERT_EQ(f.rows.size(), 1u);
  EXPECT_NEAR(f.rows[0].calibrated, 0.1, 1e-4);  // one value, one parameter: exact
}

// U-shapes whose stages split into convolution work, which grows with the
// micro-batch, and a fixed cost per ATen op, which does not; chunks 1 to 8,
// two link rates. The shares are the plan's, as make_plan writes them.
std::vector<Plan> per_op_plans() {
  std::vector<Plan> plans;
  for (int64_t m : {1, 2, 4, 8}) {
    for (double rate : {1e8, 1e9}) {
      const double f = 1.0 / static_cast<double>(m);
      // MAC seconds per batch and per-op seconds per micro-batch.
      const double client_mac = 0.02, client_op = 0.002, server_mac = 0.06, server_op = 0.001;
      Plan p =
          ushape(client_mac * f + client_op, 2 * (client_mac * f + client_op),
                 server_mac * f + server_op, 2 * (server_mac * f + server_op), Schedule::kGpipe, m);
      p.network.bandwidth_bit_per_s = rate;
      set_wire_bytes(&p, 0, 100000 / m, 100000 / m);
      set_wire_bytes(&p, 1, 10000 / m, 10000 / m);
      for (PlanStage& st : p.stages) {
        const bool server = st.party == "server";
        const double mac = (server ? server_mac : client_mac) * f;
        const double op = server ? server_op : client_op;
        OpClassParts share;
        share.conv = mac / (mac + op);
        share.per_op = op / (mac + op);
        st.fwd_op_class_shares.assign(static_cast<size_t>(m), share);
        st.bwd_op_class_shares.assign(static_cast<size_t>(m), share);
      }
      p.variant = "chunks=" + std::to_string(m) + " rate=" + std::to_string(rate);
      plans.push_back(p);
    }
  }
  return plans;
}

TEST(CalibrateTest, RecoversAPerOpScaleApartFromTheComputeScale) {
  // A spec sheet of a fast many-core CPU on a one-thread machine: MACs 20x
  // slower than it says, the fixed cost per op only 2x. One scale cannot fit
  // chunks 1 and 8 both; compute_scale (convolutions, the larger class)
  // and op_class_scale.per_op can.
  const std::vector<Plan> plans = per_op_plans();
  Calibration truth;
  truth.parties["client"].compute_scale = 20;
  truth.parties["client"].op_class_scale.per_op = 0.1;
  truth.parties["server"].compute_scale = 15;
  truth.parties["server"].op_class_scale.per_op = 0.3;
  const CalibrationFit f = calibrate(plans, measured_under(plans, truth, 0.0), quiet());
  const auto near = [](double got, double want) { return std::abs(got - want) <= 0.02 * want; };
  for (const auto& [name, want] :
       std::vector<std::pair<std::string, double>>{{"client.compute_scale", 20},
                                                   {"client.op_class_scale.per_op", 0.1},
                                                   {"server.compute_scale", 15},
                                                   {"server.op_class_scale.per_op", 0.3}}) {
    EXPECT_TRUE(param(f, name).fitted) << name << ": " << param(f, name).why;
    EXPECT_TRUE(near(param(f, name).value, want)) << name << " " << param(f, name).value;
  }
  // Convolutions are the reference class: no scale of their own.
  for (const auto& p : f.parameters)
    EXPECT_EQ(p.name.find("op_class_scale.conv"), std::string::npos);
  for (const RowResult& r : f.rows)
    EXPECT_NEAR(r.calibrated, r.measured, 1e-3 * r.measured) << r.label << " " << r.metric;
}

TEST(CalibrateTest, RecoversOnePartysHostWorkPerByte) {
  // The server's own copies: 30 ns per byte received, which slows its
  // compute while transfers run; the client's is nil.
  const std::vector<Plan> plans = testbed_plans();
  Calibration truth;
  truth.parties["client"].compute_scale = 1.5;
  truth.parties["server"].compute_scale = 0.8;
  truth.parties["server"].cpu_s_per_byte_received = 3e-8;
  const CalibrationFit f = calibrate(plans, measured_under(plans, truth, 0.0), quiet());
  const FittedParameter& p = param(f, "server.cpu_s_per_byte_received");
  EXPECT_TRUE(p.fitted) << p.why;
  EXPECT_NEAR(p.value, 3e-8, 0.02 * 3e-8);
  EXPECT_NEAR(param(f, "client.cpu_s_per_byte_received").value, 0, 1e-10);
  for (const RowResult& r : f.rows)
    EXPECT_NEAR(r.calibrated, r.measured, 1e-3 * r.measured) << r.label << " " << r.metric;
}

TEST(CalibrateTest, LeaveOneOutRefitsReuseTheFitsSimulations) {
  // Rows the truth fits exactly: each refit without a row starts at its
  // optimum. Its first Jacobian is the fit's last (looked up, not run), and
  // the refit ends after a step without the Jacobian at its end. Either
  // Jacobian run anew costs (1 + parameters) x (rows - 1) simulations a row.
  const std::vector<Plan> plans = testbed_plans();
  Calibration truth;
  truth.parties["client"].compute_scale = 1.5;
  truth.parties["server"].compute_scale = 0.8;
  std::vector<MeasuredRow> rows = measured_under(plans, truth, 0.0);
  rows.resize(5);
  const CalibrationFit without = calibrate(plans, rows, quiet(false));
  const CalibrationFit with = calibrate(plans, rows, quiet(true));
  int fitted = 0;
  for (const FittedParameter& p : with.parameters) fitted += p.fitted;
  ASSERT_GE(fitted, 2);
  const int n = static_cast<int>(rows.size());
  const int refits = with.simulations - without.simulations;
  EXPECT_GT(without.simulations, 0);
  EXPECT_GE(refits, n);  // each row predicted left out, at least
  EXPECT_LT(refits, n * (1 + fitted) * (n - 1));
  // The same calibration either way: leave-one-out only adds its errors.
  EXPECT_EQ(nlohmann::json(with.calibration), nlohmann::json(without.calibration));
  EXPECT_EQ(calibration_file_json(with)["fit"]["simulations"], with.simulations);
}

TEST(CalibrateTest, ARowMustMatchOneVariant) {
  const std::vector<Plan> plans = testbed_plans();
  MeasuredRow r;
  r.source = "rows.csv:3";
  r.metrics["time_per_batch_s"] = 0.1;
  r.label = "no such variant";
  EXPECT_THROW(calibrate(plans, {r}, quiet()), InputError);
  r.label = "chunks=4";  // part of several labels
  try {
    calibrate(plans, {r}, quiet());
    FAIL() << "accepted an ambiguous label";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "rows.csv:3");
  }
  r.label = "v0 chunks=1";
  r.metrics["busy_s_per_batch.gpu7"] = 0.05;  // no such party
  EXPECT_THROW(calibrate(plans, {r}, quiet()), InputError);
}

}  // namespace
}  // namespace splitsim::testing
