#include "plan_fields.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
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

std::string read_training(const json& v, const std::string& path) {
  return jr::read_choice(v, path, "training mode", training_mode_names());
}

int64_t read_aggregate_every(const json& v, const std::string& path) {
  return jr::read_int(v, path, 1, limits::kMaxIterations);
}

double read_seconds_per_byte(const json& v, const std::string& path) {
  return jr::read_number(v, path, {0, false, 1, false});
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

bool read_flag(const json& v, const std::string& path) { return jr::read_bool(v, path); }

int read_virtual_stages(const json& v, const std::string& path) {
  return static_cast<int>(jr::read_int(v, path, 1, 1024));
}

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

namespace splitsim::plan_fields {

namespace {

uint64_t bits_of(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

double from_bits(uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// The m >= 0 with sum(m) == whole, where sum(m) is (m + first) + second:
// the plain difference where it sums back exactly, else the smallest m
// whose sum reaches `whole` (sum grows with m, and non-negative doubles
// order as their bits); 0 where the codec parts alone exceed it.
double model_part(double whole, double first, double second) {
  auto sum = [&](double m) { return (m + first) + second; };
  const double plain = std::max(0.0, (whole - first) - second);
  if (sum(plain) == whole) return plain;
  uint64_t lo = 0, hi = bits_of(whole);  // sum(whole) >= whole
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (sum(from_bits(mid)) < whole)
      lo = mid + 1;
    else
      hi = mid;
  }
  return from_bits(lo);
}

using Passes = std::function<PassSeconds(bool backward, size_t i)>;

// Stage k's passes for client c of `p` (Plan::kOwnCosts: the plan's own).
Passes passes(const Plan& p, int k, int64_t c) {
  return [&p, k, c](bool backward, size_t i) {
    return backward ? p.backward_pass(k, c, i) : p.forward_pass(k, c, i);
  };
}

void whole_passes(std::vector<double>* fwd, std::vector<double>* bwd, const Passes& pass) {
  for (size_t i = 0; i < fwd->size(); ++i) (*fwd)[i] = Plan::forward_total(pass(false, i));
  for (size_t i = 0; i < bwd->size(); ++i) (*bwd)[i] = Plan::backward_total(pass(true, i));
}

// `pass` gives the codec parts (its model part is not read).
void model_parts(std::vector<double>* fwd, std::vector<double>* bwd, const Passes& pass) {
  for (size_t i = 0; i < fwd->size(); ++i) {
    const PassSeconds p = pass(false, i);
    (*fwd)[i] = model_part((*fwd)[i], p.decode, p.encode);
  }
  for (size_t i = 0; i < bwd->size(); ++i) {
    const PassSeconds p = pass(true, i);
    (*bwd)[i] = model_part((*bwd)[i], p.encode, p.decode);
  }
}

}  // namespace

Plan with_whole_passes(Plan p) {
  const Plan parts = p;
  for (size_t k = 0; k < p.stages.size(); ++k)
    whole_passes(&p.stages[k].fwd_s, &p.stages[k].bwd_s,
                 passes(parts, static_cast<int>(k), Plan::kOwnCosts));
  int64_t first = 0;  // the group's first client
  for (PlanClientGroup& g : p.client_groups) {
    for (PlanStageCosts& c : g.stage_costs) {
      whole_passes(&c.fwd_s, &c.bwd_s, passes(parts, c.stage, first));
      // The codec work the group shares with the plan is not repeated.
      PlanStageCosts plans{c.stage, {}, {}, 0, {}, {}, {}, {}};
      set_codec_seconds(plans, parts);
      for (auto [own, same] : {std::pair{&c.fwd_decode_s, &plans.fwd_decode_s},
                               {&c.fwd_encode_s, &plans.fwd_encode_s},
                               {&c.bwd_decode_s, &plans.bwd_decode_s},
                               {&c.bwd_encode_s, &plans.bwd_encode_s}})
        if (*own == *same) own->clear();
    }
    first += g.count;
  }
  return p;
}

void take_codec_parts_out(Plan* p) {
  const Plan whole = *p;
  for (size_t k = 0; k < p->stages.size(); ++k)
    model_parts(&p->stages[k].fwd_s, &p->stages[k].bwd_s,
                passes(whole, static_cast<int>(k), Plan::kOwnCosts));
  int64_t first = 0;
  for (PlanClientGroup& g : p->client_groups) {
    for (PlanStageCosts& c : g.stage_costs)
      model_parts(&c.fwd_s, &c.bwd_s, passes(whole, c.stage, first));
    first += g.count;
  }
}

}  // namespace splitsim::plan_fields
