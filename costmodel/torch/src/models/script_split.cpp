// split_script_module: the forward graph flattened to submodule calls and
// glue, the valid cuts found by counting what crosses each point, and one
// small graph per unit (see script_split.h).
#include "models/script_split.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace splitsim {
namespace models {
namespace {

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::GraphFunction;
using torch::jit::Node;
using torch::jit::Value;
namespace prim = c10::prim;

// The dotted path of a value reached from the root module by attribute
// lookups (`self.layer1[0]` -> "layer1.0", the root itself -> ""); nullopt
// for any other value.
std::optional<std::string> attr_path(Value* v, const Value* self) {
  std::vector<std::string> parts;
  while (v != self) {
    const Node* n = v->node();
    if (n->kind() != prim::GetAttr) return std::nullopt;
    parts.push_back(n->s(c10::attr::name));
    v = n->input(0);
  }
  std::string path;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) path += (path.empty() ? "" : ".") + *it;
  return path;
}

torch::jit::Module module_at(const torch::jit::Module& root, const std::string& path) {
  torch::jit::Module m = root;
  size_t begin = 0;
  while (begin < path.size()) {
    size_t end = path.find('.', begin);
    if (end == std::string::npos) end = path.size();
    m = m.attr(path.substr(begin, end - begin)).toModule();
    begin = end + 1;
  }
  return m;
}

// nn.Sequential, nn.ModuleList and nn.ModuleDict: opened, their elements are
// units. (TorchScript names them
// __torch__.torch.nn.modules.container[.___torch_mangle_N].Sequential.)
bool is_container(const c10::TypePtr& type) {
  const auto cls = type->cast<c10::ClassType>();
  if (!cls || !cls->name()) return false;
  const std::string prefix = "__torch__.torch.nn.modules.container.";
  if (cls->name()->qualifiedName().rfind(prefix, 0) != 0) return false;
  const std::string base = cls->name()->name();
  return base == "Sequential" || base == "ModuleList" || base == "ModuleDict";
}

// Inlines, at the top level, calls of script functions, of the root's own
// methods, of containers' methods and of the modules in `open`, until none
// is left.
void flatten(Graph& g, const Value* self, const std::set<std::string>& open) {
  for (bool changed = true; changed;) {
    changed = false;
    for (Node* n : g.nodes()) {
      if (n->kind() == prim::CallFunction) {
        const auto fn_type = n->input(0)->type()->cast<c10::FunctionType>();
        GraphFunction* fn =
            fn_type ? torch::jit::tryToGraphFunction(*fn_type->function()) : nullptr;
        if (fn == nullptr) continue;
        n->removeInput(0);
        torch::jit::inlineCallTo(
            n, fn,
            fn->graph().get());  // its own graph: optimized_graph() is inlined all the way down
        changed = true;
        break;
      }
      if (n->kind() == prim::CallMethod) {
        const auto path = attr_path(n->input(0), self);
        if (!path || (!path->empty() && !is_container(n->input(0)->type()) && !open.count(*path)))
          continue;
        const auto cls = n->input(0)->type()->expect<c10::ClassType>();
        GraphFunction* fn = torch::jit::tryToGraphFunction(cls->getMethod(n->s(c10::attr::name)));
        if (fn == nullptr) continue;
        torch::jit::inlineCallTo(
            n, fn,
            fn->graph().get());  // its own graph: optimized_graph() is inlined all the way down
        changed = true;
        break;
      }
    }
  }
}

void collect_nodes(Block* b, std::vector<Node*>& out) {
  for (Node* n : b->nodes()) {
    out.push_back(n);
    for (Block* inner : n->blocks()) collect_nodes(inner, out);
  }
}

// Plain attributes (bool, int, float, str, None; not `training`, which
// train()/eval() change) read in the flattened graph become constants, so
// that branches on them (`if self.use_res_connect:`) fold away.
void fold_attributes(std::shared_ptr<Graph>& g, const Value* self, const torch::jit::Module& root) {
  std::vector<Node*> nodes;
  collect_nodes(g->block(), nodes);
  for (Node* n : nodes) {
    if (n->kind() != prim::GetAttr || n->s(c10::attr::name) == "training") continue;
    const c10::TypeKind kind = n->output()->type()->kind();
    if (kind != c10::TypeKind::BoolType && kind != c10::TypeKind::IntType &&
        kind != c10::TypeKind::FloatType && kind != c10::TypeKind::StringType &&
        kind != c10::TypeKind::NoneType)
      continue;
    const auto path = attr_path(n->input(0), self);
    if (!path) continue;
    const c10::IValue value = module_at(root, *path).attr(n->s(c10::attr::name));
    torch::jit::WithInsertPoint guard(n);
    n->output()->replaceAllUsesWith(g->insertConstant(value));
  }
  torch::jit::EliminateDeadCode(g);
  torch::jit::ConstantPropagation(g);
  torch::jit::EliminateDeadCode(g);
}

// Whether a unit's code, every call inlined and its plain attributes folded,
// hands its input to an op that writes its first argument in place
// (torch.relu_ for ReLU(inplace=True), dropout_ for Dropout(inplace=True),
// in training and in eval alike).
bool writes_input(const std::shared_ptr<Graph>& unit, const torch::jit::Module& root) {
  std::shared_ptr<Graph> g = unit->copy();
  torch::jit::Inline(*g);
  fold_attributes(g, g->inputs()[0], root);
  const Value* x = g->inputs()[1];
  std::vector<Node*> nodes;
  collect_nodes(g->block(), nodes);
  for (const Node* n : nodes) {
    if (n->inputs().empty() || n->input(0) != x) continue;
    const c10::FunctionSchema* schema = n->maybeSchema();
    if (schema == nullptr || schema->arguments().empty()) continue;
    const c10::AliasInfo* alias = schema->arguments()[0].alias_info();
    if (alias != nullptr && alias->isWrite()) return true;
  }
  return false;
}

// Values a top-level node reads from outside itself: its inputs and what its
// blocks (if, loop) use from around them. In order, without repeats.
void free_values(Node* n, std::unordered_set<const Value*>& inside, std::vector<Value*>& out) {
  auto add = [&](Value* v) {
    if (!inside.count(v) && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  };
  for (Value* v : n->inputs()) add(v);
  for (Block* b : n->blocks()) {
    for (Value* p : b->inputs()) inside.insert(p);
    for (Node* m : b->nodes()) {
      free_values(m, inside, out);
      for (Value* o : m->outputs()) inside.insert(o);
    }
    for (Value* v : b->outputs()) add(v);
  }
}

std::vector<Value*> free_values(Node* n) {
  std::unordered_set<const Value*> inside;
  std::vector<Value*> out;
  free_values(n, inside, out);
  return out;
}

// One top-level node that depends on the input (or has effects): a step of
// the sequence that units are cut from.
struct Step {
  Node* node = nullptr;
  std::vector<Value*> reads;       // input-dependent values it reads
  std::vector<std::string> calls;  // module paths it calls, in order
  std::set<std::string> state;     // parameters and buffers it touches
};

class Splitter {
 public:
  Splitter(const torch::jit::Module& root, const std::vector<std::string>& split_inside)
      : root_(root) {
    for (const std::string& path : split_inside) {  // the module and the modules around it
      for (size_t dot = 0; dot != std::string::npos; dot = path.find('.', dot + 1))
        open_.insert(path.substr(0, dot));
      open_.insert(path);
    }
    for (const auto& p : root.named_parameters(/*recurse=*/true)) state_names_.insert(p.name);
    for (const auto& b : root.named_buffers(/*recurse=*/true)) state_names_.insert(b.name);
  }

  std::vector<ScriptUnitGraph> run() {
    const torch::jit::Method method = root_.get_method("forward");
    graph_ = torch::jit::toGraphFunction(method.function()).graph()->copy();
    if (graph_->inputs().size() != 2)
      throw ScriptSplitError("its forward takes " + std::to_string(graph_->inputs().size() - 1) +
                             " arguments; splitsim feeds it one tensor");
    if (!graph_->inputs()[1]->type()->cast<c10::TensorType>())
      throw ScriptSplitError("its forward takes a " + graph_->inputs()[1]->type()->repr_str() +
                             "; splitsim feeds it one tensor");
    if (graph_->outputs().size() != 1 || !graph_->outputs()[0]->type()->cast<c10::TensorType>())
      throw ScriptSplitError(
          "its forward returns " + graph_->outputs()[0]->type()->repr_str() +
          "; splitsim needs one tensor (return only the output the loss is computed on)");
    self_ = graph_->inputs()[0];
    input_ = graph_->inputs()[1];
    flatten(*graph_, self_, open_);
    fold_attributes(graph_, self_, root_);
    collect_steps();
    find_cuts();
    return make_units();
  }

 private:
  // The parameters and buffers a value stands for or is computed from.
  void touch(Value* v, Step& step, std::unordered_set<const Value*>& seen) {
    if (!seen.insert(v).second || dynamic_.count(v)) return;
    if (v == self_) {  // the whole root passed on: everything
      step.state.insert(state_names_.begin(), state_names_.end());
      return;
    }
    if (const auto path = attr_path(v, self_)) {
      if (v->type()->cast<c10::ClassType>()) {
        const std::string prefix = *path + ".";
        for (const std::string& name : state_names_)
          if (name.rfind(prefix, 0) == 0) step.state.insert(name);
      } else if (state_names_.count(*path)) {
        step.state.insert(*path);
      }
      return;
    }
    for (Value* in : v->node()->inputs()) touch(in, step, seen);
  }

  void describe(Node* n, Step& step, std::unordered_set<const Value*>& seen) {
    if (n->kind() == prim::CallMethod) {
      const auto path = attr_path(n->input(0), self_);
      step.calls.push_back(path ? *path : "?");
    }
    if (n->kind() != prim::GetAttr)  // a lookup only walks to what is used
      for (Value* v : n->inputs()) touch(v, step, seen);
    for (Block* b : n->blocks())
      for (Node* m : b->nodes()) describe(m, step, seen);
  }

  static bool calls_module(Node* n) {
    if (n->kind() == prim::CallMethod) return true;
    for (Block* b : n->blocks())
      for (Node* m : b->nodes())
        if (calls_module(m)) return true;
    return false;
  }

  void collect_steps() {
    dynamic_.insert(input_);
    for (Node* n : graph_->nodes()) {
      Step step;
      step.node = n;
      for (Value* v : free_values(n))
        if (dynamic_.count(v)) step.reads.push_back(v);
      if (step.reads.empty() && !n->hasSideEffects() && !n->isNondeterministic() &&
          !calls_module(n))
        continue;  // depends on the module only: recomputed where used
      std::unordered_set<const Value*> seen;
      describe(n, step, seen);
      for (Value* o : n->outputs()) dynamic_.insert(o);
      steps_.push_back(std::move(step));
    }
  }

  // cut_value_[p] is the one tensor crossing the point before steps_[p], or
  // null where the point is not a valid cut.
  void find_cuts() {
    const int m = static_cast<int>(steps_.size());
    std::unordered_map<const Value*, int> defined{{input_, -1}}, last_use;
    for (int i = 0; i < m; ++i) {
      for (Value* v : steps_[i].node->outputs()) defined[v] = i;
      for (Value* v : steps_[i].reads) last_use[v] = i;
    }
    last_use[graph_->outputs()[0]] = m;
    std::vector<int> crossing(m + 1, 0);
    std::vector<Value*> one(m + 1, nullptr);
    for (const auto& [v, last] : last_use) {
      for (int p = defined.at(v) + 1; p <= last && p <= m; ++p) {
        ++crossing[p];
        one[p] = const_cast<Value*>(v);
      }
    }
    std::map<std::string, std::pair<int, int>> used;  // state name -> first, last step
    for (int i = 0; i < m; ++i)
      for (const std::string& name : steps_[i].state) {
        auto [it, fresh] = used.emplace(name, std::make_pair(i, i));
        if (!fresh) it->second.second = i;
      }
    std::vector<bool> shared(m + 1, false);
    for (const auto& [name, range] : used)
      for (int p = range.first + 1; p <= range.second; ++p) shared[p] = true;
    cut_value_.assign(m + 1, nullptr);
    cut_value_[0] = input_;
    cut_value_[m] = graph_->outputs()[0];
    for (int p = 1; p < m; ++p)
      if (crossing[p] == 1 && !shared[p] && one[p]->type()->cast<c10::TensorType>())
        cut_value_[p] = one[p];
  }

  // One call: its path. Several: the deepest module holding them all, then
  // its children that they are in, joined with '+' (`layers.0.ln1+attn`).
  static std::string unit_name(const std::vector<std::string>& calls) {
    if (calls.size() == 1) return calls[0];
    std::string common = calls[0];
    for (const std::string& c : calls) {
      while (!common.empty() && c.rfind(common + ".", 0) != 0) {
        const size_t dot = common.rfind('.');
        common = dot == std::string::npos ? "" : common.substr(0, dot);
      }
    }
    const size_t skip = common.empty() ? 0 : common.size() + 1;
    std::vector<std::string> children;
    for (const std::string& c : calls) {
      const std::string child = c.substr(skip, c.find('.', skip) - skip);
      if (std::find(children.begin(), children.end(), child) == children.end())
        children.push_back(child);
    }
    std::string name = common.empty() ? "" : common + ".";
    for (size_t i = 0; i < children.size(); ++i) name += (i ? "+" : "") + children[i];
    return name;
  }

  std::vector<ScriptUnitGraph> make_units() {
    // Segments between valid cuts; one without a submodule call (glue) joins
    // the segment before it (the first one, the segment after it).
    struct Range {
      int begin, end;
      std::vector<std::string> calls;
    };
    std::vector<Range> ranges;
    const int m = static_cast<int>(steps_.size());
    int pending = 0;  // start of glue not yet given to a unit
    for (int begin = 0; begin < m;) {
      int end = begin + 1;
      while (end < m && cut_value_[end] == nullptr) ++end;
      std::vector<std::string> calls;
      for (int i = begin; i < end; ++i)
        for (const std::string& c : steps_[i].calls)
          if (std::find(calls.begin(), calls.end(), c) == calls.end()) calls.push_back(c);
      if (!calls.empty()) {
        ranges.push_back({pending, end, calls});
        pending = end;
      } else if (!ranges.empty()) {
        ranges.back().end = end;
        pending = end;
      }
      begin = end;
    }
    if (ranges.empty()) ranges.push_back({0, m, {"forward"}});
    ranges.back().end = m;

    std::vector<ScriptUnitGraph> units;
    std::map<std::string, int> times_named;
    for (const Range& r : ranges) {
      ScriptUnitGraph u;
      u.name = unit_name(r.calls);
      const int n = ++times_named[u.name];
      if (n > 1) u.name += "#" + std::to_string(n);
      u.graph = slice(r.begin, r.end);
      u.writes_input = writes_input(u.graph, root_);
      std::set<std::string> state;
      for (int i = r.begin; i < r.end; ++i)
        state.insert(steps_[i].state.begin(), steps_[i].state.end());
      u.state.assign(state.begin(), state.end());
      units.push_back(std::move(u));
    }
    return units;
  }

  // Steps [begin, end) as a graph (root, tensor) -> tensor; what they read
  // that depends on the module only is recomputed in it.
  std::shared_ptr<Graph> slice(int begin, int end) {
    auto g = std::make_shared<Graph>();
    std::unordered_map<const Value*, Value*> env;
    env[self_] = g->addInput("self")->setType(self_->type());
    env[cut_value_[begin]] = g->addInput("x")->setType(cut_value_[begin]->type());
    auto mapped = [&](Value* v) { return env.at(v); };
    std::function<void(Value*)> bring = [&](Value* v) {
      if (env.count(v)) return;
      TORCH_INTERNAL_ASSERT(!dynamic_.count(v), "a second input-dependent value crosses a cut");
      Node* producer = v->node();
      for (Value* in : free_values(producer)) bring(in);
      Node* copy = g->insertNode(g->createClone(producer, mapped));
      for (size_t i = 0; i < producer->outputs().size(); ++i)
        env[producer->output(i)] = copy->output(i);
    };
    for (int i = begin; i < end; ++i) {
      Node* n = steps_[i].node;
      for (Value* in : free_values(n)) bring(in);
      Node* copy = g->insertNode(g->createClone(n, mapped));
      for (size_t k = 0; k < n->outputs().size(); ++k) env[n->output(k)] = copy->output(k);
    }
    bring(cut_value_[end]);
    g->registerOutput(env.at(cut_value_[end]));
    torch::jit::EliminateDeadCode(g);
    g->lint();
    return g;
  }

  torch::jit::Module root_;
  std::set<std::string> open_;  // modules to inline besides containers
  std::set<std::string> state_names_;
  std::shared_ptr<Graph> graph_;
  Value* self_ = nullptr;
  Value* input_ = nullptr;
  std::unordered_set<const Value*> dynamic_;
  std::vector<Step> steps_;
  std::vector<Value*> cut_value_;
};

}  // namespace

std::vector<ScriptUnitGraph> split_script_module(const torch::jit::Module& root,
                                                 const std::vector<std::string>& split_inside) {
  return Splitter(root, split_inside).run();
}

}  // namespace models
}  // namespace splitsim
