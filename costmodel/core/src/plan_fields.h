#pragma once
// Private to plan_parse.cpp, plan_json_reader.h and plan_fields.cpp: how one
// value of a plan file is read and checked (bytes, work, seconds, op-class
// shares, per-micro-batch lists and the totals that repeat them), each error
// an InputError at its JSON path.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "json_read.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/plan_schema.h"

namespace splitsim::plan_fields {

using nlohmann::json;

using plan_json::read_count;
using plan_json::read_op_class_shares;
using plan_json::read_seconds;
using plan_json::read_shape;
using plan_json::read_work;
// MACs, elements or ops of a batch.
int64_t read_work_count(const json& v, const std::string& path);
// An optional total that repeats the sum of per-micro-batch seconds.
void check_seconds_total(const json& obj, const std::string& path, const std::string& key,
                         const std::vector<double>& parts);
// An optional count that repeats `want`, computed from `from`.
void check_count_total(const json& obj, const std::string& path, const std::string& key,
                       int64_t want, const std::string& from);

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

// A plan file states a stage's seconds whole (Plan::forward_total and
// backward_total, what a reader of the file sees a stage cost); the Plan
// keeps the model's apart from the codecs'. `p` with its stages' and
// groups' fwd_s / bwd_s whole, to be written (a group's codec lists that
// equal the plan's left out).
Plan with_whole_passes(Plan p);
// The inverse, after reading: each model part m >= 0 such that summing its
// pass again gives the file's value exactly, so that writing the plan gives
// the file's bytes.
void take_codec_parts_out(Plan* p);

}  // namespace splitsim::plan_fields
