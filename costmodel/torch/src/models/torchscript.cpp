// Any TorchScript file (torch.jit.save output): loaded, cut into units from
// its forward graph (script_split.h), and checked on one sample: the units
// run in order must give what forward gives. The file is untrusted: its
// archive is checked first (script_archive.h), and a child process does all
// of it once before this process does (isolated.h).
#include <caffe2/serialize/read_adapter_interface.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/script.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/isolated.h"
#include "models/models_impl.h"
#include "models/script_split.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/script_archive.h"

namespace splitsim {
namespace models {
namespace {

const char kWhere[] = "$.model.path";

// An error from the TorchScript interpreter without its traceback of the
// serialized and the original code: the last line, which says what failed
// ("RuntimeError: ...", "builtins.ValueError: ..." -> "ValueError: ...").
std::string interpreter_reason(const std::exception& e) {
  const auto* error = dynamic_cast<const c10::Error*>(&e);
  std::string what = error != nullptr ? error->what_without_backtrace() : e.what();
  if (what.find("Traceback of TorchScript") == std::string::npos) return what;
  size_t end = what.find_last_not_of(" \n");
  if (end == std::string::npos) return what;
  const size_t begin = what.rfind('\n', end);
  std::string line = what.substr(begin == std::string::npos ? 0 : begin + 1,
                                 end + 1 - (begin == std::string::npos ? 0 : begin + 1));
  const std::string builtins = "builtins.";
  if (line.rfind(builtins, 0) == 0) line.erase(0, builtins.size());
  return line;
}

// One unit of a scripted module: a slice of its flattened forward graph
// (script_split.h), run on the shared root module. The parameters and buffers
// the slice uses are registered here too (the same tensors, '.' in names
// replaced by '_'), so parameters(), optimizers and memory counts see them.
class ScriptUnit : public UnitModule {
 public:
  ScriptUnit(torch::jit::Module root, const ScriptUnitGraph& unit,
             const std::map<std::string, torch::Tensor>& parameters,
             const std::map<std::string, torch::Tensor>& buffers)
      : root_(std::move(root)),
        name_(unit.name),
        fn_(unit.name, unit.graph, nullptr),
        writes_input_(unit.writes_input) {
    for (const std::string& name : unit.state) {
      if (auto p = parameters.find(name); p != parameters.end()) {
        register_parameter(sanitize(name), p->second, p->second.requires_grad());
      } else {
        register_buffer(sanitize(name), buffers.at(name));
      }
    }
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    // A unit whose first op writes its input in place (ReLU(inplace=True)
    // after a cut) gets a copy: the input may be a leaf that requires grad,
    // or a tensor its caller still holds.
    torch::jit::Stack stack{root_._ivalue(), writes_input_ ? x.clone() : x};
    try {
      fn_.run(stack);
    } catch (const std::exception& e) {
      throw std::runtime_error("unit " + name_ +
                               " of the TorchScript model: " + interpreter_reason(e));
    }
    return stack.back().toTensor();
  }
  void train(bool on) override {
    torch::nn::Module::train(on);
    root_.train(on);
  }
  void set_writes_input(bool on) { writes_input_ = on; }
  const std::string& name() const { return name_; }

 private:
  static std::string sanitize(std::string name) {
    for (char& c : name) {
      if (c == '.') c = '_';
    }
    return name;
  }
  torch::jit::Module root_;
  std::string name_;
  torch::jit::GraphFunction fn_;
  bool writes_input_ = false;
};

// The whole file, read once: the archive check, the child that tries it and
// this process all see the same bytes. A regular file only (checked on the
// opened descriptor): a FIFO would block, a device never end.
std::string read_model_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const std::string reason = std::strerror(errno);
    std::error_code ec;
    const std::string where = std::filesystem::path(path).is_relative()
                                  ? " (relative to the directory splitsim runs in, " +
                                        std::filesystem::current_path(ec).string() + ")"
                                  : "";
    throw InputError(kWhere, "cannot read TorchScript file \"" + path + "\"" + where + ": " +
                                 reason + "; give a file written by torch.jit.save");
  }
  struct stat st {};
  std::string bytes;
  bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const int64_t memory = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  if (regular && st.st_size > memory / 2) {
    ::close(fd);
    throw InputError(kWhere, "\"" + path + "\" holds " + std::to_string(st.st_size >> 20) +
                                 " MiB, more than half of this machine's memory (" +
                                 std::to_string(memory >> 20) + " MiB): it and its weights "
                                 "would not fit");
  }
  if (regular) {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    bytes.resize(done);
  }
  ::close(fd);
  if (!regular) {
    throw InputError(kWhere, "\"" + path +
                                 "\" is not a regular file; give a file written by "
                                 "torch.jit.save");
  }
  return bytes;
}

// LibTorch's reader over the bytes, never past their end.
class BytesReader : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit BytesReader(const std::string& bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= bytes_.size()) return 0;
    n = std::min<size_t>(n, bytes_.size() - pos);
    std::memcpy(buf, bytes_.data() + pos, n);
    return n;
  }

 private:
  const std::string& bytes_;
};

