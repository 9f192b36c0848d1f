// Pure parts of the session: how one transfer's two ends are joined.
#include "splitsim/exec/session.h"

#include <gtest/gtest.h>

#include <tuple>

namespace splitsim {
namespace {

TimelineEvent transfer(EventKind kind, int64_t microbatch, double start, double end) {
  TimelineEvent e;
  e.kind = kind;
  e.party = kind == EventKind::kSend ? 0 : 1;  // party 0 sends to party 1
  e.peer = 1 - e.party;
  e.boundary = 0;
  e.microbatch = microbatch;
  e.bytes = 1000;
  e.start_s = start;
  e.end_s = end;
  return e;
}

TEST(JoinTransferEnds, BothEndsGetOneIntervalFromFirstByteSentToLastByteReceived) {
  Timeline tl;
  // Micro-batch 0: sent at 1.0, locally done at 1.01 (bytes handed to the
  // socket), received at 2.0; the receive was posted ahead, at 0.5.
  tl.events.push_back(transfer(EventKind::kSend, 0, 1.0, 1.01));
  tl.events.push_back(transfer(EventKind::kRecv, 0, 0.5, 2.0));
  // Micro-batch 1: the receive was posted after the send started.
  tl.events.push_back(transfer(EventKind::kSend, 1, 3.0, 3.0));
  tl.events.push_back(transfer(EventKind::kRecv, 1, 3.5, 4.0));
  // A send nobody received (a partial run) keeps its own interval.
  tl.events.push_back(transfer(EventKind::kSend, 2, 5.0, 5.1));
  // The gradient direction of micro-batch 0 is another transfer.
  TimelineEvent back = transfer(EventKind::kRecv, 0, 0.0, 9.0);
  back.backward = 1;
  tl.events.push_back(back);

  join_transfer_ends(&tl);
  for (int i : {0, 1}) {
    EXPECT_DOUBLE_EQ(tl.events[i].start_s, 1.0);
    EXPECT_DOUBLE_EQ(tl.events[i].end_s, 2.0);
  }
  for (int i : {2, 3}) {  // posted late, the receive still spans the whole transfer
    EXPECT_DOUBLE_EQ(tl.events[i].start_s, 3.0);
    EXPECT_DOUBLE_EQ(tl.events[i].end_s, 4.0);
  }
  EXPECT_DOUBLE_EQ(tl.events[4].end_s, 5.1);
  EXPECT_DOUBLE_EQ(tl.events[5].start_s, 0.0);
  EXPECT_DOUBLE_EQ(tl.events[5].end_s, 9.0);
}

// A training mode's weights (boundary -1) go up from a client and down to it
// for the same client and batch: two transfers, told apart by direction.
TEST(JoinTransferEnds, WeightsUpAndDownForOneClientAndBatchAreTwoTransfers) {
  Timeline tl;
  for (const auto& [from, start, end] :
       {std::tuple{0, 1.0, 2.0}, std::tuple{1, 5.0, 6.0}}) {  // up, then the average down
    TimelineEvent send = transfer(EventKind::kSend, -1, start, start);
    send.boundary = -1;
    send.party = from;
    send.peer = 1 - from;
    TimelineEvent recv = send;
    recv.kind = EventKind::kRecv;
    recv.party = send.peer;
    recv.peer = from;
    recv.start_s = 0;
    recv.end_s = end;
    tl.events.push_back(send);
    tl.events.push_back(recv);
  }
  join_transfer_ends(&tl);
  EXPECT_DOUBLE_EQ(tl.events[0].end_s, 2.0);
  EXPECT_DOUBLE_EQ(tl.events[1].start_s, 1.0);
  EXPECT_DOUBLE_EQ(tl.events[2].end_s, 6.0);
  EXPECT_DOUBLE_EQ(tl.events[3].start_s, 5.0);
}

}  // namespace
}  // namespace splitsim
