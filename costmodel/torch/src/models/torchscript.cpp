// Any TorchScript file (torch.jit.save output): its top-level children, in
// order, are the partition units, named as the children are. The file's own
// forward must be those children run one after another; add_torchscript
// checks that on one sample and refuses the file otherwise.
#include <torch/script.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "models/models_impl.h"
#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace models {
namespace {

const char kWhere[] = "$.model.path";

// One top-level child of a scripted module. Its parameters and buffers are
// registered here too (the same tensors, '.' in names replaced by '_'), so
// parameters(), optimizers and to() see them.
class ScriptChildUnit : public UnitModule {
 public:
  explicit ScriptChildUnit(torch::jit::Module child) : child_(std::move(child)) {
    std::set<const void*> seen;  // a tensor shared inside the child counts once
    for (const auto& p : child_.named_parameters(/*recurse=*/true)) {
      if (!seen.insert(p.value.unsafeGetTensorImpl()).second) continue;
      register_parameter(sanitize(p.name), p.value, p.value.requires_grad());
    }
    for (const auto& b : child_.named_buffers(/*recurse=*/true)) {
      if (!seen.insert(b.value.unsafeGetTensorImpl()).second) continue;
      register_buffer(sanitize(b.name), b.value);
    }
  }
  torch::Tensor forward(const torch::Tensor& x) override { return child_.forward({x}).toTensor(); }
  void train(bool on) override {
    torch::nn::Module::train(on);
    child_.train(on);
  }

 private:
  static std::string sanitize(std::string name) {
    for (char& c : name) {
      if (c == '.') c = '_';
    }
    return name;
  }
  torch::jit::Module child_;
};

torch::jit::Module load_module(const std::string& path) {
  // A regular file only: a FIFO would block the open, a device never end.
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    throw InputError(kWhere, "\"" + path +
                                 "\" is not a regular file; give a file written by "
                                 "torch.jit.save");
  }
  // Read the OS's reason first: torch::jit::load's message buries it.
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    throw InputError(kWhere, "cannot read TorchScript file \"" + path + "\": " +
                                 std::strerror(errno) + "; give a file written by torch.jit.save");
  }
  std::fclose(f);
  try {
    return torch::jit::load(path, torch::kCPU);
  } catch (const c10::Error& e) {
    throw InputError(kWhere, "\"" + path + "\" is not a TorchScript file (" +
                                 e.what_without_backtrace() +
                                 "); give a file written by torch.jit.save");
  }
}

std::vector<int64_t> per_sample(const torch::Tensor& t) {
  std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  shape.erase(shape.begin());
  return shape;
}

}  // namespace

void add_torchscript(SplitModel& m) {
  torch::jit::Module module = load_module(m.spec.path);
  m.task = TaskKind::kRegression;
  for (const auto& child : module.named_children()) {
    add_unit(m, child.name, std::make_shared<ScriptChildUnit>(child.value));
  }
  if (m.units.empty()) {
    throw InputError(kWhere, "\"" + m.spec.path +
                                 "\" has no top-level submodules to split at; wrap its layers "
                                 "in child modules that forward runs in order");
  }
  bool trainable = false;
  for (const auto& unit : m.units)
    for (const auto& p : unit->parameters()) trainable = trainable || p.requires_grad();
  if (!trainable) {
    throw InputError(kWhere, "\"" + m.spec.path +
                                 "\" has no parameter that requires a gradient, so there is "
                                 "nothing to train; save it from a model whose parameters have "
                                 "requires_grad True (not frozen with torch.jit.freeze)");
  }
  // One sample, eval mode: the chain of children must reproduce forward.
  torch::NoGradGuard no_grad;
  module.eval();
  for (auto& unit : m.units) unit->eval();
  const torch::Tensor x = m.make_input(1, 0);
  torch::Tensor whole, chain;
  auto fails = [&](const std::string& reason) {
    return InputError(kWhere, "\"" + m.spec.path + "\" fails on one sample of input_shape [" +
                                  c10::Join(", ", m.spec.input_shape) + "] " + m.spec.input_dtype +
                                  " (" + reason +
                                  "); check input_shape and input_dtype, and that forward and "
                                  "each child take one tensor and return one");
  };
  try {
    whole = module.forward({x}).toTensor();
    chain = m.forward(x);
  } catch (const c10::Error& e) {
    throw fails(e.what_without_backtrace());
  } catch (const std::exception& e) {  // e.g. the interpreter's JITException
    throw fails(e.what());
  }
  if (!whole.sizes().equals(chain.sizes()) || !torch::allclose(whole, chain, 1e-4, 1e-5)) {
    throw InputError(kWhere, "\"" + m.spec.path +
                                 "\": running its top-level children in order does not give "
                                 "what its forward gives; splitsim needs a model whose forward "
                                 "is a chain of its children");
  }
  m.output_shape = per_sample(chain);
  module.train();
  for (auto& unit : m.units) unit->train();
}

}  // namespace models
}  // namespace splitsim
