// The "sweep" section of a scenario file and reading scenario files.
// A sweep maps axes (a top-level key, or "object.key" inside model,
// optimizer, network or devices) to lists of values; the variants are the
// cartesian product of the axes, the first axis outermost.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "json_read.h"
#include "scenario_internal.h"
#include "splitsim/costmodel/calibration.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/input_file.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {
namespace {

namespace jr = json_read;
using nlohmann::json;

// More variants than this is almost surely a mistake (and would take hours).
constexpr size_t kMaxVariants = 100000;

// Objects whose members a dotted axis may name.
const std::vector<std::string> kDottedObjects = {"model", "optimizer", "network", "devices"};

struct AxisValue {
  json value;
  std::string label;
  std::string path;  // of the value itself in the file: $.sweep.chunks[1] or ...[1].value
};

struct Axis {
  std::string key;            // "chunks", "network.latency_s"
  std::string scenario_path;  // "$.chunks", "$.network.latency_s"
  std::vector<AxisValue> values;
};

// Axes that may stand alone: every top-level key except the identity ones.
std::vector<std::string> plain_axes() {
  std::vector<std::string> keys;
  for (const auto& k : scenario_internal::top_level_keys()) {
    if (k != "schema" && k != "name" && k != "description") keys.push_back(k);
  }
  return keys;
}

// Validates an axis name; returns its path in the scenario.
std::string axis_scenario_path(const std::string& key, const std::string& where) {
  const std::vector<std::string> plain = plain_axes();
  const std::string allowed =
      "an axis is a top-level key (" + jr::join(plain) +
      ") or a dotted path into model, optimizer, network or devices (e.g. "
      "\"network.bandwidth_bit_per_s\", \"model.image_size\", \"devices.server\")";
  const size_t dot = key.find('.');
  if (dot == std::string::npos) {
    if (std::find(plain.begin(), plain.end(), key) == plain.end()) {
      throw InputError(
          where, "unknown sweep axis \"" + key + "\"; " + allowed + jr::did_you_mean(key, plain));
    }
    return jr::member_path("$", key);
  }
  const std::string object = key.substr(0, dot), member = key.substr(dot + 1);
  if (std::find(kDottedObjects.begin(), kDottedObjects.end(), object) == kDottedObjects.end()) {
    throw InputError(where, "unknown sweep axis \"" + key + "\": \"" + object +
                                "\" is not model, optimizer, network or devices; " + allowed);
  }
  if (member.empty() || member.find('.') != std::string::npos) {
    throw InputError(where, "unknown sweep axis \"" + key + "\": give one key inside \"" + object +
                                "\"; " + allowed);
  }
  const std::vector<std::string>* members = scenario_internal::nested_keys(object);
  if (members != nullptr && std::find(members->begin(), members->end(), member) == members->end()) {
    throw InputError(where, "unknown sweep axis \"" + key + "\": \"" + object + "\" has no key \"" +
                                member + "\"; allowed: " + jr::join(*members) +
                                jr::did_you_mean(member, *members));
  }
  return jr::member_path(jr::member_path("$", object), member);
}

Axis parse_axis(const std::string& key, const json& values, const std::string& where) {
  Axis axis{key, axis_scenario_path(key, where), {}};
  jr::require_array(values, where,
                    "a non-empty list of values (each a value, or {\"label\": ..., \"value\": "
                    "...})",
                    1);
  std::set<std::string> labels;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string at = jr::index_path(where, i);
    const json& v = values[i];
    AxisValue av;
    if (v.is_object() && v.contains("label")) {
      jr::check_keys(v, at, {"label", "value"});
      jr::require_key(v, at, "value", "the value of \"" + key + "\" this label names");
      av.label = jr::read_label(v.at("label"), at + ".label");
      av.value = v.at("value");
      av.path = at + ".value";
    } else {
      av.value = v;
      av.path = at;
      if (v.is_string()) {
        av.label = v.get<std::string>();
        jr::check_label_text(av.label, at);
      } else if (v.is_primitive()) {
        av.label = v.dump();
      } else {
        av.label = "#" + std::to_string(i);
      }
    }
    if (!labels.insert(av.label).second) {
      throw InputError(at, "duplicate label \"" + av.label + "\" in sweep axis \"" + key +
                               "\"; labels name the variants, so give each value its own "
                               "{\"label\": ..., \"value\": ...}");
    }
    axis.values.push_back(std::move(av));
  }
  return axis;
}

