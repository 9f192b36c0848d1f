#include "splitsim/exec/runner.h"

#include <algorithm>
#include <mutex>
#include <thread>

#include "party_context.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/optimizer.h"
#include "splitsim/costmodel/schedule.h"

namespace splitsim {
namespace {

using exec_internal::InstanceResult;
using exec_internal::PartyContext;
using exec_internal::StageParts;

// Both sides of a boundary draw the trainable inserts from the same seed.
uint64_t codec_seed(uint64_t seed, int boundary, bool backward) {
  return seed * 7919 + 1000 + static_cast<uint64_t>(boundary) * 2 + (backward ? 1 : 0);
}

std::vector<int64_t> per_sample(const std::vector<int64_t>& shape) {
  return std::vector<int64_t>(shape.begin() + 1, shape.end());
}

void build_stage(PartyContext& ctx, int k) {
  const Plan& plan = *ctx.plan;
  const uint64_t seed = ctx.scenario->seed;
  const int K = static_cast<int>(plan.stages.size());
  StageParts& s = ctx.stages[static_cast<size_t>(k)];
  s.first_unit = plan.stages[k].first_unit;
  s.last_unit = plan.stages[k].last_unit;
  s.params = ctx.model.parameters(s.first_unit, s.last_unit);
  if (k > 0) {
    const PlanBoundary& b = plan.boundaries[static_cast<size_t>(k - 1)];
    s.in_shape = per_sample(b.activation_shape);
    s.fwd_dec = make_decoder(b.forward.codec, s.in_shape, codec_seed(seed, k - 1, false));
    s.bwd_enc = make_encoder(b.backward.codec, carried_shape(b.forward.codec, s.in_shape, 0),
                             codec_seed(seed, k - 1, true));
    s.fwd_dec->to(ctx.device);
    s.bwd_enc->to(ctx.device);
    for (const auto& p : s.fwd_dec->parameters()) s.params.push_back(p);
  }
  if (k < K - 1) {
    const PlanBoundary& b = plan.boundaries[static_cast<size_t>(k)];
    s.out_shape = per_sample(b.activation_shape);
    s.fwd_enc = make_encoder(b.forward.codec, s.out_shape, codec_seed(seed, k, false));
    s.bwd_dec = make_decoder(b.backward.codec, carried_shape(b.forward.codec, s.out_shape, 0),
                             codec_seed(seed, k, true));
    s.fwd_enc->to(ctx.device);
    s.bwd_dec->to(ctx.device);
    for (const auto& p : s.fwd_enc->parameters()) s.params.push_back(p);
  }
  for (const auto& p : s.params) s.aliases.push_back(p.data().requires_grad_(true));
  s.optimizer = make_optimizer(ctx.scenario->optimizer, s.aliases);
}

// build_model seeds torch's global generator: several parties in one process
// (LoopbackTransport tests) must not build at the same time.
std::mutex& build_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

RunResult run_party(const Scenario& scenario, const Plan& plan, Transport& transport, int rank,
                    const RunOptions& options, ExecClock::time_point start) {
  for (size_t b = 0; b < plan.boundaries.size(); ++b)
    if (plan.boundaries[b].from_stage != static_cast<int>(b) ||
        plan.boundaries[b].to_stage != static_cast<int>(b) + 1)
      throw InputError("plan", "exec needs boundary i between stages i and i+1");
  if (options.eval_every > 0) {
    if (!options.eval_data || options.eval_batches < 1)
      throw InputError("eval_every", "evaluation needs held-out data and at least one batch");
    if (plan.schedule != Schedule::kSequential && plan.schedule != Schedule::kGpipe &&
        plan.schedule != Schedule::k1F1B)
      throw InputError("eval_every",
                       "held-out evaluation runs between batches: schedule sequential, gpipe or "
                       "1f1b, not " +
                           std::string(schedule_name(plan.schedule)));
  }
  const int64_t sent_before = transport.bytes_sent();
  const int64_t received_before = transport.bytes_received();
  PartyContext ctx;
  ctx.scenario = &scenario;
  ctx.plan = &plan;
  ctx.topo = make_topology(plan);
  ctx.transport = &transport;
  ctx.rank = rank;
  ctx.options = options;
  ctx.start = start;
  ctx.act_dtype = activation_dtype(scenario.precision);
  if (options.device == "cuda") ctx.device = torch::Device(torch::kCUDA);
  if (options.eval_every > 0 && ctx.topo.clients != 1)
    throw InputError("eval_every", "held-out evaluation runs with one client");
  const int K = static_cast<int>(plan.stages.size());
  ctx.batches = plan.iterations + cooldown_batches(plan.schedule, K, plan.chunks());
  // Only the units of this rank's stages are built: each unit's weights
  // come from its own seed, so they are the same as in any other build.
  std::vector<bool> local_units(static_cast<size_t>(plan.stages.back().last_unit + 1), false);
  for (int k = 0; k < K; ++k)
    for (int c = 0; c < ctx.topo.clients; ++c)
      if (ctx.topo.rank_of(k, c) == rank)
        for (int u = plan.stages[k].first_unit; u <= plan.stages[k].last_unit; ++u)
          local_units[static_cast<size_t>(u)] = true;
  MemoryAccount memory;
  MemoryAccount::Join joined(memory);
  ctx.memory = &memory;
  {
    std::lock_guard<std::mutex> lock(build_mutex());
    ctx.model =
        build_model(resolve_model_defaults(scenario.model, "$.model"), scenario.seed, &local_units);
  }
  ctx.model.train(true);
  for (auto& u : ctx.model.units)
    if (u) u->to(ctx.device);
  std::unique_ptr<BatchSource> source;
  ctx.data = options.data;
  if (!ctx.data) {
    source = make_batch_source(scenario.dataset, ctx.model, options.data_dir, scenario.seed,
                               options.distinct_batches);
    ctx.data = source.get();
  }
  std::vector<std::pair<int, int>> instances;  // (stage, client)
  ctx.stages.resize(static_cast<size_t>(K));
  for (int k = 0; k < K; ++k) {
    bool local = false;
    for (int c = 0; c < ctx.topo.clients; ++c)
      if (ctx.topo.rank_of(k, c) == rank) {
        instances.push_back({k, c});
        local = true;
      }
    if (local) build_stage(ctx, k);
  }

  for (const auto& [k, c] : instances)  // (stage, client) ascending: the last local stage
    if (k > ctx.progress_stage) ctx.progress_stage = k, ctx.progress_client = c;

  if (has_iteration_barrier(plan.schedule))
    for (const auto& [k, c] : instances) {
      auto& b = ctx.barriers[c];
      if (!b) b = std::make_unique<PartyContext::IterationBarrier>();
      ++b->local;
    }

  std::vector<InstanceResult> results(instances.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < instances.size(); ++i)
    threads.emplace_back(exec_internal::run_instance, std::ref(ctx), instances[i].first,
                         instances[i].second, &results[i]);
  for (auto& t : threads) t.join();

  RunResult r;
  r.peak_tensor_bytes[rank] = memory.peak_bytes();
  for (int u = 0; u < ctx.model.size(); ++u)
    if (ctx.model.units[static_cast<size_t>(u)]) r.built_units.push_back(u);
  r.timeline.parties = ctx.topo.parties;
  r.timeline.client_parties = ctx.topo.client_parties;
  r.timeline.clients = ctx.topo.clients;
  r.complete = true;
  r.batches_done = plan.iterations;
  int64_t eval_sent = 0, eval_received = 0;
  for (auto& res : results) {
    if (!res.error.empty() && r.complete) {
      r.complete = false;
      r.error = res.error;
    }
    r.batches_done = std::min(r.batches_done, res.updated);
    r.skipped_updates += res.skipped_updates;
    for (const auto& e : res.events)
      if (e.batch < plan.iterations) r.timeline.events.push_back(e);
    for (const auto& s : res.stats)
      if (s.batch < plan.iterations) r.stats.push_back(s);
    for (auto& [u, g] : res.gradients) r.gradients[u] = std::move(g);
    for (const auto& e : res.evals) r.evals.push_back(e);
    r.eval_bytes += res.eval_bytes_sent + res.eval_bytes_received;
    eval_sent += res.eval_bytes_sent;
    eval_received += res.eval_bytes_received;
  }
  if (options.keep_parameters)
    for (int k = 0; k < K; ++k)
      if (!ctx.stages[static_cast<size_t>(k)].params.empty())
        for (int u = plan.stages[k].first_unit; u <= plan.stages[k].last_unit; ++u)
          for (const auto& p : ctx.model.units[static_cast<size_t>(u)]->parameters())
            r.parameters[u].push_back(p.detach().to(torch::kCPU).clone());
  sort_events(&r.timeline);
  r.wire_bytes_sent = transport.bytes_sent() - sent_before - eval_sent;
  r.wire_bytes_received = transport.bytes_received() - received_before - eval_received;
  return r;
}

}  // namespace splitsim
