// Codec objects in scenario files: {"method": "...", <the method's keys>}.
// The keys each method takes are listed once, in kMethods; parse_codec,
// codec_to_json and the error messages all read that table.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "json_read.h"
#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/format.h"

namespace splitsim {
namespace {

namespace jr = json_read;
using nlohmann::json;

struct MethodInfo {
  CodecMethod method;
  const char* name;
  std::vector<std::string> keys;      // besides "method", in output order
  std::vector<std::string> required;  // the rest have defaults
};

const std::vector<MethodInfo>& methods() {
  static const std::vector<MethodInfo> kMethods = {
      {CodecMethod::kNone, "none", {}, {}},
      {CodecMethod::kFp16, "fp16", {}, {}},
      {CodecMethod::kBf16, "bf16", {}, {}},
      {CodecMethod::kConvInsert,
       "conv_insert",
       {"out_channels", "kernel", "stride"},
       {"out_channels", "kernel"}},
      {CodecMethod::kLinearInsert, "linear_insert", {"out_features"}, {"out_features"}},
      {CodecMethod::kDecayingLinear,
       "decaying_linear",
       {"rate", "every_steps", "iterations", "l1", "sequence_axis"},
       {"rate", "every_steps", "iterations"}},
      {CodecMethod::kPowerIteration, "power_iteration", {"rank", "iters"}, {"rank"}},
      {CodecMethod::kQuantize, "quantize", {"bits"}, {"bits"}},
      {CodecMethod::kTopK, "topk", {"keep_ratio"}, {"keep_ratio"}},
  };
  return kMethods;
}

const MethodInfo& info(CodecMethod m) {
  for (const auto& i : methods()) {
    if (i.method == m) return i;
  }
  return methods().front();  // unreachable: every enumerator is in the table
}

// What each key expects, for "missing required key" messages.
std::string key_expects(const std::string& key) {
  if (key == "rate" || key == "keep_ratio") return "a number in (0, 1]";
  if (key == "iterations") return "a non-negative integer";
  if (key == "bits") return "an integer from 2 to 16";
  return "a positive integer";
}

// Throws at the first key of `j` that `m` does not take: a key of another
// method is named as such.
void check_method_keys(const json& j, const MethodInfo& m, const std::string& path) {
  std::vector<std::string> own = {"method"};
  own.insert(own.end(), m.keys.begin(), m.keys.end());
  const std::string takes = m.keys.empty()
                                ? std::string(m.name) + " takes no other keys than \"method\""
                                : std::string(m.name) + " takes: " + jr::join(m.keys);
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    if (std::find(own.begin(), own.end(), key) != own.end()) continue;
    std::vector<std::string> owners;
    for (const auto& other : methods()) {
      if (std::find(other.keys.begin(), other.keys.end(), key) != other.keys.end()) {
        owners.push_back(other.name);
      }
    }
    const std::string where = jr::member_path(path, key);
    if (!owners.empty()) {
      throw InputError(where, "key \"" + key + "\" belongs to " + jr::join(owners) + ", not " +
                                  m.name + "; " + takes);
    }
    throw InputError(where, "unknown key \"" + key + "\"; " + takes + jr::did_you_mean(key, own));
  }
  for (const auto& key : m.required) {
    jr::require_key(j, path, key, key_expects(key) + " (" + takes + ")");
  }
}

}  // namespace

const char* method_name(CodecMethod m) { return info(m).name; }

std::vector<std::string> method_names() {
  std::vector<std::string> names;
  for (const auto& m : methods()) names.push_back(m.name);
  return names;
}

