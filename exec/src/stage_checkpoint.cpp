#include "stage_checkpoint.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "splitsim/costmodel/errors.h"
#include "splitsim/exec/checkpoint.h"

namespace splitsim::exec_internal {
namespace {

using Named = std::vector<std::pair<std::string, torch::Tensor>>;

// The stage's own tensors (not the optimizer's), named as in the file.
Named stage_tensors(PartyContext& ctx, int k, int c) {
  StageParts& s = ctx.parts(k, c);
  SplitModel& model = ctx.model_of(k, c);
  Named out;
  auto add_module = [&out](const std::string& prefix, const torch::nn::Module& m) {
    for (const auto& p : m.named_parameters(true))
      out.push_back({prefix + ".param." + p.key(), p.value()});
    for (const auto& b : m.named_buffers(true))
      out.push_back({prefix + ".buffer." + b.key(), b.value()});
  };
  for (int u = s.first_unit; u <= s.last_unit; ++u)
    add_module("unit." + std::to_string(u), model.built(u));
  const std::pair<const char*, std::shared_ptr<torch::nn::Module>> codecs[] = {
      {"fwd_dec", s.fwd_dec},
      {"bwd_enc", s.bwd_enc},
      {"fwd_enc", s.fwd_enc},
      {"bwd_dec", s.bwd_dec}};
  for (const auto& [name, module] : codecs)
    if (module) add_module(name, *module);
  return out;
}

std::string state_key(const torch::Tensor& alias) {
  return c10::guts::to_string(alias.unsafeGetTensorImpl());
}

// The optimizer's state per parameter (by index into the stage's aliases):
// SGD's momentum buffer, Adam's and AdamW's step and moments.
Named optimizer_tensors(StageParts& s) {
  Named out;
  if (!s.optimizer) return out;
  auto& state = s.optimizer->state();
  for (size_t i = 0; i < s.aliases.size(); ++i) {
    const auto it = state.find(state_key(s.aliases[i]));
    if (it == state.end()) continue;
    const std::string p = "optimizer." + std::to_string(i) + ".";
    auto add = [&](const char* field, const torch::Tensor& t) {
      if (t.defined()) out.push_back({p + field, t});
    };
    auto adam_like = [&](int64_t step, const torch::Tensor& m, const torch::Tensor& v,
                         const torch::Tensor& vmax) {
      add("step", torch::tensor(step, torch::kLong));
      add("exp_avg", m);
      add("exp_avg_sq", v);
      add("max_exp_avg_sq", vmax);
    };
    if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(it->second.get()))
      add("momentum_buffer", sgd->momentum_buffer());
    else if (auto* adam = dynamic_cast<torch::optim::AdamParamState*>(it->second.get()))
      adam_like(adam->step(), adam->exp_avg(), adam->exp_avg_sq(), adam->max_exp_avg_sq());
    else if (auto* adamw = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get()))
      adam_like(adamw->step(), adamw->exp_avg(), adamw->exp_avg_sq(), adamw->max_exp_avg_sq());
  }
  return out;
}

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }
double number(const nlohmann::json& j) { return j.is_null() ? std::nan("") : j.get<double>(); }

nlohmann::json records_json(const InstanceResult& r) {
  nlohmann::json stats = nlohmann::json::array(), evals = nlohmann::json::array();
  for (const BatchStats& b : r.stats)
    stats.push_back({b.client, b.batch, number(b.loss), number(b.correct), number(b.samples)});
  for (const EvalStats& e : r.evals)
    evals.push_back({e.after_batches, number(e.loss), number(e.correct), number(e.samples),
                     number(e.train_loss), number(e.train_accuracy), number(e.trained_s),
                     number(e.eval_s)});
  return {{"stats", stats}, {"evals", evals}};
}

void restore_records(const nlohmann::json& j, InstanceResult* out) {
  for (const auto& b : j.at("stats")) {
    BatchStats s;
    s.client = b.at(0).get<int>();
    s.batch = b.at(1).get<int64_t>();
    s.loss = number(b.at(2));
    s.correct = number(b.at(3));
    s.samples = number(b.at(4));
    out->stats.push_back(s);
  }
  for (const auto& e : j.at("evals")) {
    EvalStats v;
    v.after_batches = e.at(0).get<int64_t>();
    v.loss = number(e.at(1));
    v.correct = number(e.at(2));
    v.samples = number(e.at(3));
    v.train_loss = number(e.at(4));
    v.train_accuracy = number(e.at(5));
    v.trained_s = number(e.at(6));
    v.eval_s = number(e.at(7));
    out->evals.push_back(v);
  }
}

