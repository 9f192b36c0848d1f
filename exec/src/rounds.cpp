#include "rounds.h"

#include <stdexcept>
#include <string>

#include "party_context.h"

namespace splitsim::exec_internal {
namespace {

// Past every stage's tag (< 2^26) and the session's ((1 << 26) + small).
constexpr int kTagBase = 1 << 27;

// The tensors end to end in one CPU tensor (all of one dtype: the
// parameters are FP32 under every compute precision).
torch::Tensor flatten(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> flat;
  for (const auto& p : params) flat.push_back(p.detach().reshape({-1}).to(torch::kCPU));
  return flat.empty() ? torch::empty({0}) : torch::cat(flat);
}

void unflatten(const torch::Tensor& weights, const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  int64_t at = 0;
  for (const auto& p : params) {
    p.detach().copy_(weights.narrow(0, at, p.numel()).view(p.sizes()));
    at += p.numel();
  }
}

}  // namespace

Rounds::Rounds(PartyContext& ctx) : ctx_(ctx) {
  const Plan& plan = *ctx.plan;
  const ExecTopology& topo = *ctx.topo;
  n_ = topo.clients;
  batches_ = ctx.batches;
  bytes_ = plan.client_part_bytes();
  for (int k = 0; k < topo.stages; ++k) {
    if (!is_server_stage(k)) {
      ++client_stages_;
      continue;
    }
    if (server_stages_++ == 0) {
      server_rank_ = topo.rank_of(k, 0);
      server_party_ = topo.party_of(k, 0);
    }
  }
  serves_ = ctx.rank == server_rank_;
  // What moves is what the plan counts (Plan::client_part_bytes()).
  for (int c = 0; c < n_; ++c) {
    if (topo.rank_of(0, c) != ctx.rank) continue;
    int64_t held = 0;
    bool fp32 = true;
    for (const auto& p : client_params(c)) {
      held += static_cast<int64_t>(p.nbytes());
      fp32 = fp32 && p.scalar_type() == torch::kFloat32;
    }
    if (held != bytes_ || !fp32)
      throw std::logic_error("client " + std::to_string(c) + "'s part holds " +
                             std::to_string(held) +
                             " B of trainable parameters and buffers; the plan counts " +
                             std::to_string(bytes_) + " (FP32 weights move between rounds)");
  }
}

bool Rounds::vanilla() const { return ctx_.plan->training == "vanilla"; }

bool Rounds::averages_after(int64_t b) const {
  return !vanilla() && (b + 1) % ctx_.plan->aggregate_every == 0;
}

bool Rounds::is_server_stage(int stage) const {
  const Plan& plan = *ctx_.plan;
  return plan.stages[static_cast<size_t>(stage)].party != plan.stages.front().party;
}

bool Rounds::shares_server_part() const {
  return n_ > 1 && (vanilla() || ctx_.plan->training == "splitfed_v2");
}

int Rounds::client_rank(int client) const { return ctx_.topo->rank_of(0, client); }

std::vector<torch::Tensor> Rounds::state_of(int client, bool server) const {
  std::vector<torch::Tensor> out;
  for (int k = 0; k < ctx_.topo->stages; ++k) {
    if (is_server_stage(k) != server) continue;
    StageParts& parts = ctx_.parts(k, client);
    for (const auto& p : parts.params)
      if (p.requires_grad()) out.push_back(p);
    const SplitModel& model = ctx_.model_of(k, client);
    for (int u = parts.first_unit; u <= parts.last_unit; ++u)
      for (const auto& b : model.units[static_cast<size_t>(u)]->buffers())
        if (b.is_floating_point()) out.push_back(b);
  }
  return out;
}

std::vector<torch::Tensor> Rounds::client_params(int client) const {
  return state_of(client, false);
}

std::vector<std::vector<torch::Tensor>> Rounds::server_params() const {
  std::vector<std::vector<torch::Tensor>> out;
  for (int c = 0; c < n_; ++c) out.push_back(state_of(c, true));
  return out;
}

int Rounds::tag(int64_t batch, bool down, int client) const {
  const int64_t t = (batch * 2 + (down ? 1 : 0)) * n_ + client;
  return kTagBase + static_cast<int>(t % (int64_t{1} << 26));
}

void Rounds::record(InstanceResult* out, EventKind kind, int party, int peer, int client,
                    int64_t batch, int64_t bytes, double t0, double t1) const {
  TimelineEvent e;
  e.kind = kind;
  e.party = party;
  e.peer = peer;
  e.stage = -1;
  e.boundary = -1;
  e.client = client;
  e.batch = batch;
  e.microbatch = -1;
  e.bytes = bytes;
  e.start_s = t0;
  e.end_s = t1;
  out->events.push_back(e);
}

void Rounds::transfer(const torch::Tensor& weights, int to_rank, int client, int64_t batch,
                      bool down, InstanceResult* out) {
  std::shared_ptr<Transfer> t;
  double t0 = 0;
  {
    std::lock_guard<std::mutex> lock(ctx_.compute);  // the send call is the party's work
    t0 = ctx_.now_s();
    t = ctx_.transport->send({weights}, to_rank, tag(batch, down, client));
  }
  t->wait(ctx_.options.timeout);
  const int from = down ? server_party_ : ctx_.topo->party_of(0, client);
  const int to = down ? ctx_.topo->party_of(0, client) : server_party_;
  record(out, EventKind::kSend, from, to, client, batch, static_cast<int64_t>(weights.nbytes()), t0,
         ctx_.seconds_at(t->completed_at()));
}

torch::Tensor Rounds::receive(int from_rank, int client, int64_t batch, bool down,
                              InstanceResult* out) {
  torch::Tensor weights = torch::empty({bytes_ / 4}, torch::kFloat32);
  const double t0 = ctx_.now_s();
  auto t = ctx_.transport->recv({weights}, from_rank, tag(batch, down, client));
  t->wait(ctx_.options.timeout);
  const int from = down ? server_party_ : ctx_.topo->party_of(0, client);
  const int to = down ? ctx_.topo->party_of(0, client) : server_party_;
  record(out, EventKind::kRecv, to, from, client, batch, static_cast<int64_t>(weights.nbytes()), t0,
         ctx_.seconds_at(t->completed_at()));
  return weights;
}

void Rounds::load(int client, int64_t batch, InstanceResult* out) {
  const torch::Tensor weights = receive(server_rank_, client, batch, true, out);
  std::lock_guard<std::mutex> lock(ctx_.compute);
  unflatten(weights.to(ctx_.device), client_params(client));
}

void Rounds::before_batch(int stage, int client, int64_t b, InstanceResult* out) {
  if (stage == 0) {
    if (vanilla() ? n_ > 1 && (b > 0 || client > 0) : b > 0 && averages_after(b - 1))
      load(client, vanilla() && client > 0 ? b : b - 1, out);
    return;
  }
  if (!is_server_stage(stage) || !shares_server_part()) return;
  std::unique_lock<std::mutex> lock(mutex_);
  const int64_t mine = b * n_ + client;
  if (!cv_.wait_for(lock, ctx_.options.timeout, [&] { return failed_ || server_turn_ >= mine; }))
    throw std::runtime_error("the server part's turn for client " + std::to_string(client) +
                             ", batch " + std::to_string(b) + " did not come within the timeout");
  if (failed_) throw std::runtime_error("another instance of this party failed");
}

void Rounds::after_batch(int stage, int client, int64_t b, InstanceResult* out) {
  if (is_server_stage(stage)) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (++server_updated_[{client, b}] == server_stages_) {
      server_turn_ = std::max(server_turn_, b * n_ + client + 1);
      cv_.notify_all();
    }
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (++client_updated_[{client, b}] < client_stages_) return;
    client_updated_.erase({client, b});
  }
  const int64_t next_batch = client + 1 == n_ ? b + 1 : b;
  if (vanilla() ? n_ > 1 && next_batch < batches_ : averages_after(b)) {
    torch::Tensor weights;
    {
      std::lock_guard<std::mutex> lock(ctx_.compute);
      weights = flatten(client_params(client));
    }
    transfer(weights, server_rank_, client, b, false, out);
  }
}

