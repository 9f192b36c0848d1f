// Held-out evaluation of one (stage, client) instance (evaluate_stage,
// stage_wire.h).
#include <chrono>
#include <memory>
#include <mutex>

#include "stage_wire.h"

namespace splitsim::exec_internal {

void evaluate_stage(PartyContext& ctx, const StageWire& wire, int64_t done, int64_t* serial,
                    InstanceResult* out) {
  const int k = wire.stage(), K = wire.stages();
  const bool last = k == K - 1;
  StageParts& parts = ctx.stages[static_cast<size_t>(k)];
  auto now_s = [&] { return std::chrono::duration<double>(ExecClock::now() - ctx.start).count(); };
  std::vector<std::shared_ptr<torch::nn::Module>> modules;
  for (int u = parts.first_unit; u <= parts.last_unit; ++u)
    modules.push_back(ctx.model.units[static_cast<size_t>(u)]);
  if (parts.fwd_dec) modules.push_back(parts.fwd_dec);
  if (parts.fwd_enc) modules.push_back(parts.fwd_enc);
  for (auto& m : modules) m->train(false);

  EvalStats stats;
  stats.after_batches = done;
  stats.trained_s = now_s();
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
    if (k == 0 || last) {
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
  if (!last) return;
  if (stats.samples > 0) stats.loss /= stats.samples;
  stats.eval_s = now_s() - stats.trained_s;
  out->evals.push_back(stats);
  if (ctx.options.on_eval) ctx.options.on_eval(stats);
}

}  // namespace splitsim::exec_internal
