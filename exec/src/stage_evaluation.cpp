// Held-out evaluation of one (stage, client) instance (evaluate_stage,
// stage_wire.h).
#include <chrono>
#include <memory>
#include <mutex>

#include "stage_wire.h"

namespace splitsim::exec_internal {
namespace {

// Leakage at this evaluation (RunOptions::leakage), on the party's
// processor: of the boundary before stage k, from the held-out activations
// it decoded (`z`) and their inputs (`x`); of the boundary after it, from
// the training gradients it received since the previous evaluation.
void measure_leakage(PartyContext& ctx, int k, int K, int64_t done,
                     const std::vector<torch::Tensor>& z, const std::vector<torch::Tensor>& x,
                     InstanceResult* out) {
  std::lock_guard<std::mutex> lock(ctx.compute);
  const LeakageOptions& o = ctx.options.leakage;
  if (k > 0 && !z.empty()) {
    const ExecClock::time_point t0 = ExecClock::now();
    const torch::Tensor zs = torch::cat(z), xs = torch::cat(x);
    const int64_t n = zs.size(0), half = n / 2;
    BoundaryLeakage l;
    l.after_batches = done;
    l.boundary = k - 1;
    l.attacker_samples = half;
    l.samples = n - half;
    const torch::Tensor z_test = zs.narrow(0, half, n - half),
                        x_test = xs.narrow(0, half, n - half);
    l.distance_correlation = distance_correlation(x_test, z_test);
    l.reconstruction =
        reconstruction_attack(zs.narrow(0, 0, half), xs.narrow(0, 0, half), z_test, x_test,
                              o.seed * 1000003 + static_cast<uint64_t>(k), o.attack_epochs);
    l.seconds = std::chrono::duration<double>(ExecClock::now() - t0).count();
    out->leakage.push_back(l);
  }
  InstanceResult::ReceivedGradients& r = out->received_gradients;
  if (k < K - 1 && !r.norms.empty()) {
    const ExecClock::time_point t0 = ExecClock::now();
    BoundaryLeakage l;
    l.after_batches = done;
    l.boundary = k;
    l.backward = true;
    const torch::Tensor labels = torch::cat(r.labels);
    l.samples = labels.size(0);
    l.label_auc_norm = norm_attack_auc(torch::cat(r.norms).unsqueeze(1), labels);
    l.label_auc_direction = roc_auc(r.pair_scores, r.pair_same);
    l.seconds = std::chrono::duration<double>(ExecClock::now() - t0).count();
    out->leakage.push_back(l);
  }
  r = InstanceResult::ReceivedGradients();
}

}  // namespace

void evaluate_stage(PartyContext& ctx, const StageWire& wire, int64_t done, int64_t* serial,
                    InstanceResult* out) {
  const int k = wire.stage(), K = wire.stages();
  const bool last = k == K - 1;
  StageParts& parts = ctx.stages[static_cast<size_t>(k)];
  std::vector<std::shared_ptr<torch::nn::Module>> modules;
  for (int u = parts.first_unit; u <= parts.last_unit; ++u)
    modules.push_back(ctx.model.units[static_cast<size_t>(u)]);
  if (parts.fwd_dec) modules.push_back(parts.fwd_dec);
  if (parts.fwd_enc) modules.push_back(parts.fwd_enc);
  for (auto& m : modules) m->train(false);
  const bool leak = wire.client() == 0 && ctx.options.leakage.at(done);
  std::vector<torch::Tensor> leaked, inputs;  // what crossed the boundary before k, and its inputs

  EvalStats stats;
  stats.after_batches = done;
  stats.trained_s = ctx.now_s();
  if (last) {  // the training batches since the previous evaluation
    double samples = 0, correct = 0, n = 0;
    for (const BatchStats& b : out->stats)
      if (b.batch >= done - ctx.options.eval_every && b.batch < done) {
        stats.train_loss += b.loss;
        correct += b.correct;
        samples += b.samples;
        ++n;
      }
    if (n > 0) stats.train_loss /= n;
    if (samples > 0) stats.train_accuracy = correct / samples;
  }
  for (int64_t t = 0; t < ctx.options.eval_batches; ++t, ++*serial) {
    std::pair<torch::Tensor, torch::Tensor> data;
    if (k == 0 || last || (leak && k > 0)) {
      std::lock_guard<std::mutex> lock(ctx.data_mutex);
      data = ctx.options.eval_data->batch(wire.client(), t, ctx.plan->batch_size);
    }
    // Tags past every training batch of the run: nothing in flight shares them.
    const int64_t tag_batch = ctx.batches + *serial;
    for (int64_t mb = 0; mb < wire.chunks(); ++mb) {
      const int64_t n = wire.mb_size(mb);
      torch::Tensor x;
      if (k == 0) {
        x = data.first.narrow(0, wire.mb_offset(mb), n).to(ctx.device);
      } else {
        int64_t bytes = 0;
        std::vector<torch::Tensor> in = wire.buffers(k - 1, false, done, mb, &bytes);
        ctx.transport->recv(in, wire.rank_of(k - 1), wire.tag(k - 1, false, tag_batch, mb))
            ->wait(ctx.options.timeout);
        if (wire.remote(k - 1)) out->eval_bytes_received += bytes;
        for (auto& w : in) w = w.to(ctx.device);
        std::lock_guard<std::mutex> lock(ctx.compute);
        torch::NoGradGuard no_grad;
        parts.fwd_dec->set_step(done);
        x = parts.fwd_dec->expand(parts.fwd_dec->unpack(in, n).to(torch::kFloat));
        if (leak) {
          leaked.push_back(x.to(torch::kCPU).clone());
          inputs.push_back(data.first.narrow(0, wire.mb_offset(mb), n).clone());
        }
      }
      std::vector<torch::Tensor> packed;
      {
        std::lock_guard<std::mutex> lock(ctx.compute);
        torch::NoGradGuard no_grad;
        torch::Tensor y = ctx.model.forward(x, parts.first_unit, parts.last_unit);
        if (last) {
          torch::Tensor target = data.second.narrow(0, wire.mb_offset(mb), n).to(ctx.device);
          stats.loss += ctx.model.loss(y, target).item<double>() * static_cast<double>(n);
          stats.samples += static_cast<double>(n);
          stats.correct += correctly_classified(ctx.model, y, target);
        } else {
          parts.fwd_enc->set_step(done);
          packed = parts.fwd_enc->pack(parts.fwd_enc->carry(y));
        }
      }
      if (last) continue;
      const int64_t bytes = wire.to_wire(k, false, done, mb, &packed);
      ctx.transport->send(packed, wire.rank_of(k + 1), wire.tag(k, false, tag_batch, mb))
          ->wait(ctx.options.timeout);
      if (wire.remote(k + 1)) out->eval_bytes_sent += bytes;
    }
  }
  for (auto& m : modules) m->train(true);
  if (leak) measure_leakage(ctx, k, K, done, leaked, inputs, out);
  if (!last) return;
  if (stats.samples > 0) stats.loss /= stats.samples;
  stats.eval_s = ctx.now_s() - stats.trained_s;
  out->evals.push_back(stats);
  if (ctx.options.on_eval) ctx.options.on_eval(stats);
}

}  // namespace splitsim::exec_internal
