// One (stage, client) instance: follows stage_ops() with real compute and
// asynchronous transfers, recording a Timeline event for each step.
#include <limits>
#include <optional>
#include <thread>

#include "asynchronous.h"
#include "error_reason.h"
#include "party_context.h"
#include "slow_processor.h"
#include "splitsim/costmodel/schedule.h"
#include "splitsim/exec/mixed_precision.h"
#include "stage_checkpoint.h"
#include "stage_transfers.h"
#include "stage_update.h"
#include "stage_wire.h"

namespace splitsim::exec_internal {
namespace {

struct Stash {
  torch::Tensor leaf;   // stage input handed over the cut (k > 0); requires grad if it goes back
  torch::Tensor input;  // fr: what the forward is replayed from
  torch::Tensor y;      // carried activation sent on (not the last stage)
  torch::Tensor loss;   // last stage
  std::shared_ptr<exec_internal::StageParts::WeightVersion> weights;  // pipedream
  // zb_h1, between a micro-batch's B and its W: what the backward starts
  // from (the scaled loss, or the output with the gradient received).
  torch::Tensor out, out_grad;
};

class Instance {
 public:
  Instance(PartyContext& ctx, int k, int c, InstanceResult* out)
      : ctx_(ctx),
        plan_(*ctx.plan),
        parts_(ctx.parts(k, c)),
        model_(ctx.model_of(k, c)),
        wire_(ctx, k, c),
        transfers_(ctx, wire_, out),
        slow_(ctx.options.compute_slowdown, torch::get_num_threads()),
        k_(k),
        c_(c),
        out_(out) {
    K_ = static_cast<int>(plan_.stages.size());
    m_ = plan_.chunks();
    fr_ = plan_.schedule == Schedule::kFr;
    stash_weights_ = plan_.schedule == Schedule::kPipeDream;
    split_ = splits_backward(plan_.schedule);
    for (const torch::Tensor& p : parts_.params)
      if (p.requires_grad()) trainable_.push_back(p);
    loss_scale_ = ctx.spec->loss_scale;
  }

  void run() {
    auto ops = stage_ops(plan_.schedule, k_, K_, m_, ctx_.batches, plan_.virtual_stages);
    const int64_t first = ctx_.options.first_batch;  // resumed from a checkpoint: later batches
    ops.erase(
        std::remove_if(ops.begin(), ops.end(), [first](const Op& o) { return o.batch < first; }),
        ops.end());
    const size_t window = static_cast<size_t>(2 * m_ + 2);
    int64_t batch = -1;  // of the last op (a training mode's rounds wait between batches)
    for (size_t j = 0; j < ops.size(); ++j) {
      if (next_post_ < ops.size() && next_post_ <= j + window) {
        std::lock_guard<std::mutex> lock(ctx_.compute);
        for (; next_post_ < ops.size() && next_post_ <= j + window; ++next_post_)
          post_receive(next_post_, ops[next_post_]);
      }
      const Op& op = ops[j];
      if (ctx_.rounds && op.batch != batch) {
        ctx_.rounds->before_batch(k_, c_, batch = op.batch, out_);
        run_deferred_evaluation();
      }
      transfers_.drop_completed_sends();
      wait_turn(ctx_, c_, k_);
      if (op.kind == OpKind::kForward) forward(j, op);
      if (op.kind == OpKind::kBackward) backward(j, op);
      if (op.kind == OpKind::kWeight) weight(op);
      if (op.kind == OpKind::kUpdate) {
        update(op);
        checkpoint(op);
      }
      if (op.kind == OpKind::kBarrier) iteration_barrier(ctx_, c_, op.batch);
      pass_turn(ctx_, c_);
      if (ctx_.rounds && op.kind == OpKind::kUpdate)
        ctx_.rounds->after_batch(k_, c_, op.batch, out_);
      transfers_.wait_sends(static_cast<size_t>(4 * m_ + 4));
    }
    transfers_.wait_sends(0);
    if (ctx_.rounds) ctx_.rounds->after_last(k_, c_, out_);
    run_deferred_evaluation();
  }

