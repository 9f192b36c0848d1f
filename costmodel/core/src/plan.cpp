#include "splitsim/costmodel/plan.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <ostream>

#include "plan_fields.h"
#include "plan_json_writer.h"
#include "splitsim/costmodel/format.h"

namespace splitsim {

int64_t Plan::bytes_sent(const std::string& party) const {
  int64_t total = 0;
  for (const auto& b : boundaries) {
    const auto& from = stages[b.from_stage].party;
    const auto& to = stages[b.to_stage].party;
    if (from == to) continue;  // same machine: nothing crosses a link
    if (from == party) total += b.forward.wire_bytes_per_batch;
    if (to == party) total += b.backward.wire_bytes_per_batch;
  }
  return total;
}

int64_t Plan::bytes_received(const std::string& party) const {
  int64_t total = 0;
  for (const auto& b : boundaries) {
    const auto& from = stages[b.from_stage].party;
    const auto& to = stages[b.to_stage].party;
    if (from == to) continue;
    if (to == party) total += b.forward.wire_bytes_per_batch;
    if (from == party) total += b.backward.wire_bytes_per_batch;
  }
  return total;
}

namespace {

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// Only what is set: 0 up/down bandwidths mean "as bandwidth_bit_per_s", an
// empty trace none (the scenario format's defaults).
nlohmann::json network_json(const NetworkSpec& n) {
  nlohmann::json j = {{"bandwidth_bit_per_s", n.bandwidth_bit_per_s},
                      {"latency_s", n.latency_s},
                      {"per_message_overhead_s", n.per_message_overhead_s},
                      {"bandwidth_factor", n.bandwidth_factor}};
  if (n.up_bandwidth_bit_per_s > 0) j["up_bandwidth_bit_per_s"] = n.up_bandwidth_bit_per_s;
  if (n.down_bandwidth_bit_per_s > 0) j["down_bandwidth_bit_per_s"] = n.down_bandwidth_bit_per_s;
  if (!n.bandwidth_trace.empty()) j["bandwidth_trace"] = n.bandwidth_trace;
  if (n.burst_bytes > 0) j["burst_bytes"] = n.burst_bytes;
  if (n.burst_packet_bytes > 0) j["burst_packet_bytes"] = n.burst_packet_bytes;
  if (n.burst_peak_bit_per_s > 0) j["burst_peak_bit_per_s"] = n.burst_peak_bit_per_s;
  if (n.loss_rate > 0) j["loss_rate"] = n.loss_rate;
  if (n.loss_recovery_s > 0) j["loss_recovery_s"] = n.loss_recovery_s;
  if (n.server_bandwidth_bit_per_s > 0)
    j["server_bandwidth_bit_per_s"] = n.server_bandwidth_bit_per_s;
  if (n.server_latency_s > 0) j["server_latency_s"] = n.server_latency_s;
  return j;
}

nlohmann::json platform_json(const PlatformSpec& p) {
  nlohmann::json j = {{"cpu_s_per_byte_sent", p.cpu_s_per_byte_sent},
                      {"cpu_s_per_byte_received", p.cpu_s_per_byte_received},
                      {"cpu_s_per_message_sent", p.cpu_s_per_message_sent},
                      {"cpu_s_per_message_received", p.cpu_s_per_message_received},
                      {"shared_machine", p.shared_machine},
                      {"co_compute_slowdown", p.co_compute_slowdown}};
  for (const auto& [name, w] : p.parties)
    j["parties"][name] = {{"cpu_s_per_byte_sent", w.cpu_s_per_byte_sent},
                          {"cpu_s_per_byte_received", w.cpu_s_per_byte_received}};
  for (const WakePoint& w : p.wake_cost)
    j["wake_cost"].push_back({{"gap_s", w.gap_s}, {"seconds", w.seconds}});
  return j;
}

// 1234567 -> "1.23 MB" (the plan table's: a space before prefix and unit).
std::string si(double v, const char* unit) { return format_si(v, unit, " "); }
std::string seconds(double s) { return format_seconds(s); }

}  // namespace

void plan_fields::JsonWriter::scenario_object(const char* key, const NetworkSpec& n, const char*) {
  j[key] = network_json(n);
}
void plan_fields::JsonWriter::scenario_object(const char* key, const PlatformSpec& p,
                                              const char*) {
  j[key] = platform_json(p);
}

void to_json(nlohmann::json& j, const Plan& p) {
  j = plan_fields::JsonWriter::write(plan_fields::with_whole_passes(p));
  j["schema"] = kPlanSchema;
}

const PlanClientGroup* Plan::group_of(int64_t c) const {
  if (c < 0) return nullptr;  // kOwnCosts
  for (const PlanClientGroup& g : client_groups) {
    if (c < g.count) return &g;
    c -= g.count;
  }
  return nullptr;
}

namespace {

// Client c's entry of its group's per-client list `field`, or nullptr
// (no groups, or the group does not list it).
const double* group_value(const Plan& p, std::vector<double> PlanClientGroup::*field, int64_t c) {
  for (const PlanClientGroup& g : p.client_groups) {
    if (c < g.count) return (g.*field).empty() ? nullptr : &(g.*field)[static_cast<size_t>(c)];
    c -= g.count;
  }
  return nullptr;
}

const PlanStageCosts* group_costs(const Plan& p, int stage, int64_t c) {
  const PlanClientGroup* g = p.group_of(c);
  if (g == nullptr) return nullptr;
  for (const PlanStageCosts& s : g->stage_costs)
    if (s.stage == stage) return &s;
  return nullptr;
}

}  // namespace

double Plan::client_up_bit_per_s(int64_t c) const {
  const double* own = group_value(*this, &PlanClientGroup::bandwidth_bit_per_s, c);
  if (own != nullptr) return *own;
  return network.up_bandwidth_bit_per_s > 0 ? network.up_bandwidth_bit_per_s
                                            : network.bandwidth_bit_per_s;
}

double Plan::client_down_bit_per_s(int64_t c) const {
  const double* own = group_value(*this, &PlanClientGroup::bandwidth_bit_per_s, c);
  if (own != nullptr) return *own;
  return network.down_bandwidth_bit_per_s > 0 ? network.down_bandwidth_bit_per_s
                                              : network.bandwidth_bit_per_s;
}

double Plan::client_latency_s(int64_t c) const {
  const double* own = group_value(*this, &PlanClientGroup::latency_s, c);
  return (own != nullptr ? *own : network.latency_s) + network.server_latency_s;
}

namespace {

// A group's own value where it lists one, else the plan's.
double own_or(const std::vector<double>& v, size_t i, double plans) {
  return v.empty() ? plans : v[i];
}

}  // namespace

PassSeconds Plan::forward_pass(int stage, int64_t c, size_t i) const {
  const size_t k = static_cast<size_t>(stage);
  PassSeconds p{k > 0 ? boundaries[k - 1].forward.decode_s[i] : 0.0, stages[k].fwd_s[i],
                k < boundaries.size() ? boundaries[k].forward.encode_s[i] : 0.0};
  if (const PlanStageCosts* g = group_costs(*this, stage, c))
    p = {own_or(g->fwd_decode_s, i, p.decode), g->fwd_s[i], own_or(g->fwd_encode_s, i, p.encode)};
  return p;
}

PassSeconds Plan::backward_pass(int stage, int64_t c, size_t i) const {
  const size_t k = static_cast<size_t>(stage);
  PassSeconds p{k < boundaries.size() ? boundaries[k].backward.decode_s[i] : 0.0,
                stages[k].bwd_s[i], k > 0 ? boundaries[k - 1].backward.encode_s[i] : 0.0};
  if (const PlanStageCosts* g = group_costs(*this, stage, c))
    p = {own_or(g->bwd_decode_s, i, p.decode), g->bwd_s[i], own_or(g->bwd_encode_s, i, p.encode)};
  return p;
}

double Plan::weight_pass_s(int stage, int64_t c, size_t i) const {
  const PlanStage& st = stages[static_cast<size_t>(stage)];
  if (!splits_backward(schedule) || st.bwd_weight_s.empty()) return 0.0;
  const PlanStageCosts* g = group_costs(*this, stage, c);
  if (g == nullptr) return st.bwd_weight_s[i];
  return st.bwd_s[i] > 0 ? g->bwd_s[i] * st.bwd_weight_s[i] / st.bwd_s[i] : 0.0;
}

void drop_unneeded_gradients(Plan& plan) {
  bool trains = false;  // some stage up to this boundary's sender
  for (size_t b = 0; b < plan.boundaries.size(); ++b) {
    trains = trains || plan.stages[b].trainable_param_count() > 0;
    PlanBoundary& bd = plan.boundaries[b];
    bd.needs_gradient = trains;
    if (trains) continue;
    PlanTransfer& t = bd.backward;
    std::fill(t.wire_bytes.begin(), t.wire_bytes.end(), 0);
    std::fill(t.encode_s.begin(), t.encode_s.end(), 0.0);
    std::fill(t.decode_s.begin(), t.decode_s.end(), 0.0);
    t.wire_bytes_per_batch = 0;
    t.last_tensor_bytes.clear();
  }
  // A stage runs a backward if it trains or passes a gradient back.
  auto needs = [&](int b) {
    return b >= 0 && b < static_cast<int>(plan.boundaries.size()) &&
           plan.boundaries[static_cast<size_t>(b)].needs_gradient;
  };
  auto idle = [&](int k) {
    return plan.stages[static_cast<size_t>(k)].trainable_param_count() == 0 && !needs(k - 1);
  };
  auto zero = [](std::vector<double>& v) { std::fill(v.begin(), v.end(), 0.0); };
  for (int k = 0; k < static_cast<int>(plan.stages.size()); ++k)
    if (idle(k)) zero(plan.stages[static_cast<size_t>(k)].bwd_s);
  for (PlanClientGroup& g : plan.client_groups)
    for (PlanStageCosts& costs : g.stage_costs) {
      if (idle(costs.stage)) zero(costs.bwd_s);
      if (!needs(costs.stage)) zero(costs.bwd_decode_s);
      if (!needs(costs.stage - 1)) zero(costs.bwd_encode_s);
    }
}

void set_codec_seconds(PlanStageCosts& costs, const Plan& p) {
  for (auto* v :
       {&costs.fwd_decode_s, &costs.fwd_encode_s, &costs.bwd_decode_s, &costs.bwd_encode_s})
    v->clear();
  for (size_t i = 0; i < p.microbatch_sizes.size(); ++i) {
    const PassSeconds f = p.forward_pass(costs.stage, Plan::kOwnCosts, i);
    const PassSeconds b = p.backward_pass(costs.stage, Plan::kOwnCosts, i);
    costs.fwd_decode_s.push_back(f.decode);
    costs.fwd_encode_s.push_back(f.encode);
    costs.bwd_decode_s.push_back(b.decode);
    costs.bwd_encode_s.push_back(b.encode);
  }
}

double Plan::stage_compute_s(int stage) const {
  const size_t k = static_cast<size_t>(stage);
  const PlanStage& st = stages.at(k);
  double s = st.update_s;
  for (size_t i = 0; i < st.fwd_s.size(); ++i)
    s += forward_total(forward_pass(stage, kOwnCosts, i));
  for (size_t i = 0; i < st.bwd_s.size(); ++i)
    s += backward_total(backward_pass(stage, kOwnCosts, i));
  return s;
}

double Plan::update_s(int stage, int64_t c) const {
  const PlanStageCosts* s = group_costs(*this, stage, c);
  return s != nullptr ? s->update_s : stages[static_cast<size_t>(stage)].update_s;
}

void print_plan(std::ostream& os, const Plan& plan) {
  const Plan p = plan_fields::with_whole_passes(plan);  // a stage's seconds, codec work included
  char line[512];
  os << "== " << p.scenario << " [" << p.variant << "]: " << p.model << ", batch " << p.batch_size
     << " in " << p.chunks() << " micro-batch(es), schedule " << schedule_name(p.schedule)
     << (p.compute_precision == "fp32" ? "" : ", compute " + p.compute_precision + " mixed")
     << "\n";
  std::snprintf(line, sizeof line,
                "%-7s %-7s %-12s %-34s %11s %11s %10s %10s %11s %11s %10s %10s\n", "stage", "party",
                "device", "units", "fwd MACs", "bwd MACs", "params", "trainable", "fwd/batch",
                "bwd/batch", "update", "peak mem");
  os << line;
  for (const auto& s : p.stages) {
    std::string units = s.units.front();
    if (s.units.size() > 1) units += " .. " + s.units.back();
    units += " (" + std::to_string(s.units.size()) + ")";
    std::snprintf(
        line, sizeof line, "%-7s %-7s %-12s %-34s %11s %11s %10s %10s %11s %11s %10s %10s%s\n",
        s.name.c_str(), s.party.c_str(), s.device.c_str(), units.c_str(),
        si(s.fwd_per_batch.macs(), "").c_str(), si(s.bwd_per_batch.macs(), "").c_str(),
        si(s.param_bytes, "B").c_str(), si(s.trainable_param_bytes(), "B").c_str(),
        seconds(sum(s.fwd_s)).c_str(), seconds(sum(s.bwd_s)).c_str(), seconds(s.update_s).c_str(),
        si(s.peak_memory_bytes, "B").c_str(), s.timed_from_measurement ? "" : " *");
    os << line;
  }
  std::snprintf(line, sizeof line, "%-9s %-20s %-30s %12s   %-30s %12s\n", "boundary", "activation",
                "forward codec", "fwd B/batch", "backward codec", "bwd B/batch");
  os << line;
  for (const auto& b : p.boundaries) {
    const std::string name = std::to_string(b.from_stage) + "->" + std::to_string(b.to_stage);
    std::snprintf(line, sizeof line, "%-9s %-20s %-30s %12s   %-30s %12s\n", name.c_str(),
                  format_shape(b.activation_shape).c_str(), describe(b.forward.codec).c_str(),
                  si(b.forward.wire_bytes_per_batch, "B").c_str(),
                  describe(b.backward.codec).c_str(),
                  si(b.backward.wire_bytes_per_batch, "B").c_str());
    os << line;
  }
  bool any_formula = false;
  for (const auto& s : p.stages) any_formula |= !s.timed_from_measurement;
  if (any_formula)
    os << "* compute seconds from the device's spec-sheet formula (MACs / peak x efficiency)\n";
}

double activation_memory_factor(const std::string& compute_precision) {
  return compute_precision != "fp32" ? 0.5 : 1.0;
}

int64_t party_peak_memory_bytes(const Plan& plan, const std::vector<int>& stages) {
  // Per stage, what it holds throughout (weights, gradients, state, input,
  // receives) beside its activations or its step's temporaries.
  int64_t held = 0, stashed = 0, largest_work = 0;
  for (int k : stages) {
    const PlanStage& s = plan.stages.at(static_cast<size_t>(k));
    held += s.peak_memory_bytes - std::max(s.activation_bytes(), s.step_bytes);
    stashed += s.activation_bytes() - s.work_bytes;
    largest_work = std::max(largest_work, s.work_bytes);
  }
  // One backward at a time: one working memory, the largest. A stage's
  // optimizer step follows its own backwards (its stash is gone), while the
  // party's other stages may still hold theirs.
  int64_t peak = stashed + largest_work;
  for (int k : stages) {
    const PlanStage& s = plan.stages.at(static_cast<size_t>(k));
    peak = std::max(peak, s.step_bytes + stashed - (s.activation_bytes() - s.work_bytes));
  }
  return held + peak;
}

int64_t Plan::client_part_bytes() const {
  int64_t n = 0;
  for (const PlanStage& st : stages)
    if (st.party == stages.front().party) n += st.trainable_param_bytes() + st.buffer_bytes;
  return n;
}

int64_t Plan::server_part_bytes() const {
  int64_t n = 0;
  for (const PlanStage& st : stages)
    if (st.party != stages.front().party) n += st.trainable_param_bytes() + st.buffer_bytes;
  return n;
}

}  // namespace splitsim
