#include "rounds.h"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>

#include "platform.h"

namespace sg4 = simgrid::s4u;

namespace splitsim::sim_internal {

Rounds::Rounds(SimContext* ctx) : ctx_(ctx) {
  const Plan& plan = *ctx->plan;
  const Deployment& d = *ctx->deployment;
  n_ = d.clients;
  stages_ = d.stages;
  batches_ = plan.iterations;
  bytes_ = plan.client_part_bytes();
  for (int k = 0; k < stages_; ++k) {
    if (!is_server_stage(k)) continue;
    if (server_stages_++ == 0) server_ = d.instances[d.instance(k, 0)].party;
  }
  go_.resize(static_cast<size_t>(n_));
  server_turn_.resize(static_cast<size_t>(n_));
  wake_ = sg4::Semaphore::create(0);
}

bool Rounds::is_server_stage(int stage) const {
  const Plan& plan = *ctx_->plan;
  return plan.stages[static_cast<size_t>(stage)].party != plan.stages.front().party;
}

bool Rounds::averages_after(int64_t b) const {
  return ctx_->plan->training != "vanilla" && (b + 1) % ctx_->plan->aggregate_every == 0;
}

void Rounds::wait_for(Inbox* inbox) {
  const Message m = inbox->take();
  if (m.arrival_s > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(m.arrival_s);
}

void Rounds::before_batch(const Instance& in, int64_t b) {
  const bool vanilla = ctx_->plan->training == "vanilla";
  if (in.stage == 0) {
    if (vanilla ? n_ > 1 && (b > 0 || in.client > 0) : b > 0 && averages_after(b - 1))
      wait_for(&go_[static_cast<size_t>(in.client)]);
  }
  if (ctx_->plan->training == "splitfed_v2" && n_ > 1 && is_server_stage(in.stage) &&
      (b > 0 || in.client > 0))
    wait_for(&server_turn_[static_cast<size_t>(in.client)]);
}

void Rounds::after_batch(const Instance& in, int64_t b) {
  const int c = in.client;
  const int next = (c + 1) % n_;
  const int64_t next_batch = next == 0 ? b + 1 : b;
  if (ctx_->plan->training == "splitfed_v2" && n_ > 1 && is_server_stage(in.stage) &&
      ++server_updated_[{c, b}] == server_stages_ && next_batch < batches_) {
    for (int s = 0; s < server_stages_; ++s)
      server_turn_[static_cast<size_t>(next)].deliver({b, -1, sg4::Engine::get_clock()});
  }
  if (++updated_[{c, b}] < stages_) return;
  // Client c's batch b is over: its client part goes to the server.
  const int client_party = ctx_->deployment->instances[ctx_->deployment->instance(0, c)].party;
  const bool vanilla = ctx_->plan->training == "vanilla";
  if (vanilla ? n_ > 1 && next_batch < batches_ : averages_after(b))
    post_weights(client_party, server_, c, b, &uploads_);
}

void Rounds::after_last(const Instance& in) {
  if (in.stage == 0 && averages_after(batches_ - 1)) wait_for(&go_[static_cast<size_t>(in.client)]);
}

void Rounds::post_weights(int from, int to, int client, int64_t batch, Inbox* inbox) {
  Outgoing o;
  o.message = {batch, -1};
  o.inbox = inbox;
  o.bytes = bytes_;
  o.last_tensor_bytes = bytes_;
  o.send.kind = EventKind::kSend;
  o.send.party = from;
  o.send.peer = to;
  o.send.stage = -1;
  o.send.boundary = -1;
  o.send.client = client;
  o.send.batch = batch;
  o.send.microbatch = -1;
  o.send.bytes = bytes_;
  ctx_->senders.at({from, to})->post(std::move(o));
}

void Rounds::average(int64_t b) {
  const Plan& plan = *ctx_->plan;
  int64_t bytes = bytes_;
  if (plan.training == "splitfed_v1") bytes += plan.server_part_bytes();
  // Each client's copy read once, the average written once.
  const double seconds =
      static_cast<double>(n_ + 1) * static_cast<double>(bytes) * plan.average_s_per_byte;
  if (!(seconds > 0)) return;
  HostArbiter& host = *ctx_->arbiters[static_cast<size_t>(server_)];
  host.acquire(-1, wake_.get());
  ctx_->set_computing(server_, true);
  const double start = sg4::Engine::get_clock();
  if (plan.platform.any())
    sg4::this_actor::execute(seconds * kFlopsPerSecond);
  else
    sg4::this_actor::sleep_for(seconds);
  ctx_->set_computing(server_, false);
  ctx_->timeline->events.push_back(average_event(server_, b, start, sg4::Engine::get_clock()));
  host.release();
}

void Rounds::serve() {
  const Deployment& d = *ctx_->deployment;
  auto party_of = [&d](int c) { return d.instances[d.instance(0, c)].party; };
  if (ctx_->plan->training == "vanilla") {
    if (n_ < 2) return;
    // Client c hands batch b on to client c + 1 (client 0 to batch b + 1).
    for (int64_t b = 0; b < batches_; ++b)
      for (int c = 0; c < n_ && (c + 1 < n_ || b + 1 < batches_); ++c) {
        wait_for(&uploads_);
        const int next = (c + 1) % n_;
        post_weights(server_, party_of(next), next, b, &go_[static_cast<size_t>(next)]);
      }
    return;
  }
  for (int64_t b = 0; b < batches_; ++b) {
    if (!averages_after(b)) continue;
    for (int c = 0; c < n_; ++c) wait_for(&uploads_);
    average(b);
    for (int c = 0; c < n_; ++c)
      post_weights(server_, party_of(c), c, b, &go_[static_cast<size_t>(c)]);
  }
}

}  // namespace splitsim::sim_internal
