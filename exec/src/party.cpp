#include "splitsim/exec/party.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "error_reason.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/heap.h"
#include "splitsim/costmodel/output_file.h"
#include "splitsim/costmodel/workspace.h"
#include "splitsim/exec/gloo_transport.h"
#include "splitsim/exec/link_probe.h"
#include "splitsim/exec/mixed_precision.h"
#include "splitsim/exec/runner.h"
#include "splitsim/exec/session.h"
#include "splitsim/sim/trace.h"

namespace splitsim {
namespace {

// The most events a rank can legitimately report: per batch (warm-up and
// the ones after included) and stage, each micro-batch's forward, backward,
// recompute, codec work and transfers, and an update.
int64_t max_events_per_rank(const Plan& plan) {
  const int64_t stages = static_cast<int64_t>(plan.stages.size());
  const int64_t per_batch = stages * (plan.chunks() * 16 + 4);
  return (plan.iterations + stages + 2) * per_batch * plan.clients + 1024;
}

void write_outputs(const ExecPartyOptions& o, const RunSpec& spec, const RunResult& r,
                   const std::string& congestion_control, std::ostream& out,
                   const std::function<void(const std::string&)>& progress) {
  const Plan& plan = spec.plan;
  nlohmann::json j = exec_metrics_json(spec, r);
  if (!congestion_control.empty()) j["tcp_congestion_control"] = congestion_control;
  if (o.json) {
    out << j.dump(2) << "\n";
  } else {
    std::ostringstream os;
    os << "exec " << plan.scenario << " [" << plan.variant << "]: " << j["batches_completed"]
       << " batches" << (r.complete ? "" : " (incomplete)");
    if (j.contains("time_per_batch_s"))
      os << ", time/batch " << j["time_per_batch_s"].get<double>() << " s, compute "
         << j["computation_time_s"].get<double>() << " s";
    if (j["training"].contains("loss_last"))
      os << ", loss " << j["training"]["loss_first"].get<double>() << " -> "
         << j["training"]["loss_last"].get<double>() << ", accuracy (last batch) "
         << j["training"]["accuracy_last"].get<double>();
    for (const auto& [party, m] : j["memory"].items())
      if (m.contains("measured_peak_tensor_bytes"))
        os << ", " << party << " tensors peak "
           << m["measured_peak_tensor_bytes"].get<double>() / 1e6 << " MB (plan "
           << m["predicted_peak_bytes"].get<double>() / 1e6 << " MB)";
    out << os.str() << "\n";
  }
  out.flush();
  if (o.trace.empty()) return;
  try {
    write_output_stream(o.trace, "trace",
                        [&r](std::ostream& trace) { write_chrome_trace(r.timeline, trace); });
  } catch (const InputError& e) {
    if (r.complete) throw;  // exit 2; an incomplete run's own failure comes first
    progress(std::string("error: ") + e.what());
  }
}

// The one selected variant's run, with --iterations in place of the scenario's.
RunSpec select_run(const ExecPartyOptions& args,
                   const std::function<void(const std::string&)>& progress) {
  Workspace ws(args.scenario, progress);
  const ScenarioVariant& v = ws.select_one(args.variant, "exec runs");
  RunChanges changes;
  changes.iterations = args.iterations;
  return make_run_spec(v, ws.plan(v), changes);
}

// What the handshake compares: the run, and what every party must pass
// alike (the same batches drawn: inputs on one side, labels on the other).
nlohmann::json handshake_identity(const RunSpec& spec, const ExecPartyOptions& args) {
  nlohmann::json identity = spec.identity;
  if (args.distinct_batches > 0) identity["distinct_batches"] = args.distinct_batches;
  if (!args.congestion_control.empty())
    identity["tcp_congestion_control"] = args.congestion_control;
  if (!args.checkpoint.dir.empty())
    identity["checkpoints"] = {{"every", args.checkpoint.every},
                               {"resume", args.checkpoint.resume}};
  return identity;
}

RunOptions exec_run_options(const ExecPartyOptions& args, const GlooOptions& go, int64_t iterations,
                            const std::function<void(const std::string&)>& progress) {
  RunOptions ro;
  ro.timeout = go.timeout;
  ro.data_dir = args.data;
  ro.distinct_batches = args.distinct_batches;
  ro.device = args.device;
  ro.compute_slowdown = args.compute_slowdown;
  ro.checkpoint = args.checkpoint;
  // A line every 10 s or so and at the end (a full-size model takes
  // seconds per batch on a CPU).
  auto last_line = std::chrono::steady_clock::now();
  ro.on_batch = [&progress, iterations, last_line](int64_t done, double loss) mutable {
    const auto now = std::chrono::steady_clock::now();
    if (done < iterations && now - last_line < std::chrono::seconds(10)) return;
    last_line = now;
    std::ostringstream line;
    line << "exec: " << done << "/" << iterations << " batches";
    if (!std::isnan(loss)) line << ", loss " << loss;
    progress(line.str());
  };
  return ro;
}

// Where this party connects, and how it computes.
void announce(const ExecPartyOptions& args, const GlooOptions& go, const RunSpec& spec,
              const std::function<void(const std::string&)>& progress) {
  std::ostringstream where;
  where << "exec: rank " << go.rank << " of " << go.world_size << " (" << args.role << "), "
        << (go.rank == 0 ? "listening on " : "connecting to ") << go.host << ":" << go.port
        << ", timeout " << args.timeout_s << " s";
  progress(where.str());
  if (spec.compute_precision != "fp32") {
    const bool applies = autocast_applies(
        args.device == "cuda" ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU),
        spec.compute_precision);
    progress("exec: compute_precision " + spec.compute_precision +
             (applies ? ": forwards under autocast (mixed precision)"
                      : ": no autocast for it on " + args.device +
                            " in this LibTorch (CPU: bf16 only); computing in FP32"));
  }
  if (spec.loss_scale != 1) {
    std::ostringstream scale;
    scale << "exec: loss scale " << spec.loss_scale
          << " (gradients unscaled before each update; a non-finite one skips it)";
    progress(scale.str());
  }
}

// Handshake, clocks, the run and (rank 0) every rank's events. A transport
// failure ends the result incomplete; bad input throws.
RunResult run_connected(GlooTransport& transport, const RunSpec& spec, const RunIdentity& identity,
                        const GlooOptions& go, RunOptions ro,
                        const std::vector<int64_t>& held_steps,
                        const std::function<void(const std::string&)>& progress) {
  RunResult result;
  try {
    handshake(transport, identity, go.timeout);
    if (ro.checkpoint.resume) {
      ro.first_batch = agree_resume_step(transport, held_steps, go.timeout);
      progress(ro.first_batch > 0
                   ? "exec: resuming from the checkpoint of step " + std::to_string(ro.first_batch)
                   : "exec: no checkpoint to resume from: from the first batch");
    }
    std::vector<double> offsets;
    const ExecClock::time_point start = synchronise(transport, go.timeout, &offsets);
    progress("exec: connected, training " + std::to_string(spec.plan.iterations) + " batches");
    result = run_party(spec, transport, go.rank, ro, start);
    if (result.complete)
      gather(transport, offsets, &result, go.timeout, max_events_per_rank(spec.plan));
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    result.complete = false;
    if (result.error.empty()) result.error = first_line_of(e);
  }
  return result;
}

// The link probe's report (the server's): JSON or two lines.
void write_probe_report(const LinkProbePartyOptions& args, const LinkProbeResult& r,
                        const std::string& congestion_control, std::ostream& out) {
  if (args.json) {
    nlohmann::json j = link_probe_json(r);
    j["tcp_congestion_control"] = congestion_control;
    out << j.dump(2) << "\n";
  } else {
    out << "link probe: " << r.up.bytes << " B each way; compute lost per byte sent "
        << r.cpu_s_per_byte_sent * 1e9 << " ns (client " << r.client_send_s_per_byte * 1e9
        << ", server " << r.server_send_s_per_byte * 1e9 << "), received "
        << r.cpu_s_per_byte_received * 1e9 << " ns (server " << r.server_recv_s_per_byte * 1e9
        << ", client " << r.client_recv_s_per_byte * 1e9 << "); CPU time per byte sent "
        << r.busy_s_per_byte_sent * 1e9 << " ns, received " << r.busy_s_per_byte_received * 1e9
        << " ns; compute lost per message sent " << r.cpu_s_per_message_sent * 1e6
        << " us, received " << r.cpu_s_per_message_received * 1e6 << " us\n";
    out << "one message alone after " << args.single_gap_ms << " ms idle (" << r.single_up.size()
        << " sizes from 1 KiB, " << args.single_repeats << " times each way, medians; and "
        << r.pair_up.size() << " sizes of two tensors): ";
    if (r.link.valid() && r.link.packet_bytes > 0)
      out << "latency " << r.link.latency_s * 1e6 << " us, packets of " << r.link.packet_bytes
          << " B but the last, less a bucket of " << r.link.burst_bytes << " B, at "
          << r.link.rate_Bps * 8e-6 << " Mbit/s (fit's rms error " << 100 * r.link.rms_rel_error
          << "%)\n";
    else if (r.link.valid())
      out << "latency " << r.link.latency_s * 1e6 << " us, rate " << r.link.rate_Bps * 8e-6
          << " Mbit/s, a bucket of " << r.link.burst_bytes << " B passing at "
          << r.link.peak_Bps * 8e-6 << " Mbit/s (fit's rms error " << 100 * r.link.rms_rel_error
          << "%)\n";
    else
      out << "no fit (fewer than three sizes)\n";
  }
}

}  // namespace

