// `splitsim link-probe --role server|client`: how much compute moving bytes
// over the link takes from the processes at its two ends
// (exec/include/splitsim/exec/link_probe.h; the run: run_link_probe_party in
// exec/include/splitsim/exec/party.h). `validate` runs it once per link
// rate, one process in each namespace, as it runs exec; rank 0 (the server)
// prints the report with --json.
#include <iostream>
#include <memory>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/exec/party.h"
#include "splitsim/exec/party_exit.h"

namespace splitsim {
namespace {

int run_link_probe_command(const LinkProbePartyOptions& args) {
  const PartyOutcome outcome = run_link_probe_party(args, std::cout);
  if (!outcome.complete) exit_after_failed_party(outcome.error);
  return 0;
}

}  // namespace

Command add_link_probe_command(CLI::App& app) {
  auto args = std::make_shared<LinkProbePartyOptions>();
  CLI::App* sub = app.add_subcommand(
      "link-probe",
      "Measure how much compute moving bytes over a link takes from the processes at both "
      "ends (a compute loop in each, pinned with it: its work per second during traffic "
      "against idle phases, per byte and per message; and the CPU time per byte), with "
      "exec's transport; validate runs it per link rate");
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
  sub->add_option("--gap-ms", args->gap_ms,
                  "the sender's pause after each large message (ms; 0: back to back)")
      ->check(number_range(0, 10000))
      ->capture_default_str();
  sub->add_option("--small-messages", args->small_messages,
                  "small messages sent each way, for the cost per message")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}))
      ->capture_default_str();
  sub->add_option("--small-message-bytes", args->small_message_bytes,
                  "size of one small message (B)")
      ->check(CLI::Range(int64_t{1}, int64_t{1048576}))
      ->capture_default_str();
  sub->add_option("--single-max-kib", args->single_max_kib,
                  "single messages after idle, for the link's model: sizes from 1 KiB, four per "
                  "octave, up to this (KiB)")
      ->check(number_range(1, 1048576))
      ->capture_default_str();
  sub->add_option("--pair-max-kib", args->pair_max_kib,
                  "then transfers of two tensors (this many KiB, then 8 B as a message of its own, "
                  "as exec sends a quantizer's data and scale), sizes from 1 KiB up to this; they "
                  "show a shaper's bucket (KiB; 0: none)")
      ->check(number_range(0, 1048576))
      ->capture_default_str();
  sub->add_option("--single-repeats", args->single_repeats,
                  "how often each single message (and each two-tensor transfer) is timed each way "
                  "(the median is kept)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  sub->add_option("--single-gap-ms", args->single_gap_ms,
                  "how long the link idles before each single message (ms)")
      ->check(number_range(0, 10000))
      ->capture_default_str();
  sub->add_option("--timeout-s", args->timeout_s, "connect and per-transfer timeout (s)")
      ->check(number_range(kMinTimeoutS, 86400))
      ->capture_default_str();
  sub->add_flag("--json", args->json, "print the report as JSON (splitsim.link_probe/5)");
  add_congestion_control_flag(sub, &args->congestion_control);

  return {sub, [args] { return run_link_probe_command(*args); }};
}

}  // namespace splitsim
