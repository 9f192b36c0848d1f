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
#include "splitsim/exec/topology.h"
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

void write_outputs(const ExecPartyOptions& o, const Plan& plan, const RunResult& r,
                   const std::string& congestion_control, std::ostream& out,
                   const std::function<void(const std::string&)>& progress) {
  nlohmann::json j = exec_metrics_json(plan, r);
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

}  // namespace

PartyOutcome run_exec_party(const ExecPartyOptions& args, std::ostream& out,
                            const std::function<void(const std::string&)>& progress) {
  hold_freed_heap_memory();  // as the profile measured (heap.h)
  torch::set_num_threads(args.threads);
  if (!args.trace.empty()) check_output_path(args.trace, "trace");  // before the run
  Workspace ws(args.scenario, progress);
  const ScenarioVariant& v = ws.select_one(args.variant, "exec runs");
  Scenario sc = v.scenario;
  nlohmann::json identity_json = v.json;
  Plan plan = ws.plan(v);
  if (args.iterations > 0) {
    sc.iterations = plan.iterations = args.iterations;
    plan.warmup = sc.warmup = std::min(sc.warmup, args.iterations - 1);
    identity_json["iterations"] = args.iterations;
  }
  // Every party must draw the same batches (inputs on one side, labels on the other).
  if (args.distinct_batches > 0) identity_json["distinct_batches"] = args.distinct_batches;
  if (!args.congestion_control.empty())
    identity_json["tcp_congestion_control"] = args.congestion_control;
  const std::string token = shared_token(args.token);
  const ExecTopology topo = make_topology(plan);
  GlooOptions go = party_gloo_options(topo, args.role, args.client_index, args.listen,
                                      args.connect, args.timeout_s, "exec");
  go.congestion_control = args.congestion_control;
  go.token = token;
  const int rank = go.rank;
  RunOptions ro;
  ro.timeout = go.timeout;
  ro.data_dir = args.data;
  ro.distinct_batches = args.distinct_batches;
  ro.device = args.device;
  // A line every 10 s or so and at the end (a full-size model takes
  // seconds per batch on a CPU).
  const int64_t total = plan.iterations;
  auto last_line = std::chrono::steady_clock::now();
  ro.on_batch = [&progress, total, last_line](int64_t done, double loss) mutable {
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - last_line < std::chrono::seconds(10)) return;
    last_line = now;
    std::ostringstream line;
    line << "exec: " << done << "/" << total << " batches";
    if (!std::isnan(loss)) line << ", loss " << loss;
    progress(line.str());
  };
  if (args.device == "cuda" && !torch::cuda::is_available())
    throw InputError("device",
                     "cuda requested but this LibTorch build or machine has no CUDA "
                     "device; use --device cpu");
  std::ostringstream where;
  where << "exec: rank " << rank << " of " << go.world_size << " (" << args.role << "), "
        << (rank == 0 ? "listening on " : "connecting to ") << go.host << ":" << go.port
        << ", timeout " << args.timeout_s << " s";
  progress(where.str());
  if (sc.compute_precision != "fp32") {
    const bool applies = autocast_applies(
        args.device == "cuda" ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU),
        sc.compute_precision);
    progress("exec: compute_precision " + sc.compute_precision +
             (applies ? ": forwards under autocast (mixed precision)"
                      : ": no autocast for it on " + args.device +
                            " in this LibTorch (CPU: bf16 only); computing in FP32"));
  }
  if (sc.effective_loss_scale() != 1) {
    std::ostringstream scale;
    scale << "exec: loss scale " << sc.effective_loss_scale()
          << " (gradients unscaled before each update; a non-finite one skips it)";
    progress(scale.str());
  }
  std::unique_ptr<GlooTransport> transport = GlooTransport::connect(go);
  progress("exec: TCP congestion control " + transport->congestion_control());
  RunResult result;
  try {
    handshake(*transport, {v.label, identity_json.dump(), args.version, token}, go.timeout);
    std::vector<double> offsets;
    const ExecClock::time_point start = synchronise(*transport, go.timeout, &offsets);
    progress("exec: connected, training " + std::to_string(plan.iterations) + " batches");
    result = run_party(sc, plan, *transport, rank, ro, start);
    if (result.complete)
      gather(*transport, offsets, &result, go.timeout, max_events_per_rank(plan));
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    result.complete = false;
    if (result.error.empty()) result.error = first_line_of(e);
  }
  write_outputs(args, plan, result, transport->congestion_control(), out, progress);
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
  if (server) {
    if (args.json) {
      nlohmann::json j = link_probe_json(r);
      j["tcp_congestion_control"] = transport->congestion_control();
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
      out << "one message alone after " << args.single_gap_ms << " ms idle ("
          << r.single_up.size() << " sizes from 1 KiB, " << args.single_repeats
          << " times each way, medians): ";
      if (r.link.valid() && r.link.packet_bytes > 0)
        out << "latency " << r.link.latency_s * 1e6 << " us, packets of " << r.link.packet_bytes
            << " B but the last, less a bucket of " << r.link.burst_bytes << " B, at "
            << r.link.rate_Bps * 8e-6 << " Mbit/s (fit's rms error "
            << 100 * r.link.rms_rel_error << "%)\n";
      else if (r.link.valid())
        out << "latency " << r.link.latency_s * 1e6 << " us, rate " << r.link.rate_Bps * 8e-6
            << " Mbit/s, a bucket of " << r.link.burst_bytes << " B passing at "
            << r.link.peak_Bps * 8e-6 << " Mbit/s (fit's rms error "
            << 100 * r.link.rms_rel_error << "%)\n";
      else
        out << "no fit (fewer than three sizes)\n";
    }
  }
  out.flush();
  return {};
}

}  // namespace splitsim
