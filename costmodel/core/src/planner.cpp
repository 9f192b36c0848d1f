#include "splitsim/costmodel/planner.h"

#include <algorithm>
#include <cmath>

#include "codec_seconds.h"
#include "planner_internal.h"
#include "splitsim/costmodel/calibration.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/costmodel/schedule.h"
#include "splitsim/costmodel/unit_graph.h"

namespace splitsim {

namespace {

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "\"" : ", \"") + n + "\"";
  return out;
}

std::vector<int64_t> split_batch(int64_t batch, int64_t chunks) {
  std::vector<int64_t> sizes(chunks, batch / chunks);
  for (int64_t i = 0; i < batch % chunks; ++i) ++sizes[i];
  return sizes;
}

// The units a part's "from" or "to" names: one unit, or a container module
// ("layer1"; "4" in an nn.Sequential) whose units are "NAME.*" (its first
// and last). {-1, -1} when none matches.
std::pair<int, int> named_units(const ModelProfile& model, const std::string& name) {
  const int exact = model.index_of(name);
  if (exact >= 0) return {exact, exact};
  const std::string prefix = name + ".";
  std::pair<int, int> range{-1, -1};
  for (int i = 0; i < static_cast<int>(model.units.size()); ++i) {
    if (model.units[i].name.compare(0, prefix.size(), prefix) != 0) continue;
    if (range.first < 0) range.first = i;
    range.second = i;
  }
  return range;
}

// Resolves every part to a unit range; throws InputError on bad ranges/cuts.
std::vector<std::pair<int, int>> resolve_parts(const Scenario& sc, const ModelProfile& model) {
  const int n = static_cast<int>(model.units.size());
  const auto names = model.unit_names();
  std::vector<int> cut_ok(n + 1, 0);
  std::vector<std::string> cut_names;
  for (const auto& c : valid_cuts(model)) {
    cut_ok[c.position] = 1;
    cut_names.push_back(c.after);
  }
  std::vector<std::pair<int, int>> ranges;
  for (size_t p = 0; p < sc.partition.size(); ++p) {
    const PartSpec& part = sc.partition[p];
    const std::string at = "$.partition[" + std::to_string(p) + "]";
    const int from = named_units(model, part.from).first;
    const int to = named_units(model, part.to).second;
    if (from < 0)
      throw InputError(at + ".from",
                       "unknown unit \"" + part.from + "\" in " + model.model +
                           " (a unit, or a module holding units); units: " + quoted_list(names));
    if (to < 0)
      throw InputError(at + ".to",
                       "unknown unit \"" + part.to + "\" in " + model.model +
                           " (a unit, or a module holding units); units: " + quoted_list(names));
    const int expected = ranges.empty() ? 0 : ranges.back().second + 1;
    if (from != expected)
      throw InputError(at + ".from",
                       "parts must cover the units in order without gaps; this part "
                       "must start at \"" +
                           (expected < n ? names[expected] : "") + "\", not \"" + part.from + "\"");
    if (to < from)
      throw InputError(at + ".to", "\"" + part.to + "\" comes before \"" + part.from + "\"");
    if (p > 0 && !cut_ok[from])
      throw InputError(at + ".from", "cutting before \"" + part.from +
                                         "\" would split more than one tensor; valid cuts are "
                                         "before: " +
                                         quoted_list(cut_names));
    ranges.emplace_back(from, to);
  }
  if (ranges.empty() || ranges.back().second != n - 1)
    throw InputError("$.partition[" + std::to_string(sc.partition.size() - 1) + "].to",
                     "the last part must end at the last unit \"" + names.back() + "\"");
  return ranges;
}

OpCounts sum_units(const ModelProfile& model, int first, int last, bool backward) {
  OpCounts c;
  for (int i = first; i <= last; ++i) c += backward ? model.units[i].bwd : model.units[i].fwd;
  return c;
}

// Seconds of `work_per_sample` on a stage's device for `b` samples, from the
// device's measured unit timings when it has them for every unit, else the formula.
double stage_seconds(const DeviceProfile& dev, const ModelProfile& model, int first, int last,
                     bool backward, int64_t b, bool* measured) {
  double s = 0;
  *measured = true;
  for (int i = first; i <= last; ++i) {
    const UnitTiming* t = dev.timing_for(model.model, model.input_shape, model.units[i].name);
    if (t == nullptr) {
      *measured = false;
      break;
    }
    s += (backward ? t->bwd_s : t->fwd_s) * b / dev.measured_batch;
  }
  if (*measured) return s;
  return formula_seconds(dev, sum_units(model, first, last, backward).scaled(b));
}

