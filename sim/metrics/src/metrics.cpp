// compute_metrics: Timeline -> Metrics (pure). JSON and CSV: metrics_io.cpp.
#include "splitsim/sim/metrics.h"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>

namespace splitsim {
namespace {

using Interval = std::pair<double, double>;

// Total length of the union of `iv` (sorted in place).
double union_length(std::vector<Interval>* iv) {
  std::sort(iv->begin(), iv->end());
  double total = 0, cur_start = 0, cur_end = -std::numeric_limits<double>::infinity();
  bool open = false;
  for (const auto& [s, e] : *iv) {
    if (!open || s > cur_end) {
      if (open) total += cur_end - cur_start;
      cur_start = s;
      cur_end = e;
      open = true;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (open) total += cur_end - cur_start;
  return total;
}

double rate_of(const TimelineEvent& e) {
  const double d = e.duration_s();
  return d > 0 && e.bytes > 0 ? static_cast<double>(e.bytes) / d : 0.0;
}

Spread spread_of(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min_s = v.front();
  s.max_s = v.back();
  const size_t n = v.size();
  s.median_s = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return s;
}

struct PartyAcc {
  double sent = 0, received = 0, peak_send = 0, peak_recv = 0;
  std::vector<Interval> busy;
};

struct LinkAcc {
  double bytes = 0, peak = 0;
  std::vector<Interval> busy;
};

// Peak of +1 at F start / -1 at B end, -1 first on ties.
int64_t peak_stash(std::vector<std::pair<double, int>>* deltas) {
  std::sort(deltas->begin(), deltas->end());
  int64_t now = 0, peak = 0;
  for (const auto& [t, d] : *deltas) peak = std::max(peak, now += d);
  return peak;
}

void stage_metrics(const Timeline& tl, const Plan& plan, int64_t warmup, double steady,
                   Metrics* m) {
  const size_t K = plan.stages.size();
  // (stage, party) -> stash deltas / busy intervals.
  std::map<std::pair<int, int>, std::vector<std::pair<double, int>>> deltas;
  std::map<std::pair<int, int>, std::vector<Interval>> busy;
  // A micro-batch's activations go with its backward, or with its weight
  // pass where the schedule splits the backward (zb_h1).
  const EventKind releases =
      splits_backward(plan.schedule) ? EventKind::kWeight : EventKind::kBackward;
  for (const auto& e : tl.events) {
    if (e.stage < 0 || static_cast<size_t>(e.stage) >= K) continue;
    const auto key = std::make_pair(e.stage, e.party);
    if (e.kind == EventKind::kForward) deltas[key].emplace_back(e.start_s, +1);
    if (e.kind == releases) deltas[key].emplace_back(e.end_s, -1);
    if (is_compute(e.kind) && e.batch >= warmup) busy[key].emplace_back(e.start_s, e.end_s);
  }
  for (size_t k = 0; k < K; ++k) {
    StageMetrics s;
    s.stage = static_cast<int>(k);
    s.party = plan.stages[k].party;
    for (auto& [key, d] : deltas)
      if (key.first == s.stage)
        s.peak_stashed_microbatches = std::max(s.peak_stashed_microbatches, peak_stash(&d));
    for (auto& [key, iv] : busy)
      if (key.first == s.stage)
        s.busy_s_per_batch = std::max(s.busy_s_per_batch, union_length(&iv) / steady);
    s.peak_stash_bytes = s.peak_stashed_microbatches * plan.stages[k].stash_bytes_per_microbatch +
                         plan.stages[k].replay_bytes;
    m->stages.push_back(s);
  }
}

// With several clients: per client its own steady time per batch, busy
// time and bytes, gathered into the plan's groups (or one group of all),
// and per steady round how long it waited for its last client.
void client_group_metrics(const Timeline& tl, const Plan& plan, int64_t warmup, int64_t batches,
                          double t0, Metrics* m) {
  const size_t n = tl.client_parties.size();
  if (n < 2) return;
  std::vector<std::vector<double>> end(n, std::vector<double>(static_cast<size_t>(batches), t0));
  // A client's batch is its own work and tensors; the weights a training
  // mode moves between rounds (boundary -1) are the round's.
  for (const auto& e : tl.events)
    if (e.client >= 0 && static_cast<size_t>(e.client) < n &&
        (is_compute(e.kind) || e.boundary >= 0))
      end[e.client][e.batch] = std::max(end[e.client][e.batch], e.end_s);
  const double steady = static_cast<double>(batches - warmup);
  std::vector<double> per_batch(n);
  for (size_t c = 0; c < n; ++c)
    per_batch[c] = (end[c][batches - 1] - (warmup > 0 ? end[c][warmup - 1] : t0)) / steady;
  std::vector<double> waits;
  std::vector<int64_t> last_of(n, 0);  // rounds each client ended last
  for (int64_t b = warmup; b < batches; ++b) {
    double first = std::numeric_limits<double>::infinity(), last = 0;
    size_t latest = 0;
    for (size_t c = 0; c < n; ++c) {
      first = std::min(first, end[c][b]);
      if (end[c][b] > last) last = end[c][b], latest = c;
    }
    waits.push_back(last - first);
    ++last_of[latest];
  }
  m->round_wait_spread = spread_of(waits);
  std::vector<std::pair<std::string, int64_t>> groups;
  int64_t listed = 0;
  for (const PlanClientGroup& g : plan.client_groups) {
    groups.emplace_back(g.name, g.count);
    listed += g.count;
  }
  if (listed != static_cast<int64_t>(n)) groups = {{"clients", static_cast<int64_t>(n)}};
  size_t c = 0;
  for (const auto& [name, count] : groups) {
    ClientGroupMetrics g;
    g.name = name;
    g.clients = count;
    std::vector<double> times;
    for (int64_t i = 0; i < count; ++i, ++c) {
      const PartyMetrics& p = m->parties[static_cast<size_t>(tl.client_parties[c])];
      times.push_back(per_batch[c]);
      g.busy_s_per_batch += p.busy_s_per_batch / count;
      g.bytes_sent_per_batch += p.bytes_sent_per_batch / count;
      g.bytes_received_per_batch += p.bytes_received_per_batch / count;
      g.last_in_round += static_cast<double>(last_of[c]) / steady;
    }
    g.time_per_batch = spread_of(times);
    m->client_groups.push_back(g);
  }
}

// With a server link (network.server_bandwidth_bit_per_s): its two
// directions as links "clients->P" and "P->clients" for each party P that
// clients talk to, busy for their bytes at its rate; and each client's own
// link busy for its bytes at that client's rate (under sharing, a transfer
// lasts longer than its bytes need, so its interval says little).
void server_link_metrics(const Timeline& tl, const Plan& plan, int64_t warmup, double steady,
                         Metrics* m) {
  const double rate = plan.network.server_bandwidth_bit_per_s / 8.0 * plan.network.bandwidth_factor;
  if (!(rate > 0)) return;
  std::map<int32_t, int64_t> client_of;  // party -> client index
  for (size_t c = 0; c < tl.client_parties.size(); ++c)
    client_of[tl.client_parties[c]] = static_cast<int64_t>(c);
  std::map<std::pair<std::string, std::string>, LinkAcc> shared;
  for (const auto& e : tl.events) {
    if (e.batch < warmup || e.kind != EventKind::kSend) continue;
    const bool from_client = client_of.count(e.party) > 0, to_client = client_of.count(e.peer) > 0;
    if (from_client == to_client) continue;
    const auto key = from_client ? std::make_pair(std::string("clients"), tl.parties[e.peer])
                                 : std::make_pair(tl.parties[e.party], std::string("clients"));
    LinkAcc& l = shared[key];
    l.bytes += e.bytes;
    l.peak = std::max(l.peak, rate_of(e));
  }
  for (LinkMetrics& l : m->links) {
    const int32_t from = tl.party_index(l.from), to = tl.party_index(l.to);
    const bool from_client = client_of.count(from) > 0, to_client = client_of.count(to) > 0;
    if (from_client == to_client) continue;
    const double bytes_per_s = (from_client ? plan.client_up_bit_per_s(client_of[from])
                                            : plan.client_down_bit_per_s(client_of[to])) /
                               8.0 * plan.network.bandwidth_factor;
    l.busy_s_per_batch = l.bytes_per_batch / bytes_per_s;
    l.utilisation = m->time_per_batch_s > 0 ? l.busy_s_per_batch / m->time_per_batch_s : 0;
  }
  for (const auto& [key, acc] : shared) {
    LinkMetrics lm;
    lm.from = key.first;
    lm.to = key.second;
    lm.bytes_per_batch = acc.bytes / steady;
    lm.busy_s_per_batch = lm.bytes_per_batch / rate;
    lm.utilisation = m->time_per_batch_s > 0 ? lm.busy_s_per_batch / m->time_per_batch_s : 0;
    lm.peak_Bps = acc.peak;
    m->links.push_back(lm);
  }
  std::sort(m->links.begin(), m->links.end(), [](const LinkMetrics& a, const LinkMetrics& b) {
    return std::tie(a.from, a.to) < std::tie(b.from, b.to);
  });
}

// What one pass over the steady batches' events gathers: compute intervals
// per round, per party; transfers per party and per link.
struct SteadyEvents {
  std::vector<std::vector<Interval>> round_compute;
  std::vector<PartyAcc> party;
  std::map<std::pair<int, int>, LinkAcc> links;
};

SteadyEvents gather_steady_events(const Timeline& tl, int64_t warmup, int64_t batches) {
  SteadyEvents g{std::vector<std::vector<Interval>>(batches),
             std::vector<PartyAcc>(tl.parties.size()), {}};
  for (const auto& e : tl.events) {
    if (e.batch < warmup) continue;
    PartyAcc& p = g.party.at(e.party);
    if (is_compute(e.kind)) {
      g.round_compute[e.batch].emplace_back(e.start_s, e.end_s);
      p.busy.emplace_back(e.start_s, e.end_s);
    } else if (e.kind == EventKind::kSend) {
      p.sent += e.bytes;
      p.peak_send = std::max(p.peak_send, rate_of(e));
      LinkAcc& l = g.links[{e.party, e.peer}];
      l.bytes += e.bytes;
      l.peak = std::max(l.peak, rate_of(e));
      l.busy.emplace_back(e.start_s, e.end_s);
    } else {
      p.received += e.bytes;
      p.peak_recv = std::max(p.peak_recv, rate_of(e));
    }
  }
  return g;
}

// Time per batch over the steady window (from the end of the last warm-up
// round to the end of the last round) and the spread of the rounds.
void batch_times(const Timeline& tl, int64_t warmup, int64_t batches, double t0, Metrics* m) {
  std::vector<double> round_end(batches, t0);
  for (const auto& e : tl.events) round_end[e.batch] = std::max(round_end[e.batch], e.end_s);
  const double steady = static_cast<double>(batches - warmup);
  const double window_start = warmup > 0 ? round_end[warmup - 1] : t0;
  m->time_per_batch_s = (round_end[batches - 1] - window_start) / steady;
  std::vector<double> intervals;
  for (int64_t b = warmup; b < batches; ++b)
    intervals.push_back(round_end[b] - (b > 0 ? round_end[b - 1] : t0));
  m->time_per_batch_spread = spread_of(intervals);
  m->throughput_batches_per_s = m->time_per_batch_s > 0 ? tl.clients / m->time_per_batch_s : 0;
}

// Per party: bytes, average and peak bandwidth, busy time; the run's peaks
// (clients' sends, the others' receives) and its bubble fraction.
void party_metrics(const Timeline& tl, double steady, std::vector<PartyAcc>* party, Metrics* m) {
  std::vector<bool> is_client(tl.parties.size(), false);
  for (int32_t c : tl.client_parties) is_client.at(c) = true;
  double busy_sum = 0;
  int busy_parties = 0;
  for (size_t i = 0; i < tl.parties.size(); ++i) {
    PartyMetrics pm;
    pm.name = tl.parties[i];
    pm.client = is_client[i];
    PartyAcc& acc = (*party)[i];
    pm.bytes_sent_per_batch = acc.sent / steady;
    pm.bytes_received_per_batch = acc.received / steady;
    if (m->computation_time_s > 0) {
      pm.bandwidth_avg_send_Bps = pm.bytes_sent_per_batch / m->computation_time_s;
      pm.bandwidth_avg_recv_Bps = pm.bytes_received_per_batch / m->computation_time_s;
    }
    if (m->time_per_batch_s > 0) {
      pm.send_Bps_over_time_per_batch = pm.bytes_sent_per_batch / m->time_per_batch_s;
      pm.recv_Bps_over_time_per_batch = pm.bytes_received_per_batch / m->time_per_batch_s;
    }
    pm.peak_send_Bps = acc.peak_send;
    pm.peak_recv_Bps = acc.peak_recv;
    pm.busy_s_per_batch = union_length(&acc.busy) / steady;
    pm.utilisation = m->time_per_batch_s > 0 ? pm.busy_s_per_batch / m->time_per_batch_s : 0;
    if (!acc.busy.empty()) {
      busy_sum += pm.busy_s_per_batch;
      ++busy_parties;
    }
    if (pm.client)
      m->bandwidth_peak_client_Bps = std::max(m->bandwidth_peak_client_Bps, pm.peak_send_Bps);
    else
      m->bandwidth_peak_server_Bps = std::max(m->bandwidth_peak_server_Bps, pm.peak_recv_Bps);
    m->parties.push_back(pm);
  }
  m->bubble_fraction = busy_parties > 0 && m->time_per_batch_s > 0
                           ? 1.0 - busy_sum / (busy_parties * m->time_per_batch_s)
                           : 0.0;
}

// Per link (one direction between two parties): bytes, busy time, peak.
void link_metrics(const Timeline& tl, double steady,
                  std::map<std::pair<int, int>, LinkAcc>* links, Metrics* m) {
  for (auto& [key, acc] : *links) {
    LinkMetrics lm;
    lm.from = tl.parties[key.first];
    lm.to = tl.parties[key.second];
    lm.bytes_per_batch = acc.bytes / steady;
    lm.busy_s_per_batch = union_length(&acc.busy) / steady;
    lm.utilisation = m->time_per_batch_s > 0 ? lm.busy_s_per_batch / m->time_per_batch_s : 0;
    lm.peak_Bps = acc.peak;
    m->links.push_back(lm);
  }
  std::sort(m->links.begin(), m->links.end(), [](const LinkMetrics& a, const LinkMetrics& b) {
    return std::tie(a.from, a.to) < std::tie(b.from, b.to);
  });
}

// The busiest party or link, by utilisation.
void find_busiest(Metrics* m) {
  for (const auto& p : m->parties)
    if (p.utilisation > m->busiest_utilisation) {
      m->busiest_utilisation = p.utilisation;
      m->busiest_resource = p.name;
    }
  for (const auto& l : m->links)
    if (l.utilisation > m->busiest_utilisation) {
      m->busiest_utilisation = l.utilisation;
      m->busiest_resource = "link " + l.from + "->" + l.to;
    }
}

}  // namespace

const PartyMetrics* Metrics::party(const std::string& name) const {
  for (const auto& p : parties)
    if (p.name == name) return &p;
  return nullptr;
}

Metrics compute_metrics(const Timeline& tl, const Plan& plan, int64_t warmup) {
  int64_t batches = 0;
  double t0 = std::numeric_limits<double>::infinity(), t_end = 0;
  for (const auto& e : tl.events) {
    batches = std::max(batches, e.batch + 1);
    t0 = std::min(t0, e.start_s);
    t_end = std::max(t_end, e.end_s);
  }
  if (warmup < 0 || warmup >= batches)
    throw std::invalid_argument("compute_metrics: warm-up " + std::to_string(warmup) +
                                " must be below the " + std::to_string(batches) +
                                " batches in the timeline");
  Metrics m;
  m.scenario = plan.scenario;
  m.variant = plan.variant;
  m.schedule = schedule_name(plan.schedule);
  m.batches = batches;
  m.warmup_batches = warmup;
  m.clients = tl.clients;
  m.makespan_s = t_end - t0;
  batch_times(tl, warmup, batches, t0, &m);

  const double steady = static_cast<double>(batches - warmup);
  SteadyEvents g = gather_steady_events(tl, warmup, batches);
  double computation = 0;
  for (int64_t b = warmup; b < batches; ++b) computation += union_length(&g.round_compute[b]);
  m.computation_time_s = computation / steady;
  party_metrics(tl, steady, &g.party, &m);
  link_metrics(tl, steady, &g.links, &m);
  server_link_metrics(tl, plan, warmup, steady, &m);
  client_group_metrics(tl, plan, warmup, batches, t0, &m);
  find_busiest(&m);
  stage_metrics(tl, plan, warmup, steady, &m);
  return m;
}

int64_t served_party_peak_memory_bytes(const Plan& plan, const Metrics& m,
                                       const std::vector<int>& stages, int64_t clients,
                                       int64_t copies) {
  int64_t held = 0, stashed = 0, largest_work = 0;
  for (int k : stages) {
    const PlanStage& s = plan.stages.at(static_cast<size_t>(k));
    const int64_t own = s.peak_memory_bytes - std::max(s.activation_bytes(), s.step_bytes);
    held += (own - s.recv_bytes) * copies + s.recv_bytes * clients;
    if (static_cast<size_t>(k) < m.stages.size()) stashed += m.stages[k].peak_stash_bytes;
    largest_work = std::max({largest_work, s.work_bytes, s.step_bytes});
  }
  return held + stashed + largest_work;
}

}  // namespace splitsim