std::vector<Axis> parse_sweep(const json& sweep, const std::vector<std::string>& order) {
  jr::require_object(sweep, "$.sweep",
                     "an object mapping axes to value lists, such as {\"chunks\": [1, 4]}");
  if (sweep.empty()) throw InputError("$.sweep", "no axes; remove \"sweep\" or add an axis");
  std::vector<Axis> axes;
  for (const auto& key : order) {
    axes.push_back(parse_axis(key, sweep.at(key), jr::member_path("$.sweep", key)));
  }
  // "network" and "network.latency_s" would overwrite each other.
  for (const Axis& a : axes) {
    for (const Axis& b : axes) {
      if (b.key.size() > a.key.size() && b.key.compare(0, a.key.size() + 1, a.key + ".") == 0) {
        throw InputError(jr::member_path("$.sweep", b.key),
                         "sweep axis \"" + b.key + "\" overlaps axis \"" + a.key +
                             "\"; sweep either the whole object or keys inside it");
      }
    }
  }
  size_t count = 1;
  for (const Axis& a : axes) {
    count *= a.values.size();
    if (count > kMaxVariants) {
      throw InputError(
          "$.sweep", "more than " + std::to_string(kMaxVariants) + " variants; sweep fewer values");
    }
  }
  return axes;
}

// Sets the axis' key in `j` to `value`.
void apply(json& j, const Axis& axis, const json& value) {
  const size_t dot = axis.key.find('.');
  if (dot == std::string::npos) {
    j[axis.key] = value;
    return;
  }
  const std::string object = axis.key.substr(0, dot);
  if (!j.contains(object)) j[object] = json::object();
  if (!j[object].is_object()) {
    throw InputError(jr::member_path("$", object),
                     "sweep axis \"" + axis.key + "\" sets a key inside \"" + object +
                         "\", which must then be an object; got " + jr::show(j[object]));
  }
  j[object][axis.key.substr(dot + 1)] = value;
}

// Rethrows an error found in one variant at the sweep value it comes from
// when its path lies under a swept key, else at the scenario path with the
// variant named.
[[noreturn]] void rethrow_in_variant(const InputError& e, const std::vector<Axis>& axes,
                                     const std::vector<size_t>& index, const std::string& label) {
  const std::string& where = e.where();
  const std::string message = std::string(e.what()).substr(where.size() + 2);
  for (size_t a = 0; a < axes.size(); ++a) {
    const std::string& p = axes[a].scenario_path;
    if (where.compare(0, p.size(), p) != 0) continue;
    const std::string rest = where.substr(p.size());
    if (!rest.empty() && rest[0] != '.' && rest[0] != '[') continue;
    throw InputError(axes[a].values[index[a]].path + rest,
                     message + " (sweep variant \"" + label + "\")");
  }
  throw InputError(where, message + " (in sweep variant \"" + label + "\")");
}

std::vector<ScenarioVariant> expand_in_order(const json& j, const std::vector<std::string>& order,
                                             ScenarioNeeds needs) {
  scenario_internal::check_schema(j);
  json base = j;
  std::vector<Axis> axes;
  if (j.contains("sweep")) {
    axes = parse_sweep(j.at("sweep"), order);
    base.erase("sweep");
  }
  std::vector<ScenarioVariant> variants;
  std::vector<size_t> index(axes.size(), 0);
  while (true) {
    ScenarioVariant v;
    v.json = base;
    for (size_t a = 0; a < axes.size(); ++a) {
      const AxisValue& av = axes[a].values[index[a]];
      apply(v.json, axes[a], av.value);
      v.label += (a == 0 ? "" : " ") + axes[a].key + "=" + av.label;
    }
    if (axes.empty()) v.label = "base";
    try {
      v.scenario = parse_scenario(v.json, needs);
    } catch (const InputError& e) {
      if (axes.empty()) throw;
      rethrow_in_variant(e, axes, index, v.label);
    }
    variants.push_back(std::move(v));
    // Next index, the last axis fastest.
    size_t a = axes.size();
    while (a > 0 && ++index[a - 1] == axes[a - 1].values.size()) index[--a] = 0;
    if (a == 0) break;
  }
  return variants;
}

}  // namespace