std::vector<int64_t> shape_of(const torch::Tensor& t) { return t.sizes().vec(); }

// The largest file this instance's checkpoint can be: its tensors, the
// optimizer's up to three per parameter, and a header.
int64_t max_file_bytes(const Named& tensors, const StageParts& s) {
  int64_t n = int64_t{64} << 20;
  for (const auto& [name, t] : tensors) n += static_cast<int64_t>(t.nbytes());
  for (const auto& a : s.aliases) n += 3 * static_cast<int64_t>(a.nbytes()) + 8;
  return n;
}

// A tensor of `type` holding t's bytes (copied: the payload need not be aligned).
torch::Tensor from_bytes(const CheckpointFile& f, const CheckpointTensor& t,
                         torch::ScalarType type) {
  torch::Tensor out = torch::empty(t.shape, torch::TensorOptions().dtype(type));
  std::memcpy(out.data_ptr(), f.payload.data() + t.offset, static_cast<size_t>(t.bytes));
  return out;
}

// The optimizer's state for parameter i from the file's entries of it;
// InputError (via `refuse`) for a field the optimizer does not have or a
// tensor that does not fit the parameter.
template <typename Refuse>
std::unique_ptr<torch::optim::OptimizerParamState> optimizer_state(
    StageParts& s, const std::string& optimizer, size_t i,
    const std::map<std::string, torch::Tensor>& fields, Refuse refuse) {
  const torch::Tensor& param = s.aliases[i];
  const std::set<std::string> known =
      optimizer == "sgd" ? std::set<std::string>{"momentum_buffer"}
                         : std::set<std::string>{"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  for (const auto& [field, t] : fields) {
    if (known.count(field) == 0)
      throw refuse("optimizer field \"" + field + "\" is not " + optimizer + "'s");
    const bool step = field == "step";
    if (step ? t.dim() != 0 : t.sizes() != param.sizes())
      throw refuse("optimizer field \"" + field + "\" of parameter " + std::to_string(i) +
                   " has another shape than the parameter's");
  }
  auto get = [&](const char* f) {
    const auto it = fields.find(f);
    return it == fields.end() ? torch::Tensor() : it->second.to(param.device());
  };
  std::unique_ptr<torch::optim::OptimizerParamState> state;
  if (optimizer == "sgd") {
    auto sgd = std::make_unique<torch::optim::SGDParamState>();
    sgd->momentum_buffer(get("momentum_buffer"));
    state = std::move(sgd);
  } else {
    const torch::Tensor step = get("step");
    if (!step.defined() || !get("exp_avg").defined() || !get("exp_avg_sq").defined())
      throw refuse("parameter " + std::to_string(i) + "'s " + optimizer + " state is incomplete");
    auto fill = [&](auto& a) {
      a->step(step.item<int64_t>());
      a->exp_avg(get("exp_avg"));
      a->exp_avg_sq(get("exp_avg_sq"));
      if (get("max_exp_avg_sq").defined()) a->max_exp_avg_sq(get("max_exp_avg_sq"));
    };
    if (optimizer == "adamw") {
      auto a = std::make_unique<torch::optim::AdamWParamState>();
      fill(a);
      state = std::move(a);
    } else {
      auto a = std::make_unique<torch::optim::AdamParamState>();
      fill(a);
      state = std::move(a);
    }
  }
  return state;
}

}  // namespace

void save_checkpoint(PartyContext& ctx, int stage, int client, int64_t step,
                     const InstanceResult& records) {
  const CheckpointOptions& o = ctx.options.checkpoint;
  CheckpointFile f;
  f.step = step;
  f.stage = stage;
  f.client = client;
  f.identity = ctx.options.checkpoint_identity;
  f.records = records_json(records);
  Named all = stage_tensors(ctx, stage, client);
  for (auto& entry : optimizer_tensors(ctx.parts(stage, client))) all.push_back(std::move(entry));
  for (const auto& [name, live] : all) {
    const torch::Tensor t = live.detach().to(torch::kCPU).contiguous();
    CheckpointTensor entry;
    entry.name = name;
    entry.dtype = c10::toString(t.scalar_type());
    entry.shape = shape_of(t);
    entry.offset = static_cast<int64_t>(f.payload.size());
    entry.bytes = static_cast<int64_t>(t.nbytes());
    f.payload.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
    f.tensors.push_back(std::move(entry));
  }
  const std::vector<int64_t> before = complete_checkpoint_steps(o.dir, {{stage, client}});
  try {
    write_checkpoint_file(checkpoint_path(o.dir, step, stage, client), f);
  } catch (const CheckpointWriteError& e) {
    throw CheckpointWriteError(std::string(e.what()) +
                               (before.empty()
                                    ? ""
                                    : "; the checkpoint of step " + std::to_string(before.back()) +
                                          " is kept (resume from it with --resume)"));
  }
  // The newest before this one stays.
  if (!before.empty()) remove_checkpoints_before(o.dir, stage, client, before.back());
}

