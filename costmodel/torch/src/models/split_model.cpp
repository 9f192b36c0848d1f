// SplitModel: running a unit range, synthetic batches, the task's loss, and
// build_model's dispatch to the model builders.
#include <ATen/CPUGeneratorImpl.h>

#include <cassert>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/models_impl.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/costmodel/model_blocks.h"
#include "splitsim/costmodel/model_zoo.h"

namespace splitsim {
namespace {

// Targets use their own stream, so they are not a function of the inputs.
constexpr uint64_t kTargetSeedSalt = 0x9e3779b97f4a7c15ULL;

// What build_model asked add_unit for, on the building thread.
struct BuildRequest {
  uint64_t seed = 0;
  const std::vector<bool>* units = nullptr;  // null: all
  bool on_meta = false;                      // each unit moved to the meta device once built
};
thread_local BuildRequest build_request;

// SplitMix64's finaliser: unit i's seed, far from unit i+1's.
uint64_t unit_seed(uint64_t seed, int index) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(index) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Turns every parameter and buffer of `unit` into a meta tensor of its shape
// in place, so that the members holding them see the change, and frees their
// memory. Module::to(kMeta) refuses (set_data allows CPU <-> CUDA only); this
// is what set_data does after its check. Their gradient settings stay.
void move_to_meta(torch::nn::Module& unit) {
  auto move = [](const torch::Tensor& t) {
    const torch::Tensor meta =
        at::empty_strided(t.sizes(), t.strides(), t.options().device(torch::kMeta));
    t.unsafeGetTensorImpl()->shallow_copy_from(meta.getIntrusivePtr());
  };
  for (const torch::Tensor& p : unit.parameters()) move(p);
  for (const torch::Tensor& b : unit.buffers()) move(b);
}

// A TorchScript file is loaded whole, every unit a slice of one module. A
// build of some units only (exec's parties) then drops the others and
// frees their weights and buffers, those no kept unit shares (tied
// weights stay), as a zoo model never builds them: a party holds its own
// stages' weights only.
void drop_units_not_asked_for(SplitModel& m) {
  const auto* wanted = build_request.units;
  if (wanted == nullptr) return;
  auto asked = [&](size_t i) { return i < wanted->size() && (*wanted)[i]; };
  std::set<const c10::TensorImpl*> kept;
  for (size_t i = 0; i < m.units.size(); ++i) {
    if (!m.units[i] || !asked(i)) continue;
    for (const torch::Tensor& p : m.units[i]->parameters()) kept.insert(p.unsafeGetTensorImpl());
    for (const torch::Tensor& b : m.units[i]->buffers()) kept.insert(b.unsafeGetTensorImpl());
  }
  auto release = [&](const torch::Tensor& t) {
    if (kept.count(t.unsafeGetTensorImpl())) return;
    t.unsafeGetTensorImpl()->shallow_copy_from(at::empty({0}, t.options()).getIntrusivePtr());
  };
  for (size_t i = 0; i < m.units.size(); ++i) {
    if (!m.units[i] || asked(i)) continue;
    for (const torch::Tensor& p : m.units[i]->parameters()) release(p);
    for (const torch::Tensor& b : m.units[i]->buffers()) release(b);
    m.units[i] = nullptr;
  }
}

std::vector<int64_t> with_batch(int64_t batch, const std::vector<int64_t>& shape) {
  std::vector<int64_t> out{batch};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

// Freezes what the fine-tuning method leaves out (scenario.h FinetuneSpec):
// with LoRA every parameter but the adapters' and the last unit's (a
// classifier's task head; a causal LM's head is its vocabulary projection
// and stays frozen, as PEFT leaves it); then the units named in `frozen`.
void apply_finetune(SplitModel& m) {
  const FinetuneSpec& f = m.spec.finetune;
  if (f.method == "lora") {
    const int frozen_units = m.task == TaskKind::kCausalLm ? m.size() : m.size() - 1;
    for (int i = 0; i < frozen_units; ++i)
      if (m.units[i])
        for (const auto& p : m.units[i]->named_parameters())
          if (p.key().find("lora_") == std::string::npos) p.value().set_requires_grad(false);
  }
  for (size_t k = 0; k < f.frozen.size(); ++k) {
    const std::string& name = f.frozen[k];
    bool found = false;
    for (int i = 0; i < m.size(); ++i) {
      if (m.names[i] != name && m.names[i].rfind(name + ".", 0) != 0) continue;
      found = true;
      if (m.units[i])
        for (auto& p : m.units[i]->parameters()) p.set_requires_grad(false);
    }
    if (!found) {
      std::string units;
      for (int i = 0; i < m.size() && i < 12; ++i) units += (i ? ", " : "") + m.names[i];
      if (m.size() > 12) units += ", ... (" + std::to_string(m.size()) + " units)";
      throw InputError(
          "$.model.finetune.frozen[" + std::to_string(k) + "]",
          "no unit is \"" + name + "\" or begins with \"" + name + ".\"; units: " + units);
    }
  }
  for (const auto& unit : m.units) {
    if (!unit) return;  // a part of the model: the whole was checked when planned
    for (const auto& p : unit->parameters())
      if (p.requires_grad()) return;
  }
  throw InputError("$.model.finetune", "nothing is left to train: every parameter is frozen");
}

}  // namespace

UnitModule& SplitModel::built(int i) const {
  if (!units.at(static_cast<size_t>(i)))
    throw std::logic_error("unit " + names[static_cast<size_t>(i)] +
                           " was not built (build_model's build_units left it out)");
  return *units[static_cast<size_t>(i)];
}

torch::Tensor SplitModel::forward(const torch::Tensor& x, int first, int last) const {
  assert(0 <= first && first <= last && last < size());
  torch::Tensor y = x;
  // The unit graph is a chain (inputs[i] == {i - 1}) for every model here.
  for (int i = first; i <= last; ++i) y = built(i).forward(y);
  return y;
}

torch::Tensor SplitModel::make_input(int64_t batch, uint64_t seed) const {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const std::vector<int64_t> shape = with_batch(batch, model_input_shape(spec));
  switch (task) {
    case TaskKind::kImageClassification:
      return torch::randn(shape, gen, torch::kFloat32);
    case TaskKind::kSequenceClassification:
    case TaskKind::kMaskedLmAndNsp:
    case TaskKind::kCausalLm:
      return torch::randint(0, spec.vocab_size, shape, gen, torch::kInt64);
    case TaskKind::kRegression:
      if (spec.input_dtype == "int64") {
        return torch::randint(0, spec.vocab_size, shape, gen, torch::kInt64);
      }
      return torch::randn(shape, gen, torch::kFloat32);
  }
  assert(false && "unknown task");
  return {};
}

torch::Tensor SplitModel::make_target(int64_t batch, uint64_t seed) const {
  at::Generator gen = at::detail::createCPUGenerator(seed ^ kTargetSeedSalt);
  switch (task) {
    case TaskKind::kImageClassification:
    case TaskKind::kSequenceClassification:
      return torch::randint(0, spec.num_classes, {batch}, gen, torch::kInt64);
    case TaskKind::kMaskedLmAndNsp: {
      torch::Tensor mlm =
          torch::randint(0, spec.vocab_size, {batch, spec.seq_len}, gen, torch::kInt64);
      torch::Tensor nsp = torch::randint(0, 2, {batch, 1}, gen, torch::kInt64);
      return torch::cat({mlm, nsp}, 1);
    }
    case TaskKind::kCausalLm:
      return torch::randint(0, spec.vocab_size, {batch, spec.seq_len}, gen, torch::kInt64);
    case TaskKind::kRegression:
      return torch::randn(with_batch(batch, output_shape), gen, torch::kFloat32);
  }
  assert(false && "unknown task");
  return {};
}

torch::Tensor SplitModel::loss(const torch::Tensor& output, const torch::Tensor& target) const {
  switch (task) {
    case TaskKind::kImageClassification:
    case TaskKind::kSequenceClassification:
      return torch::nn::functional::cross_entropy(output, target);
    case TaskKind::kMaskedLmAndNsp: {
      // output [B, T*V + 2] = MLM logits then NSP logits; target [B, T+1].
      const int64_t seq = spec.seq_len, vocab = spec.vocab_size;
      assert(output.size(1) == seq * vocab + 2 && target.size(1) == seq + 1);
      torch::Tensor mlm_logits = output.narrow(1, 0, seq * vocab).reshape({-1, vocab});
      torch::Tensor nsp_logits = output.narrow(1, seq * vocab, 2);
      torch::Tensor mlm_target = target.narrow(1, 0, seq).reshape({-1});
      torch::Tensor nsp_target = target.select(1, seq);
      return torch::nn::functional::cross_entropy(mlm_logits, mlm_target) +
             torch::nn::functional::cross_entropy(nsp_logits, nsp_target);
    }
    case TaskKind::kCausalLm:  // output [B,T,V], target [B,T]
      return torch::nn::functional::cross_entropy(output.reshape({-1, output.size(-1)}),
                                                  target.reshape({-1}));
    case TaskKind::kRegression:
      return torch::mse_loss(output, target.to(output.dtype()));
  }
  assert(false && "unknown task");
  return {};
}

std::vector<torch::Tensor> SplitModel::parameters(int first, int last) const {
  assert(0 <= first && first <= last && last < size());
  std::vector<torch::Tensor> params;
  for (int i = first; i <= last; ++i) {
    for (const torch::Tensor& p : built(i).parameters()) params.push_back(p);
  }
  return params;
}

void SplitModel::train(bool on) {
  for (auto& unit : units)
    if (unit) unit->train(on);
}

namespace models {

void add_unit(SplitModel& m, std::string name,
              const std::function<std::shared_ptr<UnitModule>()>& make) {
  const int index = m.size();
  const auto* wanted = build_request.units;
  std::shared_ptr<UnitModule> unit;
  if (wanted == nullptr || (index < static_cast<int>(wanted->size()) && (*wanted)[index])) {
    torch::manual_seed(unit_seed(build_request.seed, index));
    unit = make();
    if (build_request.on_meta) move_to_meta(*unit);
  }
  m.names.push_back(std::move(name));
  m.units.push_back(std::move(unit));
}

}  // namespace models

SplitModel build_model(const ModelSpec& spec, uint64_t seed, const std::vector<bool>* build_units,
                       bool on_meta) {
  SplitModel m;
  m.spec = resolve_model_defaults(spec, "$.model");
  if (on_meta && !is_transformer(m.spec.name))
    throw std::logic_error("build_model: only the zoo's transformers build on the meta device");
  // Planning builds one unit at a time on the meta device (measure.h; the
  // scenario's checks bound the largest unit); a whole build (exec, train,
  // profile) is held to the limit as a whole.
  const int64_t params = transformer_param_count(m.spec);
  if (!on_meta && params > limits::kMaxTransformerParams)
    throw InputError("$.model", "building the whole model (exec, train, profile) takes about " +
                                    std::to_string(params) + " parameters; the limit is " +
                                    std::to_string(limits::kMaxTransformerParams) +
                                    " (1 GiB of fp32 weights); plan, simulate and explore "
                                    "measure two of its blocks and take it");
  torch::manual_seed(seed);
  build_request = {seed, build_units, on_meta};
  struct Done {
    ~Done() { build_request = {}; }
  } done;
  const std::string& name = m.spec.name;
  if (name == "mobilenet_v2") {
    models::add_mobilenet_v2(m);
  } else if (name == "mobilenet_v2_cifar") {
    models::add_mobilenet_v2_cifar(m);
  } else if (name == "resnet20") {
    models::add_resnet20(m);
  } else if (name == "roberta_base") {
    models::add_roberta_base(m);
  } else if (name == "bert_small") {
    models::add_bert_small(m);
  } else if (name == "llama") {
    models::add_llama(m);
  } else {
    assert(name == "torchscript");  // resolve_model_defaults knows no others
    models::add_torchscript(m);
    drop_units_not_asked_for(m);
  }
  for (int i = 0; i < m.size(); ++i) m.inputs.push_back({i - 1});
  apply_finetune(m);
  m.train(true);
  return m;
}

}  // namespace splitsim
