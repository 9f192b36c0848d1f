// `splitsim validate` of scenarios with several clients: the prediction on
// this machine's profile (a group's slowed by its factor), the real runs
// behind a NetnsSwitch, repeated and interleaved (clients_validation.h).
#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <thread>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/format.h"
#include "splitsim/costmodel/planner.h"
#include "splitsim/exec/cpu_accounting.h"
#include "splitsim/sim/simulator.h"
#include "splitsim/validate/awake_cores.h"
#include "splitsim/validate/clients_validation.h"
#include "splitsim/validate/netns_switch.h"
#include "splitsim/validate/validator.h"

namespace splitsim {
namespace {

// Each client process's port rate and compute slowdown, in client index
// order (the groups in order), and the server port's rate.
struct ClientPorts {
  std::vector<double> rates, slowdowns;
  double server_rate = 0;
};

ClientPorts client_ports(const Scenario& s, const std::map<std::string, double>& slowdowns) {
  ClientPorts p;
  const double fallback = s.network.bandwidth_bit_per_s;
  auto slowdown = [&](const std::string& group) {
    const auto it = slowdowns.find(group);
    return it == slowdowns.end() ? 1.0 : it->second;
  };
  if (s.client_groups.empty()) {
    p.rates.assign(s.clients, fallback);
    p.slowdowns.assign(s.clients, 1.0);
  }
  for (size_t i = 0; i < s.client_groups.size(); ++i) {
    const ClientGroupSpec& g = s.client_groups[i];
    const DrawnValue& rate = g.bandwidth_bit_per_s;
    const std::string where = "$.clients[" + std::to_string(i) + "].bandwidth_bit_per_s";
    if (g.has_bandwidth && !rate.distribution.empty())
      throw InputError(where, "validate shapes each client's port to a given rate; group \"" +
                                  g.name + "\" draws its rates from a " + rate.distribution +
                                  " distribution");
    for (int64_t c = 0; c < g.count; ++c) {
      const double r = !g.has_bandwidth      ? fallback
                       : rate.values.empty() ? rate.value
                                             : rate.values.at(c);
      check_link_rate(r, where);
      p.rates.push_back(r);
      p.slowdowns.push_back(slowdown(g.name));
    }
  }
  // Without a server link the server's port never limits: the clients' sum.
  p.server_rate =
      s.network.server_bandwidth_bit_per_s > 0
          ? s.network.server_bandwidth_bit_per_s
          : std::min(std::accumulate(p.rates.begin(), p.rates.end(), 0.0), kMaxLinkRateBitPerS);
  check_link_rate(p.server_rate, "$.network.server_bandwidth_bit_per_s");
  return p;
}

void check_slowdowns(const std::vector<ValidationItem>& items,
                     const std::map<std::string, double>& slowdowns) {
  for (const ValidationItem& item : items) {
    const Scenario& s = item.variant->scenario;
    if (s.clients < 2)
      throw InputError("$.clients", "variant \"" + item.variant->label +
                                        "\" has one client; validate a scenario's variants "
                                        "with one client and with several apart");
    if (s.network.loss_rate > 0)
      throw InputError("$.network.loss_rate",
                       "validate shapes a lossy link between one client and the server; variant "
                       "\"" +
                           item.variant->label + "\" has several clients");
    std::string names;
    for (const ClientGroupSpec& g : s.client_groups) names += (names.empty() ? "" : ", ") + g.name;
    for (const auto& [group, factor] : slowdowns)
      if (std::none_of(s.client_groups.begin(), s.client_groups.end(),
                       [&](const ClientGroupSpec& g) { return g.name == group; }))
        throw InputError(
            "client_slowdown",
            "no client group \"" + group + "\" in variant \"" + item.variant->label +
                "\" (its groups: " + (names.empty() ? "none, its clients are alike" : names) + ")");
  }
}

class ClientsValidator {
 public:
  ClientsValidator(const ValidatorOptions& o, const std::map<std::string, double>& slowdowns,
                   Validator::Log log)
      : o_(o), slowdowns_(slowdowns), log_(std::move(log)) {}

  std::vector<ClientsValidationRun> run(const std::vector<ValidationItem>& items) {
    std::vector<ClientsValidationRun> runs(items.size());
    for (size_t i = 0; i < items.size(); ++i) predict(items[i], &runs[i]);
    const int total = o_.repeat * static_cast<int>(items.size());
    int done = 0;
    for (int rep = 0; rep < o_.repeat; ++rep)
      for (size_t i = 0; i < items.size(); ++i) {
        log_("[" + std::to_string(++done) + "/" + std::to_string(total) + "] repetition " +
             std::to_string(rep + 1) + " of \"" + items[i].variant->label + "\"");
        measure(items[i], &runs[i]);
      }
    return runs;
  }