// LibTorch's text about a file, which may quote the file: one line, control
// characters as spaces.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return text;
}

torch::jit::Module load_module(const std::string& path, const std::string& bytes) {
  try {
    return torch::jit::load(std::make_shared<BytesReader>(bytes), torch::kCPU);
  } catch (const std::exception& e) {  // c10::Error, the script compiler's ErrorReport
    throw InputError(kWhere, "\"" + path + "\" is not a TorchScript file (" +
                                 one_line(interpreter_reason(e)) +
                                 "); give a file written by torch.jit.save");
  }
}

std::vector<int64_t> per_sample(const torch::Tensor& t) {
  std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  shape.erase(shape.begin());
  return shape;
}


// Loads, cuts and checks the file's bytes (add_torchscript runs it twice:
// in a child first, then here), saying each step.
void add_checked_torchscript(SplitModel& m, const std::string& bytes, const ReportStep& step) {
  step("loading it");
  torch::jit::Module module = load_module(m.spec.path, bytes);
  m.task = TaskKind::kRegression;
  std::set<std::string> submodules;
  for (const auto& sub : module.named_modules()) submodules.insert(sub.name);
  for (size_t i = 0; i < m.spec.split_inside.size(); ++i) {
    const std::string& name = m.spec.split_inside[i];
    if (name.empty() || !submodules.count(name)) {
      std::string known;
      int listed = 0;
      for (const auto& sub : module.named_children()) {
        if (++listed > 12) break;
        known += (known.empty() ? "" : ", ") + sub.name;
      }
      throw InputError("$.model.split_inside[" + std::to_string(i) + "]",
                       "\"" + m.spec.path + "\" has no submodule \"" + name +
                           "\"; give a dotted path of one, e.g. of its children: " + known);
    }
  }
  std::vector<ScriptUnitGraph> slices;
  step("cutting it into units");
  try {
    slices = split_script_module(module, m.spec.split_inside);
  } catch (const ScriptSplitError& e) {
    throw InputError(kWhere, "\"" + m.spec.path + "\" cannot be split: " + e.what());
  } catch (const c10::Error& e) {
    throw InputError(kWhere, "\"" + m.spec.path + "\": its forward graph could not be read (" +
                                 e.what_without_backtrace() + ")");
  }
  std::map<std::string, torch::Tensor> parameters, buffers;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) parameters[p.name] = p.value;
  for (const auto& b : module.named_buffers(/*recurse=*/true)) buffers[b.name] = b.value;
  std::vector<std::shared_ptr<ScriptUnit>> units;
  for (const ScriptUnitGraph& slice : slices) {
    units.push_back(std::make_shared<ScriptUnit>(module, slice, parameters, buffers));
    add_unit(m, slice.name, units.back());
  }
  if (m.units.size() < 2) {
    throw InputError(kWhere, "\"" + m.spec.path +
                                 "\" cannot be split anywhere: more than one tensor crosses "
                                 "every point between its submodule calls (a residual or a "
                                 "second input spans the whole forward), or it calls none");
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
  // One sample, eval mode: find the units that write their input in place
  // where their code does not say so (through a view), then check that the
  // chain of units reproduces forward.
  torch::NoGradGuard no_grad;
  module.eval();
  for (auto& unit : m.units) unit->eval();
  auto fails = [&](const std::string& reason) {
    return InputError(kWhere, "\"" + m.spec.path + "\" fails on one sample of input_shape [" +
                                  c10::Join(", ", m.spec.input_shape) + "] " + m.spec.input_dtype +
                                  " (" + reason + "); check input_shape and input_dtype");
  };
  torch::Tensor whole, chain;
  try {
    torch::Tensor y = m.make_input(1, 0);
    for (auto& unit : units) {
      step("running unit " + unit->name() + " on one sample");
      const auto version = y._version();
      torch::Tensor out = unit->forward(y);
      if (y._version() != version) unit->set_writes_input(true);
      y = out;
    }
    const torch::Tensor x = m.make_input(1, 0);
    step("running its forward on one sample");
    const torch::jit::IValue out = module.forward({x});
    if (!out.isTensor())
      throw std::runtime_error("its forward returns a " + out.tagKind() + ", not one tensor");
    whole = out.toTensor();
    step("running its units in order on one sample");
    chain = m.forward(x);
  } catch (const std::exception& e) {  // c10::Error, the interpreter's JITException
    const std::string reason = interpreter_reason(e);
    // An allocation refused (in the child: past SPLITSIM_MODEL_CHECK_MIB).
    if (reason.find("can't allocate memory") != std::string::npos) throw std::bad_alloc();
    throw fails(reason);
  }
  if (!whole.sizes().equals(chain.sizes()) || !torch::allclose(whole, chain, 1e-4, 1e-5)) {
    throw InputError(kWhere, "\"" + m.spec.path +
                                 "\": running its units in order does not give what its "
                                 "forward gives (is forward random or stateful?)");
  }
  m.output_shape = per_sample(chain);
  module.train();
  for (auto& unit : m.units) unit->train();
}