PartyOutcome run_exec_party(const ExecPartyOptions& args, std::ostream& out,
                            const std::function<void(const std::string&)>& progress) {
  hold_freed_heap_memory();  // as the profile measured (heap.h)
  torch::set_num_threads(args.threads);
  if (!args.trace.empty()) check_output_path(args.trace, "trace");  // before the run
  const RunSpec spec = select_run(args, progress);
  const std::string token = shared_token(args.token);
  GlooOptions go = party_gloo_options(spec.topology, args.role, args.client_index, args.listen,
                                      args.connect, args.timeout_s, "exec");
  go.congestion_control = args.congestion_control;
  go.token = token;
  RunOptions ro = exec_run_options(args, go, spec.plan.iterations, progress);
  std::vector<int64_t> held;  // refused before anything connects
  if (!args.checkpoint.dir.empty()) {
    check_checkpoint_options(args.checkpoint);
    std::vector<std::pair<int, int>> mine;
    for (int k = 0; k < spec.topology.stages; ++k)
      for (int c = 0; c < spec.topology.clients; ++c)
        if (spec.topology.rank_of(k, c) == go.rank) mine.push_back({k, c});
    held = prepare_checkpoint_dir(args.checkpoint, mine);
    ro.checkpoint_identity = stable_hash(spec.identity.dump());
  }
  if (args.device == "cuda" && !torch::cuda::is_available())
    throw InputError("device",
                     "cuda requested but this LibTorch build or machine has no CUDA "
                     "device; use --device cpu");
  announce(args, go, spec, progress);
  std::unique_ptr<GlooTransport> transport = GlooTransport::connect(go);
  progress("exec: TCP congestion control " + transport->congestion_control());
  const RunIdentity identity{spec.label, handshake_identity(spec, args).dump(), args.version,
                             token};
  RunResult result;
  try {
    result = run_connected(*transport, spec, identity, go, ro, held, progress);
  } catch (const InputError&) {
    (void)transport.release();  // the peer may be gone: no Gloo destructors
    throw;
  }
  write_outputs(args, spec, result, transport->congestion_control(), out, progress);
  // A failed Gloo pair may block in its destructor: the transport is left
  // alive for the caller, who exits at once (std::_Exit) after a failure.
  if (!result.complete) {
    (void)transport.release();
    return {false, result.error};
  }
  return {};
}

