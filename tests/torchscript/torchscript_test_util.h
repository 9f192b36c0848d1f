#pragma once
// Helpers for the tests on TorchScript files written by write_models.py
// (the ctest fixture `torchscript_models` writes them before these run).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/model_zoo.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim::testing {

inline std::string model_path(const std::string& name) {
  return std::string(SPLITSIM_TORCHSCRIPT_MODELS) + "/" + name + ".pt";
}

// What PyTorch reported about the eager model (write_models.py's NAME.json).
inline nlohmann::json model_facts(const std::string& name) {
  std::ifstream in(std::string(SPLITSIM_TORCHSCRIPT_MODELS) + "/" + name + ".json");
  return nlohmann::json::parse(in);
}

inline ModelSpec script_spec(const std::string& name, const std::vector<int64_t>& input_shape) {
  ModelSpec s;
  s.name = "torchscript";
  s.path = model_path(name);
  s.input_shape = input_shape;
  return s;
}

// build_model refuses `spec` with an InputError at $.model.path saying `phrase`.
inline void expect_refused(const ModelSpec& spec, const std::string& phrase) {
  try {
    build_model(spec);
    ADD_FAILURE() << spec.path << " was not refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$.model.path") << e.what();
    EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos)
        << "\"" << phrase << "\" not in: " << e.what();
  }
}

}  // namespace splitsim::testing