 private:
  // A computation's start: now, and the slowed processor's clock.
  double compute_start() {
    slow_.start();
    return ctx_.now_s();
  }
  int64_t mb_size(int64_t mb) const { return wire_.mb_size(mb); }
  int64_t mb_offset(int64_t mb) const { return wire_.mb_offset(mb); }
  // Whether a gradient comes in from stage k+1 / goes back to stage k-1:
  // not where no stage up to the boundary trains (Plan's needs_gradient).
  bool gradient_in() const { return k_ < K_ - 1 && plan_.boundaries[k_].needs_gradient; }
  bool gradient_out() const { return k_ > 0 && plan_.boundaries[k_ - 1].needs_gradient; }
  bool remote(int other_stage) const { return wire_.remote(other_stage); }

  // A compute event (a decode or encode at `boundary`, the gradient's when
  // `backward`).
  void record(EventKind kind, const Op& op, double t0, double t1, int boundary = -1,
              int backward = 0) {
    if (is_compute(kind)) t1 = slow_.finish(t0, t1);  // in the computation's turn
    TimelineEvent e = stage_event(wire_, kind, op, t0, t1);
    e.boundary = boundary;
    e.backward = backward;
    out_->events.push_back(e);
  }

  void post_receive(size_t j, const Op& op) {
    if (op.kind == OpKind::kForward && k_ > 0)
      transfers_.post_receive(j, op, k_ - 1, false, k_ - 1);
    else if (op.kind == OpKind::kBackward && gradient_in())
      transfers_.post_receive(j, op, k_, true, k_ + 1);
  }

  // The send call is made in the encode's turn on the party's processor
  // (ctx_.compute held), as the receives are posted in one: the transport's
  // calls are the stage's work on the processor, taken in turn with the
  // other stage's compute, not left to the kernel's time slices
  // (exec/validate/README.md, "A stage's turn on the processor").
  void send(const Op& op, int b, bool backward, std::vector<torch::Tensor> wire, int peer_stage) {
    transfers_.send(op, b, backward, std::move(wire), peer_stage);
  }

  // The current batch's data (input on stage 0, target on the last stage),
  // the client's one draw that its local stages share; without the input
  // where the client's stage 0 is on another party (the plan counts the
  // batch's input on stage 0 alone).
  const std::pair<torch::Tensor, torch::Tensor>& data(int64_t batch) {
    if (batch != data_batch_) {
      data_ = {};  // the old batch goes before the new is drawn
      data_ = ctx_.shared_batch(c_, batch, !remote(0));
      data_batch_ = batch;
    }
    return data_;
  }

  // The stage's forward from its input; on the last stage also the loss.
  // Under mixed precision (mixed_precision.h) the forward runs under
  // autocast and its output goes on as FP32 (the wire's dtype is the
  // codec's business).
  void compute_forward(Stash* s, torch::Tensor x, const Op& op) {
    torch::Tensor out;
    bool mixed = false;
    {
      AutocastGuard autocast(ctx_.device, ctx_.spec->compute_precision);
      mixed = autocast.active();
      out = model_.forward(x, parts_.first_unit, parts_.last_unit);
    }
    if (mixed && out.is_floating_point() && out.scalar_type() != torch::kFloat32)
      out = out.to(torch::kFloat32);
    if (k_ == K_ - 1) {
      const int64_t n = mb_size(op.microbatch);
      torch::Tensor target = data(op.batch).second.narrow(0, mb_offset(op.microbatch), n);
      s->loss = model_.loss(out, target) * (static_cast<double>(n) / plan_.batch_size);
      BatchStats& st = stats(op.batch);
      st.loss += s->loss.item<double>();
      st.samples += static_cast<double>(n);
      st.correct += correctly_classified(model_, out, target);
    } else {
      s->y = parts_.fwd_enc->carry(out);
    }
  }

