#pragma once
// Workspace: what every command that reads a scenario needs — its variants,
// the measured model of each (measured once per distinct model), the device
// profiles of its parties (by name: from the scenario's own devices/ folder,
// else the shipped ones, data_dir()/devices) and their Plans.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/model_profile.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {

using Progress = std::function<void(const std::string&)>;

class Workspace {
 public:
  // The device of both parties of a scenario read with ScenarioNeeds::kModel
  // that names no devices: a one-thread CPU profile shipped with splitsim.
  static constexpr const char* kDefaultDevice = "cpu_this_machine";

  // Throws InputError for an unreadable or invalid scenario file. With
  // ScenarioNeeds::kModel a variant without "devices" gets {"client",
  // "server"} both on kDefaultDevice, in its Scenario and its JSON, and
  // `progress` says so once.
  Workspace(const std::string& scenario_file, Progress progress,
            ScenarioNeeds needs = ScenarioNeeds::kPlan);
  // The same for a scenario without a file: its devices/ folder is in source.dir.
  Workspace(const ScenarioSource& source, Progress progress,
            ScenarioNeeds needs = ScenarioNeeds::kPlan);

  const std::vector<ScenarioVariant>& variants() const { return variants_; }
  // Keeps only the variants whose label contains `filter`; throws InputError
  // (naming "variant" and the labels) when none does.
  void select(const std::string& filter);
  // As select(), then throws InputError (naming "variant", `who` — "exec
  // runs", say — and the labels that match) unless exactly one variant is left.
  const ScenarioVariant& select_one(const std::string& filter, const std::string& who);

  const ModelProfile& model(const ScenarioVariant& v);
  std::map<std::string, DeviceProfile> devices(const ScenarioVariant& v);
  Plan plan(const ScenarioVariant& v);

 private:
  std::vector<std::string> device_dirs_;
  std::vector<ScenarioVariant> variants_;
  std::map<std::string, ModelProfile> models_;   // by resolved model JSON
  std::map<std::string, DeviceProfile> device_cache_;
  Progress progress_;
};

}  // namespace splitsim
