// The scenario's "model" object and its "finetune" (scenarios/FORMAT.md
// "Model"); the defaults and checks of each model are model_spec.cpp's.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "json_read.h"
#include "scenario_internal.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {
namespace {

namespace jr = json_read;
using nlohmann::json;

// clang-format off
const std::vector<std::string> kModelKeys = {
    "name", "num_classes", "image_size", "seq_len", "hidden", "layers", "heads", "kv_heads",
    "ffn", "vocab_size", "max_positions", "path", "input_shape", "input_dtype", "split_inside",
    "finetune", "dropout"};
// clang-format on
const std::vector<std::string> kFinetuneKeys = {"method",  "rank",    "alpha",
                                                "dropout", "targets", "frozen"};

std::vector<std::string> read_strings(const json& j, const std::string& where,
                                      const std::string& what) {
  jr::require_array(j, where, what, 1);
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i)
    out.push_back(jr::read_string(j[i], jr::index_path(where, i)));
  return out;
}

FinetuneSpec parse_finetune(const json& j, const std::string& path) {
  jr::require_object(j, path,
                     "a fine-tuning object such as {\"method\": \"lora\", \"rank\": 8, "
                     "\"targets\": [\"query\", \"value\"]}");
  jr::check_keys(j, path, kFinetuneKeys);
  FinetuneSpec f;
  if (j.contains("method"))
    f.method =
        jr::read_choice(j.at("method"), path + ".method", "fine-tuning method", {"full", "lora"});
  const bool lora = f.method == "lora";
  for (const char* key : {"rank", "alpha", "dropout", "targets"}) {
    if (j.contains(key) && !lora)
      throw InputError(path + "." + key, "only with \"method\": \"lora\"");
  }
  if (j.contains("rank")) f.rank = jr::read_int(j.at("rank"), path + ".rank", 1, 4096);
  if (j.contains("alpha"))
    f.alpha = jr::read_number(j.at("alpha"), path + ".alpha", jr::positive());
  if (j.contains("dropout"))
    f.dropout = jr::read_number(j.at("dropout"), path + ".dropout", {0, false, 1, true});
  if (j.contains("targets")) {
    f.targets.clear();
    const std::string where = path + ".targets";
    jr::require_array(j.at("targets"), where, "projections such as [\"query\", \"value\"]", 1);
    for (size_t i = 0; i < j.at("targets").size(); ++i) {
      const std::string t = jr::read_choice(j.at("targets")[i], jr::index_path(where, i),
                                            "LoRA target", lora_targets());
      if (std::find(f.targets.begin(), f.targets.end(), t) != f.targets.end())
        throw InputError(jr::index_path(where, i), "\"" + t + "\" is listed twice");
      f.targets.push_back(t);
    }
  }
  if (j.contains("frozen"))
    f.frozen =
        read_strings(j.at("frozen"), path + ".frozen", "unit names such as [\"embeddings\"]");
  return f;
}

}  // namespace

namespace scenario_internal {

const std::vector<std::string>& model_keys() { return kModelKeys; }

ModelSpec parse_model(const json& j, const std::string& path) {
  jr::require_object(j, path, "a model object such as {\"name\": \"resnet20\"}");
  jr::check_keys(j, path, kModelKeys);
  jr::require_key(j, path, "name", "one of " + jr::join(known_models()));
  ModelSpec m;
  m.name = jr::read_choice(j.at("name"), path + ".name", "model", known_models());
  struct IntKey {
    const char* key;
    int64_t* field;
  };
  const IntKey ints[] = {{"num_classes", &m.num_classes},
                         {"image_size", &m.image_size},
                         {"seq_len", &m.seq_len},
                         {"hidden", &m.hidden},
                         {"layers", &m.layers},
                         {"heads", &m.heads},
                         {"ffn", &m.ffn},
                         {"vocab_size", &m.vocab_size},
                         {"max_positions", &m.max_positions},
                         {"kv_heads", &m.kv_heads}};
  for (const IntKey& k : ints) {
    if (j.contains(k.key)) *k.field = jr::read_int(j.at(k.key), path + "." + k.key);
  }
  if (j.contains("path")) m.path = jr::read_string(j.at("path"), path + ".path");
  if (j.contains("input_shape")) {
    const std::string where = path + ".input_shape";
    jr::require_array(j.at("input_shape"), where, "a per-sample shape such as [3, 32, 32]", 1);
    for (size_t i = 0; i < j.at("input_shape").size(); ++i) {
      m.input_shape.push_back(jr::read_int(j.at("input_shape")[i], jr::index_path(where, i)));
    }
  }
  if (j.contains("input_dtype")) {
    m.input_dtype = jr::read_string(j.at("input_dtype"), path + ".input_dtype");
  }
  if (j.contains("split_inside")) {
    m.split_inside = read_strings(j.at("split_inside"), path + ".split_inside",
                                  "module paths such as [\"encoder\"]");
  }
  if (j.contains("finetune")) m.finetune = parse_finetune(j.at("finetune"), path + ".finetune");
  if (j.contains("dropout"))
    m.dropout = jr::read_number(j.at("dropout"), path + ".dropout", {0, false, 1, true});
  return resolve_model_defaults(m, path);
}

}  // namespace scenario_internal
}  // namespace splitsim