  BatchStats& stats(int64_t batch) {
    if (out_->stats.empty() || out_->stats.back().batch != batch)
      out_->stats.push_back({c_, batch, 0, 0, 0});
    return out_->stats.back();
  }

  torch::Tensor stage_input(const Stash& s, const Op& op) {
    if (k_ == 0) return s.input;
    return parts_.fwd_dec->expand(s.leaf);
  }

  // A forward is one turn on the party's processor (ctx_.compute): the
  // decode, the forward, the encode and the send call, as the simulator
  // runs them (its HostArbiter); only the wait for the input is outside, so
  // the party's other stage cannot come in between the forward and its send.
  void forward(size_t j, const Op& op) {
    Stash s;
    std::vector<torch::Tensor> received;
    if (k_ == 0)
      s.input = data(op.batch).first.narrow(0, mb_offset(op.microbatch), mb_size(op.microbatch));
    else
      received = transfers_.take_receive(j, op, k_ - 1, false, k_ - 1);
    std::lock_guard<std::mutex> lock(ctx_.compute);
    if (k_ > 0) {
      const double t0 = compute_start();
      torch::NoGradGuard no_grad;
      parts_.fwd_dec->set_step(op.batch);
      s.leaf = parts_.fwd_dec->unpack(received, mb_size(op.microbatch)).to(torch::kFloat).detach();
      s.leaf.requires_grad_(gradient_out());
      record(EventKind::kDecode, op, t0, ctx_.now_s(), k_ - 1, 0);
    }
    {
      const double t0 = compute_start();
      std::optional<torch::NoGradGuard> no_grad;
      if (fr_) no_grad.emplace();
      if (k_ < K_ - 1) parts_.fwd_enc->set_step(op.batch);
      if (stash_weights_) s.weights = parts_.live;
      compute_forward(&s, stage_input(s, op), op);
      record(EventKind::kForward, op, t0, ctx_.now_s());
    }
    if (k_ < K_ - 1) {
      const double t0 = compute_start();
      std::vector<torch::Tensor> wire;
      {
        torch::NoGradGuard no_grad;
        wire = parts_.fwd_enc->pack(s.y.detach());
      }
      record(EventKind::kEncode, op, t0, ctx_.now_s(), k_, 0);
      send(op, k_, false, std::move(wire), k_ + 1);
    }
    if (fr_) s.y = s.loss = torch::Tensor();
    stash_[{op.batch, op.microbatch}] = std::move(s);
  }

  // A backward is one turn too (decode, backward, encode, send call); fr's
  // replay of the forward is a turn of its own before the wait for the
  // gradient.
  void backward(size_t j, const Op& op) {
    Stash s = std::move(stash_.at({op.batch, op.microbatch}));
    stash_.erase({op.batch, op.microbatch});
    if (fr_) {
      std::lock_guard<std::mutex> lock(ctx_.compute);
      const double t0 = compute_start();
      if (k_ > 0) s.leaf = s.leaf.detach().requires_grad_(gradient_out());
      StashStats guard(this, op.batch);
      compute_forward(&s, stage_input(s, op), op);
      record(EventKind::kRecompute, op, t0, ctx_.now_s());
    }
    std::vector<torch::Tensor> received;
    if (gradient_in()) received = transfers_.take_receive(j, op, k_, true, k_ + 1);
    std::lock_guard<std::mutex> lock(ctx_.compute);
    torch::Tensor grad;
    if (gradient_in()) {
      const double t0 = compute_start();
      torch::NoGradGuard no_grad;
      parts_.bwd_dec->set_step(op.batch);
      grad = parts_.bwd_dec->expand(parts_.bwd_dec->unpack(received, mb_size(op.microbatch)))
                 .to(torch::kFloat);
      record(EventKind::kDecode, op, t0, ctx_.now_s(), k_, 1);
      observe_gradient(op, grad);
    }
    torch::Tensor input_grad;
    {
      const double t0 = compute_start();
      StashedWeights use(parts_, s.weights.get());
      if (k_ == K_ - 1) {
        s.out = loss_scale_ != 1 ? s.loss * loss_scale_ : s.loss;
      } else if (gradient_in() && s.y.requires_grad()) {  // else nothing up to here trains
        s.out = s.y;
        s.out_grad = grad.view(s.y.sizes());
      }
      if (!split_) {
        if (s.out.defined()) torch::autograd::backward({s.out}, grads_of(s));
        if (gradient_out()) input_grad = s.leaf.grad();
      } else if (gradient_out()) {
        // zb_h1's B: the input's gradient alone; the graph stays for the W.
        input_grad =
            torch::autograd::grad({s.out}, {s.leaf}, grads_of(s), /*retain_graph=*/true)[0];
      }
      record(EventKind::kBackward, op, t0, ctx_.now_s());
    }
    if (split_) stash_[{op.batch, op.microbatch}] = std::move(s);  // until its W
    if (gradient_out()) {
      const double t0 = compute_start();
      std::vector<torch::Tensor> wire;
      {
        torch::NoGradGuard no_grad;
        parts_.bwd_enc->set_step(op.batch);
        wire = parts_.bwd_enc->pack(parts_.bwd_enc->carry(input_grad));
      }
      record(EventKind::kEncode, op, t0, ctx_.now_s(), k_ - 1, 1);
      send(op, k_ - 1, true, std::move(wire), k_ - 1);
    }
  }

