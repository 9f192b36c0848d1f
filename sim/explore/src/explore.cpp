// The explorer: enumerate candidates, apply constraints, bound, screen, rank.
#include "splitsim/explore/explore.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "explore_internal.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/format.h"
#include "splitsim/costmodel/planner.h"
#include "splitsim/costmodel/unit_graph.h"

namespace splitsim {

namespace explore_internal {

double link_Bps(const NetworkSpec& net, const std::string& from, const std::string& to,
                const std::string& client) {
  double bits = net.bandwidth_bit_per_s;
  if (from == client && net.up_bandwidth_bit_per_s > 0) bits = net.up_bandwidth_bit_per_s;
  if (to == client && net.down_bandwidth_bit_per_s > 0) bits = net.down_bandwidth_bit_per_s;
  return bits / 8.0 * net.bandwidth_factor;
}

Scenario with_choices(const Scenario& base, const std::vector<PartSpec>& partition,
                      const std::vector<BoundaryCodecs>& compression, int64_t chunks,
                      Schedule schedule, double bandwidth_bit_per_s) {
  Scenario sc = base;
  sc.partition = partition;
  sc.compression = compression;
  sc.chunks = chunks;
  sc.schedule = schedule;
  if (bandwidth_bit_per_s > 0) {
    sc.network.bandwidth_bit_per_s = bandwidth_bit_per_s;
    sc.network.up_bandwidth_bit_per_s = 0;
    sc.network.down_bandwidth_bit_per_s = 0;
  }
  return sc;
}

}  // namespace explore_internal

namespace ei = explore_internal;

namespace {

// Parties of a candidate's stages for single / ushape.
std::pair<std::string, std::string> client_server(const Scenario& base,
                                                  const std::map<std::string, DeviceProfile>& dev,
                                                  const ExploreSpace& space) {
  std::string client = space.client_party, server = space.server_party;
  if (client.empty()) client = base.partition.empty() ? "client" : base.partition.front().party;
  if (server.empty() && base.partition.empty() && client != "server") server = "server";
  if (server.empty())
    for (const auto& p : base.partition)
      if (p.party != client) {
        server = p.party;
        break;
      }
  for (const auto& [party, where] :
       {std::pair{client, "$.client_party"}, {server, "$.server_party"}})
    if (party.empty() || dev.count(party) == 0)
      throw InputError(where, "no device for party \"" + party +
                                  "\" in the scenario's $.devices; name one of its parties");
  if (client == server)
    throw InputError("$.server_party", "the server party must differ from the client party");
  return {client, server};
}

}  // namespace

double steady_state_bound(const Plan& plan) {
  if (plan.stages.empty()) return 0;
  const std::string& client = plan.stages.front().party;
  std::map<std::string, double> compute;
  for (size_t k = 0; k < plan.stages.size(); ++k)
    compute[plan.stages[k].party] += plan.stage_compute_s(static_cast<int>(k));
  std::map<std::pair<std::string, std::string>, double> link_bytes;
  for (const auto& b : plan.boundaries) {
    const std::string& a = plan.stages[b.from_stage].party;
    const std::string& c = plan.stages[b.to_stage].party;
    if (a == c) continue;
    link_bytes[{a, c}] += b.forward.wire_bytes_per_batch;
    link_bytes[{c, a}] += b.backward.wire_bytes_per_batch;
  }
  double bound = 0;
  for (const auto& [party, s] : compute) bound = std::max(bound, s);
  for (const auto& [ends, bytes] : link_bytes)
    bound = std::max(bound, bytes / ei::link_Bps(plan.network, ends.first, ends.second, client));
  return bound;
}

Bounds screen_bounds(const Plan& plan) {
  Bounds b;
  if (plan.stages.empty()) return b;
  const std::string& client = plan.stages.front().party;
  const NetworkSpec& net = plan.network;
  double all_compute = 0, all_fwd_bwd = 0, all_wire = 0, path = 0;
  int64_t messages = 0;
  for (size_t k = 0; k < plan.stages.size(); ++k) {
    const int stage = static_cast<int>(k);
    all_compute += plan.stage_compute_s(stage);
    all_fwd_bwd += plan.stage_compute_s(stage) - plan.stages[k].update_s;
    // One micro-batch's way through: its forwards and its backwards (zb_h1:
    // the Bs; its Ws may wait).
    path += Plan::forward_total(plan.forward_pass(stage, Plan::kOwnCosts, 0)) +
            Plan::backward_total(plan.backward_pass(stage, Plan::kOwnCosts, 0)) -
            plan.weight_pass_s(stage, Plan::kOwnCosts, 0);
  }
  for (const auto& bd : plan.boundaries) {
    const std::string& a = plan.stages[bd.from_stage].party;
    const std::string& c = plan.stages[bd.to_stage].party;
    if (a == c) continue;
    const double up = ei::link_Bps(net, a, c, client), down = ei::link_Bps(net, c, a, client);
    all_wire += bd.forward.wire_bytes_per_batch / up + bd.backward.wire_bytes_per_batch / down;
    const int directions = bd.needs_gradient ? 2 : 1;  // a gradient nobody needs is not sent
    path += bd.forward.wire_bytes.front() / up + bd.backward.wire_bytes.front() / down +
            directions * net.latency_s;
    messages += directions * plan.chunks();
  }
  const double steady = steady_state_bound(plan);
  if (plan.schedule == Schedule::kSequential)
    b.lower_s = std::max(steady, all_fwd_bwd + all_wire + messages * net.latency_s);
  else if (is_synchronous(plan.schedule))
    b.lower_s = std::max(steady, path);
  else
    b.lower_s = steady;
  b.upper_s = all_compute + all_wire + messages * (net.latency_s + net.per_message_overhead_s);
  return b;
}

void screen(std::vector<Candidate>* candidates) {
  auto& c = *candidates;
  // Sorting by upper bound lets each X stop at the first Y whose upper
  // bound is not below X's lower bound.
  std::vector<size_t> by_upper(c.size());
  for (size_t i = 0; i < c.size(); ++i) by_upper[i] = i;
  std::sort(by_upper.begin(), by_upper.end(),
            [&](size_t a, size_t b) { return c[a].upper_bound_s < c[b].upper_bound_s; });
  for (auto& x : c) {
    x.screened_out = false;
    for (size_t yi : by_upper) {
      const Candidate& y = c[yi];
      if (!(y.upper_bound_s < x.lower_bound_s)) break;
      if (y.wire_bytes_per_batch <= x.wire_bytes_per_batch &&
          y.client_macs_per_batch <= x.client_macs_per_batch &&
          y.client_memory_bytes <= x.client_memory_bytes) {
        x.screened_out = true;
        break;
      }
    }
  }
}

std::vector<size_t> pareto_front(const std::vector<std::vector<double>>& points) {
  std::vector<size_t> front;
  for (size_t i = 0; i < points.size(); ++i) {
    bool dominated = false;
    for (size_t j = 0; j < points.size() && !dominated; ++j) {
      if (i == j) continue;
      bool all_le = true, one_lt = false;
      for (size_t d = 0; d < points[i].size(); ++d) {
        all_le &= points[j][d] <= points[i][d];
        one_lt |= points[j][d] < points[i][d];
      }
      dominated = all_le && one_lt;
    }
    if (!dominated) front.push_back(i);
  }
  return front;
}

std::vector<size_t> candidate_front(const std::vector<Candidate>& candidates) {
  std::vector<size_t> simulated;
  std::vector<std::vector<double>> points;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (std::isnan(c.time_per_batch_s)) continue;
    simulated.push_back(i);
    points.push_back({c.time_per_batch_s, static_cast<double>(c.wire_bytes_per_batch),
                      static_cast<double>(c.client_macs_per_batch),
                      static_cast<double>(c.client_memory_bytes)});
  }
  std::vector<size_t> out;
  for (size_t k : pareto_front(points)) out.push_back(simulated[k]);
  return out;
}

