#include "splitsim/validate/validator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <thread>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/format.h"
#include "splitsim/costmodel/planner.h"
#include "splitsim/exec/cpu_accounting.h"
#include "splitsim/exec/link_probe.h"
#include "splitsim/exec/tcp_sockets.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "splitsim/validate/awake_cores.h"

namespace splitsim {

// What a variant needs across its repetitions.
struct Validator::Prepared {
  ValidationRun run;
  Plan plan;
  double rate = 0;
  int64_t iterations = 0;
  Metrics predicted_plain;         // the same plan without the platform model
  Metrics predicted_without_wake;  // with it but without its wake cost
  Metrics predicted_link;          // with the link probe's model of one transfer
};

namespace {

double simulate_time_per_batch(const Plan& plan) {
  return compute_metrics(simulate(plan), plan, plan.warmup).time_per_batch_s;
}

std::string percent(double fraction) { return format_signed_percent(fraction, 1); }

ProfilePoint profile_point(const Scenario& s) { return validation_profile_point(s); }

}  // namespace

ProfilePoint validation_profile_point(const Scenario& s) {
  return {(s.batch_size + s.chunks - 1) / s.chunks,
          stashed_microbatches(s.schedule, 0, static_cast<int>(s.partition.size()), s.chunks)};
}

Validator::Validator(const ValidatorOptions& options, Log log)
    : options_(options), log_(std::move(log)) {
  const int cpus = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 0; i < options.threads; ++i) {
    endpoints_.server_cpus.push_back(i % cpus);
    endpoints_.client_cpus.push_back((options.threads + i) % cpus);
  }
  if (cpus < 2 * options.threads)
    log_("warning: " + std::to_string(cpus) + " CPU(s) for 2 x " + std::to_string(options.threads) +
         " thread(s): server and client share cores");
}

Validator::~Validator() = default;

const CachedProfile& Validator::profile(const ValidationItem& item, bool loaded) {
  const Scenario& s = item.variant->scenario;
  const auto [microbatch, in_flight] = profile_point(s);
  const auto key =
      std::make_tuple(item.variant->json.at("model").dump(), microbatch, in_flight, loaded);
  // Measured again over this run's rounds (resample_profiles).
  if (!loaded && profiles_.count(key) && !resampled_.count(key)) resampled_[key].item = &item;
  auto it = profiles_.find(key);
  if (it != profiles_.end()) return it->second;
  const CpuSnapshot a = take_cpu_snapshot();
  CachedProfile p = profile_for_validation(
      s.model, item.workspace->model(*item.variant), microbatch, in_flight, options_.threads,
      s.optimizer, options_.profile_cache, options_.reprofile, endpoints_.server_cpus.front(),
      loaded ? companion_cpus() : std::vector<int>{}, log_);
  const CpuConditions c = cpu_conditions(a, take_cpu_snapshot());
  if (p.origin.rfind("measured", 0) == 0) {
    // The conditions of a fresh measurement go into its origin, and so into
    // the report; a disturbed one is flagged there and in the log.
    char text[128];
    std::snprintf(text, sizeof text, " (steal %.1f%%, other processes %.1f%% of the CPUs)",
                  100 * c.steal_fraction, 100 * c.foreign_cpu_fraction);
    p.origin += text;
    const std::string bad = disturbance(c);
    if (!bad.empty()) {
      p.origin += " DISTURBED";
      log_("WARNING: the profile was measured while the machine was disturbed (" + bad + ")");
    }
  }
  log_("profile (" + std::string(loaded ? "beside the other party's load" : "alone") +
       "): " + p.origin);
  const CachedProfile& kept = profiles_.emplace(key, std::move(p)).first->second;
  if (!loaded) resampled_[key].item = &item;
  return kept;
}

// Once per model (at its first variant's micro-batch) on the server's first
// CPU, with the run's cores kept awake as during exec's runs.
const std::vector<WakePoint>& Validator::wake_cost(const ValidationItem& item) {
  const std::string key = item.variant->json.at("model").dump();
  auto it = wake_costs_.find(key);
  if (it != wake_costs_.end()) return it->second;
  std::optional<AwakeCores> awake;
  if (!options_.let_cores_idle) awake.emplace(all_cpus());
  const Scenario& s = item.variant->scenario;
  return wake_costs_
      .emplace(key, measure_wake_cost_pinned(s.model, profile_point(s).microbatch, options_.threads,
                                             endpoints_.server_cpus.front(), log_))
      .first->second;
}

