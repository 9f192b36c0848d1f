#include "plan_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "splitsim/costmodel/limits.h"

namespace splitsim::plan_fields {

namespace jr = json_read;

namespace {

const std::vector<std::string> kWorkKeys = {"conv_macs", "depthwise_macs",    "matmul_macs",
                                            "macs",      "elementwise_elems", "ops"};

}  // namespace

int64_t read_work_count(const json& v, const std::string& path) {
  return jr::read_int(v, path, 0, limits::kMaxPlanWork);
}

}  // namespace splitsim::plan_fields

namespace splitsim::plan_json {

namespace jr = json_read;
using plan_fields::check_count_total;
using plan_fields::read_list;
using plan_fields::read_work_count;

std::string read_text(const json& v, const std::string& path) { return jr::read_string(v, path); }

std::string read_label(const json& v, const std::string& path) { return jr::read_label(v, path); }

int64_t read_batch_size(const json& v, const std::string& path) {
  return jr::read_int(v, path, 1, limits::kMaxBatchSize);
}

int64_t read_iterations(const json& v, const std::string& path) {
  return jr::read_int(v, path, 1, limits::kMaxIterations);
}

int64_t read_clients(const json& v, const std::string& path) {
  return jr::read_int(v, path, 1, limits::kMaxClients);
}

std::string read_compute_precision(const json& v, const std::string& path) {
  return jr::read_choice(v, path, "compute precision", {"fp32", "fp16", "bf16"});
}

std::string read_text_or_empty(const json& v, const std::string& path) {
  return jr::read_string(v, path, true);
}

std::vector<std::string> read_texts(const json& v, const std::string& path) {
  return read_list<std::string>(v, path, "a list of unit names", read_text);
}

int64_t read_count(const json& v, const std::string& path) {
  return jr::read_int(v, path, 0, limits::kMaxPlanBytes);
}

int64_t read_at_least_one(const json& v, const std::string& path) {
  return jr::read_int(v, path, 1, limits::kMaxPlanBytes);
}

int64_t read_messages(const json& v, const std::string& path) {
  return jr::read_int(v, path, 1, 1 << 20);
}

int read_stage_index(const json& v, const std::string& path) {
  return static_cast<int>(jr::read_int(v, path, 0, std::numeric_limits<int>::max()));
}

double read_seconds(const json& v, const std::string& path) {
  const double s = jr::read_number(v, path, {0, false, limits::kMaxTaskS, false});
  if (!std::isfinite(s)) throw InputError(path, "expected a finite number, got " + jr::show(v));
  return s;
}

bool read_timed_from(const json& v, const std::string& path) {
  return jr::read_choice(v, path, "timing source", {"measured", "formula"}) == "measured";
}

void write_timed_from(json& j, const bool& measured) { j = measured ? "measured" : "formula"; }

CodecSpec read_codec(const json& v, const std::string& path) { return parse_codec(v, path); }

void write_codec(json& j, const CodecSpec& c) { j = codec_to_json(c); }

void write_op_class_shares(json& j, const OpClassParts& p) {
  j = json::object();
  for (size_t i = 0; i < 5; ++i) j[kOpClassNames[i]] = op_class_part(p, i);
}

OpClassParts read_op_class_shares(const json& v, const std::string& path) {
  jr::require_object(v, path,
                     "op-class shares such as {\"conv\": 0.8, \"depthwise\": 0, \"matmul\": 0, "
                     "\"elementwise\": 0.15, \"per_op\": 0.05}");
  jr::check_keys(v, path, {std::begin(kOpClassNames), std::end(kOpClassNames)});
  OpClassParts p;
  for (size_t i = 0; i < 5; ++i) {
    jr::require_key(v, path, kOpClassNames[i], "a share in [0, 1]");
    op_class_part(p, i) = jr::read_number(
        v.at(kOpClassNames[i]), jr::member_path(path, kOpClassNames[i]), {0, false, 1, false});
  }
  if (p.total() != 0 && std::fabs(p.total() - 1) > 1e-6)
    throw InputError(path, "the shares sum to " + jr::show(p.total()) + "; expected 1 (or all 0)");
  return p;
}

std::vector<int64_t> read_shape(const json& v, const std::string& path) {
  return read_list<int64_t>(v, path, "a shape such as [32, 56, 56]", read_count);
}

}  // namespace splitsim::plan_json

namespace splitsim::plan_fields {

void check_seconds_total(const json& obj, const std::string& path, const std::string& key,
                         const std::vector<double>& parts) {
  if (!obj.contains(key)) return;
  const std::string at = jr::member_path(path, key);
  const double total = jr::read_number(obj.at(key), at, jr::non_negative());
  if (!std::isfinite(total))
    throw InputError(at, "expected a finite number, got " + jr::show(obj.at(key)));
  const double sum = std::accumulate(parts.begin(), parts.end(), 0.0);
  if (std::fabs(total - sum) > 1e-9 * std::max(1.0, std::fabs(sum)))
    throw InputError(at, "is " + jr::show(obj.at(key)) + " but the per-micro-batch values sum to " +
                             jr::show(sum) + "; give the same seconds in both, or leave this out");
}

void check_count_total(const json& obj, const std::string& path, const std::string& key,
                       int64_t want, const std::string& from) {
  if (!obj.contains(key)) return;
  const std::string at = jr::member_path(path, key);
  const int64_t got = jr::read_int(obj.at(key), at, 0);
  if (got != want)
    throw InputError(at, "is " + std::to_string(got) + " but " + from + " gives " +
                             std::to_string(want) + "; give the same in both, or leave this out");
}

}  // namespace splitsim::plan_fields

namespace splitsim::plan_json {

OpCounts read_work(const json& v, const std::string& path) {
  jr::require_object(v, path, "work by op class such as {\"conv_macs\": 0, ...}");
  jr::check_keys(v, path, plan_fields::kWorkKeys);
  OpCounts c;
  int64_t* fields[] = {&c.conv_macs, &c.depthwise_macs, &c.matmul_macs, &c.elementwise_elems,
                       &c.ops};
  const char* names[] = {"conv_macs", "depthwise_macs", "matmul_macs", "elementwise_elems", "ops"};
  for (size_t i = 0; i < 5; ++i) {
    jr::require_key(v, path, names[i], "a non-negative integer");
    *fields[i] = read_work_count(v.at(names[i]), jr::member_path(path, names[i]));
  }
  check_count_total(v, path, "macs", c.macs(), "conv + depthwise + matmul MACs");
  return c;
}

}  // namespace splitsim::plan_json
