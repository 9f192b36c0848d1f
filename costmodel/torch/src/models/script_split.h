#pragma once
// Private to the model zoo: cutting a TorchScript module into partition units
// from its forward graph (costmodel/README.md "Bring your own model").
//
// The root's forward is flattened: calls of the root's own methods, of script
// functions and of containers (nn.Sequential, nn.ModuleList, nn.ModuleDict)
// are inlined, so what remains at the top level is a sequence of submodule
// calls and functional glue (flatten, add, pooling, ...). A cut is valid
// between two steps of that sequence where exactly one tensor that depends on
// the input crosses, and no parameter or buffer is used on both sides.
// Values that depend only on the module (constants, attributes, parameters)
// are recomputed on whichever side needs them. Each unit holds the steps
// between two valid cuts with one or more submodule calls, and is named by
// the module path it calls (`layer2.0`, `features.7`); glue between calls
// joins the unit before it. Other modules are not looked into unless the
// scenario names them in `model.split_inside`.
#include <torch/script.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace splitsim {
namespace models {

// Why a module cannot be split; the message is for the user.
class ScriptSplitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ScriptUnitGraph {
  std::string name;                          // the module path(s) it calls
  std::shared_ptr<torch::jit::Graph> graph;  // (root module, tensor) -> tensor
  std::vector<std::string> state;            // parameters and buffers it uses, dotted paths
  bool writes_input = false;  // its code writes its input in place (ReLU(inplace=True))
};

// The units of `root`, in forward order (at least one). The modules named in
// `split_inside` (dotted paths of existing submodules), and those around
// them, are inlined like containers. Throws ScriptSplitError when forward
// does not take one tensor and return one.
std::vector<ScriptUnitGraph> split_script_module(const torch::jit::Module& root,
                                                 const std::vector<std::string>& split_inside);

}  // namespace models
}  // namespace splitsim
