#include "asynchronous.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace splitsim::exec_internal {
namespace {

// The ranks holding `client`'s stages exchange a token through the lowest
// of them: each sends it one and waits for its reply.
void meet_other_ranks(PartyContext& ctx, int client, int64_t iteration) {
  const int K = static_cast<int>(ctx.plan->stages.size());
  std::vector<int> ranks;
  for (int k = 0; k < K; ++k) ranks.push_back(ctx.topo->rank_of(k, client));
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (ranks.size() < 2) return;
  constexpr int64_t kTagSync = int64_t{1} << 27;  // above the data tags (< 2^26)
  const int tag =
      static_cast<int>(kTagSync + (iteration * ctx.topo->clients + client) % (int64_t{1} << 26));
  const auto token = [] { return std::vector<torch::Tensor>{torch::zeros({1})}; };
  const auto timeout = ctx.options.timeout;
  if (ctx.rank == ranks.front()) {
    for (size_t i = 1; i < ranks.size(); ++i)
      ctx.transport->recv(token(), ranks[i], tag)->wait(timeout);
    for (size_t i = 1; i < ranks.size(); ++i)
      ctx.transport->send(token(), ranks[i], tag)->wait(timeout);
  } else {
    ctx.transport->send(token(), ranks.front(), tag)->wait(timeout);
    ctx.transport->recv(token(), ranks.front(), tag)->wait(timeout);
  }
}

}  // namespace

StashedWeights::StashedWeights(StageParts& parts, const StageParts::WeightVersion* version)
    : parts_(parts) {
  if (version == nullptr || version->values.empty()) return;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parts_.aliases.size(); ++i) {
    current_.push_back(parts_.aliases[i].detach().clone());
    parts_.aliases[i].copy_(version->values[i]);
  }
}

StashedWeights::~StashedWeights() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < current_.size(); ++i) parts_.aliases[i].copy_(current_[i]);
}

void stash_live_weights(StageParts& parts) {
  if (parts.live.use_count() > 1) {
    torch::NoGradGuard no_grad;
    for (const auto& a : parts.aliases) parts.live->values.push_back(a.detach().clone());
  }
  parts.live = std::make_shared<StageParts::WeightVersion>();
}

void wait_turn(PartyContext& ctx, int client, int stage) {
  const auto it = ctx.turns.find(client);
  if (it == ctx.turns.end()) return;
  auto& t = *it->second;
  std::unique_lock<std::mutex> lock(t.mutex);
  const auto mine = [&] {
    return t.failed || t.next >= t.stages.size() || t.stages[t.next] == stage;
  };
  if (!t.cv.wait_for(lock, ctx.options.timeout, mine))
    throw std::runtime_error("stage " + std::to_string(stage) +
                             ": its turn in the party's interleaved order did not come within "
                             "the timeout");
  if (t.failed) throw std::runtime_error("another stage of this party failed");
}

void pass_turn(PartyContext& ctx, int client) {
  const auto it = ctx.turns.find(client);
  if (it == ctx.turns.end()) return;
  auto& t = *it->second;
  std::lock_guard<std::mutex> lock(t.mutex);
  ++t.next;
  t.cv.notify_all();
}

void fail_turns(PartyContext& ctx) {
  for (auto& [client, t] : ctx.turns) {
    std::lock_guard<std::mutex> lock(t->mutex);
    t->failed = true;
    t->cv.notify_all();
  }
}

void iteration_barrier(PartyContext& ctx, int client, int64_t iteration) {
  auto& b = *ctx.barriers.at(client);
  std::unique_lock<std::mutex> lock(b.mutex);
  if (++b.arrived < b.local) {
    if (!b.cv.wait_for(lock, ctx.options.timeout,
                       [&] { return b.released >= iteration || !b.error.empty(); }))
      throw std::runtime_error("iteration barrier " + std::to_string(iteration) +
                               ": the other local stages did not arrive within the timeout");
    if (!b.error.empty()) throw std::runtime_error(b.error);
    return;
  }
  // The last local arrival meets the other ranks, then releases the others.
  b.arrived = 0;
  lock.unlock();
  try {
    meet_other_ranks(ctx, client, iteration);
  } catch (const std::exception& e) {
    lock.lock();
    b.error = e.what();
    b.cv.notify_all();
    throw;
  }
  lock.lock();
  b.released = iteration;
  b.cv.notify_all();
}

}  // namespace splitsim::exec_internal
