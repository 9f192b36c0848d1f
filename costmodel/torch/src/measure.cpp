#include "splitsim/costmodel/measure.h"

#include <torch/torch.h>

#include <stdexcept>
#include <string>
#include <vector>

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

}  // namespace

ModelProfile measure_model(const ModelSpec& spec, int64_t batch, bool replicate) {
  if (batch < 2) throw std::invalid_argument("measure_model: batch must be >= 2 (BatchNorm)");
  const ModelSpec resolved = resolve_model_defaults(spec, "$.model");
  const std::string prefix = replicate ? repeated_block_prefix(resolved) : "";
  if (!prefix.empty()) {
    ModelSpec two = resolved;
    two.layers = 2;
    return replicate_blocks(measure_model(two, batch, false), prefix, resolved.layers);
  }
  SplitModel model = build_model(spec, /*seed=*/0);
  model.train(true);
  const int n = model.size();
  const torch::Tensor input = model.make_input(batch, /*seed=*/1);
  const torch::Tensor target = model.make_target(batch, /*seed=*/1);

  ModelProfile profile;
  profile.model = model.spec.name;
  profile.input_shape = per_sample(input);
  profile.input_dtype = input.is_floating_point() ? "float32" : "int64";
  profile.measured_batch = batch;
  profile.units.resize(n);

  // Forward, unit by unit, each on a detached copy of its input so that the
  // backward of each unit can be observed on its own (as a split run does).
  // The copy asks for a gradient only where the whole model would compute
  // one: some unit before it trains (frozen leading units have none).
  std::vector<torch::Tensor> inputs(n), outputs(n);
  std::vector<OpCounts> fwd(n), bwd(n);
  torch::Tensor x = input;
  bool earlier_trains = false;
  for (int i = 0; i < n; ++i) {
    inputs[i] = (i == 0 || !x.is_floating_point()) ? x : x.detach().requires_grad_(earlier_trains);
    for (const auto& p : model.units[i]->parameters()) earlier_trains |= p.requires_grad();
    MemoryAccount memory;
    MemoryAccount::Join joined(memory);
    {
      MacCounter counter;
      outputs[i] = model.units[i]->forward(inputs[i]);
      fwd[i] = counter.counts();
    }
    UnitProfile& u = profile.units[i];
    u.name = model.names[i];
    u.inputs = model.inputs[i];
    u.output_shape = per_sample(outputs[i]);
    u.output_elem_bytes = outputs[i].element_size();
    u.stash_bytes_per_sample = memory.live_bytes() / batch;
    for (const auto& p : model.units[i]->parameters()) {
      u.param_count += p.numel();
      u.param_bytes += p.numel() * p.element_size();
      if (!p.requires_grad()) {
        u.frozen_param_count += p.numel();
        u.frozen_param_bytes += p.numel() * p.element_size();
      }
    }
    x = outputs[i];
  }

  // The loss belongs to the last unit, forward and backward, and so does
  // what it keeps for its backward (cross-entropy: the log-softmax of the
  // logits, as large as the logits: a language model's largest tensor).
  torch::Tensor loss;
  {
    MemoryAccount memory;
    MemoryAccount::Join joined(memory);
    MacCounter counter;
    loss = model.loss(outputs[n - 1], target);
    fwd[n - 1] += counter.counts();
    profile.units[n - 1].stash_bytes_per_sample += memory.live_bytes() / batch;
  }
  for (int i = n - 1; i >= 0; --i) {
    // A unit whose output needs no gradient (frozen, fed by the input) has no
    // backward: nothing before it trains either.
    if (i < n - 1 && !outputs[i].requires_grad()) continue;
    MacCounter counter;
    if (i == n - 1) {
      loss.backward();
    } else {
      const torch::Tensor& g = inputs[i + 1].grad();
      if (!g.defined()) throw std::logic_error("no gradient reached unit " + model.names[i + 1]);
      outputs[i].backward(g);
    }
    bwd[i] = counter.counts();
  }

  const double per = 1.0 / static_cast<double>(batch);
  for (int i = 0; i < n; ++i) {
    profile.units[i].fwd = fwd[i].scaled(per);
    profile.units[i].bwd = bwd[i].scaled(per);
  }
  return profile;
}

}  // namespace splitsim
