#pragma once
// Validator: what `splitsim validate` does for a set of variants, like a
// benchmark harness (exec/validate/README.md):
//  1. prepare each variant: this machine's measured profile (alone, and
//     beside the other party's load to measure the co-compute slowdown),
//     the link probe's host work per byte at the variant's rate, the plan
//     and the prediction (with and without that platform model);
//  2. measure: `repeat` rounds, each running every variant once in turn,
//     so a slow spell of the machine hits all of them; each run's CPU
//     steal and foreign CPU time recorded, a disturbed run retried;
//     Each profile (alone) is measured again before every round after the
//     first and after the last, so that the prediction stands on the
//     machine's speed over the rounds rather than at their start;
//  3. aggregate: each profile's median over its measurements, the predictions
//     again on those medians, the median repetition, the spread, the errors,
//     and the profiles' drift from the first measurement to the last.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "splitsim/costmodel/calibration.h"
#include "splitsim/costmodel/workspace.h"
#include "splitsim/validate/clients_validation.h"
#include "splitsim/validate/comparison.h"
#include "splitsim/validate/exec_pair.h"
#include "splitsim/validate/netns_link.h"
#include "splitsim/validate/profile_cache.h"

namespace splitsim {

struct ValidatorOptions {
  std::string exec_bin;       // runs `BIN exec ...` and `BIN link-probe ...`
  std::string profile_cache;  // directory
  int threads = 1;
  int64_t iterations = 0;  // 0: the scenario's
  double timeout_s = 300;
  int repeat = 3;
  int retries = 1;  // re-runs of a disturbed repetition
  bool reprofile = false;
  bool let_cores_idle = false;
  bool keep_going = false;         // a failed run is recorded, the others go on
  bool platform_model = true;      // probe and co-compute slowdown; false: none
  double link_rate_bit_per_s = 0;  // > 0: every variant at this rate, else its own
  Shaper shaper = Shaper::kHtb;    // how the namespaces' veth is shaped
  std::string congestion_control = NetnsLink::kCongestionControl;  // TCP's, in both
  Calibration calibration;         // applied to every prediction (identity: none)
};

// What a variant's profile is measured at: the micro-batch size and the
// micro-batches the schedule keeps in flight at stage 0.
struct ProfilePoint {
  int64_t microbatch = 1, in_flight = 1;
};
ProfilePoint validation_profile_point(const Scenario& s);

// One variant to validate: where it comes from.
struct ValidationItem {
  std::string scenario_file;
  Workspace* workspace = nullptr;
  const ScenarioVariant* variant = nullptr;
  bool single = false;  // the file's only variant: exec gets no --variant
};

class Validator {
 public:
  using Log = std::function<void(const std::string&)>;
  Validator(const ValidatorOptions& options, Log log);
  ~Validator();

  // Runs everything above; returns one ValidationRun per item, in order.
  std::vector<ValidationRun> run(const std::vector<ValidationItem>& items);
  // The largest drift of a profile from its first measurement to its last
  // ("" when none was measured again).
  const std::string& drift() const { return drift_; }

 private:
  struct Prepared;
  void open_link(double rate);
  void set_rate(double rate, LinkInfo* info);
  // The link's packet loss (NetnsLink::set_loss); InputError for a loss
  // without namespaces (loopback).
  void set_loss(double loss);
  // The real runs over unshaped loopback, `reason` said in one line.
  void use_loopback(double rate, const std::string& reason);
  double rate_of(const ValidationItem& item) const;
  // What the link probe measured at `rate`: the platform's host work and
  // the link's single-transfer model (run once per rate).
  struct ProbedLink {
    PlatformSpec platform;
    LinkFit link;
    // Of the rate, what a long transfer gets (network.bandwidth_factor):
    // the probe's goodput, the slower way, at most 1; 1 on loopback.
    double goodput_fraction = 1;
    double pooled_goodput_Bps = 0;  // both ways: bytes over their mean time
  };
  const ProbedLink& probe_at(double rate);
  // The link at `rate` with `loss`, measured by the link probe's long
  // transfer under that loss (run once per rate and loss): what one lost
  // segment costs (network.loss_recovery_s), against probe_at(rate)'s
  // goodput, and the compute a byte costs the hosts there (segmentation
  // offload off, retransmissions: the loss-free probe's per-byte figures
  // do not hold).
  struct LossyLink {
    double recovery_s = 0;
    double cpu_s_per_byte_sent = 0;
    double cpu_s_per_byte_received = 0;
  };
  const LossyLink& lossy_link_at(double rate, double loss);
  const CachedProfile& profile(const ValidationItem& item, bool loaded);
  void add_codec_timings(const Plan& plan, DeviceProfile* device);
  void prepare(const ValidationItem& item, Prepared* p);
  void measure(const ValidationItem& item, Prepared* p);
  // Measures every profile (alone) again; `when` names the moment in the log.
  void resample_profiles(const std::string& when);
  // Each profile becomes the median of its measurements, unit by unit;
  // sets drift_.
  void median_profiles();
  std::vector<int> companion_cpus() const;
  std::vector<int> all_cpus() const;  // both parties'
  const std::vector<WakePoint>& wake_cost(const ValidationItem& item);

  ValidatorOptions options_;
  Log log_;
  std::unique_ptr<NetnsLink> link_;
  LinkInfo link_info_;
  ExecEndpoints endpoints_;
  // (model options, micro-batch, in flight, loaded) -> profile
  using ProfileKey = std::tuple<std::string, int64_t, int64_t, bool>;
  std::map<ProfileKey, CachedProfile> profiles_;
  // During run(), for each profile alone: the variant that first asked for
  // it (an element of run()'s items), and its measurements since.
  struct Resampled {
    const ValidationItem* item = nullptr;
    std::vector<DeviceProfile> again;
  };
  std::map<ProfileKey, Resampled> resampled_;
  std::map<double, ProbedLink> probes_;      // by rate
  std::map<std::pair<double, double>, LossyLink> lossy_links_;  // by rate and loss
  std::map<std::string, double> slowdowns_;  // co-compute slowdown by model options
  std::map<std::string, std::vector<WakePoint>> wake_costs_;  // by model options
  // (codec JSON, per-sample shape, micro-batch) -> measured encode/decode
  std::map<std::tuple<std::string, std::vector<int64_t>, int64_t>, CodecTiming> codecs_;
  std::string drift_;
};

// Validates variants with several clients (clients_validation.h): the
// switch, a process per client, `options.repeat` interleaved rounds.
// `slowdowns`: client group -> exec --compute-slowdown factor (1..1000).
// Throws InputError for a variant with one client, a group the scenario
// lacks, a client rate drawn from a distribution; std::runtime_error
// without root or iproute2, or for a failed run (unless keep_going).
std::vector<ClientsValidationRun> validate_clients(const std::vector<ValidationItem>& items,
                                                   const ValidatorOptions& options,
                                                   const std::map<std::string, double>& slowdowns,
                                                   const Validator::Log& log);

}  // namespace splitsim
