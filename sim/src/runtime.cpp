#include "runtime.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <initializer_list>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <string>

#include "platform.h"
#include "rounds.h"
#include "splitsim/costmodel/link_fit.h"

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
    const double over_s = paced / rate + burst_s;
    sg4::ExecPtr send_work = start_host_work(from, pf.sent_s_per_byte(from_party) * bytes, over_s);
    sg4::ExecPtr recv_work = start_host_work(to, pf.received_s_per_byte(to_party) * bytes, over_s);
    if (burst_s > 0) sg4::this_actor::sleep_for(burst_s);
    if (paced > 0 || plain) sg4::Comm::sendto(from, to, static_cast<uint64_t>(std::llround(paced)));
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

void SimContext::set_computing(int party, bool on) {
  computing[static_cast<size_t>(party)] = on ? 1 : 0;
  const PlatformSpec& pf = plan->platform;
  if (!pf.shared_machine || pf.co_compute_slowdown == 1.0) return;
  int n = 0;
  for (int c : computing) n += c;
  for (size_t p = 0; p < computing.size(); ++p) {
    const unsigned long want = computing[p] != 0 && n >= 2 ? 1 : 0;
    if (hosts[p]->get_pstate() != want) hosts[p]->set_pstate(want);
  }
}

namespace {

// One part of a compute interval, laid end to end with the others.
struct Slice {
  EventKind kind;
  double seconds;
  int boundary = -1;
  bool backward = false;
};

// The actor of one (client, stage) instance: runs the stage's ops in order.
class StageActor {
 public:
  StageActor(SimContext* ctx, int instance) : ctx_(ctx), id_(instance) {}

  void operator()() {
    const Instance& in = ctx_->deployment->instances[id_];
    wake_ = sg4::Semaphore::create(0);
    turn_wake_ = sg4::Semaphore::create(0);
    const auto turn = ctx_->turns.find({in.party, in.client});
    Turnstile* turnstile = turn == ctx_->turns.end() ? nullptr : turn->second.get();
    Rounds* rounds = ctx_->rounds.get();
    int64_t batch = -1;
    for (const Op& op : ctx_->ops[in.stage]) {
      if (rounds != nullptr && op.batch != batch) rounds->before_batch(in, op.batch);
      batch = op.batch;
      if (turnstile != nullptr) turnstile->wait(in.stage, turn_wake_.get());
      run(in, op);
      if (turnstile != nullptr) turnstile->pass();
      if (rounds != nullptr && op.kind == OpKind::kUpdate) rounds->after_batch(in, op.batch);
    }
    if (rounds != nullptr) rounds->after_last(in);
  }

 private:
  // One op of the stage's order.
  void run(const Instance& in, const Op& op) {
    switch (op.kind) {
      case OpKind::kForward:
        forward(in, op);
        break;
      case OpKind::kBackward:
        backward(in, op);
        break;
      case OpKind::kWeight:
        compute(
            in, op,
            {{EventKind::kWeight,
              ctx_->plan->weight_pass_s(in.stage, in.client, static_cast<size_t>(op.microbatch))}});
        let_go(in);
        break;
      case OpKind::kUpdate:
        compute(in, op, {{EventKind::kUpdate, ctx_->plan->update_s(in.stage, in.client)}});
        let_go(in);
        break;
      case OpKind::kBarrier:
        ctx_->barriers[in.client]->wait();
        break;
    }
  }

  void forward(const Instance& in, const Op& op) {
    const Plan& plan = *ctx_->plan;
    const int k = in.stage, K = static_cast<int>(plan.stages.size());
    const size_t i = static_cast<size_t>(op.microbatch);
    if (k > 0) {
      receive_call(in, k - 1, false);
      expect(ctx_->fwd_inbox[id_].take(), op);
    }
    const PassSeconds pass = plan.forward_pass(k, in.client, i);
    compute(in, op,
            {{EventKind::kDecode, pass.decode, k - 1, false},
             {EventKind::kForward, pass.model},
             {EventKind::kEncode, pass.encode, k, false}});
    if (k + 1 < K) send(in, op, k, false);
    let_go(in);
  }

