// Model names, their options and defaults (scenarios/FORMAT.md "Model"). No LibTorch here:
// the scenario parser and the simulator use these without building a model.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/costmodel/model_blocks.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {
namespace {

// One integer option of ModelSpec, by its JSON key.
// One integer option of ModelSpec, by its JSON key, with its allowed range
// (limits.h).
struct IntOption {
  const char* key;
  int64_t ModelSpec::*field;
  int64_t min;
  int64_t max;
};

const IntOption kIntOptions[] = {
    {"num_classes", &ModelSpec::num_classes, 1, limits::kMaxNumClasses},
    {"image_size", &ModelSpec::image_size, limits::kMinImageSize, limits::kMaxImageSize},
    {"seq_len", &ModelSpec::seq_len, 1, limits::kMaxSeqLen},
    {"hidden", &ModelSpec::hidden, 1, limits::kMaxHidden},
    {"layers", &ModelSpec::layers, 1, limits::kMaxLayers},
    {"heads", &ModelSpec::heads, 1, limits::kMaxHeads},
    {"ffn", &ModelSpec::ffn, 1, limits::kMaxFfn},
    {"vocab_size", &ModelSpec::vocab_size, 2, limits::kMaxVocabSize},
    {"max_positions", &ModelSpec::max_positions, 1, limits::kMaxPositions},
    {"kv_heads", &ModelSpec::kv_heads, 1, limits::kMaxHeads},
};

void check_range(const IntOption& opt, int64_t value, const std::string& where) {
  if (value >= opt.min && value <= opt.max) return;
  throw InputError(where, std::to_string(value) +
                              " is out of range; allowed: " + std::to_string(opt.min) + " to " +
                              std::to_string(opt.max) + " (scenarios/FORMAT.md, \"Input limits\")");
}

bool is_encoder(const std::string& name) { return name == "roberta_base" || name == "bert_small"; }

// The most parameters one unit of a transformer holds, or more (a whole
// block stands for each of its units): planning builds one unit at a time.
int64_t largest_transformer_unit_params(const ModelSpec& m) {
  const int64_t h = m.hidden;
  const int64_t embeddings = (m.vocab_size + (m.name == "llama" ? 0 : m.max_positions + 2)) * h;
  const int64_t kv = m.name == "llama" ? m.kv_heads * (h / m.heads) : h;
  const int64_t block = 2 * h * h + 2 * h * kv + 3 * h * m.ffn;
  const int64_t head = m.name == "llama"        ? m.vocab_size * h
                       : m.name == "bert_small" ? h * h + h * m.vocab_size
                                                : h * h + h * std::max<int64_t>(m.num_classes, 1);
  return std::max({embeddings, block, head});
}

// Parameters of a transformer: embeddings, layers, head. Every factor is
// bounded by kIntOptions, so no product overflows.
int64_t transformer_params(const ModelSpec& m) {
  const int64_t h = m.hidden;
  if (m.name == "llama") {  // untied embeddings and LM head; no biases
    const int64_t kv = m.kv_heads * (h / m.heads);
    const int64_t layer = 2 * h * h + 2 * h * kv + 3 * h * m.ffn + 2 * h;
    return 2 * m.vocab_size * h + m.layers * layer + h;
  }
  const int64_t embeddings = (m.vocab_size + m.max_positions + 2) * h;
  const int64_t layer = 4 * h * h + 2 * h * m.ffn;
  return embeddings + m.layers * layer + h * h + h * std::max<int64_t>(m.num_classes, 1);
}

// The integer options a model takes, with their defaults, in JSON key order.
struct ModelOptions {
  const char* name;
  std::vector<std::pair<std::string, int64_t>> defaults;
};

const std::vector<ModelOptions>& model_table() {
  static const std::vector<ModelOptions> kTable = {
      {"mobilenet_v2", {{"image_size", 224}, {"num_classes", 10}}},
      {"mobilenet_v2_cifar", {{"image_size", 32}, {"num_classes", 10}}},
      {"resnet20", {{"image_size", 32}, {"num_classes", 10}}},
      {"roberta_base",
       {{"vocab_size", 50265},
        {"max_positions", 514},
        {"hidden", 768},
        {"layers", 12},
        {"heads", 12},
        {"ffn", 3072},
        {"seq_len", 128},
        {"num_classes", 2}}},
      {"bert_small",
       {{"vocab_size", 30522},
        {"max_positions", 512},
        {"hidden", 768},
        {"layers", 3},
        {"heads", 12},
        {"ffn", 3072},
        {"seq_len", 512}}},
      // A LLaMA-shaped decoder (costmodel/README.md "Models and partition
      // units"); the defaults make a small one (125M parameters) that a
      // CPU trains.
      {"llama",
       {{"vocab_size", 32000},
        {"hidden", 768},
        {"layers", 12},
        {"heads", 12},
        {"kv_heads", 4},
        {"ffn", 2048},
        {"seq_len", 512}}},
      // TorchScript takes path, input_shape, input_dtype; vocab_size (the
      // range of synthetic token ids) only with input_dtype int64.
      {"torchscript", {}},
  };
  return kTable;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Default range of synthetic token ids for an int64 TorchScript input: ids
// 0 and 1 exist in any embedding table.
constexpr int64_t kTorchScriptDefaultVocab = 2;

void check_torchscript(ModelSpec& spec, const std::string& path) {
  if (spec.path.empty()) {
    throw InputError(path + ".path",
                     "torchscript needs \"path\"; give the .pt file written by "
                     "torch.jit.save");
  }
  if (spec.input_shape.empty()) {
    throw InputError(path + ".input_shape",
                     "torchscript needs \"input_shape\"; give the per-sample input shape, "
                     "e.g. [3, 32, 32] (batch dimension left out)");
  }
  for (size_t i = 0; i < spec.input_shape.size(); ++i) {
    if (spec.input_shape[i] <= 0) {
      throw InputError(path + ".input_shape[" + std::to_string(i) + "]",
                       "dimension " + std::to_string(spec.input_shape[i]) +
                           " is not positive; every dimension must be >= 1");
    }
  }
  if (static_cast<int64_t>(spec.input_shape.size()) > limits::kMaxInputDims) {
    throw InputError(path + ".input_shape", std::to_string(spec.input_shape.size()) +
                                                " dimensions; the limit is " +
                                                std::to_string(limits::kMaxInputDims));
  }
  int64_t elements = 1;
  for (int64_t d : spec.input_shape) {
    if (d > limits::kMaxInputElements || elements * d > limits::kMaxInputElements) {
      throw InputError(path + ".input_shape", "more than " +
                                                  std::to_string(limits::kMaxInputElements) +
                                                  " elements per sample; the limit is " +
                                                  std::to_string(limits::kMaxInputElements));
    }
    elements *= d;
  }
  if (spec.input_dtype.empty()) spec.input_dtype = "float32";
  if (spec.input_dtype == "int64") {
    if (spec.vocab_size == 0) spec.vocab_size = kTorchScriptDefaultVocab;
  } else if (spec.input_dtype == "float32") {
    if (spec.vocab_size != 0) {
      throw InputError(path + ".vocab_size",
                       "vocab_size applies only to torchscript with input_dtype \"int64\"");
    }
  } else {
    throw InputError(path + ".input_dtype",
                     "unknown input dtype \"" + spec.input_dtype + "\"; allowed: float32, int64");
  }
}

// Checks that need several options at once (transformers).
void check_transformer(const ModelSpec& spec, const std::string& path) {
  if (spec.hidden % spec.heads != 0) {
    throw InputError(path + ".heads",
                     "hidden " + std::to_string(spec.hidden) + " is not divisible by heads " +
                         std::to_string(spec.heads) + "; choose heads that divide hidden");
  }
  if (spec.name == "llama" && spec.heads % spec.kv_heads != 0) {
    throw InputError(path + ".kv_heads", "heads " + std::to_string(spec.heads) +
                                             " is not a multiple of kv_heads " +
                                             std::to_string(spec.kv_heads) +
                                             "; each key/value head serves a whole group");
  }
  if (spec.name == "llama" && (spec.hidden / spec.heads) % 2 != 0) {
    throw InputError(path + ".heads", "head size " + std::to_string(spec.hidden / spec.heads) +
                                          " is odd; rotary positions turn pairs of dimensions");
  }
  // Planning builds one unit at a time and moves it to the meta device
  // (measure.h); exec builds the whole model and checks the whole
  // (build_model).
  const int64_t params = largest_transformer_unit_params(spec);
  if (params > limits::kMaxTransformerParams) {
    throw InputError(path, "its largest unit has about " + std::to_string(params) +
                               " parameters (vocab_size x hidden, or one block's hidden and "
                               "ffn), built at once for planning; the limit is " +
                               std::to_string(limits::kMaxTransformerParams) +
                               " (1 GiB of fp32 weights)");
  }
  if (spec.name == "llama") return;  // rotary positions: no table to outgrow
  // RoBERTa's position ids start at padding_idx + 1 = 2.
  const int64_t offset = spec.name == "roberta_base" ? 2 : 0;
  if (spec.seq_len + offset > spec.max_positions) {
    throw InputError(path + ".seq_len",
                     "seq_len " + std::to_string(spec.seq_len) + " needs " +
                         std::to_string(spec.seq_len + offset) +
                         " positions but max_positions is " + std::to_string(spec.max_positions) +
                         "; allowed: seq_len <= " + std::to_string(spec.max_positions - offset));
  }
}

}  // namespace

std::vector<std::string> known_models() {
  std::vector<std::string> names;
  for (const auto& m : model_table()) names.push_back(m.name);
  return names;
}

ModelSpec resolve_model_defaults(ModelSpec spec, const std::string& path) {
  const ModelOptions* model = nullptr;
  for (const auto& m : model_table()) {
    if (spec.name == m.name) model = &m;
  }
  if (model == nullptr) {
    throw InputError(path + ".name",
                     "unknown model \"" + spec.name + "\"; known: " + join(known_models()));
  }
  const bool torchscript = spec.name == "torchscript";
  std::vector<std::string> taken;
  for (const auto& [key, value] : model->defaults) taken.push_back(key);
  if (torchscript)
    taken = {"path", "input_shape", "input_dtype", "vocab_size (int64 only)", "split_inside"};
  const std::string allowed = "\"" + spec.name + "\" takes: " + join(taken);

  for (const IntOption& opt : kIntOptions) {
    int64_t& value = spec.*opt.field;
    const std::string where = path + "." + opt.key;
    int64_t default_value = 0;
    bool takes = torchscript && std::string(opt.key) == "vocab_size";
    for (const auto& [key, def] : model->defaults) {
      if (key == opt.key) {
        takes = true;
        default_value = def;
      }
    }
    if (!takes) {
      if (value != 0) throw InputError(where, "option not taken by this model; " + allowed);
      continue;
    }
    if (value < 0) {
      throw InputError(where, std::to_string(value) + " is not positive; give a value >= 1");
    }
    if (value == 0) value = default_value;
    if (value != 0) check_range(opt, value, where);  // 0: torchscript float32, no vocab
  }
  const bool encoder = is_encoder(spec.name);
  const bool transformer = is_transformer(spec.name);
  if (!encoder && spec.dropout >= 0) {
    throw InputError(path + ".dropout",
                     "option not taken (roberta_base and bert_small only); " + allowed);
  }
  if (encoder && spec.dropout < 0) spec.dropout = 0.1;  // BERT's and RoBERTa's
  if (spec.finetune.method == "lora" && !transformer) {
    throw InputError(path + ".finetune.method",
                     "LoRA adapts a transformer's projections; \"" + spec.name +
                         "\" has none (roberta_base, bert_small and llama do); freeze units with "
                         "\"frozen\" instead");
  }
  if (torchscript) {
    check_torchscript(spec, path);
    return spec;
  }
  if (!spec.path.empty()) throw InputError(path + ".path", "option not taken; " + allowed);
  if (!spec.split_inside.empty()) {
    throw InputError(path + ".split_inside", "option not taken; " + allowed);
  }
  if (!spec.input_shape.empty()) {
    throw InputError(path + ".input_shape", "option not taken; " + allowed);
  }
  if (!spec.input_dtype.empty() && spec.input_dtype != "float32") {
    throw InputError(path + ".input_dtype",
                     "option not taken (the model fixes its input); " + allowed);
  }
  if (spec.name == "mobilenet_v2_cifar" && spec.image_size % 8 != 0) {
    throw InputError(path + ".image_size",
                     std::to_string(spec.image_size) +
                         " is not a multiple of 8; mobilenet_v2_cifar downsamples by 8 and "
                         "pools what is left (allowed: 8, 16, 24, 32, ...)");
  }
  if (transformer) check_transformer(spec, path);
  return spec;
}

std::vector<int64_t> model_input_shape(const ModelSpec& spec) {
  if (spec.name == "torchscript") return spec.input_shape;
  if (is_transformer(spec.name)) return {spec.seq_len};
  return {3, spec.image_size, spec.image_size};
}

const std::vector<std::string>& lora_targets() {
  static const std::vector<std::string> kTargets = {"query", "key",          "value",
                                                    "dense", "intermediate", "output"};
  return kTargets;
}

std::string repeated_block_prefix(const ModelSpec& spec) {
  std::string prefix;
  if (is_encoder(spec.name)) prefix = "layer.";
  if (spec.name == "llama") prefix = "layers.";
  if (prefix.empty() || spec.layers <= 2) return "";
  for (const auto& f : spec.finetune.frozen)
    if (f.rfind(prefix, 0) == 0) return "";
  return prefix;
}

bool is_transformer(const std::string& name) { return is_encoder(name) || name == "llama"; }

int64_t transformer_param_count(const ModelSpec& spec) {
  if (!is_transformer(spec.name)) return 0;
  return transformer_params(spec);
}

}  // namespace splitsim
