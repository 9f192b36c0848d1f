// Chrome trace-event JSON of a literal timeline.
#include "splitsim/sim/trace.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace splitsim {
namespace {

TimelineEvent ev(EventKind kind, int party, int peer, int64_t mb, double start, double end) {
  TimelineEvent e;
  e.kind = kind;
  e.party = party;
  e.peer = peer;
  e.stage = party == 0 ? 0 : 1;
  e.boundary = kind == EventKind::kSend || kind == EventKind::kRecv ? 0 : -1;
  e.microbatch = mb;
  e.bytes = peer >= 0 ? 1000 : 0;
  e.start_s = start;
  e.end_s = end;
  return e;
}

nlohmann::json trace_of(const Timeline& tl) {
  std::ostringstream os;
  write_chrome_trace(tl, os);
  return nlohmann::json::parse(os.str());
}

Timeline sample() {
  Timeline tl;
  tl.parties = {"client", "server"};
  tl.client_parties = {0};
  tl.events = {ev(EventKind::kForward, 0, -1, 0, 0.0, 1e-3),
               ev(EventKind::kSend, 0, 1, 0, 1e-3, 3e-3),
               ev(EventKind::kRecv, 1, 0, 0, 1e-3, 3e-3),
               ev(EventKind::kSend, 0, 1, 1, 2e-3, 4e-3),  // overlaps the first transfer
               ev(EventKind::kRecv, 1, 0, 1, 2e-3, 4e-3),
               ev(EventKind::kForward, 1, -1, 0, 3e-3, 5e-3)};
  return tl;
}

TEST(TraceTest, OneTrackPerPartyAndPerLinkDirection) {
  const nlohmann::json j = trace_of(sample());
  std::map<std::pair<int, int>, std::string> threads;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      threads[{e.at("pid").get<int>(), e.at("tid").get<int>()}] = e.at("args").at("name");
  std::vector<std::string> names;
  for (const auto& [key, name] : threads) names.push_back(name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"client", "server", "client->server", "client->server #2"}));
}

TEST(TraceTest, EventsUseTheSharedNamesInMicroseconds) {
  const nlohmann::json j = trace_of(sample());
  std::vector<std::string> names;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "X") {
      names.push_back(e.at("name"));
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
    }
  // Each transfer is drawn once (the recv half is not).
  EXPECT_EQ(names, (std::vector<std::string>{"F s0 mb0", "xfer fwd b0 mb0", "xfer fwd b0 mb1",
                                             "F s1 mb0"}));
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("name") == "F s1 mb0") {
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 3000.0);
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 2000.0);
    }
}

TEST(TraceTest, EqualTimelinesGiveIdenticalBytes) {
  // Two timelines built apart, the second with its events in another order
  // (as two runs may record them): the trace is the same, byte for byte.
  Timeline first = sample();
  Timeline second;
  second.parties = {"client", "server"};
  second.client_parties = {0};
  for (auto it = first.events.rbegin(); it != first.events.rend(); ++it)
    second.events.push_back(*it);
  sort_events(&first);
  sort_events(&second);
  std::ostringstream a, b;
  write_chrome_trace(first, a);
  write_chrome_trace(second, b);
  EXPECT_EQ(a.str(), b.str());
  // ... and a timeline that differs by one microsecond does not.
  second.events.back().end_s += 1e-6;
  std::ostringstream c;
  write_chrome_trace(second, c);
  EXPECT_NE(a.str(), c.str());
}

TEST(TraceTest, EventNamesAreSharedWithExec) {
  TimelineEvent e;
  e.kind = EventKind::kUpdate;
  e.stage = 2;
  EXPECT_EQ(event_name(e), "update s2");
  e.kind = EventKind::kEncode;
  e.boundary = 1;
  e.backward = 1;
  e.microbatch = 3;
  EXPECT_EQ(event_name(e), "encode bwd b1 mb3");
  e.kind = EventKind::kBackward;
  EXPECT_EQ(event_name(e), "B s2 mb3");
}

}  // namespace
}  // namespace splitsim