 private:
  // This machine's profile (cached like validate's), every party on it, a
  // slowed group's clients on it slowed by the factor; the link's rates,
  // no latency (the veths add ~0), no platform model.
  void predict(const ValidationItem& item, ClientsValidationRun* r) {
    const ScenarioVariant& v = *item.variant;
    Scenario s = v.scenario;
    r->scenario = s.name;
    r->variant = v.label;
    const ProfilePoint at = validation_profile_point(s);
    const CachedProfile here = profile_for_validation(
        s.model, item.workspace->model(v), at.microbatch, at.in_flight, o_.threads, s.optimizer,
        o_.profile_cache, o_.reprofile, /*cpu=*/0, {}, log_);
    r->profile = here.origin;
    std::map<std::string, DeviceProfile> devices;
    for (const auto& [party, name] : s.devices) devices.emplace(party, here.device);
    for (ClientGroupSpec& g : s.client_groups) {
      g.has_latency = false;
      const auto it = slowdowns_.find(g.name);
      g.device = "";
      if (it == slowdowns_.end() || it->second == 1) continue;
      r->slowdowns[g.name] = it->second;
      DeviceProfile slowed = slowed_profile(here.device, it->second);
      slowed.name = "this machine x " + format_si_digits(it->second, 3);
      g.device = slowed.name;
      devices[client_group_device_key(g)] = slowed;
    }
    s.network.latency_s = 0;
    s.network.server_latency_s = 0;
    s.platform = PlatformSpec{};
    if (o_.iterations > 0) s.iterations = o_.iterations;
    if (s.warmup >= s.iterations)
      throw InputError("iterations", "must be more than the scenario's warm-up (" +
                                         std::to_string(s.warmup) + " batches)");
    s.command_calibration = std::make_shared<const Calibration>(o_.calibration);
    const Plan plan = make_plan(s, item.workspace->model(v), devices, v.label);
    log_("simulating \"" + v.label + "\" with " + std::to_string(s.clients) + " clients");
    r->predicted = compute_metrics(simulate(plan), plan, plan.warmup);
    // A party that serves the clients: its peak with the stash simulated
    // over all of them (exec's own figure is one client's).
    const std::string& client = plan.stages.front().party;
    std::map<std::string, std::vector<int>> served;
    for (size_t k = 0; k < plan.stages.size(); ++k)
      if (plan.stages[k].party != client)
        served[plan.stages[k].party].push_back(static_cast<int>(k));
    const int64_t copies = plan.training == "splitfed_v1" ? s.clients : 1;
    for (const auto& [party, stages] : served)
      served_memory_[r][party] =
          served_party_peak_memory_bytes(plan, r->predicted, stages, s.clients, copies);
    warn_if_oversubscribed(*r);
  }

  // The CPUs the predicted run keeps busy: each serving party's busy share
  // of a round, each client's of its own batches divided by its slowdown
  // (it sleeps the rest). Above this machine's CPUs the processes wait for
  // cores, which the prediction does not model.
  void warn_if_oversubscribed(const ClientsValidationRun& r) const {
    const Metrics& m = r.predicted;
    double demand = 0;
    for (const PartyMetrics& p : m.parties)
      if (!p.client) demand += p.utilisation;
    for (const ClientGroupMetrics& g : m.client_groups) {
      const auto it = r.slowdowns.find(g.name);
      const double factor = it == r.slowdowns.end() ? 1.0 : it->second;
      if (g.time_per_batch.median_s > 0)
        demand += g.clients * g.busy_s_per_batch / g.time_per_batch.median_s / factor;
    }
    const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    if (demand > cpus)
      log_("warning: \"" + r.variant + "\": the predicted run keeps " +
           format_si_digits(demand, 3) + " CPUs busy on this machine's " + std::to_string(cpus) +
           ": its processes will wait for cores, which the prediction does not model "
           "(--client-slowdown lightens a group)");
  }

  // The switch for these client ports (built again when they change).
  NetnsSwitch& switch_for(const ClientPorts& ports) {
    if (!switch_ || switch_rates_ != ports.rates) {
      switch_.reset();
      switch_ = std::make_unique<NetnsSwitch>(ports.server_rate, ports.rates, o_.shaper,
                                              o_.congestion_control);
      switch_rates_ = ports.rates;
      log_("link: " + switch_->description());
    } else if (switch_->server_rate_bit_per_s() != ports.server_rate) {
      switch_->set_server_rate(ports.server_rate);
    }
    return *switch_;
  }