// Every per-batch count of the Plan (MACs, elements, bytes, the stash times
// the micro-batches it holds) is a per-sample count times at most
// batch_size x kHeadroom. Refuses a batch for which that could pass 2^62, so
// the int64 arithmetic below cannot overflow.
void check_counts_fit(const Scenario& sc, const ModelProfile& model) {
  constexpr long double kHeadroom = 1 << 16;
  long double per_sample = 1;
  for (const auto& u : model.units) {
    per_sample += static_cast<long double>(u.fwd.macs()) + u.bwd.macs() + u.fwd.elementwise_elems +
                  u.bwd.elementwise_elems + u.output_bytes() + u.stash_bytes_per_sample +
                  u.param_bytes;
  }
  const long double limit = std::ldexp(1.0L, 62);
  if (per_sample * sc.batch_size * kHeadroom <= limit) return;
  const long double most = std::floor(limit / (per_sample * kHeadroom));
  throw InputError("$.batch_size",
                   "batch_size " + std::to_string(sc.batch_size) + " with " + model.model +
                       " would overflow the plan's 64-bit MAC and byte counts; the limit for "
                       "this model is " +
                       std::to_string(static_cast<long long>(most)));
}

}  // namespace

namespace planner_internal {

// Unit i's stash in a stage whose last unit is `last` (the loss's part stays
// FP32): without its output when the next unit of the stage does not keep
// its input (the units of a stage run as one chain, so that output is freed
// after the next forward).
int64_t unit_stash_in_stage(const PlanContext& c, int i, int last) {
  const UnitProfile& u = c.model.units[i];
  const bool output_freed = i < last && !c.model.units[i + 1].keeps_input;
  const int64_t halved = u.stash_bytes_per_sample - u.loss_stash_bytes_per_sample -
                         (output_freed ? u.output_stash_bytes_per_sample : 0);
  return std::llround(c.halves * halved) + u.loss_stash_bytes_per_sample;
}
int64_t unit_work(const PlanContext& c, const UnitProfile& u) {
  return std::llround(c.halves * (u.bwd_work_bytes_per_sample - u.loss_bwd_work_bytes_per_sample)) +
         u.loss_bwd_work_bytes_per_sample;
}

void time_units(const ModelProfile& model, const DeviceProfile& dev,
                const std::vector<int64_t>& sizes, PlanStage& st) {
  const int first = st.first_unit, last = st.last_unit;
  st.fwd_s.clear();
  st.bwd_s.clear();
  st.fwd_op_class_shares.clear();
  st.bwd_op_class_shares.clear();
  for (int64_t b : sizes) {
    bool measured = false;
    st.fwd_s.push_back(stage_seconds(dev, model, first, last, false, b, &measured));
    st.bwd_s.push_back(stage_seconds(dev, model, first, last, true, b, &measured));
    st.timed_from_measurement = measured;
    for (const bool backward : {false, true})
      (backward ? st.bwd_op_class_shares : st.fwd_op_class_shares)
          .push_back(
              formula_parts(dev, sum_units(model, first, last, backward).scaled(b)).normalized());
  }
}

// Stage k of K, units `range`: its units, parameters, stash and working
// memory, and its compute seconds per micro-batch (codecs come later).
PlanStage plan_stage(const PlanContext& c, const Plan& plan, int k, int K,
                     std::pair<int, int> range) {
  const Scenario& sc = c.sc;
  const ModelProfile& model = c.model;
  const auto& devices = c.devices;
  const int64_t m = c.m, b_max = c.b_max;
  const auto [first, last] = range;
  PlanStage st;
  st.name = "stage" + std::to_string(k);
  st.party = sc.partition[k].party;
  const auto dev = devices.find(st.party);
  if (dev == devices.end())
    throw InputError("$.partition[" + std::to_string(k) + "].party",
                     "no device for party \"" + st.party + "\"; add it to $.devices");
  st.device = dev->second.name;
  st.first_unit = first;
  st.last_unit = last;
  for (int i = first; i <= last; ++i) {
    st.units.push_back(model.units[i].name);
    st.param_count += model.units[i].param_count;
    st.param_bytes += model.units[i].param_bytes;
    st.frozen_param_count += model.units[i].frozen_param_count;
    st.frozen_param_bytes += model.units[i].frozen_param_bytes;
    st.buffer_bytes += model.units[i].buffer_bytes;
    st.stash_bytes_per_microbatch += unit_stash_in_stage(c, i, last) * b_max;
  }
  // The stage's input per sample: the batch's (stage 0) or what it
  // receives from the stage before.
  int64_t in_bytes = model.input_dtype == "int64" ? 8 : 4;
  for (int64_t d : model.input_shape) in_bytes *= first == 0 ? d : 1;
  if (first > 0) in_bytes = model.units[first - 1].output_bytes();
  if (sc.schedule == Schedule::kFr) {
    // Features replay keeps only each micro-batch's stage input; the full
    // activations of one micro-batch exist again while it is recomputed.
    st.replay_bytes = st.stash_bytes_per_microbatch;
    st.stash_bytes_per_microbatch = in_bytes * b_max;
  } else if (first > 0) {
    // A received input is kept beside the units' stash until its
    // backward (the units count what they keep, not their input).
    st.stash_bytes_per_microbatch += in_bytes * b_max;
  }
  // Stage 0 holds the current batch's input. While a micro-batch's
  // backward runs through the stage, last unit first, unit i's working
  // memory comes on top of the stash of the units before it and its own
  // (the later units' is freed by then): what it adds above the whole
  // stash, at its largest.
  if (first == 0) st.input_bytes = in_bytes * sc.batch_size;
  // The last unit's backward also holds the gradient the stage received
  // (decoded), as large as the stage's output.
  int64_t freed = 0;  // per sample: the stash of the units after i
  for (int i = last; i >= first; --i) {
    const UnitProfile& u = model.units[i];
    const int64_t received = i == last && k + 1 < K ? u.output_bytes() : 0;
    st.work_bytes = std::max(st.work_bytes, (unit_work(c, u) + received - freed) * b_max);
    freed += unit_stash_in_stage(c, i, last);
  }
  // zb_h1: the gradient received for each micro-batch whose W waits.
  if (k + 1 < K)
    st.work_bytes +=
        waiting_weight_passes(sc.schedule, k, K, m) * model.units[last].output_numel() * 4 * b_max;
  st.fwd_per_batch = sum_units(model, first, last, false).scaled(sc.batch_size);
  st.bwd_per_batch = sum_units(model, first, last, true).scaled(sc.batch_size);
  st.fwd_per_batch.ops *= m;
  st.bwd_per_batch.ops *= m;
  time_units(model, dev->second, plan.microbatch_sizes, st);
  if (splits_backward(sc.schedule))
    split_backward_seconds(model, dev->second, plan.microbatch_sizes, st);
  st.stashed_microbatches = stashed_microbatches(sc.schedule, k, K, m, plan.virtual_stages);
  st.weight_versions = weight_versions(sc.schedule, k, K, m);
  return st;
}

void price_codecs(const std::vector<int64_t>& sizes, const DeviceProfile& sdev,
                  const DeviceProfile& rdev, PlanBoundary& bd, PlanStage& sender,
                  PlanStage& receiver) {
  const std::vector<int64_t> shape(bd.activation_shape.begin() + 1, bd.activation_shape.end());
  const std::vector<int64_t>& carried = bd.forward.carried_shape;
  const BoundaryCodecs codecs{bd.forward.codec, bd.backward.codec};
  for (size_t c = 0; c < sizes.size(); ++c) {
    const int64_t b = sizes[c];
    // Measured codec timings, where a device has them, else the formulas.
    const BoundaryCodecSeconds cs = boundary_codec_seconds(codecs, shape, carried, b, sdev, rdev);
    bd.forward.encode_s.push_back(cs.encode);
    bd.forward.decode_s.push_back(cs.decode);
    bd.backward.encode_s.push_back(cs.grad_encode);
    bd.backward.decode_s.push_back(cs.grad_decode);
    // A trainable codec's layers: model work in the stages' backward.
    receiver.bwd_s[c] += cs.receiver_backward;
    sender.bwd_s[c] += cs.sender_backward;
  }
}

// One micro-batch's tensors on the wire: their bytes and, when there are
// several, the last one's (what a shaper lets through last).
void add_wire_microbatch(const std::vector<WireTensor>& layout, PlanTransfer* t) {
  int64_t bytes = 0;
  for (const WireTensor& w : layout) bytes += w.bytes();
  t->wire_bytes.push_back(bytes);
  t->wire_bytes_per_batch += bytes;
  if (layout.size() > 1) t->last_tensor_bytes.push_back(layout.back().bytes());
}

// Boundary k (stage k to k + 1): its codecs' wire bytes and seconds per
// micro-batch, and their weights on the two stages.
void plan_boundary(const PlanContext& c, Plan& plan, int k, std::pair<int, int> sender_range) {
  const Scenario& sc = c.sc;
  const ModelProfile& model = c.model;
  const auto& devices = c.devices;
  const WireDType act = c.act;
  const std::string at = "$.compression[" + std::to_string(k) + "]";
  const BoundaryCodecs codecs =
      k < static_cast<int>(sc.compression.size()) ? sc.compression[k] : BoundaryCodecs{};
  PlanBoundary bd;
  bd.from_stage = k;
  bd.to_stage = k + 1;
  const auto& shape = model.units[sender_range.second].output_shape;
  bd.activation_shape = shape;
  bd.activation_shape.insert(bd.activation_shape.begin(), sc.batch_size);
  check_applicable(codecs.forward, shape, at + ".forward");
  const auto carried = carried_shape(codecs.forward, shape);
  check_applicable(codecs.backward, carried, at + ".backward");

  PlanStage& sender = plan.stages[k];
  PlanStage& receiver = plan.stages[k + 1];
  const DeviceProfile& sdev = devices.at(sender.party);
  const DeviceProfile& rdev = devices.at(receiver.party);
  bd.forward.codec = codecs.forward;
  bd.forward.carried_shape = carried;
  bd.backward.codec = codecs.backward;
  bd.backward.carried_shape = carried;
  bd.forward.wire_messages = static_cast<int64_t>(
      wire_layout(codecs.forward, shape, plan.microbatch_sizes[0], act).size());
  bd.backward.wire_messages = static_cast<int64_t>(
      wire_layout(codecs.backward, carried, plan.microbatch_sizes[0], act).size());
  for (size_t c = 0; c < plan.microbatch_sizes.size(); ++c) {
    const int64_t b = plan.microbatch_sizes[c];
    add_wire_microbatch(wire_layout(codecs.forward, shape, b, act), &bd.forward);
    add_wire_microbatch(wire_layout(codecs.backward, carried, b, act), &bd.backward);
  }
  price_codecs(plan.microbatch_sizes, sdev, rdev, bd, sender, receiver);
  // A codec's weights always train.
  const CodecWork fw = codec_work(codecs.forward, shape, plan.microbatch_sizes[0]);
  sender.param_count += fw.sender_param_count;
  sender.param_bytes += 4 * fw.sender_param_count;
  receiver.param_count += fw.receiver_param_count;
  receiver.param_bytes += 4 * fw.receiver_param_count;
  plan.boundaries.push_back(bd);
}

double update_seconds(const PlanContext& c, const DeviceProfile& dev, const PlanStage& st) {
  const ModelProfile& model = c.model;
  double update = 0;
  bool measured = true;
  for (int i = st.first_unit; i <= st.last_unit; ++i) {
    const UnitTiming* t = dev.timing_for(model.model, model.input_shape, model.units[i].name);
    if (t == nullptr)
      measured = false;
    else
      update += t->update_s;
  }
  return measured ? update
                  : update_formula_seconds(dev, st.trainable_param_count(), c.state_copies);
}

// Stage k's optimizer state, update seconds and peak memory, once every
// boundary is planned (posted receives depend on them).
void finish_stage(const PlanContext& c, Plan& plan, int k) {
  const Scenario& sc = c.sc;
  const ModelProfile& model = c.model;
  const auto& devices = c.devices;
  const int64_t m = c.m, state_copies = c.state_copies;
  const double halves = c.halves;
  PlanStage& st = plan.stages[k];
  const DeviceProfile& dev = devices.at(st.party);
  st.optimizer_state_bytes = st.trainable_param_bytes() * state_copies;
  int64_t largest_tensor = 0, cast_bytes = 0;
  for (int i = st.first_unit; i <= st.last_unit; ++i) {
    const UnitProfile& u = model.units[i];
    largest_tensor = std::max(largest_tensor, u.largest_trainable_tensor_bytes);
    if (u.fwd.macs() > 0) cast_bytes += u.param_bytes;
  }
  st.step_bytes = largest_tensor * sc.optimizer.step_temporary_copies();
  st.recv_bytes = posted_receive_bytes(plan, k, m);
  st.update_s = update_seconds(c, dev, st);
  // Weights, then per trainable weight its gradient and the versions
  // pipedream stashes beyond the current one. Mixed precision (autocast)
  // keeps the FP32 weights beside the half-precision copies its matmuls
  // and convolutions make of theirs (x1.5 for the units that run any; an
  // embedding's table is not copied); gradients and optimizer state stay
  // FP32, as the weights they belong to. Then what the backwards hold or
  // what the optimizer's step does after them, the larger.
  const int64_t copies = std::llround(halves < 1 ? halves * static_cast<double>(cast_bytes) : 0);
  st.peak_memory_bytes = st.param_bytes + copies + st.trainable_param_bytes() * st.weight_versions +
                         st.optimizer_state_bytes + st.input_bytes + st.recv_bytes +
                         std::max(st.activation_bytes(), st.step_bytes);
}

Plan calibrated(const Plan& plan, const Scenario& sc) {
  if (!sc.calibration_file.empty() && !sc.calibration)
    throw InputError("$.calibration", "\"" + sc.calibration_file +
                                          "\" was not loaded (read the scenario with "
                                          "load_scenario_file or expand_scenario)");
  Plan out = plan;
  if (!sc.calibration_file.empty()) out = apply_calibration(out, *sc.calibration);
  if (sc.command_calibration) out = apply_calibration(out, *sc.command_calibration);
  return out;
}

}  // namespace planner_internal