void Rounds::after_last(int stage, int client, InstanceResult* out) {
  if (stage == 0 && averages_after(batches_ - 1)) load(client, batches_ - 1, out);
}

void Rounds::wait_server_updates(int64_t b) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto all = [&] {
    if (failed_) return true;
    for (int c = 0; c < n_; ++c) {
      const auto it = server_updated_.find({c, b});
      if (it == server_updated_.end() || it->second < server_stages_) return false;
    }
    return true;
  };
  if (!cv_.wait_for(lock, ctx_.options.timeout, all))
    throw std::runtime_error("the server stages did not update batch " + std::to_string(b) +
                             " within the timeout");
  if (failed_) throw std::runtime_error("another instance of this party failed");
}

void Rounds::average(int64_t b, InstanceResult* out) {
  std::vector<torch::Tensor> uploads;
  for (int c = 0; c < n_; ++c) uploads.push_back(receive(client_rank(c), c, b, false, out));
  const bool v1 = ctx_.plan->training == "splitfed_v1";
  if (v1) wait_server_updates(b);  // their own server parts, updated by this rank
  torch::Tensor mean;
  {
    std::lock_guard<std::mutex> lock(ctx_.compute);
    torch::NoGradGuard no_grad;
    const double t0 = ctx_.now_s();
    mean = torch::stack(uploads).mean(0);
    if (v1 && n_ > 1) {
      const auto parts = server_params();
      for (size_t i = 0; i < parts[0].size(); ++i) {
        std::vector<torch::Tensor> copies;
        for (const auto& p : parts) copies.push_back(p[i].detach());
        const torch::Tensor m = torch::stack(copies).mean(0);
        for (const auto& p : parts) p[i].detach().copy_(m);
      }
    }
    out->events.push_back(average_event(server_party_, b, t0, ctx_.now_s()));
  }
  for (int c = 0; c < n_; ++c) transfer(mean, client_rank(c), c, b, true, out);
}

void Rounds::serve(InstanceResult* out) {
  try {
    if (vanilla()) {
      // Client c hands batch b on to client c + 1 (client n - 1 to client
      // 0's batch b + 1).
      for (int64_t b = 0; b < batches_ && n_ > 1; ++b)
        for (int c = 0; c < n_ && (c + 1 < n_ || b + 1 < batches_); ++c) {
          const torch::Tensor weights = receive(client_rank(c), c, b, false, out);
          const int next = (c + 1) % n_;
          transfer(weights, client_rank(next), next, b, true, out);
        }
      return;
    }
    for (int64_t b = 0; b < batches_; ++b)
      if (averages_after(b)) average(b, out);
  } catch (const std::exception& e) {
    out->error = std::string("rounds (") + ctx_.plan->training + "): " + e.what();
    fail();
  }
}

void Rounds::fail() {
  std::lock_guard<std::mutex> lock(mutex_);
  failed_ = true;
  cv_.notify_all();
}

}  // namespace splitsim::exec_internal
