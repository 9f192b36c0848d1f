#include "splitsim/sim/trace.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace splitsim {
namespace {

constexpr int kPartiesPid = 1;
constexpr int kLinksPid = 2;

// Tracks ("client", "client->server") in first-use order; each has lanes so
// that the events of one lane never overlap.
class Tracks {
 public:
  // Returns the tid for an event [start, end) on `track`.
  int place(const std::string& track, double start, double end) {
    auto it = lanes_.find(track);
    if (it == lanes_.end()) {
      order_.push_back(track);
      it = lanes_.emplace(track, std::vector<Lane>{}).first;
    }
    std::vector<Lane>& lanes = it->second;
    for (Lane& lane : lanes)
      if (lane.end <= start) {
        lane.end = end;
        return lane.tid;
      }
    lanes.push_back({next_tid_++, end});
    return lanes.back().tid;
  }
  // Thread-name metadata for every lane, in creation order.
  void names(int pid, nlohmann::json* out) const {
    for (const auto& track : order_) {
      const auto& lanes = lanes_.at(track);
      for (size_t i = 0; i < lanes.size(); ++i) {
        const std::string name = i == 0 ? track : track + " #" + std::to_string(i + 1);
        out->push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", pid},
                        {"tid", lanes[i].tid},
                        {"args", {{"name", name}}}});
        out->push_back({{"name", "thread_sort_index"},
                        {"ph", "M"},
                        {"pid", pid},
                        {"tid", lanes[i].tid},
                        {"args", {{"sort_index", lanes[i].tid}}}});
      }
    }
  }

 private:
  struct Lane {
    int tid;
    double end;
  };
  std::map<std::string, std::vector<Lane>> lanes_;
  std::vector<std::string> order_;
  int next_tid_ = 1;
};

}  // namespace

void write_chrome_trace(const Timeline& timeline, std::ostream& os) {
  std::vector<const TimelineEvent*> events;
  events.reserve(timeline.events.size());
  for (const auto& e : timeline.events)
    if (e.kind != EventKind::kRecv) events.push_back(&e);  // a transfer is drawn once
  std::stable_sort(
      events.begin(), events.end(),
      [](const TimelineEvent* a, const TimelineEvent* b) { return a->start_s < b->start_s; });
  // Every party gets a track, in Timeline order, even if it never computed.
  Tracks party_tracks, link_tracks;
  for (const auto& p : timeline.parties) party_tracks.place(p, -1, -1);

  nlohmann::json out = nlohmann::json::array();
  out.push_back({{"name", "process_name"},
                 {"ph", "M"},
                 {"pid", kPartiesPid},
                 {"args", {{"name", "parties"}}}});
  out.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", kLinksPid}, {"args", {{"name", "links"}}}});
  nlohmann::json body = nlohmann::json::array();
  for (const TimelineEvent* e : events) {
    const bool xfer = e->kind == EventKind::kSend;
    const std::string& party = timeline.parties.at(e->party);
    const std::string track = xfer ? party + "->" + timeline.parties.at(e->peer) : party;
    const int tid = (xfer ? link_tracks : party_tracks).place(track, e->start_s, e->end_s);
    nlohmann::json args = {{"batch", e->batch}, {"client", e->client}, {"stage", e->stage}};
    if (e->microbatch >= 0) args["microbatch"] = e->microbatch;
    if (xfer) args["bytes"] = e->bytes;
    body.push_back({{"name", event_name(*e)},
                    {"cat", event_kind_name(e->kind)},
                    {"ph", "X"},
                    {"pid", xfer ? kLinksPid : kPartiesPid},
                    {"tid", tid},
                    {"ts", e->start_s * 1e6},
                    {"dur", e->duration_s() * 1e6},
                    {"args", std::move(args)}});
  }
  party_tracks.names(kPartiesPid, &out);
  link_tracks.names(kLinksPid, &out);
  for (auto& e : body) out.push_back(std::move(e));
  os << nlohmann::json{{"traceEvents", std::move(out)}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

}  // namespace splitsim