  void measure(const ValidationItem& item, ClientsValidationRun* r) {
    if (!r->failure.empty()) return;
    const ClientPorts ports = client_ports(item.variant->scenario, slowdowns_);
    NetnsSwitch& sw = switch_for(ports);
    r->link = sw.description();
    ExecPairOptions o;
    o.exec_bin = o_.exec_bin;
    o.scenario = item.scenario_file;
    o.variant = item.single ? "" : item.variant->label;
    o.threads = o_.threads;
    o.iterations = o_.iterations;
    o.timeout_s = o_.timeout_s;
    for (int attempt = 0;; ++attempt) {
      ExecEndpoints e;
      e.server_netns = sw.server_netns();
      e.server_address = sw.server_address();
      e.port = 29600 + (runs_++ % 300);  // a fresh port: no wait for the last run's
      e.congestion_control = sw.congestion_control();
      std::vector<std::vector<std::string>> clients;
      for (size_t c = 0; c < sw.clients(); ++c) {
        e.client_netns = sw.client_netns(c);
        clients.push_back(exec_client_argv(o, e));
        clients.back().insert(clients.back().end(), {"--client-index", std::to_string(c)});
        if (ports.slowdowns[c] != 1)
          clients.back().insert(clients.back().end(),
                                {"--compute-slowdown", std::to_string(ports.slowdowns[c])});
      }
      RunConditions cond;
      cond.retried = attempt > 0;
      nlohmann::json measured;
      {
        std::optional<AwakeCores> awake;
        if (!o_.let_cores_idle) awake.emplace(all_cpus());
        const CpuSnapshot a = take_cpu_snapshot();
        try {
          measured = run_process_group(exec_server_argv(o, e), clients, {}, {}, o_.timeout_s, log_);
        } catch (const std::exception& ex) {
          // The whole text (the processes' stderr tails) in the log: the
          // command's error line shows its first line only.
          r->failure = ex.what();
          log_("FAILED \"" + r->variant + "\": " + r->failure);
          if (!o_.keep_going) throw;
          return;
        }
        cond.cpu = cpu_conditions(a, take_cpu_snapshot());
      }
      cond.disturbed = disturbance(cond.cpu);
      if (!cond.disturbed.empty() && attempt < o_.retries) {
        log_("disturbed (" + cond.disturbed + "): running \"" + r->variant + "\" again");
        continue;
      }
      Metrics m;
      from_json(measured, m);
      if (r->repetitions.empty()) {
        r->memory = memory_checks(measured);
        for (MemoryCheck& c : r->memory)
          if (const auto it = served_memory_[r].find(c.party); it != served_memory_[r].end())
            c.predicted_bytes = it->second;
      }
      r->repetitions.push_back(m);
      r->conditions.push_back(cond);
      return;
    }
  }

  static std::vector<int> all_cpus() {
    std::vector<int> cpus(std::max(1u, std::thread::hardware_concurrency()));
    std::iota(cpus.begin(), cpus.end(), 0);
    return cpus;
  }

  ValidatorOptions o_;
  std::map<std::string, double> slowdowns_;
  Validator::Log log_;
  std::unique_ptr<NetnsSwitch> switch_;
  std::vector<double> switch_rates_;
  // Per run, the planned peak of each party that serves the clients.
  std::map<const ClientsValidationRun*, std::map<std::string, int64_t>> served_memory_;
  int runs_ = 0;
};

}  // namespace

std::vector<ClientsValidationRun> validate_clients(const std::vector<ValidationItem>& items,
                                                   const ValidatorOptions& options,
                                                   const std::map<std::string, double>& slowdowns,
                                                   const Validator::Log& log) {
  check_slowdowns(items, slowdowns);
  for (const auto& [group, factor] : slowdowns)
    if (!(factor >= 1) || factor > 1000)
      throw InputError(
          "client_slowdown",
          "group " + group + "'s factor must be in [1, 1000], not " + std::to_string(factor));
  for (const ValidationItem& item : items) client_ports(item.variant->scenario, slowdowns);
  if (const std::string why = NetnsLink::unavailable_reason(); !why.empty())
    throw std::runtime_error(
        "validate runs several clients behind a switch of network "
        "namespaces, which needs root and iproute2 (" +
        why + ")");
  NetnsLink::remove_stale();
  return ClientsValidator(options, slowdowns, log).run(items);
}

}  // namespace splitsim
