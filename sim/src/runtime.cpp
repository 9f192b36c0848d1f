#include "runtime.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <initializer_list>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <string>

#include "platform.h"
#include "rounds.h"

namespace splitsim::sim_internal {

namespace sg4 = simgrid::s4u;

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
  // A computation after a wait also pays the platform's wake cost for the
  // time since the party's last one ended (in the last slice).
  void compute(const Instance& in, const Op& op, std::initializer_list<Slice> slices) {
    double total = 0;
    for (const Slice& s : slices) total += s.seconds;
    const bool busy = total > 0;
    if (busy) {
      hold(in);
      ctx_->set_computing(in.party, true);
    }
    const double start = sg4::Engine::get_clock();
    double& until = ctx_->computed_until[static_cast<size_t>(in.party)];
    if (busy && !std::isnan(until)) total += ctx_->plan->platform.wake_cost_s(start - until);
    // The arbiter gives the host to one computation at a time; only host
    // work beside transfers or a co-compute slowdown can change its pace,
    // so without them the computation is a plain wait (cheaper to simulate).
    if (busy && ctx_->plan->platform.any())
      sg4::this_actor::execute(total * kFlopsPerSecond);
    else if (busy)
      sg4::this_actor::sleep_for(total);
    const double end = sg4::Engine::get_clock();
    if (busy) {
      ctx_->set_computing(in.party, false);
      until = end;
    }
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
  bool holding_ = false;         // the party's processor is this stage's (hold, let_go)
};

}  // namespace

void deploy_actors(SimContext* ctx) {
  const Plan& plan = *ctx->plan;
  const Deployment& d = *ctx->deployment;
  const int K = d.stages;
  for (size_t p = 0; p < d.parties.size(); ++p)
    ctx->arbiters.push_back(std::make_unique<HostArbiter>(ctx->options.server_order));
  ctx->computing.assign(d.parties.size(), 0);
  ctx->computed_until.assign(d.parties.size(), std::nan(""));
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