// Loads every variant's "calibration" file (relative to `dir`), each file
// once.
static void load_calibrations(std::vector<ScenarioVariant>* variants,
                              const std::filesystem::path& dir) {
  std::map<std::string, std::shared_ptr<const Calibration>> loaded;
  for (ScenarioVariant& v : *variants) {
    const std::string& name = v.scenario.calibration_file;
    if (name.empty()) continue;
    const std::filesystem::path p = dir / name;  // an absolute name replaces dir
    auto it = loaded.find(p.string());
    if (it == loaded.end()) {
      try {
        it = loaded
                 .emplace(p.string(),
                          std::make_shared<const Calibration>(load_calibration_file(p.string())))
                 .first;
      } catch (const InputError& e) {
        throw InputError("$.calibration", e.where() + ": " + e.message());
      }
    }
    v.scenario.calibration = it->second;
  }
}

// A relative TorchScript path that is not there from the directory splitsim
// runs in but is beside the scenario file (in `dir`): that one, absolute, in
// the variant's Scenario and JSON (what exec's parties and validate's
// written scenarios read).
static void resolve_model_paths(std::vector<ScenarioVariant>* variants,
                                const std::filesystem::path& dir) {
  for (ScenarioVariant& v : *variants) {
    std::string& path = v.scenario.model.path;
    std::error_code ec;
    if (path.empty() || std::filesystem::path(path).is_absolute() ||
        std::filesystem::exists(path, ec))
      continue;
    const std::filesystem::path beside = dir / path;
    if (!std::filesystem::exists(beside, ec)) continue;
    path = std::filesystem::absolute(beside, ec).lexically_normal().string();
    if (v.json.contains("model") && v.json["model"].is_object()) v.json["model"]["path"] = path;
  }
}

std::vector<ScenarioVariant> expand_scenario(const json& j, ScenarioNeeds needs) {
  // nlohmann::json keeps object keys sorted: without the file's own order
  // (load_scenario_file), the axes come in alphabetical order.
  std::vector<std::string> order;
  if (j.is_object() && j.contains("sweep") && j.at("sweep").is_object()) {
    for (const auto& item : j.at("sweep").items()) order.push_back(item.key());
  }
  std::vector<ScenarioVariant> variants = expand_in_order(j, order, needs);
  load_calibrations(&variants, ".");
  return variants;
}

std::vector<ScenarioVariant> load_scenario_file(const std::string& file, ScenarioNeeds needs) {
  return load_scenario_source(read_scenario_source(file), needs);
}

ScenarioSource read_scenario_source(const std::string& file) {
  return {read_input_file(file, "scenario file"),
          std::filesystem::path(file).parent_path().string(), file};
}

std::vector<ScenarioVariant> load_scenario_source(const ScenarioSource& source,
                                                  ScenarioNeeds needs) {
  const json j = parse_json_text(source.text, source.name);
  std::vector<std::string> order;
  if (j.is_object() && j.contains("sweep") && j.at("sweep").is_object()) {
    // The text's own axis order: the first axis is the outermost loop.
    const auto ordered = nlohmann::ordered_json::parse(source.text);
    for (const auto& item : ordered.at("sweep").items()) order.push_back(item.key());
  }
  try {
    std::vector<ScenarioVariant> variants = expand_in_order(j, order, needs);
    load_calibrations(&variants, source.dir);
    resolve_model_paths(&variants, source.dir);
    return variants;
  } catch (const InputError& e) {
    throw in_file(e, source.name);
  }
}

std::string quote_labels(const std::vector<std::string>& labels) {
  constexpr size_t kShown = 12;
  std::string shown;
  for (size_t i = 0; i < labels.size() && i < kShown; ++i)
    shown += (shown.empty() ? "\"" : ", \"") + labels[i] + "\"";
  if (labels.size() > kShown) shown += " and " + std::to_string(labels.size() - kShown) + " more";
  return shown;
}

InputError no_variant_matches(const std::string& filter, const std::vector<std::string>& labels) {
  return InputError(
      "variant", "no variant label contains \"" + filter + "\"; labels: " + quote_labels(labels));
}

}  // namespace splitsim