std::string signal_name(int signal) {
  const char* name = sigabbrev_np(signal);
  return name != nullptr ? std::string("SIG") + name : "signal " + std::to_string(signal);
}

}  // namespace

// The file is untrusted: its archive is checked without LibTorch, then a
// child process loads, cuts and runs it on one sample under the limits
// (isolated.h); whatever goes wrong there is an InputError naming the file
// and the step. Only then does this process load it.
void add_torchscript(SplitModel& m) {
  const std::string& path = m.spec.path;
  const std::string bytes = read_model_file(path);
  try {
    check_script_archive(bytes);
  } catch (const ArchiveError& e) {
    throw InputError(kWhere, "\"" + path + "\" is not a TorchScript file as torch.jit.save "
                             "writes it: " + e.what());
  }
  const IsolationLimits limits = isolation_limits();
  const IsolatedOutcome out = run_isolated(
      [&](const ReportStep& step) { add_checked_torchscript(m, bytes, step); }, limits);
  const std::string step = out.step.empty() ? "reading it" : out.step;
  switch (out.kind) {
    case IsolatedOutcome::kOk: break;
    case IsolatedOutcome::kInputError: throw InputError(out.where, out.message);
    case IsolatedOutcome::kError:
      throw InputError(kWhere, "\"" + path + "\" fails " + step + ": " + one_line(out.message));
    case IsolatedOutcome::kOutOfMemory:
      throw InputError(kWhere, "\"" + path + "\" needs more than " +
                                   std::to_string(limits.memory_bytes >> 20) + " MiB " + step +
                                   " (the limit: SPLITSIM_MODEL_CHECK_MIB)");
    case IsolatedOutcome::kTimeout:
      throw InputError(kWhere, "\"" + path + "\" did not finish " + step + " within " +
                                   c10::str(limits.seconds) +
                                   " s (a loop without end? the limit: SPLITSIM_MODEL_CHECK_S)");
    case IsolatedOutcome::kSignal:
      throw InputError(kWhere, "\"" + path + "\" killed the process that checked it (" +
                                   signal_name(out.signal) + ", " + step +
                                   "): the file is damaged or made to crash its reader");
  }
  add_checked_torchscript(m, bytes, [](const std::string&) {});
}

}  // namespace models
}  // namespace splitsim
