// The transfers of one simulation: the stages' inboxes and one sender per
// directed pair of parties that pushes their bytes through the network
// (runtime.h: Inbox, PairSender, complete_transfer).
#include <algorithm>
#include <cmath>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <string>
#include <utility>
#include <vector>

#include "platform.h"
#include "runtime.h"
#include "splitsim/costmodel/link_fit.h"
#include "splitsim/costmodel/tcp_loss.h"

namespace splitsim::sim_internal {

namespace sg4 = simgrid::s4u;
Inbox::Inbox() : ready_(sg4::Semaphore::create(0)) {}

void Inbox::deliver(const Message& m) {
  queue_.push_back(m);
  ready_->release();
}

Message Inbox::take() {
  ready_->acquire();
  const Message m = queue_.front();
  queue_.pop_front();
  return m;
}

void complete_transfer(SimContext* ctx, Outgoing* o, double start_s, double arrival_s) {
  TimelineEvent send = o->send;
  send.start_s = start_s;
  send.end_s = arrival_s;
  TimelineEvent recv = send;
  recv.kind = EventKind::kRecv;
  std::swap(recv.party, recv.peer);
  // A stage's tensor goes to the next stage (or the previous); weights
  // (boundary -1) are no stage's.
  if (send.boundary >= 0) recv.stage = send.backward ? send.stage - 1 : send.stage + 1;
  ctx->timeline->events.push_back(send);
  ctx->timeline->events.push_back(recv);
  o->message.arrival_s = arrival_s;
  o->inbox->deliver(o->message);
}

PairSender::PairSender(SimContext* ctx, int from_party, int to_party)
    : ctx_(ctx), from_(from_party), to_(to_party), pending_(sg4::Semaphore::create(0)) {}

void PairSender::post(Outgoing o) {
  o.posted_s = sg4::Engine::get_clock();
  queue_.push_back(std::move(o));
  pending_->release();
}

namespace {

// The sharing weight of host work that keeps pace with its transfer: the
// kernel's network work runs in interrupt context and preempts a training
// thread, so beside one computation it takes all it asks for (its bound, a
// fraction f < 1 of the host) and the computation the rest, 1 - f. At
// weight 1 max-min sharing would give each half, holding the work to half
// the host and its message back when f > 1/2.
constexpr double kPacedHostWorkPriority = 1000;

// Starts `seconds` of CPU work on `host`, spread over `over_s` (its rate
// bounded to seconds / over_s of the host) so that it competes with the
// host's compute while the transfer runs. Work that cannot keep pace
// (seconds >= over_s) is what the kernel hands to a thread of its own
// (ksoftirqd), which shares the host evenly: it keeps weight 1. Null when
// there is no work.
sg4::ExecPtr start_host_work(sg4::Host* host, double seconds, double over_s) {
  if (!(seconds > 0)) return nullptr;
  const double flops = seconds * kFlopsPerSecond;
  sg4::ExecPtr work = sg4::Exec::init()->set_flops_amount(flops)->set_host(host);
  if (over_s > seconds) work->set_bound(flops / over_s)->set_priority(kPacedHostWorkPriority);
  work->start();
  return work;
}

}  // namespace

void PairSender::run() {
  const NetworkSpec& net = ctx_->plan->network;
  const PlatformSpec& pf = ctx_->plan->platform;
  sg4::Host* from = ctx_->hosts[from_];
  sg4::Host* to = ctx_->hosts[to_];
  // Host work by the Plan's party names (a client replica is its party's).
  const std::string& from_party = ctx_->deployment->parties[from_].plan_party;
  const std::string& to_party = ctx_->deployment->parties[to_].plan_party;
  // A client's link (party c < clients is client c's) sets the pace and the
  // latency of what it sends and receives.
  const Deployment& d = *ctx_->deployment;
  const bool from_client = d.parties[from_].client_role, to_client = d.parties[to_].client_role;
  const double rate = from_client ? client_up_bytes_per_s(*ctx_->plan, from_)
                      : to_client ? client_down_bytes_per_s(*ctx_->plan, to_)
                                  : down_bytes_per_s(net);
  const double latency = from_client ? ctx_->plan->client_latency_s(from_)
                         : to_client ? ctx_->plan->client_latency_s(to_)
                                     : net.latency_s;
  // A lossy link (network.loss_rate): the bytes take their time at the
  // link's rate plus what their lost segments cost (each loss_recovery_s,
  // or the default over the path's round trip), and at least their time at
  // TCP's rate under loss (tcp_loss.h); the shaper's bucket still fills at
  // the link's rate.
  const bool lossy = net.loss_rate > 0 && latency > 0;
  const double recovery_s = net.loss_recovery_s > 0
                                ? net.loss_recovery_s
                                : tcp_loss_recovery_s(2 * latency, net.loss_rate);
  const double loss_bound_Bps = lossy ? tcp_rate_under_loss_Bps(2 * latency, net.loss_rate) : rate;
  const auto wire_s = [&](double bytes) {
    if (!lossy) return bytes / rate;
    return std::max(bytes / rate + tcp_loss_delay_s(bytes, net.loss_rate, recovery_s),
                    bytes / loss_bound_Bps);
  };
  // A token-bucket shaper (network.burst_bytes): the bucket refills at the
  // rate while this direction idles, up to the burst. Without a packet size
  // the bytes it holds pass at once (or at network.burst_peak_bit_per_s,
  // the bucket refilling meanwhile), the rest at the rate. With one
  // (network.burst_packet_bytes, htb's whole GSO packets) a message goes as
  // packets of that size (htb_paced_bytes), each leaving once the bucket is
  // out of debt: the message is across when its last packet may leave, and
  // the bucket owes what it sent beyond its tokens. A transfer counts from
  // its send being posted, as exec counts it. Messages of a direction go one
  // after the other, so one bucket per sender.
  const double burst = static_cast<double>(net.burst_bytes);
  const double packet = static_cast<double>(net.burst_packet_bytes);
  const double peak = net.burst_peak_bit_per_s / 8;
  const bool plain = burst == 0 && packet == 0;
  double tokens = burst;
  double idle_since = 0;
  // The host work of a message the bucket let pass at once, still running.
  std::vector<sg4::ExecPtr> behind;
  for (;;) {
    pending_->acquire();
    Outgoing o = std::move(queue_.front());
    queue_.pop_front();
    for (const sg4::ExecPtr& work : behind) work->wait();
    behind.clear();
    const double start = sg4::Engine::get_clock();
    if (net.per_message_overhead_s > 0) sg4::this_actor::sleep_for(net.per_message_overhead_s);
    const double bytes = static_cast<double>(o.bytes);
    tokens = std::min(burst, tokens + (sg4::Engine::get_clock() - idle_since) * rate);
    double paced = bytes, burst_s = 0;
    if (packet > 0) {
      paced = htb_paced_bytes(bytes, static_cast<double>(o.last_tensor_bytes), packet, tokens,
                              o.posted_s < start);
      tokens += paced - bytes;  // in debt by up to one packet
    } else if (!plain) {
      // At the peak rate P the bucket refills at the rate r while it
      // drains: it holds out for tokens / (P - r), carrying P / (P - r)
      // bytes per token. Without a peak rate its bytes pass at once.
      double carried = std::min(tokens, bytes);
      if (peak > 0) {
        carried = peak > rate ? std::min(bytes, tokens * peak / (peak - rate)) : 0;
        burst_s = carried / peak;
      }
      paced = bytes - carried;
      // The paced part spends every token as it comes.
      tokens = paced > 0 ? 0 : tokens + burst_s * rate - carried;
    }
    // The hosts' work for these bytes (kernel, copies) runs beside the
    // transfer; the message is there when both its bytes and that work are.
    // (The work per message is the stage actors' own: StageActor::call.)
    const double over_s = wire_s(paced) + burst_s;
    sg4::ExecPtr send_work = start_host_work(from, pf.sent_s_per_byte(from_party) * bytes, over_s);
    sg4::ExecPtr recv_work = start_host_work(to, pf.received_s_per_byte(to_party) * bytes, over_s);
    if (burst_s > 0) sg4::this_actor::sleep_for(burst_s);
    if (paced > 0 || plain) sg4::Comm::sendto(from, to, static_cast<uint64_t>(std::llround(paced)));
    // Under loss the bytes hold the link for their time at its rate, the
    // rest is the connection waiting out its losses (SimGrid's host-to-host
    // Comm takes no rate of its own).
    if (lossy && paced > 0) sg4::this_actor::sleep_for(wire_s(paced) - paced / rate);
    // Where the link paces the message, it is there once its host work
    // kept pace. A message of one tensor the bucket lets pass at once is
    // there at once: the probe's time of such a message is flat in its size
    // (0.08-0.1 ms from 1 to 55 kB at 300 Mbit/s, exec/validate/README.md
    // "One transfer"), so its work per byte, compute the hosts lose, is no
    // wait in series; it runs on beside what follows, and the next message
    // waits for it. A tensor after others (a quantizer's scale after its
    // data) is held until their work is done: the probe's two-tensor
    // transfers grow with the data's bytes (0.1 ms at 1 kB, 0.27-0.33 ms at
    // 32 kB) where a single message does not.
    const bool tail_waits = o.last_tensor_bytes < o.bytes;
    for (const sg4::ExecPtr& work : {send_work, recv_work}) {
      if (!work) continue;
      if (over_s > 0 || tail_waits)
        work->wait();
      else
        behind.push_back(work);
    }
    const double sent = sg4::Engine::get_clock();
    idle_since = sent;
    complete_transfer(ctx_, &o, o.posted_s, sent + latency);
  }
}

}  // namespace splitsim::sim_internal