PartyOutcome run_link_probe_party(const LinkProbePartyOptions& args, std::ostream& out) {
  hold_freed_heap_memory();  // the probe's compute loop as exec's (heap.h)
  if (args.role != "server" && args.role != "client")
    throw InputError("role", "expected server or client, got \"" + args.role + "\"");
  const bool server = args.role == "server";
  GlooOptions go;
  go.rank = server ? 0 : 1;
  go.world_size = 2;
  go.timeout = std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000));
  if (server && args.listen.empty())
    throw InputError("listen", "the server listens: pass --listen ADDR:PORT");
  if (!server && args.connect.empty())
    throw InputError("connect", "the client connects: pass --connect ADDR:PORT");
  parse_address(server ? args.listen : args.connect, server ? "listen" : "connect", &go.host,
                &go.port);
  LinkProbeOptions o;
  o.message_bytes = static_cast<int64_t>(args.message_kib * 1024);
  o.gap_s = args.gap_ms * 1e-3;
  o.bytes_per_direction = static_cast<int64_t>(args.megabytes * 1e6);
  o.small_messages = args.small_messages;
  o.small_message_bytes = args.small_message_bytes;
  o.single_max_bytes = static_cast<int64_t>(args.single_max_kib * 1024);
  o.pair_max_bytes = static_cast<int64_t>(args.pair_max_kib * 1024);
  o.single_repeats = args.single_repeats;
  o.single_gap_s = args.single_gap_ms * 1e-3;
  o.timeout = go.timeout;
  go.congestion_control = args.congestion_control;
  std::unique_ptr<GlooTransport> transport = GlooTransport::connect(go);
  LinkProbeResult r;
  try {
    r = run_link_probe(*transport, o);
  } catch (const std::exception& e) {
    (void)transport.release();  // a failed Gloo pair may block in its destructor
    return {false, std::string("link probe: ") + e.what()};
  }
  if (server) write_probe_report(args, r, transport->congestion_control(), out);
  out.flush();
  return {};
}

}  // namespace splitsim
