#include "splitsim/costmodel/workspace.h"

#include <filesystem>

#include "splitsim/costmodel/data_dir.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/measure.h"
#include "splitsim/costmodel/planner.h"

namespace splitsim {
namespace {

// load_device(), and where the shipped profiles are missing (a binary copied
// out of its build or install tree), what to do about it.
DeviceProfile load_device_explained(const std::string& name, const std::vector<std::string>& dirs,
                                    const std::string& where) {
  try {
    return load_device(name, dirs, where);
  } catch (const InputError& e) {
    const std::string data = data_dir();
    std::error_code ec;
    if (!data.empty() && std::filesystem::is_directory(std::filesystem::path(data) / "devices", ec))
      throw;
    throw InputError(
        e.where(),
        e.message() + "; the shipped device profiles are not here (" +
            (data.empty() ? "<the binary's directory>/../share/splitsim/scenarios is missing"
                          : "$SPLITSIM_DATA_DIR " + data + " has no devices/") +
            "): set SPLITSIM_DATA_DIR to the repository's scenarios/ directory");
  }
}

}  // namespace

Workspace::Workspace(const std::string& scenario_file, Progress progress, ScenarioNeeds needs)
    : Workspace(read_scenario_source(scenario_file), std::move(progress), needs) {}

Workspace::Workspace(const ScenarioSource& source, Progress progress, ScenarioNeeds needs)
    : progress_(std::move(progress)) {
  variants_ = load_scenario_source(source, needs);
  bool defaulted = false;
  for (ScenarioVariant& v : variants_) {
    if (!v.scenario.devices.empty()) continue;
    v.scenario.devices = {{"client", kDefaultDevice}, {"server", kDefaultDevice}};
    v.json["devices"] = v.scenario.devices;
    defaulted = true;
  }
  if (defaulted)
    progress_(std::string("the scenario names no devices: client and server both \"") +
              kDefaultDevice + "\" (set $.devices to choose)");
  const auto dir = std::filesystem::path(source.dir);
  // The scenario's own devices/ first, then the shipped ones.
  device_dirs_ = {(dir / "devices").string()};
  if (const std::string data = data_dir(); !data.empty())
    device_dirs_.push_back((std::filesystem::path(data) / "devices").string());
}

void Workspace::select(const std::string& filter) {
  if (filter.empty()) return;
  std::vector<ScenarioVariant> kept;
  std::vector<std::string> labels;
  for (const auto& v : variants_) {
    labels.push_back(v.label);
    if (v.label.find(filter) != std::string::npos) kept.push_back(v);
  }
  if (kept.empty()) throw no_variant_matches(filter, labels);
  variants_ = kept;
}

const ScenarioVariant& Workspace::select_one(const std::string& filter, const std::string& who) {
  select(filter);
  if (variants_.size() != 1) {
    std::vector<std::string> labels;
    for (const auto& v : variants_) labels.push_back(v.label);
    throw InputError("variant", who + " exactly one variant, " + std::to_string(labels.size()) +
                                      " match; pick one of " + quote_labels(labels));
  }
  return variants_.front();
}

const ModelProfile& Workspace::model(const ScenarioVariant& v) {
  const std::string key = v.json.at("model").dump();
  auto it = models_.find(key);
  if (it != models_.end()) return it->second;
  const ModelSpec& spec = v.scenario.model;
  progress_("measuring " + spec.name + (spec.path.empty() ? "" : " " + spec.path) +
            " (MACs and sizes, one training step)");
  return models_.emplace(key, measure_model(v.scenario.model)).first->second;
}

std::map<std::string, DeviceProfile> Workspace::devices(const ScenarioVariant& v) {
  std::map<std::string, DeviceProfile> out;
  for (const auto& [party, name] : v.scenario.devices) {
    auto it = device_cache_.find(name);
    if (it == device_cache_.end())
      it = device_cache_
               .emplace(name, load_device_explained(name, device_dirs_, "$.devices." + party))
               .first;
    out.emplace(party, it->second);
  }
  for (size_t i = 0; i < v.scenario.client_groups.size(); ++i) {
    const ClientGroupSpec& g = v.scenario.client_groups[i];
    if (g.device.empty()) continue;
    auto it = device_cache_.find(g.device);
    if (it == device_cache_.end())
      it = device_cache_
               .emplace(g.device,
                        load_device_explained(g.device, device_dirs_,
                                              "$.clients[" + std::to_string(i) + "].device"))
               .first;
    out.emplace(client_group_device_key(g), it->second);
  }
  return out;
}

Plan Workspace::plan(const ScenarioVariant& v) {
  try {
    return make_plan(v.scenario, model(v), devices(v), v.label);
  } catch (const InputError& e) {
    if (variants_.size() <= 1) throw;
    throw InputError("variant \"" + v.label + "\" " + e.where(), e.message());
  }
}

}  // namespace splitsim