// Encode and decode of every codec at the plan's boundaries, in each
// direction and at each micro-batch size, measured on this machine (once per
// run of validate), in place of the codecs' formulas.
void Validator::add_codec_timings(const Plan& plan, DeviceProfile* device) {
  int measured = 0;
  for (const PlanBoundary& b : plan.boundaries) {
    const std::vector<int64_t> shape(b.activation_shape.begin() + 1, b.activation_shape.end());
    const std::pair<const CodecSpec*, std::vector<int64_t>> directions[] = {
        {&b.forward.codec, shape}, {&b.backward.codec, b.backward.carried_shape}};
    for (const auto& [codec, at] : directions)
      for (const int64_t batch : plan.microbatch_sizes) {
        const auto key = std::make_tuple(codec_to_json(*codec).dump(), at, batch);
        auto it = codecs_.find(key);
        if (it == codecs_.end()) {
          it = codecs_
                   .emplace(key, time_codec_pinned(*codec, at, batch, options_.threads,
                                                   endpoints_.server_cpus.front()))
                   .first;
          log_("codec " + describe(*codec) + " at micro-batch " + std::to_string(batch) +
               ": encode " + format_seconds(it->second.encode_s) + ", decode " +
               format_seconds(it->second.decode_s));
          ++measured;
        }
        if (!device->codec_timing_for(std::get<0>(key), at, batch))
          device->codec_timings.push_back(it->second);
      }
  }
  if (measured > 0)
    log_("codecs: " + std::to_string(measured) + " encode/decode timing(s) measured");
}

void Validator::prepare(const ValidationItem& item, Prepared* p) {
  const ScenarioVariant& v = *item.variant;
  Scenario s = v.scenario;
  ValidationRun& r = p->run;
  r.scenario = s.name;
  r.variant = v.label;
  r.model = s.model.name;
  r.schedule = schedule_name(s.schedule);
  r.chunks = s.chunks;
  for (const auto& b : s.compression)
    for (const CodecSpec* c : {&b.forward, &b.backward})
      if (std::string(method_name(c->method)) == "decaying_linear") r.deterministic_bytes = false;
  p->rate = rate_of(item);

  // This machine's profile, alone; beside the other party's load when the
  // schedule lets both compute at once, for the co-compute slowdown.
  const CachedProfile& alone = profile(item, false);
  r.profile = alone.origin;
  r.profile_unit_s = unit_seconds(alone.device);
  PlatformSpec platform;
  if (options_.platform_model) {
    const ProbedLink& probed = probe_at(p->rate);
    platform = probed.platform;
    r.link_fit = probed.link;
    r.goodput_fraction = probed.goodput_fraction;
    platform.shared_machine = true;
    if (profile_point(s).in_flight > 1 && !companion_cpus().empty()) {
      // Once per model, at the first variant that keeps micro-batches in
      // flight: the slowdown is the machine's and the model's, not the
      // variant's.
      const std::string model_key = v.json.at("model").dump();
      auto it = slowdowns_.find(model_key);
      if (it == slowdowns_.end()) {
        const CachedProfile& loaded = profile(item, true);
        const double base = unit_seconds(alone.device);
        const double slowdown =
            base > 0 ? std::clamp(unit_seconds(loaded.device) / base, 1.0, 100.0) : 1.0;
        log_("co-compute slowdown of " + s.model.name + ": " + percent(slowdown - 1) +
             " (alone: " + alone.origin + "; beside the load: " + loaded.origin + ")");
        it = slowdowns_.emplace(model_key, slowdown).first;
      }
      platform.co_compute_slowdown = it->second;
      r.profile += "; co-compute slowdown " + percent(platform.co_compute_slowdown - 1);
    }
    platform.wake_cost = wake_cost(item);
  }
  r.platform = platform;

  // Every party on that profile, the link's rate, no extra latency; a long
  // transfer gets the share of the rate the probe measured (the packets'
  // headers, exec/validate/README.md "The link").
  s.network = NetworkSpec{};
  s.network.bandwidth_bit_per_s = p->rate;
  s.network.bandwidth_factor = r.goodput_fraction;
  if (v.scenario.network.loss_rate > 0 && !link_)
    throw InputError("$.network.loss_rate",
                     "a lossy link is shaped in network namespaces: run validate as root");
  // A lossy link (the variant's network.loss_rate, shaped by measure()):
  // what a lost segment costs and the hosts' compute per byte, measured by
  // the link probe under that loss, and TCP's rate under loss over the
  // probe's round trip (twice its latency) as the bound.
  s.network.loss_rate = v.scenario.network.loss_rate;
  if (s.network.loss_rate > 0) {
    if (!r.link_fit.valid() || !(r.link_fit.latency_s > 0))
      throw InputError("$.network.loss_rate",
                       "validate predicts a lossy link from the link probe's latency: run it "
                       "with the probe (not --no-platform-model) over a shaped link");
    s.network.latency_s = r.link_fit.latency_s;
    r.loss_rate = s.network.loss_rate;
    const LossyLink& lossy = lossy_link_at(p->rate, s.network.loss_rate);
    s.network.loss_recovery_s = r.loss_recovery_s = lossy.recovery_s;
    platform.cpu_s_per_byte_sent = lossy.cpu_s_per_byte_sent;
    platform.cpu_s_per_byte_received = lossy.cpu_s_per_byte_received;
    r.platform = platform;
  }
  s.platform = platform;
  if (options_.iterations > 0) s.iterations = options_.iterations;
  if (s.warmup >= s.iterations)
    throw InputError("iterations", "must be more than the scenario's warm-up (" +
                                         std::to_string(s.warmup) + " batches)");
  p->iterations = s.iterations;
  // The plan's boundaries name the codecs to time; then plan again with them.
  DeviceProfile device = alone.device;
  std::map<std::string, DeviceProfile> devices;
  for (const auto& [party, name] : s.devices) devices.emplace(party, device);
  add_codec_timings(make_plan(s, item.workspace->model(v), devices, v.label), &device);
  for (auto& [party, d] : devices) d = device;
  s.command_calibration = std::make_shared<const Calibration>(options_.calibration);
  p->plan = make_plan(s, item.workspace->model(v), devices, v.label);
  log_("simulating \"" + v.label + "\" at " + format_link_rate(p->rate));
  r.predicted = compute_metrics(simulate(p->plan), p->plan, p->plan.warmup);
  r.predicted_spread = {r.predicted.time_per_batch_s, r.predicted.time_per_batch_s};
  if (const auto spreads = party_spreads(devices); largest_spread(spreads) > 0)
    r.predicted_spread = {simulate_time_per_batch(plan_at_spread(p->plan, spreads, -1)),
                          simulate_time_per_batch(plan_at_spread(p->plan, spreads, +1))};
  if (!p->plan.platform.wake_cost.empty()) {
    Plan awake = p->plan;
    awake.platform.wake_cost.clear();
    p->predicted_without_wake = compute_metrics(simulate(awake), awake, awake.warmup);
  }
  Plan plain = p->plan;
  plain.platform = PlatformSpec{};
  p->predicted_plain = compute_metrics(simulate(plain), plain, plain.warmup);
  // With the link the probe measured: its fixed cost per message, its
  // bucket and the bucket's peak rate (exec/validate/README.md "One
  // transfer").
  if (r.link_fit.valid()) {
    Plan measured_link = p->plan;
    apply_link_fit(r.link_fit, &measured_link.network);
    p->predicted_link = compute_metrics(simulate(measured_link), measured_link, measured_link.warmup);
  }
  if (p->plan.schedule == Schedule::kGpipe && p->plan.chunks() >= 4)
    r.predicted_overlap_ratio = overlap_ratio(r.predicted, p->plan, p->rate);
}

