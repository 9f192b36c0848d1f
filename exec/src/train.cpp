#include "splitsim/exec/train.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <thread>

#include "error_reason.h"
#include "leakage_report.h"
#include "train_setup.h"
#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/format.h"
#include "splitsim/costmodel/heap.h"
#include "splitsim/costmodel/schedule.h"
#include "splitsim/costmodel/workspace.h"
#include "splitsim/exec/client_data.h"
#include "splitsim/exec/dataset.h"
#include "splitsim/exec/gloo_transport.h"
#include "splitsim/exec/loopback_transport.h"
#include "splitsim/exec/runner.h"
#include "splitsim/exec/session.h"

namespace splitsim {
namespace {

constexpr int kTagEvals = (1 << 26) + 20;  // beside session.cpp's tags
constexpr int64_t kEvalFields = 8;

// The (stage, client) instances `rank` runs (in process: every rank's).
std::vector<std::pair<int, int>> instances_of(const Setup& s, int rank) {
  std::vector<std::pair<int, int>> out;
  const ExecTopology& topo = s.run.topology;
  for (int k = 0; k < topo.stages; ++k)
    if (rank < 0 || topo.rank_of(k, 0) == rank) out.push_back({k, 0});
  return out;
}

RunOptions run_options(const Setup& s, const TrainOptions& o, BatchSource* train,
                       BatchSource* test) {
  RunOptions ro;
  ro.checkpoint = o.checkpoint;
  ro.checkpoint_identity = s.checkpoint_identity;
  ro.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  ro.data = train;
  ro.eval_data = test;
  ro.eval_every = s.eval_every;
  ro.eval_batches = s.test_batches;
  ro.leakage.after_batches = s.leakage_after;
  ro.leakage.attack_epochs = o.leakage_attack_epochs;
  ro.leakage.seed = s.run.seed;
  return ro;
}

nlohmann::json compression_json(const Plan& plan) {
  nlohmann::json out = nlohmann::json::array();
  for (const PlanBoundary& b : plan.boundaries)
    out.push_back({{"forward", codec_to_json(b.forward.codec)},
                   {"backward", codec_to_json(b.backward.codec)}});
  return out;
}

std::string percent(double x) { return format_percent(x, 2); }

// How many clients trained, in which mode, and the samples of each class
// each held.
nlohmann::json clients_json(const Setup& s, const TrainOptions& o) {
  const Plan& plan = s.run.plan;
  nlohmann::json j = {{"count", plan.clients}, {"training", plan.training}};
  if (plan.training != "unsynchronised" && plan.training != "vanilla")
    j["aggregate_every"] = plan.aggregate_every;
  if (s.partition.samples.empty()) return j;
  j["partition"] = o.alpha > 0 ? "dirichlet" : "iid";
  if (o.alpha > 0) j["alpha"] = o.alpha;
  j["class_counts"] = s.partition.class_counts;
  return j;
}

// The report from the merged results (the last stage's evaluations and
// batch statistics; the wire bytes of every rank given).
nlohmann::json make_report(const Setup& s, const TrainOptions& o, const std::string& mode,
                           const std::vector<EvalStats>& evals,
                           const std::vector<BatchStats>& stats,
                           const std::vector<BoundaryLeakage>& leakage, int64_t wire_bytes,
                           double wall_s, int64_t resumed_from) {
  nlohmann::json evaluations = nlohmann::json::array();
  double best = -1;
  int64_t best_batches = 0;
  double previous_end = 0;
  for (const EvalStats& ev : evals) {
    const double accuracy = ev.samples > 0 ? ev.correct / ev.samples : 0;
    evaluations.push_back({{"batches", ev.after_batches},
                           {"epoch", static_cast<double>(ev.after_batches) /
                                         static_cast<double>(s.batches_per_epoch)},
                           {"train_loss", ev.train_loss},
                           {"train_accuracy", ev.train_accuracy},
                           {"test_loss", ev.loss},
                           {"test_accuracy", accuracy},
                           {"train_s", ev.trained_s - previous_end},
                           {"eval_s", ev.eval_s}});
    previous_end = ev.trained_s + ev.eval_s;
    if (accuracy > best) {
      best = accuracy;
      best_batches = ev.after_batches;
    }
  }
  nlohmann::json losses = nlohmann::json::array();
  std::vector<BatchStats> sorted = stats;
  std::sort(sorted.begin(), sorted.end(),
            [](const BatchStats& a, const BatchStats& b) { return a.batch < b.batch; });
  for (const BatchStats& b : sorted) losses.push_back(b.loss);
  const Plan& plan = s.run.plan;
  const int64_t batches = plan.iterations - resumed_from;  // run by this process
  nlohmann::json report = {
      {"schema", "splitsim.train/1"},
      {"scenario", o.scenario},
      {"variant", s.run.label},
      {"mode", mode},
      {"dataset", s.run.dataset},
      {"one_vs_rest", o.one_vs_rest >= 0 ? nlohmann::json(o.one_vs_rest) : nlohmann::json()},
      {"seed", s.run.seed},
      {"batch_size", plan.batch_size},
      {"chunks", plan.chunks()},
      {"compression", compression_json(plan)},
      {"cuts", cuts_json(plan)},
      {"train_samples", s.train.labels.size(0)},
      {"test_samples", s.test_batches * plan.batch_size},
      {"batches_per_epoch", s.batches_per_epoch},
      {"epochs", o.epochs},
      {"eval_every", s.eval_every},
      {"evaluations", evaluations},
      {"best_test_accuracy", best},
      {"best_after_batches", best_batches},
      {"batch_losses", losses},
      {"wire_bytes_per_batch",
       batches > 0 ? static_cast<double>(wire_bytes) / static_cast<double>(batches) : 0.0},
      {"wall_s", wall_s},
      {"clients", clients_json(s, o)},
      {"resumed_from_batch", resumed_from},
      {"complete", static_cast<int64_t>(evals.size()) == s.evaluations}};
  if (!s.leakage_after.empty())
    report["leakage"] = leakage_json(plan, s.batches_per_epoch, leakage);
  return report;
}

std::function<void(const EvalStats&)> epoch_progress(
    const Setup& s, const TrainOptions& o,
    const std::function<void(const std::string&)>& progress) {
  return [&s, &o, progress](const EvalStats& ev) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "train: evaluation %lld/%lld (%lld batches, epoch %.2f of %lld): train loss "
                  "%.4f, test loss %.4f, test accuracy %s, %.1f s",
                  static_cast<long long>(ev.after_batches / s.eval_every),
                  static_cast<long long>(s.evaluations), static_cast<long long>(ev.after_batches),
                  static_cast<double>(ev.after_batches) / static_cast<double>(s.batches_per_epoch),
                  static_cast<long long>(o.epochs), ev.train_loss, ev.loss,
                  percent(ev.samples > 0 ? ev.correct / ev.samples : 0).c_str(), ev.trained_s);
    progress(line);
  };
}

