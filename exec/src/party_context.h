#pragma once
// Internals of the runner: what the instance threads of one process share.
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rounds.h"
#include "splitsim/costmodel/codec_module.h"
#include "splitsim/costmodel/memory_account.h"
#include "splitsim/costmodel/model_zoo.h"
#include "splitsim/exec/runner.h"

namespace splitsim::exec_internal {

// One local stage: its units, the codecs at its two boundaries, and its
// optimizer (shared by the clients' instances of a server stage).
struct StageParts {
  int first_unit = 0, last_unit = 0;
  std::vector<int64_t> in_shape, out_shape;  // per-sample activation at boundary k-1 / k
  std::shared_ptr<CodecDecoder> fwd_dec;     // boundary k-1, activation in
  std::shared_ptr<CodecEncoder> bwd_enc;     // boundary k-1, gradient out
  std::shared_ptr<CodecEncoder> fwd_enc;     // boundary k, activation out
  std::shared_ptr<CodecDecoder> bwd_dec;     // boundary k, gradient in
  std::vector<torch::Tensor> params;         // units + trainable codec inserts
  // The optimizer updates aliases of the parameters' storage with their own
  // version counters, so a step between a micro-batch's forward and its
  // backward (pipedream, ddg) does not invalidate the saved graph.
  std::vector<torch::Tensor> aliases;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  // pipedream's weight stashing: the version of the weights the forwards run
  // with now. Each forward holds the current version; an update that finds
  // it held copies the weights into it first (a version nobody holds is
  // never copied), then starts a new one. A backward whose version has
  // values runs with them swapped in (asynchronous.h).
  struct WeightVersion {
    std::vector<torch::Tensor> values;  // empty: still the current weights
  };
  std::shared_ptr<WeightVersion> live = std::make_shared<WeightVersion>();
};

struct PartyContext {
  const RunSpec* spec = nullptr;
  const Plan* plan = nullptr;          // &spec->plan
  const ExecTopology* topo = nullptr;  // &spec->topology
  Transport* transport = nullptr;
  int rank = 0;
  SplitModel model;
  BatchSource* data = nullptr;
  std::mutex data_mutex;
  // Each client's latest batch (input, target), drawn once and shared by
  // its local stages: a U-shape's client reads the input on stage 0 and
  // the target on its last stage from one draw (guarded by data_mutex).
  std::map<std::pair<int, int64_t>, std::pair<torch::Tensor, torch::Tensor>> drawn_batches;
  std::vector<StageParts> stages;  // by stage index; local ones filled
  std::mutex compute;              // one processor per party
  ExecClock::time_point start;     // the run's time origin, common to the ranks (synchronise)
  // Seconds from `start` to t, and to now: the times of every event.
  double seconds_at(ExecClock::time_point t) const {
    return std::chrono::duration<double>(t - start).count();
  }
  double now_s() const { return seconds_at(ExecClock::now()); }
  RunOptions options;
  torch::Device device{torch::kCPU};
  int64_t batches = 0;                            // iterations + cool-down
  int progress_stage = -1, progress_client = -1;  // the instance that calls options.on_batch
  MemoryAccount* memory = nullptr;  // every thread building or running stages joins it
  // ddg/fr: each client's iteration barrier over its K stage instances, as
  // the simulator's (the algorithms' synchronous outer loop). The last of a
  // client's local instances to arrive meets the other ranks holding its
  // stages (asynchronous.h), then releases the local ones.
  struct IterationBarrier {
    std::mutex mutex;
    std::condition_variable cv;
    int local = 0;  // this process's instances of the client
    int arrived = 0;
    int64_t released = -1;  // the last iteration every stage finished
    std::string error;      // set when meeting the other ranks failed
  };
  std::map<int, std::unique_ptr<IterationBarrier>> barriers;  // by client
  // interleaved_1f1b: this party's stages take their ops in its one order
  // (device_ops), per client (asynchronous.h: wait_turn, pass_turn).
  struct Turnstile {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<int> stages;  // the stage of each op of the party's order
    size_t next = 0;
    bool failed = false;  // an instance failed: nobody's turn comes
  };
  std::map<int, std::unique_ptr<Turnstile>> turns;  // by client
  // splitfed_v1 on the server's rank: clients 1..n-1 run the server stages
  // on copies of their units of their own (client 0 on `model`, `stages`).
  std::map<int, SplitModel> replicas;                        // by client
  std::map<std::pair<int, int>, StageParts> replica_stages;  // by (stage, client)
  std::unique_ptr<Rounds> rounds;  // training modes with rounds, else null
  // The run's first failure (what merge_results reports): set once by
  // fail(), which also aborts the transport so the other instances stop now.
  std::mutex failure_mutex;
  std::string first_error;
  void fail(const std::string& error) {
    {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!first_error.empty()) return;
      first_error = error;
    }
    transport->abort(error);
  }