void Validator::measure(const ValidationItem& item, Prepared* p) {
  ValidationRun& r = p->run;
  if (!r.failure.empty()) return;
  set_loss(item.variant->scenario.network.loss_rate);
  set_rate(p->rate, &r.link);
  ExecPairOptions o;
  o.exec_bin = options_.exec_bin;
  o.scenario = item.scenario_file;
  o.variant = item.single ? "" : item.variant->label;
  o.threads = options_.threads;
  o.iterations = p->iterations;
  o.timeout_s = options_.timeout_s;
  for (int attempt = 0;; ++attempt) {
    RunConditions cond;
    cond.retried = attempt > 0;
    nlohmann::json measured;
    {
      std::optional<AwakeCores> awake;
      if (!options_.let_cores_idle) r.awake_cores = awake.emplace(all_cpus()).active();
      const CpuSnapshot a = take_cpu_snapshot();
      try {
        measured = run_exec_pair(o, endpoints_, log_);
      } catch (const std::exception& e) {
        // The whole text (both processes' stderr tails) in the log: the
        // command's error line shows its first line only.
        r.failure = e.what();
        log_("FAILED \"" + r.variant + "\": " + r.failure);
        if (!options_.keep_going) throw;
        return;
      }
      cond.cpu = cpu_conditions(a, take_cpu_snapshot());
    }
    cond.disturbed = disturbance(cond.cpu);
    if (!cond.disturbed.empty() && attempt < options_.retries) {
      log_("disturbed (" + cond.disturbed + "): running \"" + r.variant + "\" again");
      continue;
    }
    Metrics m;
    from_json(measured, m);
    if (r.repetitions.empty()) r.memory = memory_checks(measured);
    if (measured.contains("tcp_congestion_control"))
      r.tcp_congestion_control = measured["tcp_congestion_control"].get<std::string>();
    r.repetitions.push_back(m);
    r.conditions.push_back(cond);
    return;
  }
}

