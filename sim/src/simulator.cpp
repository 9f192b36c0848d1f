// simulate_in_process: one Plan, one SimGrid Engine, in this process.
#include "splitsim/sim/simulator.h"

#include <xbt/log.h>

#include <algorithm>
#include <fstream>
#include <simgrid/s4u/Engine.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "deployment.h"
#include "platform.h"
#include "runtime.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/input_file.h"
#include "splitsim/costmodel/limits.h"
#include "worker.h"

XBT_LOG_EXTERNAL_CATEGORY(XBT_LOG_ROOT_CAT);

namespace splitsim {

const char* server_order_name(ServerOrder order) {
  return order == ServerOrder::kFifo ? "fifo" : "round-robin";
}

ServerOrder parse_server_order(const std::string& name, const std::string& where) {
  if (name == "fifo") return ServerOrder::kFifo;
  if (name == "round-robin") return ServerOrder::kRoundRobin;
  throw InputError(where, "unknown server order \"" + name + "\"; use fifo or round-robin");
}

namespace {

void check_length(size_t got, size_t want, const std::string& what) {
  if (got != want)
    throw std::invalid_argument("inconsistent Plan: " + what + " has " + std::to_string(got) +
                                " entries, expected one per micro-batch (" + std::to_string(want) +
                                ")");
}

// Reads a bandwidth trace: lines "TIME_S FACTOR" (FACTOR in (0, 1] of the
// link's bandwidth from TIME_S on, times non-decreasing), '#' comments and
// blank lines. Returns the SimGrid profile text. Throws InputError.
std::string load_bandwidth_trace(const std::string& path) {
  const std::string where = "$.network.bandwidth_trace";
  std::string text;
  try {
    // A regular file only: "/dev/zero" or a FIFO would never end.
    text = read_input_file(path, "bandwidth trace");
  } catch (const InputError& e) {
    throw InputError(where, e.what());
  }
  std::istringstream in(text);
  std::string line, out;
  double last = 0;
  int64_t points = 0;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    double t = 0, factor = 0;
    std::string rest;
    if (!(fields >> t)) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      throw InputError(where, path + ":" + std::to_string(n) + ": expected \"TIME_S FACTOR\"");
    }
    if (!(fields >> factor) || (fields >> rest) || t < last || !(t <= limits::kMaxTraceTimeS) ||
        !(factor >= limits::kMinTraceFactor && factor <= 1))
      throw InputError(where, path + ":" + std::to_string(n) +
                                  ": expected \"TIME_S FACTOR\" with times non-decreasing from "
                                  "0 up to 1e9 and FACTOR in [0.001, 1]");
    if (++points > limits::kMaxTraceLines)
      throw InputError(where, path + ": more than " + std::to_string(limits::kMaxTraceLines) +
                                  " \"TIME_S FACTOR\" lines; the limit is " +
                                  std::to_string(limits::kMaxTraceLines));
    last = t;
    std::ostringstream canon;
    canon.precision(17);
    canon << t << " " << factor << "\n";
    out += canon.str();
  }
  if (out.empty()) throw InputError(where, path + ": no \"TIME_S FACTOR\" line");
  return out;
}

// A task of more than limits::kMaxTaskS (a year) would cost SimGrid's clock
// its sub-microsecond exactness.
void check_seconds(const std::vector<double>& seconds, const std::string& what) {
  for (double s : seconds) {
    if (s >= 0 && s <= limits::kMaxTaskS) continue;
    std::ostringstream os;
    os << what << " takes " << s << " s per micro-batch; the limit is " << limits::kMaxTaskS
       << " s (check the device profiles' peak_flops and memory_bandwidth_Bps)";
    throw InputError("$.devices", os.str());
  }
}

// Throws unless every stage ran the backward of every micro-batch of every
// measured and warm-up batch: a simulation that stops early (SimGrid found
// every actor blocked) has no meaningful metrics.
void check_finished(const Plan& plan, const Timeline& timeline) {
  int64_t done = 0;
  for (const TimelineEvent& e : timeline.events) {
    if (e.kind == EventKind::kBackward && e.batch < plan.iterations) ++done;
  }
  const int64_t want = static_cast<int64_t>(timeline.clients) *
                       static_cast<int64_t>(plan.stages.size()) * plan.iterations * plan.chunks();
  if (done >= want) return;
  throw std::runtime_error(
      "the simulation stopped after " + std::to_string(done) + " of " + std::to_string(want) +
      " backward passes: SimGrid found every actor blocked (values at the edge of its numerical "
      "range, such as a tiny bandwidth or a huge latency, can cause this); no metrics");
}