  // Leakage (RunOptions::leakage): client 0's decoded gradient of a
  // training batch in a window, with its samples' labels, as the label
  // attacks score it (evaluate_stage turns them into AUCs).
  void observe_gradient(const Op& op, const torch::Tensor& grad) {
    if (c_ != 0 || op.batch >= plan_.iterations ||
        !ctx_.options.leakage.window(op.batch, ctx_.options.eval_every))
      return;
    torch::Tensor labels;
    {
      std::lock_guard<std::mutex> lock(ctx_.data_mutex);
      labels = ctx_.data->target(c_, op.batch, plan_.batch_size);
    }
    labels = labels.narrow(0, mb_offset(op.microbatch), mb_size(op.microbatch)).to(torch::kCPU);
    const torch::Tensor g = grad.detach().to(torch::kCPU).reshape({labels.size(0), -1});
    auto& r = out_->received_gradients;
    r.norms.push_back(g.to(torch::kFloat64).norm(2, 1));
    r.labels.push_back(labels);
    direction_attack_pairs(g, labels, &r.pair_scores, &r.pair_same);
  }

  // The gradient a backward starts from: none for a loss, else the one
  // received.
  static std::vector<torch::Tensor> grads_of(const Stash& s) {
    if (!s.out_grad.defined()) return {};
    return {s.out_grad};
  }

  // zb_h1's W: the trainable parameters' gradients of a micro-batch whose B
  // ran, from the graph it kept; then its stash goes.
  void weight(const Op& op) {
    Stash s = std::move(stash_.at({op.batch, op.microbatch}));
    stash_.erase({op.batch, op.microbatch});
    std::lock_guard<std::mutex> lock(ctx_.compute);
    const double t0 = compute_start();
    if (s.out.defined() && s.out.requires_grad() && !trainable_.empty())
      torch::autograd::backward({s.out}, grads_of(s), /*retain_graph=*/false,
                                /*create_graph=*/false, trainable_);
    s = Stash();  // the graph and the activations go inside the W's turn
    record(EventKind::kWeight, op, t0, ctx_.now_s());
  }

  // fr replays the forward: its loss must not count twice in the stats.
  struct StashStats {
    StashStats(Instance* in, int64_t batch) : in_(in), batch_(batch) {
      if (in_->k_ == in_->K_ - 1) saved_ = in_->stats(batch);
    }
    ~StashStats() {
      if (in_->k_ == in_->K_ - 1) in_->stats(batch_) = saved_;
    }
    Instance* in_;
    int64_t batch_;
    BatchStats saved_;
  };

