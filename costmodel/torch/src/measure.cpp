#include "splitsim/costmodel/measure.h"

#include <torch/torch.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "meta_kernels.h"
#include "splitsim/costmodel/mac_counter.h"
#include "splitsim/costmodel/memory_account.h"
#include "splitsim/costmodel/model_blocks.h"
#include "splitsim/costmodel/model_zoo.h"

namespace splitsim {
namespace {

std::vector<int64_t> per_sample(const torch::Tensor& t) {
  return std::vector<int64_t>(t.sizes().begin() + 1, t.sizes().end());
}

// The profile of the whole model from that of its first two blocks: the
// units of block 1 repeated for blocks 2 .. layers-1, renamed.
ModelProfile replicate_blocks(const ModelProfile& two, const std::string& prefix, int64_t layers) {
  const std::string second = prefix + "1.";
  ModelProfile out = two;
  out.units.clear();
  std::vector<UnitProfile> block;
  const auto insert_copies = [&] {
    for (int64_t i = 1; i < layers; ++i)
      for (UnitProfile b : block) {
        b.name = prefix + std::to_string(i) + "." + b.name.substr(second.size());
        out.units.push_back(std::move(b));
      }
    block.clear();
  };
  for (const auto& u : two.units) {
    if (u.name.rfind(second, 0) == 0) {
      block.push_back(u);
      continue;
    }
    if (!block.empty()) insert_copies();  // the first unit after block 1
    out.units.push_back(u);
  }
  if (!block.empty()) insert_copies();
  for (size_t i = 0; i < out.units.size(); ++i)  // a chain, as every model here
    out.units[i].inputs = {static_cast<int>(i) - 1};
  return out;
}

// Tensor bytes of one part of the step: what the allocator reports
// (MemoryAccount), or on the meta device, which allocates nothing, the
// storages its ops created (StorageAccount). The two agree on the CPU.
// live_bytes() after a unit's forward is what it keeps for its backward;
// peak_bytes() over a backward, what that backward needs at once.
class TensorBytes {
 public:
  // `existing`: what the step reads and did not create (the unit's input,
  // its parameters and buffers; the loss's logits and target).
  // `net`: what was there before and is freed counts against what is
  // allocated (the accounts' net mode).
  TensorBytes(bool meta, const std::vector<torch::Tensor>& existing, bool net = false) {
    if (meta) {
      storage_.emplace(net);
      for (const torch::Tensor& t : existing) storage_->exclude(t);
    } else {
      memory_.emplace(net);
      joined_.emplace(*memory_);
    }
  }
  int64_t live_bytes() const { return storage_ ? storage_->live_bytes() : memory_->live_bytes(); }
  int64_t peak_bytes() const { return storage_ ? storage_->peak_bytes() : memory_->peak_bytes(); }