void load_checkpoint(PartyContext& ctx, int stage, int client, InstanceResult* out) {
  const CheckpointOptions& o = ctx.options.checkpoint;
  const int64_t step = ctx.options.first_batch;
  const std::string path = checkpoint_path(o.dir, step, stage, client);
  StageParts& s = ctx.parts(stage, client);
  const Named live = stage_tensors(ctx, stage, client);
  const CheckpointFile f = read_checkpoint_file(path, max_file_bytes(live, s));
  auto refuse = [&path](const std::string& why) {
    return InputError(path, "not this run's checkpoint: " + why);
  };
  if (f.identity != ctx.options.checkpoint_identity)
    throw refuse("it was written by another run (identity " + f.identity + ", this run's " +
                 ctx.options.checkpoint_identity +
                 "): another scenario, variant, seed, data or training settings");
  if (f.step != step || f.stage != stage || f.client != client)
    throw refuse("it holds step " + std::to_string(f.step) + " of stage " +
                 std::to_string(f.stage) + " (client " + std::to_string(f.client) + ")");
  // Every check before anything is loaded.
  std::map<std::string, const CheckpointTensor*> by_name;
  for (const CheckpointTensor& t : f.tensors)
    if (!by_name.emplace(t.name, &t).second) throw refuse("tensor \"" + t.name + "\" twice");
  std::vector<std::pair<torch::Tensor, torch::Tensor>> copies;  // (live, loaded)
  for (const auto& [name, t] : live) {
    const auto it = by_name.find(name);
    if (it == by_name.end()) throw refuse("it lacks the stage's tensor \"" + name + "\"");
    const CheckpointTensor& c = *it->second;
    if (c.dtype != c10::toString(t.scalar_type()) || c.shape != shape_of(t))
      throw refuse("tensor \"" + name + "\" is " + c.dtype +
                   " of another shape or dtype than the stage's");
    copies.push_back({t, from_bytes(f, c, t.scalar_type())});
    by_name.erase(it);
  }
  std::map<size_t, std::map<std::string, torch::Tensor>> optimizer;  // by parameter
  for (const auto& [name, c] : by_name) {
    size_t i = 0;
    int used = 0;
    char field[64] = {0};
    if (std::sscanf(name.c_str(), "optimizer.%zu.%63s%n", &i, field, &used) != 2 ||
        static_cast<size_t>(used) != name.size() || !s.optimizer || i >= s.aliases.size())
      throw refuse("tensor \"" + name + "\" is none of the stage's");
    const bool is_step = std::string(field) == "step";
    const torch::ScalarType type = is_step ? torch::kLong : s.aliases[i].scalar_type();
    if (c->dtype != c10::toString(type))
      throw refuse("tensor \"" + name + "\" is " + c->dtype + ", expected " + c10::toString(type));
    optimizer[i][field] = from_bytes(f, *c, type);
  }
  InstanceResult records;
  try {
    restore_records(f.records, &records);
  } catch (const std::exception& e) {
    throw refuse(std::string("its training records are malformed (") + e.what() + ")");
  }
  std::map<size_t, std::unique_ptr<torch::optim::OptimizerParamState>> states;
  for (auto& [i, fields] : optimizer)
    states[i] = optimizer_state(s, ctx.spec->optimizer.name, i, fields, refuse);
  // Checked: now loaded.
  for (auto& [i, state] : states) s.optimizer->state()[state_key(s.aliases[i])] = std::move(state);
  out->stats = std::move(records.stats);
  out->evals = std::move(records.evals);
  torch::NoGradGuard no_grad;
  for (auto& [t, loaded] : copies) t.copy_(loaded);
  out->updated = step;
}

}  // namespace splitsim::exec_internal
