// Fuzz test of issue #12: generated mutations of the shipped scenarios go
// through the parser and the planner in this process. Each must either give
// plans or an InputError whose message carries no library text; any other
// exception fails the test and a crash fails the binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/measure.h"
#include "splitsim/costmodel/planner.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int kMutations = 600;

const char* const kRawLibraryText[] = {
    "json.exception", "frame #",        "terminate called", "xbt",
    "basic_filebuf",  "std::bad_alloc", "vector::"};

// Values that broke the tool before (issue #12) and ordinary wrong types.
std::vector<json> edge_values() {
  return {0,
          -1,
          1,
          0.5,
          1e308,
          -1e308,
          1e-300,
          1e12,
          1e9,
          int64_t{1} << 62,
          uint64_t{1} << 63,
          std::numeric_limits<uint64_t>::max(),
          4096,
          1e6,
          true,
          nullptr,
          "4",
          "",
          "/dev/zero",
          json::array(),
          json::object(),
          json::array({1, 2, 3}),
          {{"method", "quantize"}, {"bits", 99}}};
}

// Every path (JSON pointer) in `j`, the root excluded.
void collect_paths(const json& j, const json::json_pointer& at,
                   std::vector<json::json_pointer>* out) {
  if (j.is_object()) {
    for (const auto& item : j.items()) {
      const auto p = at / item.key();
      out->push_back(p);
      collect_paths(item.value(), p, out);
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      const auto p = at / i;
      out->push_back(p);
      collect_paths(j[i], p, out);
    }
  }
}

// One mutation of `j`, as the text of a scenario file.
std::string mutate(const json& original, std::mt19937_64& rng) {
  json j = original;
  std::vector<json::json_pointer> paths;
  collect_paths(j, json::json_pointer(), &paths);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const auto& p = paths[pick(paths.size())];
  const int kind = static_cast<int>(rng() % 8);
  static const std::vector<json> values = edge_values();
  switch (kind) {
    case 0:
    case 1:
    case 2:
      j[p] = values[pick(values.size())];
      break;
    case 3:
      if (j[p.parent_pointer()].is_object())
        j[p.parent_pointer()].erase(p.back());
      else
        j[p] = nullptr;
      break;
    case 4: {
      json nested = 1;
      for (int d = 0; d < 200; ++d) nested = json::array({nested});
      j[p] = nested;
      break;
    }
    case 5:
      j[p] = std::string(70000, 'x');
      break;
    default:
      break;
  }
  std::string text = j.dump(rng() % 2 ? 2 : -1);
  if (kind == 6 && !text.empty()) {
    // Text damage: a cut, or a number that overflows a double.
    if (rng() % 2) {
      text = text.substr(0, pick(text.size()));
    } else {
      const size_t digit = text.find_first_of("0123456789", pick(text.size()));
      if (digit != std::string::npos) text.insert(digit, "9e3");
    }
  }
  if (kind == 7) text.insert(pick(text.size() + 1), 1, "[]{}\",:\\"[pick(8)]);
  return text;
}

void expect_clean(const std::string& message, const std::string& what) {
  for (const char* raw : kRawLibraryText) {
    EXPECT_EQ(message.find(raw), std::string::npos) << what << ": " << message;
  }
}

TEST(ScenarioFuzzTest, MutatedShippedScenariosGivePlansOrInputErrors) {
  const fs::path source = SPLITSIM_SOURCE_DIR;
  std::vector<std::pair<std::string, json>> originals;
  for (const auto& entry : fs::directory_iterator(source / "scenarios")) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    originals.emplace_back(entry.path().filename().string(), json::parse(in));
  }
  std::sort(originals.begin(), originals.end());
  ASSERT_GE(originals.size(), 6u);
  const std::vector<std::string> device_dirs = {(source / "scenarios/devices").string()};
  // Models are measured (one LibTorch training step) once per distinct
  // model object; planning a mutation whose model was not one of the
  // shipped ones would only test LibTorch, so those are parsed only.
  std::map<std::string, ModelProfile> models;
  for (const auto& [name, j] : originals) {
    for (const auto& v : load_scenario_file((source / "scenarios" / name).string())) {
      const std::string key = v.json.at("model").dump();
      if (models.count(key) == 0) models.emplace(key, measure_model(v.scenario.model));
    }
  }
  const fs::path dir = fs::temp_directory_path() / ("splitsim_fuzz_" + std::to_string(getpid()));
  fs::create_directories(dir / "devices");
  for (const auto& e : fs::directory_iterator(source / "scenarios/devices"))
    fs::copy_file(e.path(), dir / "devices" / e.path().filename(),
                  fs::copy_options::overwrite_existing);

  std::mt19937_64 rng(12);
  int accepted = 0, refused = 0, planned = 0;
  for (int i = 0; i < kMutations; ++i) {
    const auto& [name, original] = originals[static_cast<size_t>(i) % originals.size()];
    const std::string text = mutate(original, rng);
    const fs::path file = dir / ("m" + std::to_string(i) + ".json");
    std::ofstream(file, std::ios::binary) << text;
    const std::string what = "mutation " + std::to_string(i) + " of " + name;
    try {
      const auto variants = load_scenario_file(file.string());
      for (const auto& v : variants) {
        const auto model = models.find(v.json.at("model").dump());
        if (model == models.end()) continue;
        std::map<std::string, DeviceProfile> devices;
        for (const auto& [party, device] : v.scenario.devices)
          devices.emplace(party, load_device(device, device_dirs, "$.devices." + party));
        const Plan plan = make_plan(v.scenario, model->second, devices, v.label);
        for (const auto& st : plan.stages) {
          EXPECT_GE(st.fwd_per_batch.macs(), 0) << what;
          EXPECT_GE(st.peak_memory_bytes, 0) << what;
        }
        for (const auto& b : plan.boundaries)
          for (int64_t bytes : b.forward.wire_bytes) EXPECT_GE(bytes, 0) << what;
        ++planned;
      }
      ++accepted;
    } catch (const InputError& e) {
      ++refused;
      expect_clean(e.what(), what);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << " threw a non-input error: " << e.what();
    }
  }
  fs::remove_all(dir);
  // The generator must exercise both outcomes.
  EXPECT_GT(accepted, 20);
  EXPECT_GT(refused, kMutations / 2);
  EXPECT_GT(planned, 20);
  std::cout << kMutations << " mutations: " << accepted << " accepted (" << planned
            << " variants planned), " << refused << " refused\n";
}

}  // namespace
}  // namespace splitsim