  // The parts and the units instance (stage, client) runs on.
  StageParts& parts(int stage, int client) {
    const auto it = replica_stages.find({stage, client});
    return it != replica_stages.end() ? it->second : stages[static_cast<size_t>(stage)];
  }
  SplitModel& model_of(int stage, int client) {
    return replica_stages.count({stage, client}) != 0 ? replicas.at(client) : model;
  }
  // Client `client`'s batch `batch` (input, target) on the device, drawn by
  // the first of its local stages to ask and kept for the others; its
  // earlier batches go. A last stage that drew the whole batch again for its
  // target would pay for a second input inside its forward.
  // `with_input` false (this party holds none of the client's first stage):
  // the target alone, the input left undefined.
  std::pair<torch::Tensor, torch::Tensor> shared_batch(int client, int64_t batch, bool with_input) {
    std::lock_guard<std::mutex> lock(data_mutex);
    auto it = drawn_batches.find({client, batch});
    if (it == drawn_batches.end()) {
      auto drawn = with_input ? data->batch(client, batch, plan->batch_size)
                              : std::make_pair(torch::Tensor(),
                                               data->target(client, batch, plan->batch_size));
      if (with_input) drawn.first = drawn.first.to(device);
      drawn.second = drawn.second.to(device);
      for (auto old = drawn_batches.begin(); old != drawn_batches.end();)
        old = old->first.first == client && old->first.second < batch ? drawn_batches.erase(old)
                                                                      : std::next(old);
      it = drawn_batches.emplace(std::make_pair(client, batch), std::move(drawn)).first;
    }
    return it->second;
  }
};

struct InstanceResult {
  std::vector<TimelineEvent> events;
  std::vector<BatchStats> stats;
  int64_t updated = 0;          // batches whose update ran
  int64_t skipped_updates = 0;  // of them, skipped over a non-finite gradient (loss scaling)
  std::string error;
  std::map<int, std::vector<torch::Tensor>> gradients;
  std::vector<EvalStats> evals;
  int64_t eval_bytes_sent = 0, eval_bytes_received = 0;
  // Leakage (RunOptions::leakage): what the instance measured, and the
  // gradients it received in the current window, as the attacks score them.
  std::vector<BoundaryLeakage> leakage;
  struct ReceivedGradients {
    std::vector<torch::Tensor> norms, labels;  // per micro-batch, [n]
    std::vector<double> pair_scores;           // direction attack: cosine of two samples' gradients
    std::vector<bool> pair_same;               // ... and whether they share a label
  } received_gradients;
};

// Samples of `output` whose top class is `target` (classification tasks;
// 0 for the others).
inline double correctly_classified(const SplitModel& model, const torch::Tensor& output,
                                   const torch::Tensor& target) {
  if (model.task != TaskKind::kImageClassification &&
      model.task != TaskKind::kSequenceClassification)
    return 0;
  return output.argmax(1).eq(target).sum().item<double>();
}

// Runs stage `stage` for client `client`. Never throws: a failure ends the
// instance with out->error set.
void run_instance(PartyContext& ctx, int stage, int client, InstanceResult* out);

}  // namespace splitsim::exec_internal
