#pragma once
// Predicted vs measured: the pure part of `splitsim validate` (no LibTorch,
// no processes). Parses link rates, compares two Metrics metric by metric,
// summarises a matrix of runs, and writes the reports:
//   "splitsim.validation/1"         one variant (validate --json / --report)
//   "splitsim.validation_matrix/1"  every variant (validate --matrix --json)
// Both are written up in exec/validate/README.md.
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/link_fit.h"
#include "splitsim/costmodel/scenario.h"
#include "splitsim/costmodel/spread.h"
#include "splitsim/exec/cpu_accounting.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/validate/safe_files.h"

namespace splitsim {

// "200mbit", "1gbit", "50Mbit", "500kbit", "1e8bit", "2.5gbit" or a plain
// number of bit/s ("1e8") -> bit/s (decimal prefixes, as tc). Throws
// InputError naming `flag` and the accepted forms for anything else or a
// rate <= 0.
double parse_link_rate(const std::string& text, const std::string& flag = "link_rate");
// The rates validate shapes a link to: tc's range (htb or tbf) on a veth pair.
constexpr double kMinLinkRateBitPerS = 8e3;
constexpr double kMaxLinkRateBitPerS = 1e11;
// Throws InputError at `where` unless kMinLinkRateBitPerS <= rate <=
// kMaxLinkRateBitPerS.
void check_link_rate(double rate_bit_per_s, const std::string& where);
// 2e8 -> "200mbit", 1e9 -> "1gbit", 1.5e6 -> "1.5mbit".
std::string format_link_rate(double bit_per_s);

// One metric of one run. error = (predicted - measured) / measured; NaN
// when measured is 0 and predicted is not (0 when both are 0).
struct MetricError {
  std::string metric;  // "time_per_batch_s", "parties.client.bytes_sent_per_batch", ...
  double predicted = 0, measured = 0, error = 0;
};

// The compared metrics, in this order: time_per_batch_s, computation_time_s,
// bandwidth_peak_client_Bps, bandwidth_peak_server_Bps, then per party of
// `predicted` (matched by name in `measured`; a party missing there is
// measured as 0): bytes_sent_per_batch, bytes_received_per_batch,
// bandwidth_avg_send_Bps, bandwidth_avg_recv_Bps, busy_s_per_batch.
std::vector<MetricError> compare_metrics(const Metrics& predicted, const Metrics& measured);

// Quantile q in [0,1] with linear interpolation between order statistics
// (position q*(n-1), as numpy's default). REQUIRES: !values.empty().
double quantile(std::vector<double> values, double q);

// Unit by unit, the median over `profiles` (one or more, with the same
// units) of the forward, backward and update seconds; everything else as
// the first's. What validate predicts on: a slow spell during one of the
// profile's measurements moves it no more than it moves the median of the
// repetitions.
DeviceProfile median_profile(const std::vector<DeviceProfile>& profiles);

// Human table: metric, predicted, measured, error % ("n/a" for NaN).
void print_comparison(std::ostream& os, const std::vector<MetricError>& rows);
// "+12.3%", "-0.4%", "n/a".
std::string format_error_percent(double error);

// How the processes were connected.
struct LinkInfo {
  std::string description;  // "veth 200mbit each way, ..." or "loopback (not shaped: not root)"
  bool shaped = false;
  double rate_bit_per_s = 0;  // the rate the prediction used
  int64_t burst_bytes = 0;    // htb class burst or tbf bucket (shaped only)
  int64_t burst_packet_bytes = 0;  // htb: its whole GSO packets (NetnsLink::burst_packet_bytes)
};

// The machine during one real run (or the profile).
struct RunConditions {
  CpuConditions cpu;
  std::string disturbed;  // "" or what exceeded the limits ("steal 4.1%")
  bool retried = false;   // this run replaced a disturbed one
};
nlohmann::json conditions_json(const RunConditions& c);

// One party's memory in one run: the plan's peak for the party's stages
// (party_peak_memory_bytes) and the most tensor bytes exec's process held
// (exec/README.md "Design": Memory). Deterministic: the first repetition's.
struct MemoryCheck {
  std::string party;
  int64_t predicted_bytes = 0, measured_bytes = 0;
  double error() const;  // (predicted - measured) / measured
};
// The parties of exec's metrics JSON "memory" that report a measurement.
std::vector<MemoryCheck> memory_checks(const nlohmann::json& exec_metrics);
// A line each: "peak memory of server: planned 12.3 MB, exec's tensors
// 11.9 MB (+3.4%)".
void print_memory_checks(std::ostream& os, const std::vector<MemoryCheck>& memory);

// One validated variant.
struct ValidationRun {
  std::string scenario, variant;
  std::string model;  // model name: the summary reports each model family apart
  LinkInfo link;
  std::string profile;  // "measured now (...)" or "cached FILE"
  // Its sum over units of forward + backward seconds per micro-batch: the
  // compute the prediction stands on (the median over the rounds).
  double profile_unit_s = 0;
  int awake_cores = 0;          // CPUs kept from idling during the real run (AwakeCores)
  Metrics predicted, measured;  // measured: the repetition with the median time per batch
  // The predicted time per batch with the compute at both ends of the
  // profile's timing spread (splitsim/costmodel/spread.h; both ends the time when
  // the profile measured none).
  TimeSpread predicted_spread;
  // Per metric: the predicted value against the median of the repetitions.
  std::vector<MetricError> errors;
  // validate --repeat: every measured repetition, in the order they ran,
  // and the machine's conditions during each.
  std::vector<Metrics> repetitions;
  std::vector<RunConditions> conditions;
  double measured_min_time_s = 0, measured_max_time_s = 0;  // over the repetitions
  // What the simulator was told about the platform (validate measured it),
  // and its prediction without it (to show what the platform model adds).
  PlatformSpec platform;
  double predicted_plain_time_per_batch_s = 0;
  // The prediction with the platform model but without its wake cost
  // (time per batch 0: not made).
  Metrics predicted_without_wake;
  // The link probe's model of one transfer (splitsim/costmodel/link_fit.h; invalid
  // when the probe did not run), and the prediction with it in the
  // simulator's link (0: not made).
  LinkFit link_fit;
  // The share of the link's rate a long transfer got in the probe, the
  // predictions' network.bandwidth_factor (1: not probed, or loopback).
  double goodput_fraction = 1;
  // The variant's network.loss_rate, and what one lost segment cost the
  // link probe's long transfer under it (the predictions'
  // network.loss_recovery_s); 0: no loss.
  double loss_rate = 0;
  double loss_recovery_s = 0;
  double predicted_link_time_per_batch_s = 0;
  double predicted_link_peak_client_Bps = 0, predicted_link_peak_server_Bps = 0;
  // For the matrix summary:
  std::string schedule;
  int64_t chunks = 1;
  bool deterministic_bytes = true;  // no codec whose wire size varies by step
  // exec time per batch / max(busiest party's measured compute,
  // wire_lower_bound_s); set for gpipe with chunks >= 4.
  std::optional<double> overlap_ratio;
  // The same ratio from the prediction: when it is far above 1 too, the
  // schedule itself (fill, drain, transfers on the critical path) keeps the
  // run from the bound, not exec.
  std::optional<double> predicted_overlap_ratio;
  std::vector<MemoryCheck> memory;  // per party, from the first repetition
  // What the server's connections used in the first repetition, as exec's
  // metrics JSON names it ("cubic"; "" when exec did not say).
  std::string tcp_congestion_control;
  std::string failure;  // non-empty: the run failed (measured is empty)
};

// Fills, from r->repetitions (non-empty): measured (the repetition with the
// median time per batch; the lower one of an even count), errors (each
// metric's median over the repetitions against the prediction) and the
// min..max of the measured time per batch.
void aggregate_repetitions(ValidationRun* r);
// True iff the predicted time per batch lies within the measured min..max.
bool predicted_inside_spread(const ValidationRun& r);

// The least time the link needs for one batch of `plan` at `rate_bit_per_s`
// each way (a full-duplex link: each direction is its own queue). Without a
// flush it is the busier direction's bytes / rate. GPipe flushes: every
// forward transfer ends before the first backward transfer starts (the loss
// stage begins its backward only after its last forward), so the two phases
// cannot overlap and the bound is the busier direction of the forward
// transfers plus the busier direction of the backward transfers. For a
// U-shape the forward phase sends the big boundary up and the backward phase
// sends it down again, so this is up to twice the plain bound.
double wire_lower_bound_s(const Plan& plan, double rate_bit_per_s);
// measured time per batch / max(busiest party's busy_s_per_batch in
// `measured`, wire_lower_bound_s(plan, rate)).
double overlap_ratio(const Metrics& measured, const Plan& plan, double rate_bit_per_s);
// True iff every party's bytes sent and received per batch are equal.
bool bytes_match(const Metrics& predicted, const Metrics& measured);

// {"schema": "splitsim.validation/1", "scenario", "variant", "link": {...},
//  "profile", "predicted": metrics, "measured": metrics,
//  "errors": {metric: {"predicted", "measured", "error_pct"}}, ...}
nlohmann::json validation_json(const ValidationRun& run);

// Median, p90 and largest of some |errors|; n = how many (0: all 0).
struct ErrorStats {
  int n = 0;
  double median = 0, p90 = 0, max = 0;
};
ErrorStats error_stats(const std::vector<double>& abs_errors);

// Target of the median |error| of time per batch on a lossy link.
constexpr double kTargetLossyLinkMedian = 0.10;

struct MatrixSummary {
  int runs = 0, failed = 0;
  double median_abs_error_time_per_batch = 0;  // over the runs that did not fail
  double p90_abs_error_time_per_batch = 0;
  double max_abs_error_time_per_batch = 0;
  // Over the runs that did not fail: bandwidth_peak_client_Bps and
  // bandwidth_peak_server_Bps; every party's bandwidth_avg_send_Bps and
  // bandwidth_avg_recv_Bps that carried bytes.
  ErrorStats peak_bandwidth, average_bandwidth;
  // The peaks again, predicted with the link probe's model of one transfer
  // (predicted_link_peak_*_Bps).
  ErrorStats peak_bandwidth_link;
  // Time per batch over the runs on a lossy link (loss_rate > 0).
  ErrorStats lossy_link;
  int inside_spread = 0;  // predictions within the measured min..max
  // The same quantiles for the prediction without the platform model (0
  // when no run recorded one).
  double median_abs_error_plain = 0, p90_abs_error_plain = 0;
  // And for the prediction with the link probe's model of one transfer.
  double median_abs_error_link = 0, p90_abs_error_link = 0;
  // Per party: median |error| of busy_s_per_batch over the runs.
  std::vector<std::pair<std::string, double>> median_abs_error_busy;
  // The same without the wake cost (predicted_without_wake), and the
  // median |error| of time per batch without it (0: no run made one).
  std::vector<std::pair<std::string, double>> median_abs_error_busy_without_wake;
  double median_abs_error_without_wake = 0, p90_abs_error_without_wake = 0;
  // Per model family: runs, median and p90 |error| of time per batch.
  struct ByModel {
    std::string model;
    int runs = 0;
    double median = 0, p90 = 0;
  };
  std::vector<ByModel> by_model;
  // The machine: which one (summarise() reads the machine it runs on, the
  // one that measured), repetitions measured, disturbed ones kept after
  // retries, retried ones, and the largest steal and foreign CPU fractions
  // seen.
  MachineDescription machine;
  int repetitions = 0, disturbed = 0, retried = 0;
  double max_steal_fraction = 0, max_foreign_cpu_fraction = 0;
  int bytes_checked = 0, bytes_exact = 0;  // deterministic-codec runs; equal bytes
  std::vector<double> overlap_ratios;      // gpipe, chunks >= 4
  double max_overlap_ratio = 0;
  std::vector<double> predicted_overlap_ratios;  // the same runs, simulated
  // How close exec comes to what the schedule allows: the largest
  // overlap_ratio / predicted_overlap_ratio (1: exec overlaps exactly as the
  // simulator does).
  double max_overlap_vs_predicted = 0;
  struct ByChunks {
    int64_t chunks = 0;
    int runs = 0;
    double max_ratio = 0, max_predicted_ratio = 0;
  };
  std::vector<ByChunks> overlap_by_chunks;  // ascending chunks
  // Per party and run: |error| of the planned peak memory against exec's
  // tensor peak; how many lie within kTargetMemory.
  std::vector<double> memory_abs_errors;
  int memory_within_target = 0;
};
MatrixSummary summarise(const std::vector<ValidationRun>& runs);
// {"schema": "splitsim.validation_matrix/1", "runs": [validation_json...], "summary": {...}}
nlohmann::json matrix_json(const std::vector<ValidationRun>& runs);
// One row per run, then the summary lines, each with its target (time per
// batch, busy time, peak and average bandwidth, bytes, memory, overlap).
void print_matrix(std::ostream& os, const std::vector<ValidationRun>& runs);

}  // namespace splitsim
