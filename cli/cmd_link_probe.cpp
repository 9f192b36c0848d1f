// `splitsim link-probe --role server|client`: how much compute moving bytes
// over the link takes from the processes at its two ends (exec/include/splitsim/exec/link_probe.h).
// `validate` runs it once per link rate, one process in each namespace, as
// it runs exec; rank 0 (the server) prints the report with --json.
#include <iostream>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/exec/gloo_transport.h"
#include "splitsim/exec/link_probe.h"

namespace splitsim {
namespace {

struct LinkProbeArgs {
  std::string role, listen, connect;
  double megabytes = 64, message_kib = 1024, timeout_s = 60;
  bool json = false;
};

int run_link_probe_command(const LinkProbeArgs& args) {
  if (args.role != "server" && args.role != "client")
    throw InputError("--role", "expected server or client, got \"" + args.role + "\"");
  const bool server = args.role == "server";
  GlooOptions go;
  go.rank = server ? 0 : 1;
  go.world_size = 2;
  go.timeout = std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000));
  if (server && args.listen.empty())
    throw InputError("--listen", "the server listens: pass --listen ADDR:PORT");
  if (!server && args.connect.empty())
    throw InputError("--connect", "the client connects: pass --connect ADDR:PORT");
  parse_address(server ? args.listen : args.connect, server ? "--listen" : "--connect", &go.host,
                &go.port);
  LinkProbeOptions o;
  o.message_bytes = static_cast<int64_t>(args.message_kib * 1024);
  o.bytes_per_direction = static_cast<int64_t>(args.megabytes * 1e6);
  o.timeout = go.timeout;
  std::unique_ptr<GlooTransport> transport = GlooTransport::connect(go);
  LinkProbeResult r;
  try {
    r = run_link_probe(*transport, o);
  } catch (const std::exception& e) {
    std::cerr << "error: link probe: " << e.what() << "\n";
    std::cerr.flush();
    std::_Exit(1);  // a failed Gloo pair may block in its destructor
  }
  if (server) {
    if (args.json) {
      std::cout << link_probe_json(r).dump(2) << "\n";
    } else {
      std::cout << "link probe: " << r.up.bytes
                << " B each way; compute lost per byte sent " << r.cpu_s_per_byte_sent * 1e9
                << " ns (client " << r.client_send_s_per_byte * 1e9 << ", server "
                << r.server_send_s_per_byte * 1e9 << "), received "
                << r.cpu_s_per_byte_received * 1e9 << " ns (server "
                << r.server_recv_s_per_byte * 1e9 << ", client " << r.client_recv_s_per_byte * 1e9
                << "); CPU time per byte sent " << r.busy_s_per_byte_sent * 1e9
                << " ns, received " << r.busy_s_per_byte_received * 1e9 << " ns\n";
    }
  }
  std::cout.flush();
  return 0;
}

}  // namespace

Command add_link_probe_command(CLI::App& app) {
  auto args = std::make_shared<LinkProbeArgs>();
  CLI::App* sub = app.add_subcommand(
      "link-probe",
      "Measure how much compute moving bytes over a link takes from the processes at both "
      "ends (a compute loop in each, pinned with it: its work per second during traffic "
      "against idle phases, per byte; and the CPU time per byte), with exec's transport; "
      "validate runs it per link rate");
  sub->add_option("--role", args->role, "server (listens, prints the report) or client")
      ->required();
  sub->add_option("--listen", args->listen, "Server: ADDR:PORT to listen on");
  sub->add_option("--connect", args->connect, "Client: the server's ADDR:PORT");
  sub->add_option("--megabytes", args->megabytes, "MB sent each way")
      ->check(number_range(0.001, 100000))
      ->capture_default_str();
  sub->add_option("--message-kib", args->message_kib, "size of one message (KiB)")
      ->check(number_range(1, 1048576))
      ->capture_default_str();
  sub->add_option("--timeout-s", args->timeout_s, "connect and per-transfer timeout (s)")
      ->check(number_range(0, 86400, true))
      ->capture_default_str();
  sub->add_flag("--json", args->json, "print the report as JSON (splitsim.link_probe/2)");
  return {sub, [args] { return run_link_probe_command(*args); }};
}

}  // namespace splitsim