// The groups hold plan.clients clients, with per-client figures and stage
// costs the simulator can use.
void check_client_groups(const Plan& plan) {
  if (plan.client_groups.empty()) return;
  int64_t total = 0;
  const size_t m = plan.microbatch_sizes.size();
  for (size_t i = 0; i < plan.client_groups.size(); ++i) {
    const PlanClientGroup& g = plan.client_groups[i];
    const std::string at = "$.client_groups[" + std::to_string(i) + "]";
    if (g.count < 1) throw InputError(at + ".count", "must be at least 1");
    total += g.count;
    for (const auto* v : {&g.bandwidth_bit_per_s, &g.latency_s})
      if (!v->empty() && static_cast<int64_t>(v->size()) != g.count)
        throw std::invalid_argument("inconsistent Plan: " + at + " needs one value per client");
    for (double b : g.bandwidth_bit_per_s)
      if (!(b * plan.network.bandwidth_factor > 0))
        throw InputError(at + ".bandwidth_bit_per_s", "must be positive");
    for (double l : g.latency_s)
      if (!(l >= 0 && l <= limits::kMaxLatencyS))
        throw InputError(at + ".latency_s", "must be in [0, 3600] s");
    for (const PlanStageCosts& c : g.stage_costs) {
      if (c.stage < 0 || static_cast<size_t>(c.stage) >= plan.stages.size())
        throw std::invalid_argument("inconsistent Plan: " + at + " has costs for no stage");
      check_length(c.fwd_s.size(), m, at + " fwd_s");
      check_length(c.bwd_s.size(), m, at + " bwd_s");
      check_seconds(c.fwd_s, g.name + " forward");
      check_seconds(c.bwd_s, g.name + " backward");
      check_seconds({c.update_s}, g.name + " update");
      for (const auto* v : {&c.fwd_decode_s, &c.fwd_encode_s, &c.bwd_decode_s, &c.bwd_encode_s}) {
        if (!v->empty()) check_length(v->size(), m, at + " codec seconds");
        check_seconds(*v, g.name + " codec");
      }
    }
  }
  if (total != plan.clients)
    throw InputError("$.client_groups", "the groups hold " + std::to_string(total) +
                                            " clients; the plan has " +
                                            std::to_string(plan.clients));
}

}  // namespace

void check_simulatable(const Plan& plan) {
  if (plan.stages.empty()) throw InputError("$.partition", "the plan has no stages");
  if (plan.chunks() < 1) throw InputError("$.chunks", "the plan has no micro-batches");
  if (plan.iterations < 1) throw InputError("$.iterations", "must be at least 1");
  if (plan.warmup < 0 || plan.warmup >= plan.iterations)
    throw InputError("$.warmup",
                     "must be >= 0 and below iterations (" + std::to_string(plan.iterations) + ")");
  if (plan.clients < 1) throw InputError("$.clients", "must be at least 1");
  const NetworkSpec& net = plan.network;
  if (!(sim_internal::up_bytes_per_s(net) > 0) || !(sim_internal::down_bytes_per_s(net) > 0))
    throw InputError("$.network", "bandwidths and bandwidth_factor must be positive");
  if (net.latency_s < 0 || net.per_message_overhead_s < 0)
    throw InputError("$.network", "latency_s and per_message_overhead_s must be >= 0");
  // SimGrid aborts on a latency near the largest double.
  if (!(net.latency_s <= limits::kMaxLatencyS) ||
      !(net.per_message_overhead_s <= limits::kMaxOverheadS))
    throw InputError("$.network", "latency_s and per_message_overhead_s must be at most 3600 s");
  if (!net.bandwidth_trace.empty()) load_bandwidth_trace(net.bandwidth_trace);
  if (!(net.server_bandwidth_bit_per_s >= 0) || !(net.server_latency_s >= 0) ||
      !(net.server_latency_s <= limits::kMaxLatencyS))
    throw InputError("$.network",
                     "server_bandwidth_bit_per_s must be >= 0 and server_latency_s "
                     "in [0, 3600] s");
  check_client_groups(plan);
  const size_t m = plan.microbatch_sizes.size();
  const size_t K = plan.stages.size();
  if (plan.boundaries.size() + 1 != K)
    throw std::invalid_argument("inconsistent Plan: " + std::to_string(K) + " stages need " +
                                std::to_string(K - 1) + " boundaries");
  for (size_t k = 0; k < K; ++k) {
    check_length(plan.stages[k].fwd_s.size(), m, plan.stages[k].name + ".fwd_s");
    check_length(plan.stages[k].bwd_s.size(), m, plan.stages[k].name + ".bwd_s");
    check_seconds(plan.stages[k].fwd_s, plan.stages[k].name + " forward");
    check_seconds(plan.stages[k].bwd_s, plan.stages[k].name + " backward");
    check_seconds({plan.stages[k].update_s}, plan.stages[k].name + " update");
  }
  for (size_t b = 0; b + 1 < K; ++b) {
    const PlanBoundary& bd = plan.boundaries[b];
    if (bd.from_stage != static_cast<int>(b) || bd.to_stage != static_cast<int>(b) + 1)
      throw std::invalid_argument("inconsistent Plan: boundary " + std::to_string(b) +
                                  " must join stages " + std::to_string(b) + " and " +
                                  std::to_string(b + 1));
    for (const PlanTransfer* t : {&bd.forward, &bd.backward}) {
      const std::string what =
          "boundary " + std::to_string(b) + (t == &bd.forward ? " forward" : " backward");
      check_length(t->wire_bytes.size(), m, what + " wire_bytes");
      check_length(t->encode_s.size(), m, what + " encode_s");
      check_length(t->decode_s.size(), m, what + " decode_s");
      check_seconds(t->encode_s, what + " encode");
      check_seconds(t->decode_s, what + " decode");
    }
  }
}

