// The Validator's real link: the shaped veth between two network namespaces
// (or loopback where none can be made), its rate per variant, and what the
// link probe measures on it once per rate.
#include <algorithm>
#include <cmath>
#include <optional>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/format.h"
#include "splitsim/costmodel/tcp_loss.h"
#include "splitsim/exec/link_probe.h"
#include "splitsim/exec/tcp_sockets.h"
#include "splitsim/validate/awake_cores.h"
#include "splitsim/validate/validator.h"

namespace splitsim {

namespace {

// The link probe moves this many bytes each way: about 1.5 s at the rate,
// at least 4 MB and at most 200 MB.
double probe_megabytes(double rate_bit_per_s) {
  return std::clamp(rate_bit_per_s / 8 * 1.5 / 1e6, 4.0, 200.0);
}

// Its single messages go up to about 0.1 s at the rate: far enough past a
// 1 ms bucket and a GSO packet to see the rate, 64 KiB to 16 MiB.
double probe_single_max_kib(double rate_bit_per_s) {
  return std::clamp(rate_bit_per_s / 8 * 0.1 / 1024, 64.0, 16384.0);
}

// Under loss the probe's long transfer moves enough bytes each way for some
// 2,000 lost segments in all, at most 15 s at the link's rate and at least
// 16 MB. What varies from run to run is the few timeouts among the lost
// segments: with a tenth as many, the recovery time measured moved by half
// (sim/README.md "Lossy links").
double loss_probe_megabytes(double rate_bit_per_s, double loss) {
  const double for_losses = 2000 / loss / 2 * kTcpSegmentBytes;
  return std::max(std::min(for_losses, rate_bit_per_s / 8 * 15), 16e6) / 1e6;
}

// Both ways pooled: bytes over the time a byte took on average.
double pooled_goodput_Bps(const LinkProbeResult& r) {
  return 2 / (1 / r.goodput_up_Bps + 1 / r.goodput_down_Bps);
}

}  // namespace

// Both parties' CPUs.
std::vector<int> Validator::all_cpus() const {
  std::vector<int> cpus = endpoints_.server_cpus;
  cpus.insert(cpus.end(), endpoints_.client_cpus.begin(), endpoints_.client_cpus.end());
  return cpus;
}

std::vector<int> Validator::companion_cpus() const {
  for (int c : endpoints_.client_cpus)
    for (int s : endpoints_.server_cpus)
      if (c == s) return {};
  return endpoints_.client_cpus;
}

void Validator::use_loopback(double rate, const std::string& reason) {
  link_info_ = {"loopback (not shaped: " + reason + ")", false, rate, 0};
  endpoints_ = {{}, {}, "127.0.0.1", 29500, endpoints_.server_cpus, endpoints_.client_cpus, {}};
  log_("WARNING: the real runs use loopback 127.0.0.1, NOT shaped (" + reason +
       "); the predictions still assume each variant's rate");
}

void Validator::open_link(double rate) {
  const std::string reason = NetnsLink::unavailable_reason();
  if (!reason.empty()) return use_loopback(rate, reason);
  const int stale = NetnsLink::remove_stale();
  if (stale > 0) log_("removed " + std::to_string(stale) + " stale namespace(s) of dead runs");
  std::string congestion_control = options_.congestion_control;
  if (!congestion_control.empty() && !NetnsLink::congestion_control_available(congestion_control)) {
    log_("notice: this kernel has no TCP " + congestion_control + " (it has " +
         read_ipv4_sysctl("tcp_available_congestion_control") +
         "); the real runs use the namespaces' default, named in the report");
    congestion_control.clear();
  }
  try {
    link_ = std::make_unique<NetnsLink>(rate, options_.shaper, congestion_control);
  } catch (const std::runtime_error& e) {
    // Root with iproute2, but no namespaces or shaping here (a container
    // without the permission, a kernel without htb): as without root.
    const std::string what = e.what();
    return use_loopback(rate, "cannot build the namespace link: " + what.substr(0, what.find('\n')));
  }
  if (link_->congestion_control() != link_->namespace_default())
    log_("notice: this host lets a network namespace default only to " +
         read_ipv4_sysctl("tcp_allowed_congestion_control") + "; exec sets " +
         link_->congestion_control() + " on each of its sockets instead");
  endpoints_.congestion_control = link_->congestion_control();
  endpoints_.server_netns = link_->server_netns();
  endpoints_.client_netns = link_->client_netns();
  endpoints_.server_address = link_->server_address();
  endpoints_.port = 29500;
  log_("link: " + link_->description());
}

void Validator::set_loss(double loss) {
  if (link_) {
    link_->set_loss(loss);
  } else if (loss > 0) {
    throw InputError("$.network.loss_rate",
                     "a lossy link is shaped in network namespaces: run validate as root");
  }
}

void Validator::set_rate(double rate, LinkInfo* info) {
  if (link_) {
    if (link_->rate_bit_per_s() != rate) link_->set_rate(rate);
    link_info_ = {link_->description(), true, rate, NetnsLink::burst_bytes(rate, link_->shaper()),
                  link_->burst_packet_bytes()};
  } else {
    link_info_.rate_bit_per_s = rate;
    endpoints_.port = free_loopback_port();
  }
  if (info != nullptr) *info = link_info_;
}

double Validator::rate_of(const ValidationItem& item) const {
  return options_.link_rate_bit_per_s > 0 ? options_.link_rate_bit_per_s
                                          : item.variant->scenario.network.bandwidth_bit_per_s;
}

// The compute a byte costs at `rate` and what one transfer alone takes,
// measured by the link probe once per rate.
const Validator::ProbedLink& Validator::probe_at(double rate) {
  auto it = probes_.find(rate);
  if (it != probes_.end()) return it->second;
  set_loss(0);  // the link itself; a variant's loss comes on top (measure)
  set_rate(rate, nullptr);
  const double mb = probe_megabytes(rate), kib = probe_single_max_kib(rate);
  log_("link probe at " + format_link_rate(rate) + ": " + std::to_string(static_cast<int>(mb)) +
       " MB each way");
  const double timeout_s = std::min(options_.timeout_s, 60.0);
  nlohmann::json j;
  {
    // The cores as exec's runs will have them: a message's fixed cost is
    // mostly the receiver's wake-up where its core may idle.
    std::optional<AwakeCores> awake;
    if (!options_.let_cores_idle) awake.emplace(all_cpus());
    j = run_process_pair(link_probe_argv(options_.exec_bin, endpoints_, true, mb, kib, timeout_s),
                         link_probe_argv(options_.exec_bin, endpoints_, false, mb, kib, timeout_s),
                         endpoints_, options_.timeout_s, log_);
  }
  const LinkProbeResult r = link_probe_from_json(j);
  PlatformSpec p;
  p.cpu_s_per_byte_sent = r.cpu_s_per_byte_sent;
  p.cpu_s_per_byte_received = r.cpu_s_per_byte_received;
  p.cpu_s_per_message_sent = r.cpu_s_per_message_sent;
  p.cpu_s_per_message_received = r.cpu_s_per_message_received;
  char line[400];
  std::snprintf(line, sizeof line,
                "link probe at %s: compute lost per byte sent %.2f ns (client %.2f, server "
                "%.2f), received %.2f ns (server %.2f, client %.2f); CPU time per byte %.2f "
                "and %.2f ns; compute lost per message sent %.0f us, received %.0f us",
                format_link_rate(rate).c_str(), 1e9 * p.cpu_s_per_byte_sent,
                1e9 * r.client_send_s_per_byte, 1e9 * r.server_send_s_per_byte,
                1e9 * p.cpu_s_per_byte_received, 1e9 * r.server_recv_s_per_byte,
                1e9 * r.client_recv_s_per_byte, 1e9 * r.busy_s_per_byte_sent,
                1e9 * r.busy_s_per_byte_received, 1e6 * p.cpu_s_per_message_sent,
                1e6 * p.cpu_s_per_message_received);
  log_(line);
  const LinkFit& f = r.link;
  if (f.valid() && f.packet_bytes > 0) {
    std::snprintf(line, sizeof line,
                  "link probe at %s: one message alone takes %.0f us + its packets of %lld B "
                  "but the last, less a bucket of %lld B, at %.1f Mbit/s (fit's rms error %.1f%%)",
                  format_link_rate(rate).c_str(), 1e6 * f.latency_s,
                  static_cast<long long>(f.packet_bytes), static_cast<long long>(f.burst_bytes),
                  8e-6 * f.rate_Bps, 100 * f.rms_rel_error);
    log_(line);
  } else if (f.valid()) {
    std::snprintf(line, sizeof line,
                  "link probe at %s: one message alone takes %.0f us + its bytes at %.1f Mbit/s, "
                  "the first %lld B after idle at %.1f Mbit/s (fit's rms error %.1f%%)",
                  format_link_rate(rate).c_str(), 1e6 * f.latency_s, 8e-6 * f.rate_Bps,
                  static_cast<long long>(f.burst_bytes), 8e-6 * f.peak_Bps,
                  100 * f.rms_rel_error);
    log_(line);
  } else {
    log_("link probe at " + format_link_rate(rate) + ": no model of one transfer (" +
         std::to_string(r.single_up.size()) + " message sizes)");
  }
  ProbedLink probed{p, f};
  probed.pooled_goodput_Bps = pooled_goodput_Bps(r);
  if (link_info_.shaped) probed.goodput_fraction = goodput_share(r, rate);
  std::snprintf(line, sizeof line,
                "link probe at %s: a long transfer gets %.1f Mbit/s each way (%.1f, %.1f), "
                "%.1f%% of the rate%s",
                format_link_rate(rate).c_str(),
                8e-6 * std::min(r.goodput_up_Bps, r.goodput_down_Bps), 8e-6 * r.goodput_up_Bps,
                8e-6 * r.goodput_down_Bps, 100 * goodput_share(r, rate),
                link_info_.shaped ? "" : " (loopback: not used)");
  log_(line);
  return probes_.emplace(rate, std::move(probed)).first->second;
}

const Validator::LossyLink& Validator::lossy_link_at(double rate, double loss) {
  const auto key = std::make_pair(rate, loss);
  if (auto it = lossy_links_.find(key); it != lossy_links_.end()) return it->second;
  const ProbedLink& lossless = probe_at(rate);
  set_loss(loss);
  set_rate(rate, nullptr);
  const std::string at = format_link_rate(rate) + " and " + format_percent(loss, 1) + " loss";
  const double mb = loss_probe_megabytes(rate, loss);
  log_("link probe at " + at + ": " + std::to_string(static_cast<int>(mb)) + " MB each way");
  // The long transfer alone: one single message, no two-tensor transfers,
  // a few small messages (their cost comes from the loss-free probe).
  const std::vector<std::string> extra = {"--single-repeats", "1", "--pair-max-kib", "0",
                                          "--small-messages", "10"};
  const double timeout_s = std::max(options_.timeout_s, 60.0);
  nlohmann::json j;
  {
    std::optional<AwakeCores> awake;
    if (!options_.let_cores_idle) awake.emplace(all_cpus());
    j = run_process_pair(
        link_probe_argv(options_.exec_bin, endpoints_, true, mb, 1, timeout_s, extra),
        link_probe_argv(options_.exec_bin, endpoints_, false, mb, 1, timeout_s, extra), endpoints_,
        std::max(options_.timeout_s, 900.0), log_);
  }
  const LinkProbeResult r = link_probe_from_json(j);
  const double lossless_Bps = lossless.pooled_goodput_Bps;
  const double lossy_Bps = pooled_goodput_Bps(r);
  LossyLink lossy;
  lossy.recovery_s = tcp_loss_recovery_from_goodput(lossy_Bps, lossless_Bps, loss);
  lossy.cpu_s_per_byte_sent = r.cpu_s_per_byte_sent;
  lossy.cpu_s_per_byte_received = r.cpu_s_per_byte_received;
  char line[400];
  std::snprintf(line, sizeof line,
                "link probe at %s: a long transfer gets %.1f Mbit/s each way (%.1f, %.1f) against "
                "%.1f without loss: a lost segment costs %.2f ms; compute lost per byte sent "
                "%.2f ns, received %.2f ns (without loss %.2f, %.2f)",
                at.c_str(), 8e-6 * lossy_Bps, 8e-6 * r.goodput_up_Bps, 8e-6 * r.goodput_down_Bps,
                8e-6 * lossless_Bps, 1e3 * lossy.recovery_s, 1e9 * lossy.cpu_s_per_byte_sent,
                1e9 * lossy.cpu_s_per_byte_received, 1e9 * lossless.platform.cpu_s_per_byte_sent,
                1e9 * lossless.platform.cpu_s_per_byte_received);
  log_(line);
  return lossy_links_.emplace(key, lossy).first->second;
}

}  // namespace splitsim