  void backward(const Instance& in, const Op& op) {
    const Plan& plan = *ctx_->plan;
    const int k = in.stage, K = static_cast<int>(plan.stages.size());
    const size_t i = static_cast<size_t>(op.microbatch);
    // A gradient nobody needs is neither sent nor waited for
    // (PlanBoundary::needs_gradient); its codec seconds are 0 in the plan.
    const bool gradient_in = k + 1 < K && plan.boundaries[k].needs_gradient;
    const bool gradient_out = k > 0 && plan.boundaries[k - 1].needs_gradient;
    if (gradient_in) {
      receive_call(in, k, true);
      expect(ctx_->bwd_inbox[id_].take(), op);
    }
    // fr: the stage's forward again, without the codec work.
    const double replay =
        plan.schedule == Schedule::kFr ? plan.forward_pass(k, in.client, i).model : 0.0;
    const PassSeconds pass = plan.backward_pass(k, in.client, i);
    // zb_h1: the weight gradients are the W op's.
    const double model = std::max(0.0, pass.model - plan.weight_pass_s(k, in.client, i));
    compute(in, op,
            {{EventKind::kRecompute, replay},
             {EventKind::kDecode, pass.decode, k, true},
             {EventKind::kBackward, model},
             {EventKind::kEncode, pass.encode, k - 1, true}});
    if (gradient_out) send(in, op, k - 1, true);
    let_go(in);
  }

  // The party's processor, given to one stage at a time (HostArbiter): a
  // stage holds it for a computation and for the transport calls that go
  // with it, and lets it go at the end of the op.
  void hold(const Instance& in) {
    if (holding_) return;
    ctx_->arbiters[in.party]->acquire(in.client, wake_.get());
    holding_ = true;
  }
  void let_go(const Instance& in) {
    if (!holding_) return;
    ctx_->arbiters[in.party]->release();
    holding_ = false;
  }

  // The transport's work per message runs on the stage's own actor, in its
  // turn on the processor, as exec's stage thread makes the calls itself
  // while it holds the party's processor: the send of each tensor right
  // after the encode (the bytes start at once), the posting of each receive
  // (its buffers, its waiter) before the stage takes it. It is not compute:
  // no event, no busy time; the other stage's computation waits for it as
  // for any turn, and host work beside transfers shares the host with it.
  void call(const Instance& in, double seconds) {
    if (!(seconds > 0)) return;
    hold(in);
    sg4::this_actor::execute(seconds * kFlopsPerSecond);
  }

  void receive_call(const Instance& in, int boundary, bool backward) {
    const Deployment& d = *ctx_->deployment;
    if (d.channels[d.channel(in.client, boundary, backward)].local) return;
    call(in, ctx_->plan->platform.cpu_s_per_message_received);
    let_go(in);
  }