namespace sim_internal {

Timeline simulate_unsorted(const Plan& plan, const SimOptions& options) {
  // SimGrid keeps one Engine per process (sim/README.md "Many simulations").
  static bool engine_created = false;
  if (engine_created)
    throw std::logic_error(
        "simulate_in_process: this process already ran a SimGrid engine; "
        "use simulate() (each simulation in a process of its own)");
  engine_created = true;
  check_simulatable(plan);

  // SimGrid logs nothing: its messages ("Oops! Deadlock detected", xbt
  // backtraces) are raw library text; what went wrong is reported by
  // check_finished or by the parent of a simulation child that died.
  xbt_log_threshold_set(&_XBT_LOGV(XBT_LOG_ROOT_CAT), xbt_log_priority_infinite);
  int argc = 1;
  char arg0[] = "splitsim";
  char* argv[] = {arg0, nullptr};
  // Never destroyed: this process runs no other simulation (see above), and
  // tearing SimGrid's platform and actors down costs more than a short
  // simulation's bookkeeping; the process's end frees it all.
  auto* engine = new simgrid::s4u::Engine(&argc, argv);
  // A lone N-byte transfer takes exactly latency + N / bandwidth.
  simgrid::s4u::Engine::set_config("network/model:CM02");
  simgrid::s4u::Engine::set_config("network/crosstraffic:0");
  simgrid::s4u::Engine::set_config("network/TCP-gamma:0");
  // Actors are shallow; thousands of them (1,000 clients) fit in small stacks.
  simgrid::s4u::Engine::set_config("contexts/stack-size:256");

  const sim_internal::Deployment d = sim_internal::make_deployment(plan);
  Timeline timeline;
  timeline.clients = d.clients;
  for (size_t p = 0; p < d.parties.size(); ++p) {
    timeline.parties.push_back(d.parties[p].name);
    if (d.parties[p].client_role) timeline.client_parties.push_back(static_cast<int32_t>(p));
  }
  // Every event, reserved at once: forward and backward of every stage and
  // their codec slices, and two per transfer, per micro-batch and client.
  const int64_t batches =
      plan.iterations +
      cooldown_batches(plan.schedule, static_cast<int>(plan.stages.size()), plan.chunks());
  timeline.events.reserve(static_cast<size_t>(
      batches * d.clients *
      (plan.chunks() * static_cast<int64_t>(6 * plan.stages.size() + 4 * plan.boundaries.size()) +
       static_cast<int64_t>(plan.stages.size()))));
  sim_internal::SimContext ctx;
  ctx.plan = &plan;
  ctx.deployment = &d;
  ctx.options = options;
  ctx.timeline = &timeline;
  const std::string trace = plan.network.bandwidth_trace.empty()
                                ? ""
                                : load_bandwidth_trace(plan.network.bandwidth_trace);
  const PlatformSpec& pf = plan.platform;
  ctx.hosts = sim_internal::build_platform(d, plan, trace,
                                           pf.shared_machine ? pf.co_compute_slowdown : 1.0);
  sim_internal::deploy_actors(&ctx);
  engine->run();
  check_finished(plan, timeline);
  // The cool-down batches only kept the pipeline full behind the last one.
  auto& ev = timeline.events;
  ev.erase(std::remove_if(ev.begin(), ev.end(),
                          [&](const TimelineEvent& e) { return e.batch >= plan.iterations; }),
           ev.end());
  return timeline;
}

}  // namespace sim_internal

Timeline simulate_in_process(const Plan& plan, const SimOptions& options) {
  Timeline timeline = sim_internal::simulate_unsorted(plan, options);
  sort_events(&timeline);
  return timeline;
}

}  // namespace splitsim