void resume_progress(const Setup& s, int64_t first,
                     const std::function<void(const std::string&)>& progress) {
  progress(first > 0 ? "train: resuming from the checkpoint of step " + std::to_string(first) +
                           " (" + std::to_string(s.run.plan.iterations - first) + " of " +
                           std::to_string(s.run.plan.iterations) + " batches left)"
                     : "train: no checkpoint to resume from: training from the first batch");
}

TrainOutcome train_in_process(const Setup& s, const TrainOptions& o,
                              const std::function<void(const std::string&)>& progress) {
  int64_t first = 0;
  if (!o.checkpoint.dir.empty()) {
    std::vector<std::vector<int64_t>> held;
    std::vector<std::string> names;
    for (const auto& i : instances_of(s, -1)) {
      held.push_back(prepare_checkpoint_dir(o.checkpoint, {i}));
      names.push_back("stage " + std::to_string(i.first));
    }
    if (o.checkpoint.resume) {
      first = common_checkpoint_step(held, names);
      resume_progress(s, first, progress);
    }
  }
  const int world = s.run.topology.world_size();
  auto hub = std::make_shared<LoopbackHub>(world);
  std::vector<RunResult> results(static_cast<size_t>(world));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  const ExecClock::time_point start = ExecClock::now();
  std::vector<std::thread> threads;
  const auto on_eval = epoch_progress(s, o, progress);
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        LoopbackTransport t(hub, r);
        auto train =
            s.partition.samples.empty()
                ? make_image_source(s.train, s.input_shape, s.run.seed)
                : make_client_image_source(s.train, s.partition, s.input_shape, s.run.seed);
        auto test = make_ordered_image_source(s.test, s.input_shape);
        RunOptions ro = run_options(s, o, train.get(), test.get());
        ro.on_eval = on_eval;
        ro.first_batch = first;
        results[static_cast<size_t>(r)] = run_party(s.run, t, r, ro, start);
        if (!results[static_cast<size_t>(r)].complete)
          hub->fail(results[static_cast<size_t>(r)].error);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        hub->fail(e.what());
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  const double wall = std::chrono::duration<double>(ExecClock::now() - start).count();
  std::vector<EvalStats> evals;
  std::vector<BatchStats> stats;
  std::vector<BoundaryLeakage> leakage;
  int64_t wire = 0;
  TrainOutcome out;
  for (const RunResult& r : results) {
    evals.insert(evals.end(), r.evals.begin(), r.evals.end());
    leakage.insert(leakage.end(), r.leakage.begin(), r.leakage.end());
    stats.insert(stats.end(), r.stats.begin(), r.stats.end());
    wire += r.wire_bytes_sent;
    if (!r.complete && out.complete) {
      out.complete = false;
      out.error = r.error;
    }
  }
  out.report = make_report(s, o, "in_process", evals, stats, leakage, wire, wall, first);
  out.plan = s.deploy;
  return out;
}