using namespace planner_internal;  // NOLINT: this file's own steps


Plan make_plan(const Scenario& sc, const ModelProfile& model,
               const std::map<std::string, DeviceProfile>& devices_as_given,
               const std::string& label) {
  // Each device as it computes in the scenario's compute precision.
  std::map<std::string, DeviceProfile> devices;
  for (const auto& [party, d] : devices_as_given)
    devices[party] = at_compute_precision(d, sc.compute_precision);
  const auto ranges = resolve_parts(sc, model);
  const int K = static_cast<int>(ranges.size());
  check_counts_fit(sc, model);
  Plan plan;
  plan.scenario = sc.name;
  plan.variant = label;
  plan.model = model.model;
  plan.batch_size = sc.batch_size;
  plan.microbatch_sizes = split_batch(sc.batch_size, sc.chunks);
  plan.schedule = sc.schedule;
  plan.virtual_stages = virtual_stages(sc);
  plan.compute_precision = sc.compute_precision;
  plan.network = sc.network;
  plan.platform = sc.platform;
  plan.iterations = sc.iterations;
  plan.warmup = sc.warmup;
  plan.clients = sc.clients;
  const PlanContext c{sc,
                      model,
                      devices,
                      plan.chunks(),
                      plan.microbatch_sizes.front(),
                      activation_dtype(sc.precision),
                      sc.optimizer.state_copies(),
                      activation_memory_factor(sc.compute_precision)};
  for (int k = 0; k < K; ++k) plan.stages.push_back(plan_stage(c, plan, k, K, ranges[k]));
  for (int k = 0; k + 1 < K; ++k) plan_boundary(c, plan, k, ranges[k]);
  drop_unneeded_gradients(plan);
  for (int k = 0; k < K; ++k) finish_stage(c, plan, k);
  // Each group calibrated on its own costs, before the plan's own are.
  std::vector<PlanClientGroup> groups;
  for (size_t i = 0; i < sc.client_groups.size(); ++i) groups.push_back(client_group(c, plan, i));
  plan = calibrated(plan, sc);
  plan.client_groups = std::move(groups);
  set_training(sc, devices, &plan);
  return plan;
}

}  // namespace splitsim
