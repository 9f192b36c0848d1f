// Every JSON file the tool reads goes through parse_json_text: a key given
// twice is refused at its JSON path with the file named, in each file kind.
// Labels (a plan's variant) are UTF-8 without control characters, and a
// device profile's measured timings are seconds in range.
#include "splitsim/costmodel/input_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "expect_input_error.h"
#include "splitsim/costmodel/calibration.h"
#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/plan.h"

namespace splitsim {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("splitsim_input_file_" + name + "_" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << text;
  return p.string();
}

// Runs `f`, expecting an InputError whose message names `file` and whose
// where() is `where`.
template <class F>
void expect_duplicate(F f, const std::string& where, const std::string& file) {
  expect_error(f, where, "duplicate key");
  try {
    f();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
  }
}

TEST(InputFileTest, ADuplicateKeyIsRefusedAtItsPathNamingTheFile) {
  expect_duplicate([] { parse_json_text(R"({"a": 1, "a": 2})", "f.json"); }, "$.a", "f.json");
  expect_duplicate([] { parse_json_text(R"({"a": [{"b": 1}, {"c": 1, "c": 2}]})", "f.json"); },
                   "$.a[1].c", "f.json");
  // The same key in two objects is no duplicate.
  EXPECT_NO_THROW(parse_json_text(R"([{"a": 1}, {"a": 2}])", "f.json"));
}

TEST(InputFileTest, EveryFileKindRefusesDuplicateKeys) {
  const std::string device =
      write_temp("device", R"({"schema": "splitsim.device/1", "name": "x", "peak_flops": 1e12,
                    "peak_flops": 2e12, "memory_bandwidth_Bps": 1e11})");
  expect_duplicate([&] { load_device(device, {}, "$.devices.x"); }, device + ":$.peak_flops",
                   device);
  const std::string calibration =
      write_temp("calibration", R"({"schema": "splitsim.calibration/1", "bandwidth_factor": 0.5,
                         "bandwidth_factor": 0.9})");
  expect_duplicate([&] { load_calibration_file(calibration); }, "$.bandwidth_factor", calibration);
  const std::string plan =
      write_temp("plan", R"({"schema": "splitsim.plan/1", "variant": "a", "variant": "b"})");
  expect_duplicate([&] { load_plan_file(plan); }, "$.variant", plan);
  for (const auto& f : {device, calibration, plan}) std::filesystem::remove(f);
}

TEST(InputFileTest, LabelsAreUtf8WithoutControlCharacters) {
  // The variant is read before the values of the keys every plan has.
  nlohmann::json plan = {{"schema", "splitsim.plan/1"}, {"variant", "chunks=4\x1b[2J"}};
  for (const char* key : {"batch_size", "microbatch_sizes", "schedule", "stages", "boundaries",
                          "network", "platform", "iterations", "warmup", "clients"})
    plan[key] = nullptr;
  expect_error([&] { parse_plan(plan); }, "$.variant", "control character U+001B");
  plan["variant"] = "tab\there";
  expect_error([&] { parse_plan(plan); }, "$.variant", "control character U+0009");
  plan["variant"] = "chunks=4 \xc2\x9b";  // C1 CSI
  expect_error([&] { parse_plan(plan); }, "$.variant", "control character U+009B");
  plan["variant"] = "chunks=4 \xc3\xa9";  // é: a label may be any printable UTF-8
  expect_error([&] { parse_plan(plan); }, "$.batch_size", "expected");
  plan["variant"] = "caf\xc3";  // half a character
  expect_error([&] { parse_plan(plan); }, "$.variant", "not valid UTF-8 at byte 3");
  plan["variant"] = "\xc0\xaf";  // an overlong '/'
  expect_error([&] { parse_plan(plan); }, "$.variant", "not valid UTF-8 at byte 0");
}

nlohmann::json measured_device() {
  return {{"schema", "splitsim.device/1"},
          {"name", "x"},
          {"peak_flops", 1e12},
          {"memory_bandwidth_Bps", 1e11},
          {"measured",
           {{"model", "resnet20"},
            {"input_shape", {3, 32, 32}},
            {"batch", 16},
            {"units", {{{"unit", "conv1"}, {"fwd_s", 0.1}, {"bwd_s", 0.2}}}}}}};
}

TEST(InputFileTest, DeviceMeasuredTimingsAreSecondsInRange) {
  EXPECT_DOUBLE_EQ(parse_device(measured_device(), "f.json:$").timings.at(0).fwd_s, 0.1);
  const std::string unit = "f.json:$.measured.units[0]";
  auto with_fwd = [](const nlohmann::json& v) {
    nlohmann::json j = measured_device();
    j["measured"]["units"][0]["fwd_s"] = v;
    return j;
  };
  expect_error([&] { parse_device(with_fwd(-5), "f.json:$"); }, unit + ".fwd_s",
               "expected a number in [0, 3.2e+07], got -5");
  expect_error([&] { parse_device(with_fwd(1e300), "f.json:$"); }, unit + ".fwd_s", "1e+300");
  expect_error([&] { parse_device(with_fwd("0.1"), "f.json:$"); }, unit + ".fwd_s", "\"0.1\"");
  nlohmann::json j = measured_device();
  j["measured"]["units"][0]["update_s"] = -1;
  expect_error([&] { parse_device(j, "f.json:$"); }, unit + ".update_s", "got -1");
  j = measured_device();
  j["measured"]["batch"] = "16";
  expect_error([&] { parse_device(j, "f.json:$"); }, "f.json:$.measured.batch", "\"16\"");
  j = measured_device();
  j["measured"]["input_shape"] = {3, -32, 32};
  expect_error([&] { parse_device(j, "f.json:$"); }, "f.json:$.measured.input_shape[1]", "-32");
  j = measured_device();
  j["measured"]["units"] = {{{"fwd_s", 0.1}, {"bwd_s", 0.2}}};
  expect_error([&] { parse_device(j, "f.json:$"); }, unit + ".unit", "missing required key");
}

}  // namespace
}  // namespace splitsim
