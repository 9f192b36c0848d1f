// The end of a run: every rank's timeline and training figures gathered on
// rank 0, both ends of each transfer joined into one interval, and the
// metrics JSON (session.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

#include "session_tags.h"
#include "splitsim/exec/session.h"
#include "splitsim/sim/metrics.h"

namespace splitsim {
namespace {

using session_tags::kTagEvents;
using session_tags::kTagSizes;
using session_tags::kTagStats;

// Throws std::runtime_error unless every field a peer sent in an event can
// index what rank 0 holds (kinds, parties, clients) and every time is finite.
void check_event(const TimelineEvent& e, const Timeline& tl, int rank) {
  const auto parties = static_cast<int32_t>(tl.parties.size());
  const bool ok = static_cast<int32_t>(e.kind) >= 0 &&
                  static_cast<int32_t>(e.kind) <= static_cast<int32_t>(kLastEventKind) &&
                  e.party >= 0 && e.party < parties && e.peer >= -1 && e.peer < parties &&
                  (e.stage >= 0 || e.boundary == -1) && e.boundary >= -1 && e.client >= 0 &&
                  e.client < tl.clients && e.batch >= 0 && e.microbatch >= -1 && e.bytes >= 0 &&
                  std::isfinite(e.start_s) && std::isfinite(e.end_s);
  if (!ok) {
    throw std::runtime_error("rank " + std::to_string(rank) +
                             " sent an event outside the run (party, client or kind out of "
                             "range, or a time that is not finite); refusing its results");
  }
}

}  // namespace

void join_transfer_ends(Timeline* timeline) {
  // (from, to, boundary, direction, client, batch, micro-batch): a training
  // mode's weights (boundary -1) go up and down for one client and batch.
  using Key = std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t, int64_t, int64_t>;
  const auto key = [](const TimelineEvent& e, int32_t from, int32_t to) {
    return Key{from, to, e.boundary, e.backward, e.client, e.batch, e.microbatch};
  };
  std::map<Key, TimelineEvent*> sends;
  for (auto& e : timeline->events)
    if (e.kind == EventKind::kSend) sends[key(e, e.party, e.peer)] = &e;
  for (auto& e : timeline->events) {
    if (e.kind != EventKind::kRecv) continue;
    auto it = sends.find(key(e, e.peer, e.party));
    if (it == sends.end()) continue;
    TimelineEvent& send = *it->second;
    send.end_s = std::max(send.start_s, e.end_s);
    e.start_s = send.start_s;
    e.end_s = send.end_s;
  }
}

void gather(Transport& tr, const std::vector<double>& offsets_s, RunResult* result,
            std::chrono::milliseconds timeout, int64_t max_events) {
  constexpr int64_t kStatFields = 5;
  if (tr.rank() != 0) {
    const auto& ev = result->timeline.events;
    torch::Tensor sizes = torch::tensor(
        {static_cast<int64_t>(ev.size()), static_cast<int64_t>(result->stats.size()),
         result->batches_done, result->skipped_updates,
         result->peak_tensor_bytes.count(tr.rank()) != 0 ? result->peak_tensor_bytes.at(tr.rank())
                                                         : int64_t{0}},
        torch::kInt64);
    torch::Tensor events =
        torch::empty({static_cast<int64_t>(ev.size() * sizeof(TimelineEvent))}, torch::kUInt8);
    if (!ev.empty()) std::memcpy(events.data_ptr<uint8_t>(), ev.data(), events.numel());
    torch::Tensor stats =
        torch::empty({static_cast<int64_t>(result->stats.size()), kStatFields}, torch::kFloat64);
    for (size_t i = 0; i < result->stats.size(); ++i) {
      const BatchStats& s = result->stats[i];
      const double row[kStatFields] = {double(s.client), double(s.batch), s.loss, s.correct,
                                       s.samples};
      for (int64_t f = 0; f < kStatFields; ++f) stats[static_cast<int64_t>(i)][f] = row[f];
    }
    tr.send({sizes}, 0, kTagSizes)->wait(timeout);
    if (!ev.empty()) tr.send({events}, 0, kTagEvents)->wait(timeout);
    if (!result->stats.empty()) tr.send({stats}, 0, kTagStats)->wait(timeout);
    return;
  }
  for (int r = 1; r < tr.world_size(); ++r) {
    torch::Tensor sizes = torch::zeros({5}, torch::kInt64);
    tr.recv({sizes}, r, kTagSizes)->wait(timeout);
    const int64_t n_ev = sizes[0].item<int64_t>(), n_st = sizes[1].item<int64_t>();
    // Every length a peer announces is bounded before anything is allocated.
    if (n_ev < 0 || n_ev > max_events || n_st < 0 || n_st > max_events ||
        sizes[2].item<int64_t>() < 0 || sizes[3].item<int64_t>() < 0 ||
        sizes[4].item<int64_t>() < 0) {
      throw std::runtime_error("rank " + std::to_string(r) + " announced " + std::to_string(n_ev) +
                               " events and " + std::to_string(n_st) +
                               " batch records; this run has at most " +
                               std::to_string(max_events) + "; refusing its results");
    }
    result->batches_done = std::min(result->batches_done, sizes[2].item<int64_t>());
    result->skipped_updates += sizes[3].item<int64_t>();
    result->peak_tensor_bytes[r] = sizes[4].item<int64_t>();
    if (n_ev > 0) {
      torch::Tensor events =
          torch::empty({n_ev * static_cast<int64_t>(sizeof(TimelineEvent))}, torch::kUInt8);
      tr.recv({events}, r, kTagEvents)->wait(timeout);
      std::vector<TimelineEvent> got(static_cast<size_t>(n_ev));
      std::memcpy(got.data(), events.data_ptr<uint8_t>(), events.numel());
      for (auto& e : got) {
        check_event(e, result->timeline, r);
        e.start_s -= offsets_s[static_cast<size_t>(r)];
        e.end_s -= offsets_s[static_cast<size_t>(r)];
        result->timeline.events.push_back(e);
      }
    }
    if (n_st > 0) {
      torch::Tensor stats = torch::empty({n_st, kStatFields}, torch::kFloat64);
      tr.recv({stats}, r, kTagStats)->wait(timeout);
      for (int64_t i = 0; i < n_st; ++i) {
        auto row = stats[i];
        result->stats.push_back({static_cast<int>(row[0].item<double>()),
                                 static_cast<int64_t>(row[1].item<double>()), row[2].item<double>(),
                                 row[3].item<double>(), row[4].item<double>()});
      }
    }
  }
  join_transfer_ends(&result->timeline);
  sort_events(&result->timeline);
}

nlohmann::json exec_metrics_json(const RunSpec& spec, const RunResult& r) {
  const Plan& plan = spec.plan;
  nlohmann::json j;
  const int64_t batches = std::min(r.batches_done, plan.iterations);
  if (batches > 0) {
    Timeline tl = r.timeline;
    tl.events.erase(std::remove_if(tl.events.begin(), tl.events.end(),
                                   [&](const TimelineEvent& e) { return e.batch >= batches; }),
                    tl.events.end());
    // Resumed: the batches before the checkpoint ran in another process.
    const int64_t warmup = std::max(plan.warmup, r.first_batch);
    Metrics m = compute_metrics(tl, plan, std::min(warmup, batches - 1));
    m.source = "exec";
    to_json(j, m);
  } else {
    j["schema"] = "splitsim.metrics/1";
    j["source"] = "exec";
    j["scenario"] = plan.scenario;
    j["variant"] = plan.variant;
  }
  j["complete"] = r.complete;
  if (r.first_batch > 0) j["resumed_from_batch"] = r.first_batch;
  if (!r.complete) j["error"] = r.error;
  j["batches_completed"] = batches;
  // Training figures per batch, summed over the micro-batches (and averaged
  // over clients).
  std::map<int64_t, BatchStats> per_batch;
  for (const auto& s : r.stats) {
    if (s.batch >= batches) continue;
    BatchStats& t = per_batch[s.batch];
    t.batch = s.batch;
    t.loss += s.loss / plan.clients;
    t.correct += s.correct;
    t.samples += s.samples;
  }
  nlohmann::json losses = nlohmann::json::array(), accuracies = nlohmann::json::array();
  for (const auto& [b, s] : per_batch) {
    losses.push_back(s.loss);
    accuracies.push_back(s.samples > 0 ? s.correct / s.samples : 0.0);
  }
  nlohmann::json training = {{"loss_per_batch", losses},
                             {"accuracy_per_batch", accuracies},
                             {"skipped_updates", r.skipped_updates}};
  if (!losses.empty()) {
    training["loss_first"] = losses.front();
    training["loss_last"] = losses.back();
    training["accuracy_last"] = accuracies.back();
  }
  j["training"] = training;
  // Per party: the tensor bytes it held at most (measured where the rank
  // reported them) beside the plan's peak memory of its stages.
  const ExecTopology& topo = spec.topology;
  nlohmann::json memory = nlohmann::json::object();
  for (int rank = 0; rank < topo.world_size(); ++rank) {
    const int party = topo.rank_party[static_cast<size_t>(rank)];
    std::vector<int> stages;
    for (int k = 0; k < topo.stages; ++k) {
      bool here = false;
      for (int c = 0; c < topo.clients; ++c) here = here || topo.party_of(k, c) == party;
      if (here) stages.push_back(k);
    }
    const int64_t predicted = party_peak_memory_bytes(plan, stages);
    nlohmann::json entry = {{"predicted_peak_bytes", predicted}};
    const auto it = r.peak_tensor_bytes.find(rank);
    if (it != r.peak_tensor_bytes.end()) entry["measured_peak_tensor_bytes"] = it->second;
    memory[topo.parties[static_cast<size_t>(party)]] = entry;
  }
  j["memory"] = memory;
  return j;
}

}  // namespace splitsim