std::string describe(const CodecSpec& s) {
  const std::string name = method_name(s.method);
  switch (s.method) {
    case CodecMethod::kNone:
    case CodecMethod::kFp16:
    case CodecMethod::kBf16:
      return name;
    case CodecMethod::kConvInsert:
      return name + "(->" + std::to_string(s.out_channels) + " k" + std::to_string(s.kernel) +
             " s" + std::to_string(s.stride) + ")";
    case CodecMethod::kLinearInsert:
      return name + "(->" + std::to_string(s.out_features) + ")";
    case CodecMethod::kDecayingLinear:
      return name + "(rate " + format_number(s.rate) + " every " + std::to_string(s.every_steps) +
             " x" + std::to_string(s.iterations) + (s.l1 != 0 ? " l1 " + format_number(s.l1) : "") +
             (s.sequence_axis ? " +seq" : "") + ")";
    case CodecMethod::kPowerIteration:
      return name + "(rank " + std::to_string(s.rank) +
             (s.iters != 1 ? " iters " + std::to_string(s.iters) : "") + ")";
    case CodecMethod::kQuantize:
      return name + "(" + std::to_string(s.bits) + " bit)";
    case CodecMethod::kTopK:
      return name + "(keep " + format_number(s.keep_ratio) + ")";
  }
  return name;
}

CodecSpec parse_codec(const json& j, const std::string& path) {
  jr::require_object(j, path, "a codec object such as {\"method\": \"none\"}");
  jr::require_key(j, path, "method", "one of " + jr::join(method_names()));
  const std::string name =
      jr::read_choice(j.at("method"), path + ".method", "codec method", method_names());
  const MethodInfo* m = nullptr;
  for (const auto& i : methods()) {
    if (name == i.name) m = &i;
  }
  check_method_keys(j, *m, path);

  CodecSpec s;
  s.method = m->method;
  auto at = [&](const char* key) -> const json& { return j.at(key); };
  auto where = [&](const char* key) { return path + "." + key; };
  switch (s.method) {
    case CodecMethod::kNone:
    case CodecMethod::kFp16:
    case CodecMethod::kBf16:
      break;
    case CodecMethod::kConvInsert:
      s.out_channels = jr::read_int(at("out_channels"), where("out_channels"));
      s.kernel = jr::read_int(at("kernel"), where("kernel"));
      s.stride = j.contains("stride") ? jr::read_int(at("stride"), where("stride")) : s.kernel;
      break;
    case CodecMethod::kLinearInsert:
      s.out_features = jr::read_int(at("out_features"), where("out_features"));
      break;
    case CodecMethod::kDecayingLinear:
      s.rate = jr::read_number(at("rate"), where("rate"), jr::fraction());
      s.every_steps = jr::read_int(at("every_steps"), where("every_steps"));
      s.iterations = jr::read_int(at("iterations"), where("iterations"), 0);
      if (j.contains("l1")) s.l1 = jr::read_number(at("l1"), where("l1"), jr::non_negative());
      if (j.contains("sequence_axis")) {
        s.sequence_axis = jr::read_bool(at("sequence_axis"), where("sequence_axis"));
      }
      break;
    case CodecMethod::kPowerIteration:
      s.rank = jr::read_int(at("rank"), where("rank"));
      if (j.contains("iters")) s.iters = jr::read_int(at("iters"), where("iters"));
      break;
    case CodecMethod::kQuantize:
      s.bits = jr::read_int(at("bits"), where("bits"), 2, 16);
      break;
    case CodecMethod::kTopK:
      s.keep_ratio = jr::read_number(at("keep_ratio"), where("keep_ratio"), jr::fraction());
      break;
  }
  return s;
}

json codec_to_json(const CodecSpec& s) {
  json j = {{"method", method_name(s.method)}};
  switch (s.method) {
    case CodecMethod::kNone:
    case CodecMethod::kFp16:
    case CodecMethod::kBf16:
      break;
    case CodecMethod::kConvInsert:
      j["out_channels"] = s.out_channels;
      j["kernel"] = s.kernel;
      j["stride"] = s.stride;
      break;
    case CodecMethod::kLinearInsert:
      j["out_features"] = s.out_features;
      break;
    case CodecMethod::kDecayingLinear:
      j["rate"] = s.rate;
      j["every_steps"] = s.every_steps;
      j["iterations"] = s.iterations;
      j["l1"] = s.l1;
      j["sequence_axis"] = s.sequence_axis;
      break;
    case CodecMethod::kPowerIteration:
      j["rank"] = s.rank;
      j["iters"] = s.iters;
      break;
    case CodecMethod::kQuantize:
      j["bits"] = s.bits;
      break;
    case CodecMethod::kTopK:
      j["keep_ratio"] = s.keep_ratio;
      break;
  }
  return j;
}

}  // namespace splitsim
