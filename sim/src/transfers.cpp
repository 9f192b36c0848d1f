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

// One direction of a pair's link: its rate, its latency and the time its
// bytes hold it, loss included.
struct DirectedLink {
  double rate = 0;     // bytes per second
  double latency = 0;  // seconds
  // A lossy link (network.loss_rate): the bytes take their time at the
  // link's rate plus what their lost segments cost (each loss_recovery_s,
  // or the default over the path's round trip), and at least their time at
  // TCP's rate under loss (tcp_loss.h).
  double loss_rate = 0;
  double recovery_s = 0;
  double loss_bound_Bps = 0;

  bool lossy() const { return loss_rate > 0; }
  double wire_s(double bytes) const {
    if (!lossy()) return bytes / rate;
    return std::max(bytes / rate + tcp_loss_delay_s(bytes, loss_rate, recovery_s),
                    bytes / loss_bound_Bps);
  }
};

// The link from party `from` to party `to`: a client's link (party c <
// clients is client c's) sets the pace and the latency of what it sends and
// receives.
DirectedLink directed_link(const Plan& plan, const Deployment& d, int from, int to) {
  const NetworkSpec& net = plan.network;
  const bool from_client = d.parties[static_cast<size_t>(from)].client_role;
  const bool to_client = d.parties[static_cast<size_t>(to)].client_role;
  DirectedLink l;
  l.rate = from_client ? client_up_bytes_per_s(plan, from)
           : to_client ? client_down_bytes_per_s(plan, to)
                       : down_bytes_per_s(net);
  l.latency = from_client ? plan.client_latency_s(from)
              : to_client ? plan.client_latency_s(to)
                          : net.latency_s;
  if (net.loss_rate > 0 && l.latency > 0) {
    l.loss_rate = net.loss_rate;
    l.recovery_s = net.loss_recovery_s > 0 ? net.loss_recovery_s
                                           : tcp_loss_recovery_s(2 * l.latency, net.loss_rate);
    l.loss_bound_Bps = tcp_rate_under_loss_Bps(2 * l.latency, net.loss_rate);
  }
  return l;
}

// A token-bucket shaper (network.burst_bytes) on one direction: the bucket
// refills at the rate while the direction idles, up to the burst. Without a
// packet size the bytes it holds pass at once (or at
// network.burst_peak_bit_per_s, the bucket refilling meanwhile), the rest at
// the rate. With one (network.burst_packet_bytes, htb's whole GSO packets) a
// message goes as packets of that size (htb_paced_bytes), each leaving once
// the bucket is out of debt: the message is across when its last packet may
// leave, and the bucket owes what it sent beyond its tokens. Messages of a
// direction go one after the other, so one bucket per sender.
class ShaperBucket {
 public:
  ShaperBucket(const NetworkSpec& net, double rate)
      : rate_(rate),
        burst_(static_cast<double>(net.burst_bytes)),
        packet_(static_cast<double>(net.burst_packet_bytes)),
        peak_(net.burst_peak_bit_per_s / 8),
        tokens_(burst_) {}

  // No bucket: every byte goes at the rate.
  bool plain() const { return burst_ == 0 && packet_ == 0; }

  // What of a message of `bytes` (its last tensor `last_tensor_bytes`;
  // `queued` behind the one before) sent at `now_s` the rate paces, and
  // how long its carried part takes at the peak rate; the bucket refilled
  // since the last message left and spent.
  std::pair<double, double> take(double bytes, double last_tensor_bytes, bool queued,
                                 double now_s) {
    tokens_ = std::min(burst_, tokens_ + (now_s - idle_since_) * rate_);
    double paced = bytes, burst_s = 0;
    if (packet_ > 0) {
      paced = htb_paced_bytes(bytes, last_tensor_bytes, packet_, tokens_, queued);
      tokens_ += paced - bytes;  // in debt by up to one packet
    } else if (!plain()) {
      // At the peak rate P the bucket refills at the rate r while it
      // drains: it holds out for tokens / (P - r), carrying P / (P - r)
      // bytes per token. Without a peak rate its bytes pass at once.
      double carried = std::min(tokens_, bytes);
      if (peak_ > 0) {
        carried = peak_ > rate_ ? std::min(bytes, tokens_ * peak_ / (peak_ - rate_)) : 0;
        burst_s = carried / peak_;
      }
      paced = bytes - carried;
      // The paced part spends every token as it comes.
      tokens_ = paced > 0 ? 0 : tokens_ + burst_s * rate_ - carried;
    }
    return {paced, burst_s};
  }

  // The message left at `now_s`: the bucket refills from then.
  void sent(double now_s) { idle_since_ = now_s; }

 private:
  double rate_, burst_, packet_, peak_;
  double tokens_;
  double idle_since_ = 0;
};

}  // namespace

void PairSender::run() {
  const PlatformSpec& pf = ctx_->plan->platform;
  sg4::Host* from = ctx_->hosts[static_cast<size_t>(from_)];
  sg4::Host* to = ctx_->hosts[static_cast<size_t>(to_)];
  // Host work by the Plan's party names (a client replica is its party's).
  const std::string& from_party = ctx_->deployment->parties[static_cast<size_t>(from_)].plan_party;
  const std::string& to_party = ctx_->deployment->parties[static_cast<size_t>(to_)].plan_party;
  const DirectedLink link = directed_link(*ctx_->plan, *ctx_->deployment, from_, to_);
  // The shaper's bucket fills at the link's rate, loss or not.
  ShaperBucket bucket(ctx_->plan->network, link.rate);
  // The host work of a message the bucket let pass at once, still running.
  std::vector<sg4::ExecPtr> behind;
  for (;;) {
    pending_->acquire();
    Outgoing o = std::move(queue_.front());
    queue_.pop_front();
    for (const sg4::ExecPtr& work : behind) work->wait();
    behind.clear();
    // A transfer counts from its send being posted, as exec counts it.
    const double start = sg4::Engine::get_clock();
    const double overhead_s = ctx_->plan->network.per_message_overhead_s;
    if (overhead_s > 0) sg4::this_actor::sleep_for(overhead_s);
    const double bytes = static_cast<double>(o.bytes);
    const auto [paced, burst_s] = bucket.take(bytes, static_cast<double>(o.last_tensor_bytes),
                                              o.posted_s < start, sg4::Engine::get_clock());
    // The hosts' work for these bytes (kernel, copies) runs beside the
    // transfer; the message is there when both its bytes and that work are.
    // (The work per message is the stage actors' own: StageActor::call.)
    const double over_s = link.wire_s(paced) + burst_s;
    sg4::ExecPtr send_work = start_host_work(from, pf.sent_s_per_byte(from_party) * bytes, over_s);
    sg4::ExecPtr recv_work = start_host_work(to, pf.received_s_per_byte(to_party) * bytes, over_s);
    if (burst_s > 0) sg4::this_actor::sleep_for(burst_s);
    if (paced > 0 || bucket.plain())
      sg4::Comm::sendto(from, to, static_cast<uint64_t>(std::llround(paced)));
    // Under loss the bytes hold the link for their time at its rate, the
    // rest is the connection waiting out its losses (SimGrid's host-to-host
    // Comm takes no rate of its own).
    if (link.lossy() && paced > 0)
      sg4::this_actor::sleep_for(link.wire_s(paced) - paced / link.rate);
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
    bucket.sent(sent);
    complete_transfer(ctx_, &o, o.posted_s, sent + link.latency);
  }
}

}  // namespace splitsim::sim_internal