 private:
  std::optional<StorageAccount> storage_;
  std::optional<MemoryAccount> memory_;
  std::optional<MemoryAccount::Join> joined_;
};


// One pass of the model, unit by unit: each unit's input, output and ATen
// op counts for the batch, forward and backward.
struct UnitPass {
  std::vector<torch::Tensor> inputs, outputs;
  std::vector<OpCounts> fwd, bwd;
  torch::Tensor loss;
  std::vector<OpCounts> bwd_input, bwd_params;  // split_backward's halves
};

// The unit's shapes and parameter counts, from its output and parameters.
void describe_unit(const SplitModel& model, int i, const torch::Tensor& output, UnitProfile* u) {
  u->name = model.names[i];
  u->inputs = model.inputs[i];
  u->output_shape = per_sample(output);
  u->output_elem_bytes = output.element_size();
  for (const auto& p : model.units[i]->parameters()) {
    u->param_count += p.numel();
    u->param_bytes += p.numel() * p.element_size();
    if (!p.requires_grad()) {
      u->frozen_param_count += p.numel();
      u->frozen_param_bytes += p.numel() * p.element_size();
    } else {
      u->largest_trainable_tensor_bytes =
          std::max<int64_t>(u->largest_trainable_tensor_bytes, p.numel() * p.element_size());
    }
  }
  for (const auto& b : model.units[i]->buffers())
    if (b.is_floating_point()) u->buffer_bytes += b.numel() * b.element_size();
}

// Whether the unit's backward keeps its input (or a view of it) alive: run
// it once more on a copy with a storage of its own that nothing but the
// unit's graph can hold (a clone, not a leaf: no gradient accumulator holds
// it), let the copy go and see whether its storage outlives it. In a split
// run the units of a stage run as one chain, so the output of the unit
// before is freed after this forward when the answer is no (ReLU(inplace)
// on a copy, a residual add, a view the next unit does not keep).
bool keeps_input(SplitModel& model, int i, const torch::Tensor& input, bool requires_grad) {
  // The extra forward leaves the random stream (dropout) as it found it.
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  const torch::Tensor random_state = generator.get_state();
  torch::Tensor copy = input.detach().requires_grad_(requires_grad).clone();
  const auto storage = copy.storage().getWeakStorageImpl();
  const torch::Tensor output = model.units[i]->forward(copy);
  copy = torch::Tensor();
  const bool kept = !storage.expired();
  generator.set_state(random_state);
  return kept;
}

// The bytes of the unit's stash that are its output's storage: none when
// the output is a view of its input or of a parameter (the stash counts what
// the unit created).
int64_t output_stash_bytes(SplitModel& model, int i, const torch::Tensor& input,
                           const torch::Tensor& output) {
  if (output.is_alias_of(input)) return 0;
  for (const auto& t : model.units[i]->parameters())
    if (output.is_alias_of(t)) return 0;
  for (const auto& t : model.units[i]->buffers())
    if (output.is_alias_of(t)) return 0;
  return static_cast<int64_t>(output.storage().nbytes());
}

// Forward, unit by unit, each on a detached copy of its input so that the
// backward of each unit can be observed on its own (as a split run does).
// The copy asks for a gradient only where the whole model would compute
// one: some unit before it trains (frozen leading units have none).
void forward_units(SplitModel& model, const torch::Tensor& input, bool meta, int64_t batch,
                   UnitPass* pass, ModelProfile* profile) {
  const int n = model.size();
  torch::Tensor x = input;
  bool earlier_trains = false;
  for (int i = 0; i < n; ++i) {
    pass->inputs[i] =
        (i == 0 || !x.is_floating_point()) ? x : x.detach().requires_grad_(earlier_trains);
    for (const auto& p : model.units[i]->parameters()) earlier_trains |= p.requires_grad();
    std::vector<torch::Tensor> existing = model.units[i]->parameters();
    for (const torch::Tensor& b : model.units[i]->buffers()) existing.push_back(b);
    existing.push_back(pass->inputs[i]);
    UnitProfile& u = profile->units[i];
    {
      TensorBytes stash(meta, existing);
      MacCounter counter;
      pass->outputs[i] = model.units[i]->forward(pass->inputs[i]);
      pass->fwd[i] = counter.counts();
      u.stash_bytes_per_sample = stash.live_bytes() / batch;
    }
    describe_unit(model, i, pass->outputs[i], &u);
    u.output_stash_bytes_per_sample =
        output_stash_bytes(model, i, pass->inputs[i], pass->outputs[i]) / batch;
    if (i > 0 && pass->inputs[i].is_floating_point())
      u.keeps_input = keeps_input(model, i, pass->inputs[i], pass->inputs[i].requires_grad());
    x = pass->outputs[i];
  }
}

// The loss belongs to the last unit, forward and backward, and so does
// what it keeps for its backward (cross-entropy: the log-softmax of the
// logits, as large as the logits: a language model's largest tensor).
void measure_loss(SplitModel& model, const torch::Tensor& target, bool meta, int64_t batch,
                  UnitPass* pass, ModelProfile* profile) {
  const int n = model.size();
  UnitProfile& last = profile->units[n - 1];
  {
    TensorBytes stash(meta, {pass->outputs[n - 1], target});
    MacCounter counter;
    pass->loss = model.loss(pass->outputs[n - 1], target);
    pass->fwd[n - 1] += counter.counts();
    last.loss_stash_bytes_per_sample = stash.live_bytes() / batch;
    last.stash_bytes_per_sample += stash.live_bytes() / batch;
  }
  if (pass->outputs[n - 1].is_floating_point()) {
    // The loss's own backward, on a copy of the logits: the part of the last
    // unit's working memory that is the loss's (the gradients of the
    // log-probabilities and of the logits).
    const torch::Tensor logits = pass->outputs[n - 1].detach().requires_grad_(true);
    const torch::Tensor alone = model.loss(logits, target);
    TensorBytes work(meta, {logits, target, alone});
    alone.backward();
    last.loss_bwd_work_bytes_per_sample = work.peak_bytes() / batch;
  }
  // A split run drops the last unit's output (the logits) once the loss is
  // computed; where the loss's backward does not keep them (cross-entropy
  // keeps their log-softmax instead), they are freed then and are no part
  // of the stash. A language model's logits are its largest tensor.
  const int64_t bytes = static_cast<int64_t>(pass->outputs[n - 1].storage().nbytes());
  const auto logits = pass->outputs[n - 1].storage().getWeakStorageImpl();
  pass->outputs[n - 1] = torch::Tensor();
  if (logits.expired()) last.stash_bytes_per_sample -= bytes / batch;
}

// The two halves of unit i's backward as a split backward (zb_h1) runs
// them, each alone on the graph kept for the whole backward after it: the
// gradient of its input only, and of its trainable parameters only.
void split_backward(SplitModel& model, int i, UnitPass* pass) {
  const int n = model.size();
  const torch::Tensor& out = i == n - 1 ? pass->loss : pass->outputs[i];
  const torch::Tensor g = i == n - 1 ? torch::ones_like(out) : pass->inputs[i + 1].grad();
  if (!g.defined()) return;  // the full backward below says what went wrong
  const torch::Tensor& in = pass->inputs[i];
  if (in.requires_grad()) {
    MacCounter counter;
    torch::autograd::grad({out}, {in}, {g}, /*retain_graph=*/true);
    pass->bwd_input[i] = counter.counts();
  }
  std::vector<torch::Tensor> params;
  for (const auto& p : model.units[i]->parameters())
    if (p.requires_grad()) params.push_back(p);
  if (!params.empty()) {
    MacCounter counter;
    torch::autograd::grad({out}, params, {g}, /*retain_graph=*/true, false, /*allow_unused=*/true);
    pass->bwd_params[i] = counter.counts();
  }
}

// Backward, last unit first, each from the gradient its successor left on
// its input copy.
void backward_units(SplitModel& model, bool meta, int64_t batch, UnitPass* pass,
                    ModelProfile* profile) {
  const int n = model.size();
  for (int i = n - 1; i >= 0; --i) {
    // A unit whose output needs no gradient (frozen, fed by the input) has no
    // backward: nothing before it trains either.
    if (i < n - 1 && !pass->outputs[i].requires_grad()) continue;
    split_backward(model, i, pass);
    // Net of the stash the backward frees as it goes: a stage's peak is its
    // stash plus this, not plus every byte its backward allocates.
    TensorBytes work(meta, {}, /*net=*/true);
    MacCounter counter;
    if (i == n - 1) {
      pass->loss.backward();
    } else {
      const torch::Tensor& g = pass->inputs[i + 1].grad();
      if (!g.defined()) throw std::logic_error("no gradient reached unit " + model.names[i + 1]);
      pass->outputs[i].backward(g);
    }
    pass->bwd[i] = counter.counts();
    // The parameters' gradients it leaves are counted apart (the plan holds
    // them for the whole step); the rest is its working memory.
    UnitProfile& u = profile->units[i];
    u.bwd_work_bytes_per_sample =
        std::max<int64_t>(0, work.peak_bytes() - u.trainable_param_bytes()) / batch;
  }
  // The loss's share of the last unit's working memory, as that counts it
  // (its peak may come before the parameters' gradients it leaves out).
  UnitProfile& tail = profile->units[n - 1];
  tail.loss_bwd_work_bytes_per_sample =
      std::min(tail.loss_bwd_work_bytes_per_sample, tail.bwd_work_bytes_per_sample);
}

}  // namespace

ModelProfile measure_model(const ModelSpec& spec, int64_t batch, bool replicate, MeasureOn on) {
  if (batch < 2) throw std::invalid_argument("measure_model: batch must be >= 2 (BatchNorm)");
  const ModelSpec resolved = resolve_model_defaults(spec, "$.model");
  const bool meta =
      on == MeasureOn::kMeta || (on == MeasureOn::kAuto && is_transformer(resolved.name));
  const std::string prefix = replicate ? repeated_block_prefix(resolved) : "";
  if (!prefix.empty()) {
    ModelSpec two = resolved;
    two.layers = 2;
    return replicate_blocks(
        measure_model(two, batch, false, meta ? MeasureOn::kMeta : MeasureOn::kCpu), prefix,
        resolved.layers);
  }
  if (meta) link_meta_kernels();
  SplitModel model = build_model(spec, /*seed=*/0, nullptr, meta);
  model.train(true);
  const int n = model.size();
  const torch::Device device = meta ? torch::kMeta : torch::kCPU;
  const torch::Tensor input = model.make_input(batch, /*seed=*/1).to(device);
  const torch::Tensor target = model.make_target(batch, /*seed=*/1).to(device);

  ModelProfile profile;
  profile.model = model.spec.name;
  profile.input_shape = per_sample(input);
  profile.input_dtype = input.is_floating_point() ? "float32" : "int64";
  profile.measured_batch = batch;
  profile.units.resize(n);

  UnitPass pass{std::vector<torch::Tensor>(n),
                std::vector<torch::Tensor>(n),
                std::vector<OpCounts>(n),
                std::vector<OpCounts>(n),
                torch::Tensor(),
                std::vector<OpCounts>(n),
                std::vector<OpCounts>(n)};
  forward_units(model, input, meta, batch, &pass, &profile);
  measure_loss(model, target, meta, batch, &pass, &profile);
  backward_units(model, meta, batch, &pass, &profile);

  const double per = 1.0 / static_cast<double>(batch);
  for (int i = 0; i < n; ++i) {
    profile.units[i].fwd = pass.fwd[i].scaled(per);
    profile.units[i].bwd = pass.bwd[i].scaled(per);
    profile.units[i].bwd_input = pass.bwd_input[i].scaled(per);
    profile.units[i].bwd_params = pass.bwd_params[i].scaled(per);
  }
  return profile;
}

}  // namespace splitsim
