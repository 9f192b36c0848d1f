#include "splitsim/sim/timeline.h"

#include <algorithm>
#include <tuple>

namespace splitsim {

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::kForward:
      return "fwd";
    case EventKind::kBackward:
      return "bwd";
    case EventKind::kRecompute:
      return "recompute";
    case EventKind::kUpdate:
      return "update";
    case EventKind::kEncode:
      return "encode";
    case EventKind::kDecode:
      return "decode";
    case EventKind::kSend:
      return "send";
    case EventKind::kRecv:
      return "recv";
    case EventKind::kWeight:
      return "weight";
    case EventKind::kAverage:
      return "average";
  }
  return "?";
}

bool is_compute(EventKind kind) { return kind != EventKind::kSend && kind != EventKind::kRecv; }

TimelineEvent average_event(int32_t party, int64_t batch, double start_s, double end_s) {
  TimelineEvent e;
  e.kind = EventKind::kAverage;
  e.party = party;
  e.stage = -1;
  e.client = -1;
  e.batch = batch;
  e.microbatch = -1;
  e.start_s = start_s;
  e.end_s = end_s;
  return e;
}

int32_t Timeline::party_index(const std::string& name) const {
  for (size_t i = 0; i < parties.size(); ++i)
    if (parties[i] == name) return static_cast<int32_t>(i);
  return -1;
}

int32_t Timeline::add_party(const std::string& name) {
  const int32_t i = party_index(name);
  if (i >= 0) return i;
  parties.push_back(name);
  return static_cast<int32_t>(parties.size() - 1);
}

std::string event_name(const TimelineEvent& e) {
  const std::string s = "s" + std::to_string(e.stage);
  const std::string mb = "mb" + std::to_string(e.microbatch);
  const std::string dir = e.backward ? "bwd" : "fwd";
  const std::string b = "b" + std::to_string(e.boundary);
  switch (e.kind) {
    case EventKind::kForward:
      return "F " + s + " " + mb;
    case EventKind::kBackward:
      return "B " + s + " " + mb;
    case EventKind::kWeight:
      return "W " + s + " " + mb;
    case EventKind::kRecompute:
      return "R " + s + " " + mb;
    case EventKind::kUpdate:
      return "update " + s;
    case EventKind::kEncode:
      return "encode " + dir + " " + b + " " + mb;
    case EventKind::kDecode:
      return "decode " + dir + " " + b + " " + mb;
    case EventKind::kAverage:
      return "average";
    case EventKind::kSend:
    case EventKind::kRecv:
      if (e.boundary < 0) return "xfer weights";
      return "xfer " + dir + " " + b + " " + mb;
  }
  return "?";
}

void sort_events(Timeline* timeline) {
  auto key = [](const TimelineEvent& e) {
    return std::make_tuple(e.start_s, e.end_s, e.party, static_cast<int>(e.kind), e.client, e.batch,
                           e.microbatch, e.stage, e.boundary, e.backward, e.peer);
  };
  std::stable_sort(timeline->events.begin(), timeline->events.end(),
                   [&](const TimelineEvent& a, const TimelineEvent& b) { return key(a) < key(b); });
}

}  // namespace splitsim