  void update(const Op& op) {
    step(op);
    if (ctx_.options.on_batch && k_ == ctx_.progress_stage && c_ == ctx_.progress_client &&
        op.batch < plan_.iterations)
      ctx_.options.on_batch(op.batch + 1, k_ == K_ - 1 ? stats(op.batch).loss
                                                       : std::numeric_limits<double>::quiet_NaN());
    const int64_t every = ctx_.options.eval_every;
    if (every <= 0 || (op.batch + 1) % every != 0 || op.batch >= plan_.iterations || c_ != 0)
      return;
    // Client 0's model is the one evaluated. Under splitfed its instances
    // evaluate once the round's average is in (before their next batch, or
    // after the last): stage 0 loads it there.
    if (ctx_.rounds && plan_.training != "vanilla")
      deferred_eval_ = op.batch + 1;
    else
      evaluate_stage(ctx_, wire_, op.batch + 1, &eval_serial_, out_);
  }

  // After the update and evaluation of every checkpoint_every-th batch.
  void checkpoint(const Op& op) {
    const int64_t every = ctx_.options.checkpoint.every;
    if (ctx_.options.checkpoint.dir.empty() || every <= 0 || (op.batch + 1) % every != 0 ||
        op.batch >= plan_.iterations)
      return;
    save_checkpoint(ctx_, k_, c_, op.batch + 1, *out_);
  }

  void run_deferred_evaluation() {
    if (deferred_eval_ < 0) return;
    evaluate_stage(ctx_, wire_, deferred_eval_, &eval_serial_, out_);
    deferred_eval_ = -1;
  }

  // The update waits for the stage's sends but the last (its tensors are
  // the transfer's own, which no update touches), as the simulator's update
  // follows the last send call, not its arrival: a server whose turn passes
  // after its update (splitfed_v2, vanilla) would otherwise hold the next
  // client until the gradient had crossed the link. The earlier ones are
  // done by then or nearly, and their buffers go before the step's.
  void step(const Op& op) {
    transfers_.wait_sends(1);
    std::lock_guard<std::mutex> lock(ctx_.compute);
    const double t0 = compute_start();
    update_stage(parts_, model_, loss_scale_, stash_weights_, ctx_.options.keep_gradients, out_);
    record(EventKind::kUpdate, op, t0, ctx_.now_s());
    out_->updated = op.batch + 1;
  }

  PartyContext& ctx_;
  const Plan& plan_;
  StageParts& parts_;
  SplitModel& model_;  // the units parts_ runs on (splitfed_v1: the client's own copy)
  StageWire wire_;
  StageTransfers transfers_;  // constructed after wire_, which it refers to
  SlowProcessor slow_;  // --compute-slowdown
  int k_, c_, K_ = 0;
  int64_t m_ = 1;
  bool fr_ = false;
  bool stash_weights_ = false;  // pipedream
  bool split_ = false;          // zb_h1: B and W ops
  std::vector<torch::Tensor> trainable_;  // the stage's parameters that train (W's inputs)
  double loss_scale_ = 1;       // Scenario::effective_loss_scale()
  InstanceResult* out_;
  size_t next_post_ = 0;
  int64_t eval_serial_ = 0;     // eval batches so far (their tags)
  int64_t deferred_eval_ = -1;  // splitfed: the evaluation after this many batches, still due
  std::map<std::pair<int64_t, int64_t>, Stash> stash_;
  std::pair<torch::Tensor, torch::Tensor> data_;
  int64_t data_batch_ = -1;
};

}  // namespace

void run_instance(PartyContext& ctx, int stage, int client, InstanceResult* out) {
  std::optional<MemoryAccount::Join> joined;
  if (ctx.memory != nullptr) joined.emplace(*ctx.memory);
  try {
    Instance(ctx, stage, client, out).run();
  } catch (const std::exception& e) {
    out->error = "stage " + std::to_string(stage) + " (client " + std::to_string(client) +
                 "): " + error_reason(e);
    fail_turns(ctx);
    if (ctx.rounds) ctx.rounds->fail();
    ctx.fail(out->error);
  }
}

}  // namespace splitsim::exec_internal
