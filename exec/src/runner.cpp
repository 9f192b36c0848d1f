#include "splitsim/exec/runner.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "party_context.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/optimizer.h"
#include "splitsim/costmodel/schedule.h"
#include "stage_checkpoint.h"

namespace splitsim {
namespace {

using exec_internal::InstanceResult;
using exec_internal::PartyContext;
using exec_internal::StageParts;

// Both sides of a boundary draw the trainable inserts from the same seed.
uint64_t codec_seed(uint64_t seed, int boundary, bool backward) {
  return seed * 7919 + 1000 + static_cast<uint64_t>(boundary) * 2 + (backward ? 1 : 0);
}

// Whether stage k is not the client role's (the party of stage 0).
bool is_server_stage(const Plan& plan, int k) {
  return plan.stages[static_cast<size_t>(k)].party != plan.stages.front().party;
}

// Stage k's parts on `model`'s units.
void build_stage(PartyContext& ctx, int k, SplitModel& model, StageParts& s) {
  const Plan& plan = *ctx.plan;
  const uint64_t seed = ctx.spec->seed;
  const int K = static_cast<int>(plan.stages.size());
  s.first_unit = plan.stages[k].first_unit;
  s.last_unit = plan.stages[k].last_unit;
  s.params = model.parameters(s.first_unit, s.last_unit);
  if (k > 0) {
    const PlanBoundary& b = plan.boundaries[static_cast<size_t>(k - 1)];
    const RunBoundary& shapes = ctx.spec->boundaries[static_cast<size_t>(k - 1)];
    s.in_shape = shapes.activation_shape;
    s.fwd_dec = make_decoder(b.forward.codec, s.in_shape, codec_seed(seed, k - 1, false));
    s.bwd_enc = make_encoder(b.backward.codec, shapes.carried_shape, codec_seed(seed, k - 1, true));
    s.fwd_dec->to(ctx.device);
    s.bwd_enc->to(ctx.device);
    for (const auto& p : s.fwd_dec->parameters()) s.params.push_back(p);
  }
  if (k < K - 1) {
    const PlanBoundary& b = plan.boundaries[static_cast<size_t>(k)];
    const RunBoundary& shapes = ctx.spec->boundaries[static_cast<size_t>(k)];
    s.out_shape = shapes.activation_shape;
    s.fwd_enc = make_encoder(b.forward.codec, s.out_shape, codec_seed(seed, k, false));
    s.bwd_dec = make_decoder(b.backward.codec, shapes.carried_shape, codec_seed(seed, k, true));
    s.fwd_enc->to(ctx.device);
    s.bwd_dec->to(ctx.device);
    for (const auto& p : s.fwd_enc->parameters()) s.params.push_back(p);
  }
  for (const auto& p : s.params) s.aliases.push_back(p.data().requires_grad_(true));
  s.optimizer = make_optimizer(ctx.spec->optimizer, s.aliases);
}

// build_model seeds torch's global generator: several parties in one process
// (LoopbackTransport tests) must not build at the same time.
std::mutex& build_mutex() {
  static std::mutex m;
  return m;
}

// Throws InputError for what exec cannot run.
void check_supported(const RunSpec& spec, const RunOptions& options) {
  const Plan& plan = spec.plan;
  if (plan.synchronised()) {
    // The rounds meet at one server rank, which holds every stage that is
    // not the clients' (Rounds, rounds.h).
    const ExecTopology& topo = spec.topology;
    int server_rank = -1;
    for (int k = 0; k < topo.stages; ++k)
      for (int c = 0; c < topo.clients; ++c) {
        if (!is_server_stage(plan, k)) continue;
        if (server_rank < 0) server_rank = topo.rank_of(k, c);
        if (topo.rank_of(k, c) != server_rank)
          throw InputError("$.training", "training " + plan.training +
                                             " runs in exec when one party holds every stage "
                                             "the clients do not; this plan spreads them over "
                                             "several (`splitsim simulate` runs it)");
      }
  }
  for (size_t b = 0; b < plan.boundaries.size(); ++b)
    if (plan.boundaries[b].from_stage != static_cast<int>(b) ||
        plan.boundaries[b].to_stage != static_cast<int>(b) + 1)
      throw InputError("plan", "exec needs boundary i between stages i and i+1");
  const bool checkpoints = !options.checkpoint.dir.empty() || options.first_batch > 0;
  if (checkpoints && (!is_synchronous(plan.schedule) || spec.topology.clients != 1))
    throw InputError("checkpoint_dir",
                     "checkpoints are taken between batches of one client: a synchronous "
                     "schedule (sequential, gpipe, 1f1b, zb_h1, interleaved_1f1b) and one "
                     "client, not " +
                         std::string(schedule_name(plan.schedule)) + " with " +
                         std::to_string(spec.topology.clients) + " client(s)");
  if (options.first_batch < 0 || options.first_batch > plan.iterations)
    throw InputError("resume", "step " + std::to_string(options.first_batch) + " is outside the " +
                                   std::to_string(plan.iterations) + " batches of the run");
  if (options.eval_every > 0) {
    if (!options.eval_data || options.eval_batches < 1)
      throw InputError("eval_every", "evaluation needs held-out data and at least one batch");
    if (!is_synchronous(plan.schedule))
      throw InputError("eval_every",
                       "held-out evaluation runs between batches: schedule sequential, gpipe or "
                       "1f1b, not " +
                           std::string(schedule_name(plan.schedule)));
    if (spec.topology.clients != 1 && !plan.synchronised())
      throw InputError("eval_every",
                       "held-out evaluation runs with one client, or with several in a training "
                       "mode with rounds (client 0's model)");
  }
}

// The (stage, client) instances `rank` runs, stage first, ascending.
std::vector<std::pair<int, int>> local_instances(const ExecTopology& topo, int rank) {
  std::vector<std::pair<int, int>> out;
  for (int k = 0; k < topo.stages; ++k)
    for (int c = 0; c < topo.clients; ++c)
      if (topo.rank_of(k, c) == rank) out.push_back({k, c});
  return out;
}

// Only the units of this rank's stages are built: each unit's weights come
// from its own seed, so they are the same as in any other build. Then the
// training data (the scenario's dataset unless the options give a source).
void build_model_and_data(PartyContext& ctx, const std::vector<std::pair<int, int>>& instances,
                          std::unique_ptr<BatchSource>* source) {
  const Plan& plan = *ctx.plan;
  std::vector<bool> local_units(static_cast<size_t>(plan.stages.back().last_unit + 1), false);
  for (const auto& [k, c] : instances)
    for (int u = plan.stages[k].first_unit; u <= plan.stages[k].last_unit; ++u)
      local_units[static_cast<size_t>(u)] = true;
  {
    std::lock_guard<std::mutex> lock(build_mutex());
    ctx.model = build_model(ctx.spec->model, ctx.spec->seed, &local_units);
  }
  ctx.model.train(true);
  for (auto& u : ctx.model.units)
    if (u) u->to(ctx.device);
  ctx.data = ctx.options.data;
  if (!ctx.data) {
    *source = make_batch_source(ctx.spec->dataset, ctx.model, ctx.options.data_dir, ctx.spec->seed,
                                ctx.options.distinct_batches);
    ctx.data = source->get();
  }
}

// splitfed_v1: every client but client 0 gets the server stages on a copy
// of their units (the same seeds: the same initial weights).
void build_replicas(PartyContext& ctx, const std::vector<std::pair<int, int>>& instances) {
  const Plan& plan = *ctx.plan;
  std::map<int, std::vector<bool>> units;  // by client
  for (const auto& [k, c] : instances) {
    if (c == 0 || !is_server_stage(plan, k)) continue;
    auto& local = units[c];
    local.resize(static_cast<size_t>(plan.stages.back().last_unit + 1), false);
    for (int u = plan.stages[k].first_unit; u <= plan.stages[k].last_unit; ++u)
      local[static_cast<size_t>(u)] = true;
  }
  for (auto& [c, local] : units) {
    {
      std::lock_guard<std::mutex> lock(build_mutex());
      ctx.replicas[c] = build_model(ctx.spec->model, ctx.spec->seed, &local);
    }
    SplitModel& replica = ctx.replicas[c];
    replica.train(true);
    for (auto& u : replica.units)
      if (u) u->to(ctx.device);
  }
  for (const auto& [k, c] : instances)
    if (ctx.replicas.count(c) != 0 && is_server_stage(plan, k))
      build_stage(ctx, k, ctx.replicas[c], ctx.replica_stages[{k, c}]);
}

// Each local stage's parts, the instance that reports progress, and the
// iteration barriers of the schedules that have one.
void build_stages(PartyContext& ctx, const std::vector<std::pair<int, int>>& instances) {
  ctx.stages.resize(ctx.plan->stages.size());
  int built = -1;
  for (const auto& [k, c] : instances)
    if (k != built) {
      built = k;
      build_stage(ctx, k, ctx.model, ctx.stages[static_cast<size_t>(k)]);
    }
  if (ctx.plan->training == "splitfed_v1") build_replicas(ctx, instances);
  for (const auto& [k, c] : instances)  // (stage, client) ascending: the last local stage
    if (k > ctx.progress_stage) ctx.progress_stage = k, ctx.progress_client = c;
  if (has_iteration_barrier(ctx.plan->schedule))
    for (const auto& [k, c] : instances) {
      auto& b = ctx.barriers[c];
      if (!b) b = std::make_unique<PartyContext::IterationBarrier>();
      ++b->local;
    }
  if (ctx.plan->schedule == Schedule::kInterleaved1F1B) {
    const int v = ctx.plan->virtual_stages;
    const int p = static_cast<int>(ctx.plan->stages.size()) / v;
    for (const auto& [k, c] : instances) {
      auto& t = ctx.turns[c];
      if (t) continue;
      t = std::make_unique<PartyContext::Turnstile>();
      for (const StageOp& s : device_ops(k % p, p, v, ctx.plan->chunks(), ctx.batches)) {
        t->stages.push_back(s.stage);
        if (s.op.batch < ctx.options.first_batch) ++t->next;  // resumed: done before
      }
    }
  }
}

// The instances' results merged into this process's RunResult (the
// cool-down batches' events and statistics dropped).
RunResult merge_results(const PartyContext& ctx, std::vector<InstanceResult>& results,
                        int64_t* eval_sent, int64_t* eval_received) {
  const int64_t iterations = ctx.plan->iterations;
  RunResult r;
  r.timeline.parties = ctx.topo->parties;
  r.timeline.client_parties = ctx.topo->client_parties;
  r.timeline.clients = ctx.topo->clients;
  r.complete = true;
  r.batches_done = iterations;
  for (auto& res : results) {
    if (!res.error.empty() && r.complete) {
      r.complete = false;
      r.error = res.error;
    }
    r.batches_done = std::min(r.batches_done, res.updated);
    r.skipped_updates += res.skipped_updates;
    for (const auto& e : res.events)
      if (e.batch < iterations) r.timeline.events.push_back(e);
    for (const auto& s : res.stats)
      if (s.batch < iterations) r.stats.push_back(s);
    for (auto& [u, g] : res.gradients) r.gradients[u] = std::move(g);
    for (const auto& e : res.evals) r.evals.push_back(e);
    for (const auto& l : res.leakage) r.leakage.push_back(l);
    r.eval_bytes += res.eval_bytes_sent + res.eval_bytes_received;
    *eval_sent += res.eval_bytes_sent;
    *eval_received += res.eval_bytes_received;
  }
  for (int u = 0; u < ctx.model.size(); ++u)
    if (ctx.model.units[static_cast<size_t>(u)]) r.built_units.push_back(u);
  if (!ctx.first_error.empty()) r.error = ctx.first_error;  // the cause, not what it stopped
  sort_events(&r.timeline);
  return r;
}

// keep_parameters: copies of the local stages' parameters, by unit.
void keep_parameters(const PartyContext& ctx, RunResult* r) {
  const Plan& plan = *ctx.plan;
  for (size_t k = 0; k < plan.stages.size(); ++k)
    if (!ctx.stages[k].params.empty())
      for (int u = plan.stages[k].first_unit; u <= plan.stages[k].last_unit; ++u)
        for (const auto& p : ctx.model.units[static_cast<size_t>(u)]->parameters())
          r->parameters[u].push_back(p.detach().to(torch::kCPU).clone());
}

}  // namespace

bool LeakageOptions::at(int64_t done) const {
  return std::find(after_batches.begin(), after_batches.end(), done) != after_batches.end();
}

bool LeakageOptions::window(int64_t batch, int64_t eval_every) const {
  return eval_every > 0 && at((batch / eval_every + 1) * eval_every);
}

RunResult run_party(const RunSpec& spec, Transport& transport, int rank, const RunOptions& options,
                    ExecClock::time_point start) {
  check_supported(spec, options);
  const int64_t sent_before = transport.bytes_sent();
  const int64_t received_before = transport.bytes_received();
  PartyContext ctx;
  ctx.spec = &spec;
  ctx.plan = &spec.plan;
  ctx.topo = &spec.topology;
  ctx.transport = &transport;
  ctx.rank = rank;
  ctx.options = options;
  ctx.start = start;
  if (options.device == "cuda") ctx.device = torch::Device(torch::kCUDA);
  const int K = static_cast<int>(spec.plan.stages.size());
  ctx.batches = spec.plan.iterations + cooldown_batches(spec.plan.schedule, K, spec.plan.chunks());
  MemoryAccount memory;
  MemoryAccount::Join joined(memory);
  ctx.memory = &memory;
  const std::vector<std::pair<int, int>> instances = local_instances(spec.topology, rank);
  std::unique_ptr<BatchSource> source;
  build_model_and_data(ctx, instances, &source);
  build_stages(ctx, instances);

  if (spec.plan.synchronised()) ctx.rounds = std::make_unique<exec_internal::Rounds>(ctx);

  std::vector<InstanceResult> results(instances.size());
  if (options.first_batch > 0)
    for (size_t i = 0; i < instances.size(); ++i)
      exec_internal::load_checkpoint(ctx, instances[i].first, instances[i].second, &results[i]);
  InstanceResult served;  // the rounds' server thread: its transfers and averages
  std::vector<std::thread> threads;
  for (size_t i = 0; i < instances.size(); ++i)
    threads.emplace_back(exec_internal::run_instance, std::ref(ctx), instances[i].first,
                         instances[i].second, &results[i]);
  if (ctx.rounds && ctx.rounds->serves())
    threads.emplace_back([&ctx, &served] { ctx.rounds->serve(&served); });
  for (auto& t : threads) t.join();
  if (!served.events.empty() || !served.error.empty()) {
    served.updated = spec.plan.iterations;
    results.push_back(std::move(served));
  }

  int64_t eval_sent = 0, eval_received = 0;
  RunResult r = merge_results(ctx, results, &eval_sent, &eval_received);
  r.peak_tensor_bytes[rank] = memory.peak_bytes();
  r.first_batch = options.first_batch;
  if (options.keep_parameters) keep_parameters(ctx, &r);
  r.wire_bytes_sent = transport.bytes_sent() - sent_before - eval_sent;
  r.wire_bytes_received = transport.bytes_received() - received_before - eval_received;
  return r;
}

}  // namespace splitsim
