#include "train_setup.h"

#include <torch/torch.h>

#include <algorithm>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/schedule.h"
#include "splitsim/exec/checkpoint.h"
#include "splitsim/exec/session.h"

namespace splitsim {
namespace {

// The evaluations that measure leakage, as batches done before them.
std::vector<int64_t> leakage_batches(const TrainOptions& o, const Setup& s) {
  std::vector<int64_t> out;
  for (int64_t e : o.leakage) {
    const int64_t at = e == -1 ? s.evaluations : e;
    if (at > s.evaluations)
      throw InputError("leakage", "evaluation " + std::to_string(at) + " of " +
                                      std::to_string(s.evaluations) + " in this training");
    out.push_back(at * s.eval_every);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  // Half the held-out samples train the attacker, half score it.
  if (!out.empty() && s.test_batches * s.deploy.batch_size < 16)
    throw InputError("test_samples", "leakage needs at least 16 held-out samples, has " +
                                         std::to_string(s.test_batches * s.deploy.batch_size));
  return out;
}

// Throws InputError unless `sc` is what train runs: labeled images of
// `dataset` into an image classifier, a synchronous schedule, one client or
// several alike in one process in a training mode with rounds.
void check_trainable(const Scenario& sc, const std::string& dataset, bool dataset_given,
                     const TrainOptions& o) {
  if (dataset != "fashion_mnist" && dataset != "cifar10")
    throw InputError(dataset_given ? "dataset" : "$.dataset",
                     "train needs labeled images with a test split: fashion_mnist or cifar10, "
                     "not \"" +
                         dataset + "\"");
  if (!is_synchronous(sc.schedule))
    throw InputError("$.schedule",
                     "train evaluates between batches: sequential, gpipe or 1f1b, "
                     "not " +
                         std::string(schedule_name(sc.schedule)));
  if (sc.clients != 1 && sc.training == "unsynchronised")
    throw InputError("$.training",
                     "train with several clients evaluates client 0's model: give a training "
                     "mode with rounds (vanilla, splitfed_v1, splitfed_v2), not unsynchronised");
  if (sc.clients != 1 && !o.role.empty())
    throw InputError("role", "train runs several clients in one process (leave --role out)");
  if (sc.clients != 1 && !o.checkpoint.dir.empty())
    throw InputError(
        "checkpoint_dir",
        "checkpoints are of one client's training; the scenario has " + std::to_string(sc.clients));
  if (sc.clients == 1 && o.alpha > 0)
    throw InputError("alpha", "spreads the samples over several clients; the scenario has one");
  if (model_input_shape(sc.model).size() != 3)
    throw InputError("$.model",
                     "train reads images: an image classification model, not " + sc.model.name);
  check_model_classes(dataset, sc.model);
}

// One class against the rest (TrainOptions::one_vs_rest): labels 1 and 0.
LabeledImages one_vs_rest(LabeledImages data, int64_t positive) {
  data.labels = data.labels.eq(positive).to(torch::kLong);
  return data;
}

}  // namespace

void check_options(const TrainOptions& o) {
  if (o.epochs < 1) throw InputError("epochs", "must be at least 1");
  if (o.train_samples < 0) throw InputError("train_samples", "must not be negative");
  if (o.test_samples < 0) throw InputError("test_samples", "must not be negative");
  if (o.eval_every < 0) throw InputError("eval_every", "must not be negative");
  if (!(o.alpha >= 0) || o.alpha > 1e6) throw InputError("alpha", "must be in [0, 1e6]");
  static_assert(kFashionMnistClasses == kCifar10Classes);
  if (o.one_vs_rest < -1 || o.one_vs_rest >= kFashionMnistClasses)
    throw InputError("one_vs_rest", "a class of the dataset's labels, 0 to 9, got " +
                                        std::to_string(o.one_vs_rest));
  check_checkpoint_options(o.checkpoint);
  for (int64_t e : o.leakage)
    if (e < 1 && e != -1)
      throw InputError("leakage",
                       "evaluations are numbered from 1 (or \"last\"), got " + std::to_string(e));
  if (!o.leakage.empty() && !o.role.empty())
    throw InputError("leakage", "is measured with every party in one process (leave --role out)");
  if (o.leakage_attack_epochs < 1 || o.leakage_attack_epochs > 1000)
    throw InputError("leakage_attack_epochs", "must be in [1, 1000]");
}

Setup prepare(const TrainOptions& o, Workspace& ws, const ScenarioVariant& v, SplitCache* cache) {
  Setup s;
  const std::string dataset = o.dataset.empty() ? v.scenario.dataset : o.dataset;
  check_trainable(v.scenario, dataset, !o.dataset.empty(), o);
  s.input_shape = model_input_shape(v.scenario.model);
  auto it = cache->find(dataset);
  if (it == cache->end())
    it = cache
             ->emplace(
                 dataset,
                 std::make_pair(
                     first_samples(load_labeled_images(dataset, o.data, "train"), o.train_samples),
                     first_samples(load_labeled_images(dataset, o.data, "test"), o.test_samples)))
             .first;
  s.train = it->second.first;
  s.test = it->second.second;
  if (o.one_vs_rest >= 0) {
    s.train = one_vs_rest(s.train, o.one_vs_rest);
    s.test = one_vs_rest(s.test, o.one_vs_rest);
  }
  s.deploy = ws.plan(v);
  const int64_t batch = s.deploy.batch_size;
  const int clients = static_cast<int>(v.scenario.clients);
  if (clients > 1)
    s.partition = partition_samples(
        s.train.labels, s.train.labels.max().item<int64_t>() + 1, clients, o.alpha,
        o.seed >= 0 ? static_cast<uint64_t>(o.seed) : v.scenario.seed, batch);
  // An epoch: every sample once over all clients (each client its share).
  s.batches_per_epoch = s.train.labels.size(0) / clients / batch;
  s.test_batches = s.test.labels.size(0) / batch;
  if (s.batches_per_epoch < 1)
    throw InputError("train_samples", std::to_string(s.train.labels.size(0)) +
                                          " training samples make no batch of " +
                                          std::to_string(batch));
  if (s.test_batches < 1)
    throw InputError("test_samples", std::to_string(s.test.labels.size(0)) +
                                         " test samples make no batch of " + std::to_string(batch));
  RunChanges changes;
  changes.iterations = o.epochs * s.batches_per_epoch;
  changes.warmup = 0;
  changes.seed = o.seed;
  changes.dataset = dataset;
  s.run = make_run_spec(v, s.deploy, changes);
  s.eval_every = o.eval_every > 0 ? o.eval_every : s.batches_per_epoch;
  // splitfed evaluates the averaged model: at the end of a round.
  const int64_t every = s.run.plan.aggregate_every;
  if (clients > 1 && s.run.plan.training != "vanilla" && s.eval_every % every != 0) {
    if (o.eval_every > 0)
      throw InputError("eval_every", std::to_string(o.eval_every) +
                                         " batches is not a multiple of aggregate_every (" +
                                         std::to_string(every) + ")");
    s.eval_every = std::max(every, s.eval_every - s.eval_every % every);
  }
  s.evaluations = s.run.plan.iterations / s.eval_every;
  if (s.evaluations < 1)
    throw InputError("eval_every", std::to_string(s.eval_every) +
                                       " batches is more than the whole training (" +
                                       std::to_string(s.run.plan.iterations) + " batches)");
  s.leakage_after = leakage_batches(o, s);
  s.identity = s.run.identity;
  s.identity["train"] = {{"epochs", o.epochs},
                         {"eval_every", s.eval_every},
                         {"seed", s.run.seed},
                         {"dataset", dataset},
                         {"train_samples", s.train.labels.size(0)},
                         {"test_samples", s.test.labels.size(0)},
                         {"alpha", o.alpha}};
  if (o.one_vs_rest >= 0) s.identity["train"]["one_vs_rest"] = o.one_vs_rest;
  // A checkpoint is of this training, whatever its interval; both parties
  // take them at the same batches.
  s.checkpoint_identity = stable_hash(s.identity.dump());
  if (!o.checkpoint.dir.empty())
    s.identity["checkpoints"] = {{"every", o.checkpoint.every}, {"resume", o.checkpoint.resume}};
  return s;
}

}  // namespace splitsim