std::vector<size_t> rank(const std::vector<Candidate>& c, Objective objective) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < c.size(); ++i)
    if (!std::isnan(c[i].time_per_batch_s)) idx.push_back(i);
  auto key = [&](size_t i) {
    const double primary = objective == Objective::kBytes ? c[i].wire_bytes_per_batch
                           : objective == Objective::kClientMacs
                               ? static_cast<double>(c[i].client_macs_per_batch)
                               : c[i].time_per_batch_s;
    return std::make_tuple(primary, c[i].time_per_batch_s, c[i].wire_bytes_per_batch, c[i].label);
  };
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  return idx;
}

namespace {

// What every candidate of one exploration shares: the inputs and the axes
// of the search, empty lists of the space replaced by the scenario's value.
struct Context {
  const Scenario& base;
  const ModelProfile& model;
  const std::map<std::string, DeviceProfile>& devices;
  const ExploreSpace& space;
  std::vector<CodecOption> codecs;
  std::vector<int64_t> chunks;
  std::vector<Schedule> schedules;
  std::vector<double> bandwidths;  // {0}: the scenario's network
};

Context make_context(const Scenario& base, const ModelProfile& model,
                     const std::map<std::string, DeviceProfile>& devices,
                     const ExploreSpace& space) {
  return {
      base,
      model,
      devices,
      space,
      space.codecs.empty() ? default_codec_options() : space.codecs,
      space.chunks.empty() ? std::vector<int64_t>{base.chunks} : space.chunks,
      space.schedules.empty() ? std::vector<Schedule>{base.schedule} : space.schedules,
      space.bandwidths_bit_per_s.empty() ? std::vector<double>{0.0} : space.bandwidths_bit_per_s};
}

// A partition and the codec options to try on it, before chunks, schedules
// and bandwidths.
struct Layout {
  CutKind kind;
  std::vector<PartSpec> parts;
  std::vector<size_t> codec_options;  // all, or the one the DP used
};

// The single and ushape partitions at every valid cut (pair of cuts), each
// with every codec option.
std::vector<Layout> cut_layouts(const Context& cx, const std::set<CutKind>& kinds) {
  std::vector<Layout> layouts;
  if (!kinds.count(CutKind::kSingle) && !kinds.count(CutKind::kUShape)) return layouts;
  const int n = static_cast<int>(cx.model.units.size());
  auto name = [&](int i) { return cx.model.units[i].name; };
  std::vector<size_t> all_codecs(cx.codecs.size());
  for (size_t i = 0; i < cx.codecs.size(); ++i) all_codecs[i] = i;
  const std::vector<CutPoint> cuts = valid_cuts(cx.model);
  const auto [client, server] = client_server(cx.base, cx.devices, cx.space);
  for (size_t a = 0; a < cuts.size(); ++a) {
    const int p = cuts[a].position;
    if (kinds.count(CutKind::kSingle))
      layouts.push_back({CutKind::kSingle,
                         {{client, name(0), name(p - 1)}, {server, name(p), name(n - 1)}},
                         all_codecs});
    if (kinds.count(CutKind::kUShape))
      for (size_t b = a + 1; b < cuts.size(); ++b) {
        const int q = cuts[b].position;
        layouts.push_back({CutKind::kUShape,
                           {{client, name(0), name(p - 1)},
                            {server, name(p), name(q - 1)},
                            {client, name(q), name(n - 1)}},
                           all_codecs});
      }
  }
  return layouts;
}

// A kstage partition the DP chose for one codec, chunk count, schedule and
// bandwidth.
struct KStageLayout {
  Layout layout;
  int64_t chunks;
  Schedule schedule;
  double bandwidth_bit_per_s;
};

void check_stage_parties(const Context& cx) {
  const std::vector<std::string>& parties = cx.space.stage_parties;
  if (std::set<std::string>(parties.begin(), parties.end()).size() != parties.size())
    throw InputError("$.stage_parties", "kstage needs one distinct party per stage");
  for (const auto& party : parties)
    if (cx.devices.count(party) == 0)
      throw InputError("$.stage_parties",
                       "no device for party \"" + party + "\" in the scenario's $.devices");
}

// The kstage DP for every codec, chunk count, schedule and bandwidth; each
// DP run counts as enumerated, one that finds no partition as rejected.
std::vector<KStageLayout> kstage_layouts(const Context& cx, ExploreResult* result) {
  check_stage_parties(cx);
  std::vector<KStageLayout> out;
  for (size_t ci = 0; ci < cx.codecs.size(); ++ci)
    for (int64_t m : cx.chunks)
      for (Schedule s : cx.schedules)
        for (double bw : cx.bandwidths) {
          if (m > cx.base.batch_size) continue;
          ExploreSpace one = cx.space;
          one.chunks = {m};
          one.schedules = {s};
          one.bandwidths_bit_per_s = bw > 0 ? std::vector<double>{bw} : std::vector<double>{};
          Layout l{CutKind::kKStage, {}, {ci}};
          double bottleneck = 0;
          ++result->enumerated;
          if (kstage_partition(cx.base, cx.model, cx.devices, one, cx.codecs[ci], &l.parts,
                               &bottleneck))
            out.push_back({l, m, s, bw});
          else
            ++result->rejected_by_constraints;
        }
  return out;
}

// The client's share of the candidate's plan: its MACs, peak memory and
// share of all MACs, and the bytes on the wire per batch.
void add_client_figures(Candidate* c) {
  const std::string& client = c->plan.stages.front().party;
  int64_t total_macs = 0;
  std::vector<int> client_stages;
  for (size_t k = 0; k < c->plan.stages.size(); ++k) {
    const PlanStage& st = c->plan.stages[k];
    const int64_t macs = st.fwd_per_batch.macs() + st.bwd_per_batch.macs();
    total_macs += macs;
    if (st.party != client) continue;
    c->client_macs_per_batch += macs;
    client_stages.push_back(static_cast<int>(k));
  }
  c->client_memory_bytes = party_peak_memory_bytes(c->plan, client_stages);
  c->client_mac_share = total_macs > 0 ? static_cast<double>(c->client_macs_per_batch) /
                                             static_cast<double>(total_macs)
                                       : 0;
  for (const auto& b : c->plan.boundaries)
    c->wire_bytes_per_batch += b.forward.wire_bytes_per_batch + b.backward.wire_bytes_per_batch;
}

// The candidate of layout `l` with codec option `ci`, `m` chunks, schedule
// `s` and bandwidth `bw` (0: the scenario's), planned, with its client
// figures; false when the codec does not apply at one of its boundaries.
bool make_candidate(const Context& cx, const Layout& l, size_t ci, int64_t m, Schedule s, double bw,
                    Candidate* out) {
  const int count = static_cast<int>(l.parts.size()) - 1;
  std::vector<BoundaryCodecs> comp(count);
  for (int k = 0; k < count; ++k) {
    const int last = cx.model.index_of(l.parts[k].to);
    if (!instantiate_codec(cx.codecs[ci], cx.model.units[last].output_shape, k, count, &comp[k]))
      return false;
  }
  Candidate& c = *out;
  c.kind = l.kind;
  c.codec_label = cx.codecs[ci].label;
  c.partition = l.parts;
  c.compression = comp;
  c.chunks = m;
  c.schedule = s;
  const Scenario sc = ei::with_choices(cx.base, l.parts, comp, m, s, bw);
  c.bandwidth_bit_per_s = sc.network.bandwidth_bit_per_s;
  std::string cut_names;
  for (int k = 1; k <= count; ++k) cut_names += (k > 1 ? "|" : "") + l.parts[k].from;
  c.label = std::string(cut_kind_name(l.kind)) + " " + cut_names + " " + c.codec_label +
            " chunks=" + std::to_string(m) + " " + schedule_name(s) + " " +
            format_number(c.bandwidth_bit_per_s) + "bit/s";
  c.plan = make_plan(sc, cx.model, cx.devices, c.label);
  add_client_figures(&c);
  return true;
}

bool breaks_constraints(const Candidate& c, const ExploreSpace& space) {
  return (space.client_memory_bytes > 0 && c.client_memory_bytes > space.client_memory_bytes) ||
         c.client_mac_share > space.max_client_mac_share + 1e-12;
}

// Enumerates the candidate (unless its codec does not apply), and keeps it
// with its bounds unless it breaks a constraint.
void add_candidate(const Context& cx, const Layout& l, size_t ci, int64_t m, Schedule s, double bw,
                   ExploreResult* result) {
  Candidate c;
  if (!make_candidate(cx, l, ci, m, s, bw, &c)) return;
  ++result->enumerated;
  if (breaks_constraints(c, cx.space)) {
    ++result->rejected_by_constraints;
    return;
  }
  const Bounds bounds = screen_bounds(c.plan);
  c.lower_bound_s = bounds.lower_s;
  c.upper_bound_s = bounds.upper_s;
  result->candidates.push_back(std::move(c));
}

}  // namespace

