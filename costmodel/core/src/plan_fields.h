#pragma once
// Private to plan_parse.cpp: how one value of a plan file is read and
// checked (bytes, work, seconds, op-class shares, per-micro-batch lists and
// the totals that repeat them), each error an InputError at its JSON path.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "json_read.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/plan.h"

namespace splitsim::plan_fields {

using nlohmann::json;

// Bytes, a shape's dimension, a count of parameters: non-negative, and small
// enough that a sum over every micro-batch or stage stays far below 2^63.
int64_t read_count(const json& v, const std::string& path);
// MACs, elements or ops of a batch.
int64_t read_work_count(const json& v, const std::string& path);
// Seconds of one task: finite, in [0, limits::kMaxTaskS].
double read_seconds(const json& v, const std::string& path);
// One micro-batch's op-class shares: every class, each in [0, 1], summing to
// 1 (or all 0: a stage with no model work).
OpClassParts read_op_class_shares(const json& v, const std::string& path);
std::vector<int64_t> read_shape(const json& v, const std::string& path);
// An optional total that repeats the sum of per-micro-batch seconds.
void check_seconds_total(const json& obj, const std::string& path, const std::string& key,
                         const std::vector<double>& parts);
// An optional count that repeats `want`, computed from `from`.
void check_count_total(const json& obj, const std::string& path, const std::string& key,
                       int64_t want, const std::string& from);
// Work by op class, {"conv_macs", ..., "ops"}; "macs", if given, their MACs' sum.
OpCounts read_work(const json& v, const std::string& path);

template <typename T, typename Read>
std::vector<T> read_list(const json& v, const std::string& path, const std::string& what,
                         Read read) {
  json_read::require_array(v, path, what);
  std::vector<T> out;
  for (size_t i = 0; i < v.size(); ++i) out.push_back(read(v[i], json_read::index_path(path, i)));
  return out;
}

// A per-micro-batch list: one entry per micro-batch.
template <typename T, typename Read>
std::vector<T> per_microbatch(const json& obj, const std::string& path, const std::string& key,
                              size_t m, Read read) {
  const std::string at = json_read::member_path(path, key);
  std::vector<T> v = read_list<T>(obj.at(key), at, "a list with one entry per micro-batch", read);
  if (v.size() != m)
    throw InputError(at, "has " + std::to_string(v.size()) +
                             " entries; expected one per micro-batch (" + std::to_string(m) +
                             ", as $.microbatch_sizes)");
  return v;
}

}  // namespace splitsim::plan_fields