  // Waits until the message has arrived (its latency has passed).
  static void expect(const Message& m, const Op& op) {
    assert(m.batch == op.batch && m.microbatch == op.microbatch);
    (void)op;
    if (m.arrival_s > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(m.arrival_s);
  }

  // Runs the slices back to back as one execution on the instance's host
  // (held from then on until let_go) and records one event per slice of
  // non-zero length (the main kind always).
  void compute(const Instance& in, const Op& op, std::initializer_list<Slice> slices) {
    double total = 0;
    for (const Slice& s : slices) total += s.seconds;
    const bool busy = total > 0;
    if (busy) {
      hold(in);
      ctx_->set_computing(in.party, true);
    }
    const double start = sg4::Engine::get_clock();
    // The arbiter gives the host to one computation at a time; only host
    // work beside transfers or a co-compute slowdown can change its pace,
    // so without them the computation is a plain wait (cheaper to simulate).
    if (busy && ctx_->plan->platform.any())
      sg4::this_actor::execute(total * kFlopsPerSecond);
    else if (busy)
      sg4::this_actor::sleep_for(total);
    const double end = sg4::Engine::get_clock();
    if (busy) ctx_->set_computing(in.party, false);
    auto recorded = [](const Slice& s) {
      return s.seconds > 0 || (s.kind != EventKind::kEncode && s.kind != EventKind::kDecode &&
                               s.kind != EventKind::kRecompute);
    };
    const Slice* last = nullptr;
    for (const Slice& s : slices)
      if (recorded(s)) last = &s;
    double t = start;
    for (const Slice& s : slices) {
      if (!recorded(s)) continue;
      TimelineEvent e = base(in, op);
      e.kind = s.kind;
      e.boundary = s.boundary;
      e.backward = s.backward ? 1 : 0;
      e.start_s = t;
      t = &s == last ? end : std::min(end, t + s.seconds);
      e.end_s = t;
      ctx_->timeline->events.push_back(e);
    }
  }

  void send(const Instance& in, const Op& op, int boundary, bool backward) {
    const Deployment& d = *ctx_->deployment;
    const Channel& ch = d.channels[d.channel(in.client, boundary, backward)];
    Inbox* inbox = backward ? &ctx_->bwd_inbox[ch.to] : &ctx_->fwd_inbox[ch.to];
    const Message msg{op.batch, op.microbatch};
    if (ch.local) {
      inbox->deliver(msg);
      return;
    }
    const PlanTransfer& t = backward ? ctx_->plan->boundaries[boundary].backward
                                     : ctx_->plan->boundaries[boundary].forward;
    Outgoing o;
    o.message = msg;
    o.inbox = inbox;
    o.bytes = t.wire_bytes[static_cast<size_t>(op.microbatch)];
    o.messages = t.wire_messages;
    o.last_tensor_bytes = t.last_tensor_bytes.empty()
                              ? o.bytes
                              : t.last_tensor_bytes[static_cast<size_t>(op.microbatch)];
    o.send = base(in, op);
    o.send.kind = EventKind::kSend;
    o.send.peer = d.instances[ch.to].party;
    o.send.boundary = boundary;
    o.send.backward = backward ? 1 : 0;
    o.send.bytes = o.bytes;
    const double call_s =
        ctx_->plan->platform.cpu_s_per_message_sent * static_cast<double>(o.messages);
    ctx_->senders.at({in.party, o.send.peer})->post(std::move(o));
    call(in, call_s);  // the bytes leave while the sender's call runs, as a send's first write
  }

  TimelineEvent base(const Instance& in, const Op& op) const {
    TimelineEvent e;
    e.party = in.party;
    e.stage = in.stage;
    e.client = in.client;
    e.batch = op.batch;
    e.microbatch = op.microbatch;
    return e;
  }

  SimContext* ctx_;
  int id_;
  sg4::SemaphorePtr wake_;
  sg4::SemaphorePtr turn_wake_;  // interleaved_1f1b: the party's turn came
  bool holding_ = false;  // the party's processor is this stage's (hold, let_go)
};

}  // namespace

void deploy_actors(SimContext* ctx) {
  const Plan& plan = *ctx->plan;
  const Deployment& d = *ctx->deployment;
  const int K = d.stages;
  for (size_t p = 0; p < d.parties.size(); ++p)
    ctx->arbiters.push_back(std::make_unique<HostArbiter>(ctx->options.server_order));
  ctx->computing.assign(d.parties.size(), 0);
  ctx->fwd_inbox.resize(d.instances.size());
  ctx->bwd_inbox.resize(d.instances.size());
  for (int k = 0; k < K; ++k)
    ctx->ops.push_back(stage_ops(
        plan.schedule, k, K, plan.chunks(),
        plan.iterations + cooldown_batches(plan.schedule, K, plan.chunks()), plan.virtual_stages));
  if (plan.schedule == Schedule::kInterleaved1F1B) {
    const int p = K / plan.virtual_stages;
    for (const Instance& in : d.instances) {
      auto& turn = ctx->turns[{in.party, in.client}];
      if (turn) continue;
      std::vector<int> stages;
      for (const StageOp& s :
           device_ops(in.stage % p, p, plan.virtual_stages, plan.chunks(), plan.iterations))
        stages.push_back(s.stage);
      turn = std::make_unique<Turnstile>(std::move(stages));
    }
  }
  if (has_iteration_barrier(plan.schedule))
    for (int c = 0; c < d.clients; ++c) ctx->barriers.push_back(sg4::Barrier::create(K));
  for (const Channel& ch : d.channels) {
    if (ch.local) continue;
    const int a = d.instances[ch.from].party, b = d.instances[ch.to].party;
    auto& sender = ctx->senders[{a, b}];
    if (sender) continue;
    sender = std::make_unique<PairSender>(ctx, a, b);
    PairSender* raw = sender.get();
    sg4::Actor::create("send " + d.parties[a].name + "->" + d.parties[b].name, ctx->hosts[a],
                       [raw] { raw->run(); })
        ->daemonize();
  }
  if (plan.synchronised()) {
    ctx->rounds = std::make_shared<Rounds>(ctx);
    Rounds* raw = ctx->rounds.get();
    sg4::Actor::create("rounds", ctx->hosts[raw->server_party()], [raw] { raw->serve(); });
  }
  for (size_t i = 0; i < d.instances.size(); ++i) {
    const Instance& in = d.instances[i];
    sg4::Actor::create("stage" + std::to_string(in.stage) + " client" + std::to_string(in.client),
                       ctx->hosts[in.party], StageActor(ctx, static_cast<int>(i)));
  }
}

}  // namespace splitsim::sim_internal