ExploreResult explore(const Scenario& base, const ModelProfile& model,
                      const std::map<std::string, DeviceProfile>& devices,
                      const ExploreSpace& space) {
  check_space(space);
  Scenario calibrated = base;  // every candidate's plan: make_plan calibrates it
  calibrated.command_calibration = std::make_shared<const Calibration>(space.calibration);
  const Context cx = make_context(calibrated, model, devices, space);
  const std::set<CutKind> kinds(space.kinds.begin(), space.kinds.end());
  const std::vector<Layout> layouts = cut_layouts(cx, kinds);
  ExploreResult result;
  std::vector<KStageLayout> kstage;
  if (kinds.count(CutKind::kKStage)) kstage = kstage_layouts(cx, &result);
  for (const auto& l : layouts)
    for (size_t ci : l.codec_options)
      for (int64_t m : cx.chunks)
        for (Schedule s : cx.schedules)
          for (double bw : cx.bandwidths)
            if (m <= base.batch_size) add_candidate(cx, l, ci, m, s, bw, &result);
  for (const auto& k : kstage) {
    --result.enumerated;  // counted when the DP ran
    add_candidate(cx, k.layout, k.layout.codec_options.front(), k.chunks, k.schedule,
                  k.bandwidth_bit_per_s, &result);
  }
  if (result.candidates.empty())
    throw InputError("kinds", "no candidate fits: " + std::to_string(result.enumerated) +
                                    " enumerated, " +
                                    std::to_string(result.rejected_by_constraints) +
                                    " broke a constraint; relax the constraints or widen the "
                                    "space");
  screen(&result.candidates);
  for (const auto& c : result.candidates) result.screened_out += c.screened_out;
  return result;
}

}  // namespace splitsim
