#include "splitsim/costmodel/model_profile.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace splitsim {

OpCounts& OpCounts::operator+=(const OpCounts& o) {
  conv_macs += o.conv_macs;
  depthwise_macs += o.depthwise_macs;
  matmul_macs += o.matmul_macs;
  elementwise_elems += o.elementwise_elems;
  ops += o.ops;
  return *this;
}

OpCounts OpCounts::scaled(double factor) const {
  auto s = [factor](int64_t v) { return static_cast<int64_t>(std::llround(v * factor)); };
  OpCounts r;
  r.conv_macs = s(conv_macs);
  r.depthwise_macs = s(depthwise_macs);
  r.matmul_macs = s(matmul_macs);
  r.elementwise_elems = s(elementwise_elems);
  r.ops = ops;  // the number of ops does not grow with the batch
  return r;
}

bool OpCounts::operator==(const OpCounts& o) const {
  return conv_macs == o.conv_macs && depthwise_macs == o.depthwise_macs &&
         matmul_macs == o.matmul_macs && elementwise_elems == o.elementwise_elems && ops == o.ops;
}

int64_t UnitProfile::output_numel() const {
  int64_t n = 1;
  for (int64_t d : output_shape) n *= d;
  return n;
}

int ModelProfile::index_of(const std::string& name) const {
  for (size_t i = 0; i < units.size(); ++i)
    if (units[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<std::string> ModelProfile::unit_names() const {
  std::vector<std::string> names;
  for (const auto& u : units) names.push_back(u.name);
  return names;
}

void to_json(nlohmann::json& j, const OpCounts& c) {
  j = {{"conv_macs", c.conv_macs},
       {"depthwise_macs", c.depthwise_macs},
       {"matmul_macs", c.matmul_macs},
       {"macs", c.macs()},
       {"elementwise_elems", c.elementwise_elems},
       {"ops", c.ops}};
}

void from_json(const nlohmann::json& j, OpCounts& c) {
  c.conv_macs = j.at("conv_macs").get<int64_t>();
  c.depthwise_macs = j.at("depthwise_macs").get<int64_t>();
  c.matmul_macs = j.at("matmul_macs").get<int64_t>();
  c.elementwise_elems = j.at("elementwise_elems").get<int64_t>();
  c.ops = j.at("ops").get<int64_t>();
}

void to_json(nlohmann::json& j, const UnitProfile& u) {
  j = {{"name", u.name},
       {"inputs", u.inputs},
       {"output_shape", u.output_shape},
       {"output_elem_bytes", u.output_elem_bytes},
       {"fwd_per_sample", u.fwd},
       {"bwd_per_sample", u.bwd},
       {"bwd_input_per_sample", u.bwd_input},
       {"bwd_params_per_sample", u.bwd_params},
       {"param_count", u.param_count},
       {"param_bytes", u.param_bytes},
       {"trainable_param_count", u.trainable_param_count()},
       {"trainable_param_bytes", u.trainable_param_bytes()},
       {"buffer_bytes", u.buffer_bytes},
       {"stash_bytes_per_sample", u.stash_bytes_per_sample},
       {"output_stash_bytes_per_sample", u.output_stash_bytes_per_sample},
       {"keeps_input", u.keeps_input},
       {"bwd_work_bytes_per_sample", u.bwd_work_bytes_per_sample},
       {"loss_stash_bytes_per_sample", u.loss_stash_bytes_per_sample},
       {"loss_bwd_work_bytes_per_sample", u.loss_bwd_work_bytes_per_sample},
       {"largest_trainable_tensor_bytes", u.largest_trainable_tensor_bytes}};
}

void from_json(const nlohmann::json& j, UnitProfile& u) {
  u.name = j.at("name").get<std::string>();
  u.inputs = j.at("inputs").get<std::vector<int>>();
  u.output_shape = j.at("output_shape").get<std::vector<int64_t>>();
  u.output_elem_bytes = j.at("output_elem_bytes").get<int64_t>();
  u.fwd = j.at("fwd_per_sample").get<OpCounts>();
  u.bwd = j.at("bwd_per_sample").get<OpCounts>();
  // Files written before the split backward: none measured.
  if (j.contains("bwd_input_per_sample"))
    u.bwd_input = j.at("bwd_input_per_sample").get<OpCounts>();
  if (j.contains("bwd_params_per_sample"))
    u.bwd_params = j.at("bwd_params_per_sample").get<OpCounts>();
  u.param_count = j.at("param_count").get<int64_t>();
  u.param_bytes = j.at("param_bytes").get<int64_t>();
  // Files written before fine-tuning existed: everything trained.
  u.frozen_param_count = u.param_count - j.value("trainable_param_count", u.param_count);
  u.frozen_param_bytes = u.param_bytes - j.value("trainable_param_bytes", u.param_bytes);
  // Files written before buffers were counted: none.
  u.buffer_bytes = j.value("buffer_bytes", int64_t{0});
  u.stash_bytes_per_sample = j.at("stash_bytes_per_sample").get<int64_t>();
  // Files written before these were measured: every output held.
  u.output_stash_bytes_per_sample = j.value("output_stash_bytes_per_sample", int64_t{0});
  u.keeps_input = j.value("keeps_input", true);
  // Files written before the backward's working memory was measured: none.
  u.bwd_work_bytes_per_sample = j.value("bwd_work_bytes_per_sample", int64_t{0});
  u.loss_stash_bytes_per_sample = j.value("loss_stash_bytes_per_sample", int64_t{0});
  u.loss_bwd_work_bytes_per_sample = j.value("loss_bwd_work_bytes_per_sample", int64_t{0});
  u.largest_trainable_tensor_bytes = j.value("largest_trainable_tensor_bytes", int64_t{0});
}

void to_json(nlohmann::json& j, const ModelProfile& p) {
  j = {{"schema", "splitsim.model_profile/1"},
       {"model", p.model},
       {"input_shape", p.input_shape},
       {"input_dtype", p.input_dtype},
       {"measured_batch", p.measured_batch},
       {"units", p.units}};
}

void from_json(const nlohmann::json& j, ModelProfile& p) {
  p.model = j.at("model").get<std::string>();
  p.input_shape = j.at("input_shape").get<std::vector<int64_t>>();
  p.input_dtype = j.at("input_dtype").get<std::string>();
  p.measured_batch = j.at("measured_batch").get<int64_t>();
  p.units = j.at("units").get<std::vector<UnitProfile>>();
}

}  // namespace splitsim