// The last stage's evaluations, from its rank to rank 0.
void gather_evals(Transport& t, int holder, RunResult* r, int64_t count,
                  std::chrono::milliseconds timeout) {
  if (holder == 0) return;
  if (t.rank() == holder) {
    torch::Tensor rows = torch::zeros({count, kEvalFields}, torch::kFloat64);
    for (int64_t i = 0; i < count && i < static_cast<int64_t>(r->evals.size()); ++i) {
      const EvalStats& e = r->evals[static_cast<size_t>(i)];
      const double v[kEvalFields] = {static_cast<double>(e.after_batches),
                                     e.loss,
                                     e.correct,
                                     e.samples,
                                     e.train_loss,
                                     e.train_accuracy,
                                     e.trained_s,
                                     e.eval_s};
      for (int64_t f = 0; f < kEvalFields; ++f) rows[i][f] = v[f];
    }
    t.send({rows}, 0, kTagEvals)->wait(timeout);
  } else if (t.rank() == 0) {
    torch::Tensor rows = torch::empty({count, kEvalFields}, torch::kFloat64);
    t.recv({rows}, holder, kTagEvals)->wait(timeout);
    for (int64_t i = 0; i < count; ++i) {
      auto row = rows[i];
      EvalStats e;
      e.after_batches = static_cast<int64_t>(row[0].item<double>());
      e.loss = row[1].item<double>();
      e.correct = row[2].item<double>();
      e.samples = row[3].item<double>();
      e.train_loss = row[4].item<double>();
      e.train_accuracy = row[5].item<double>();
      e.trained_s = row[6].item<double>();
      e.eval_s = row[7].item<double>();
      r->evals.push_back(e);
    }
  }
}