void Validator::resample_profiles(const std::string& when) {
  for (auto& [key, r] : resampled_) {
    const Scenario& s = r.item->variant->scenario;
    const auto [microbatch, in_flight] = profile_point(s);
    r.again.push_back(profile_for_validation(s.model, r.item->workspace->model(*r.item->variant),
                                             microbatch, in_flight, options_.threads, s.optimizer,
                                             options_.profile_cache + "/again", true,
                                             endpoints_.server_cpus.front(), {},
                                             [](const std::string&) {})
                          .device);
    const double first = unit_seconds(profiles_.at(key).device);
    log_("profile of " + s.model.name + " at micro-batch " + std::to_string(microbatch) + " " +
         when + ": " + (first > 0 ? percent(unit_seconds(r.again.back()) / first - 1) : "-") +
         " against the first");
  }
}

void Validator::median_profiles() {
  double worst = 0;
  for (auto& [key, r] : resampled_) {
    if (r.again.empty()) continue;
    CachedProfile& p = profiles_.at(key);
    const double first = unit_seconds(p.device);
    std::vector<DeviceProfile> all = {p.device};
    all.insert(all.end(), r.again.begin(), r.again.end());
    std::vector<double> sums;
    for (const DeviceProfile& d : all) sums.push_back(unit_seconds(d));
    p.device = median_profile(all);
    char text[160];
    std::snprintf(text, sizeof text,
                  "; the median of %d measurements over the rounds (sum of units %.4f..%.4f s)",
                  static_cast<int>(all.size()), *std::min_element(sums.begin(), sums.end()),
                  *std::max_element(sums.begin(), sums.end()));
    p.origin += text;
    const Scenario& s = r.item->variant->scenario;
    const double last = sums.back();
    if (first > 0 && std::abs(last / first - 1) >= std::abs(worst)) {
      worst = last / first - 1;
      drift_ = s.model.name + " micro-batch " + std::to_string(std::get<1>(key)) +
               ": sum of unit forward+backward " + percent(worst) + " at the end (" +
               std::to_string(last) + " s against " + std::to_string(first) + " s)";
    }
  }
  if (!drift_.empty()) log_("largest profile drift: " + drift_);
}

std::vector<ValidationRun> Validator::run(const std::vector<ValidationItem>& items) {
  if (items.empty()) return {};
  // One server process and one client process over one shaped link.
  for (const ValidationItem& item : items)
    if (item.variant->scenario.clients > 1)
      throw InputError("$.clients",
                       "the Validator runs one client process on one link; several clients are "
                       "validate_clients' (variant \"" +
                           item.variant->label + "\")");
  open_link(rate_of(items.front()));
  std::vector<Prepared> prepared(items.size());
  for (size_t i = 0; i < items.size(); ++i) prepare(items[i], &prepared[i]);
  const int total = options_.repeat * static_cast<int>(items.size());
  int done = 0;
  for (int rep = 0; rep < options_.repeat; ++rep) {
    if (rep > 0) resample_profiles("before round " + std::to_string(rep + 1));
    for (size_t i = 0; i < items.size(); ++i) {
      ++done;
      log_("[" + std::to_string(done) + "/" + std::to_string(total) + "] repetition " +
           std::to_string(rep + 1) + " of \"" + items[i].variant->label + "\"");
      measure(items[i], &prepared[i]);
    }
  }
  resample_profiles("after the last round");
  median_profiles();
  // The predictions again, on the profiles' medians.
  for (size_t i = 0; i < items.size(); ++i)
    if (prepared[i].run.failure.empty()) prepare(items[i], &prepared[i]);
  resampled_.clear();  // its items are this call's
  std::vector<ValidationRun> runs;
  for (Prepared& p : prepared) {
    ValidationRun& r = p.run;
    if (r.failure.empty() && !r.repetitions.empty()) {
      aggregate_repetitions(&r);
      if (p.plan.schedule == Schedule::kGpipe && p.plan.chunks() >= 4)
        r.overlap_ratio = overlap_ratio(r.measured, p.plan, p.rate);
      r.predicted_plain_time_per_batch_s = p.predicted_plain.time_per_batch_s;
      r.predicted_without_wake = p.predicted_without_wake;
      r.predicted_link_time_per_batch_s = p.predicted_link.time_per_batch_s;
      r.predicted_link_peak_client_Bps = p.predicted_link.bandwidth_peak_client_Bps;
      r.predicted_link_peak_server_Bps = p.predicted_link.bandwidth_peak_server_Bps;
    }
    runs.push_back(std::move(r));
  }
  return runs;
}

}  // namespace splitsim