TrainOutcome train_two_process(const Setup& s, const TrainOptions& o,
                               const std::function<void(const std::string&)>& progress) {
  const ExecTopology& topo = s.run.topology;
  const std::string token = shared_token(o.token);
  GlooOptions go = party_gloo_options(topo, o.role, 0, o.listen, o.connect, o.timeout_s, "train");
  go.token = token;
  const int rank = go.rank;
  // Refused before anything connects.
  const std::vector<int64_t> held =
      o.checkpoint.dir.empty() ? std::vector<int64_t>{}
                               : prepare_checkpoint_dir(o.checkpoint, instances_of(s, rank));
  progress("train: rank " + std::to_string(rank) + " of " + std::to_string(go.world_size) + " (" +
           o.role + "), " + (rank == 0 ? "listening on " : "connecting to ") + go.host + ":" +
           std::to_string(go.port));
  std::unique_ptr<GlooTransport> transport = GlooTransport::connect(go);
  TrainOutcome out;
  out.plan = s.deploy;
  RunResult result;
  double wall = 0;
  int64_t first = 0;
  try {
    handshake(*transport, {s.run.label, s.identity.dump(), o.version, token}, go.timeout);
    if (o.checkpoint.resume) {
      first = agree_resume_step(*transport, held, go.timeout);
      resume_progress(s, first, progress);
    }
    std::vector<double> offsets;
    const ExecClock::time_point start = synchronise(*transport, go.timeout, &offsets);
    auto train = make_image_source(s.train, s.input_shape, s.run.seed);
    auto test = make_ordered_image_source(s.test, s.input_shape);
    RunOptions ro = run_options(s, o, train.get(), test.get());
    ro.on_eval = epoch_progress(s, o, progress);
    ro.first_batch = first;
    result = run_party(s.run, *transport, rank, ro, start);
    wall = std::chrono::duration<double>(ExecClock::now() - start).count();
    if (result.complete) {
      const int holder = topo.rank_of(static_cast<int>(s.run.plan.stages.size()) - 1, 0);
      gather_evals(*transport, holder, &result, s.evaluations, go.timeout);
      gather(*transport, offsets, &result, go.timeout);
    }
  } catch (const InputError&) {
    (void)transport.release();  // as below: the peer may be gone
    throw;
  } catch (const std::exception& e) {
    result.complete = false;
    if (result.error.empty()) result.error = first_line_of(e);
  }
  out.complete = result.complete;
  out.error = result.error;
  if (!result.complete)
    (void)transport.release();  // a failed Gloo pair may block in its destructor
  if (rank == 0) {
    // Two parties: rank 0's traffic is all of it; more: rank 0's share.
    out.report = make_report(s, o, "two_process", result.evals, result.stats, result.leakage,
                             result.wire_bytes_sent + result.wire_bytes_received, wall, first);
  } else {
    out.report = {{"schema", "splitsim.train/1"}, {"role", o.role}, {"complete", out.complete}};
  }
  if (!out.complete) out.report["error"] = out.error;
  return out;
}

}  // namespace

std::vector<TrainOutcome> run_train(const TrainOptions& o,
                                    const std::function<void(const std::string&)>& progress) {
  check_options(o);
  hold_freed_heap_memory();  // as exec (heap.h)
  torch::set_num_threads(o.threads);
  Workspace ws(o.scenario, progress);
  if (!o.role.empty())
    ws.select_one(o.variant, "two processes train");
  else if (!o.checkpoint.dir.empty())
    ws.select_one(o.variant, "checkpoints are of");
  else
    ws.select(o.variant);
  // Every variant's data and plan first: bad input fails before any training.
  std::vector<Setup> setups;
  SplitCache cache;
  for (const ScenarioVariant& v : ws.variants()) setups.push_back(prepare(o, ws, v, &cache));
  std::vector<TrainOutcome> out;
  for (size_t i = 0; i < setups.size(); ++i) {
    const Setup& s = setups[i];
    progress("train: [" + std::to_string(i + 1) + "/" + std::to_string(setups.size()) + "] " +
             s.run.label + ": " + std::to_string(o.epochs) + " epoch(s) of " +
             std::to_string(s.batches_per_epoch) + " batches of " +
             std::to_string(s.run.plan.batch_size) + " (" + s.run.dataset + ", " +
             std::to_string(s.train.labels.size(0)) + " training samples), " +
             std::to_string(s.test_batches * s.run.plan.batch_size) + " test samples every " +
             std::to_string(s.eval_every) + " batches");
    out.push_back(o.role.empty() ? train_in_process(s, o, progress)
                                 : train_two_process(s, o, progress));
    if (!out.back().complete) break;  // the report so far, with the failure
  }
  return out;
}

int64_t batches_to_accuracy(const nlohmann::json& report, double target) {
  for (const auto& e : report.at("evaluations"))
    if (e.at("test_accuracy").get<double>() >= target) return e.at("batches").get<int64_t>();
  return -1;
}

}  // namespace splitsim
