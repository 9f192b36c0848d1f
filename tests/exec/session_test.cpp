// Pure parts of the session: how one transfer's two ends are joined.
#include "splitsim/exec/session.h"

#include <gtest/gtest.h>

namespace splitsim {
namespace {

TimelineEvent transfer(EventKind kind, int64_t microbatch, double start, double end) {
  TimelineEvent e;
  e.kind = kind;
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

// Chunks sent back to back queue on one connection: a message's first byte
// leaves when the one before it has arrived, not when it was posted, so each
// one's rate is the link's, as the simulator's are.
TEST(JoinTransferEnds, AQueuedMessageStartsWhenTheOneBeforeItArrived) {
  Timeline tl;
  // Three 1000-byte chunks posted at 0.0, 0.1, 0.2 on a 1000 B/s link.
  for (int mb = 0; mb < 3; ++mb) {
    tl.events.push_back(transfer(EventKind::kSend, mb, 0.1 * mb, 0.1 * mb + 0.01));
    tl.events.push_back(transfer(EventKind::kRecv, mb, 0.0, 1.0 + mb));
  }
  // Another direction (server to client) is not queued behind them.
  TimelineEvent other = transfer(EventKind::kSend, 0, 0.5, 0.5);
  other.party = 1;
  other.peer = 0;
  other.boundary = 1;
  tl.events.push_back(other);
  TimelineEvent other_recv = other;
  other_recv.kind = EventKind::kRecv;
  other_recv.party = 0;
  other_recv.peer = 1;
  other_recv.start_s = 0.0;
  other_recv.end_s = 1.5;
  tl.events.push_back(other_recv);

  join_transfer_ends(&tl);
  for (int mb = 0; mb < 3; ++mb) {
    const TimelineEvent& send = tl.events[2 * mb];
    const TimelineEvent& recv = tl.events[2 * mb + 1];
    EXPECT_DOUBLE_EQ(send.start_s, mb == 0 ? 0.0 : mb);
    EXPECT_DOUBLE_EQ(send.end_s, 1.0 + mb);
    EXPECT_DOUBLE_EQ(recv.start_s, send.start_s);
    EXPECT_DOUBLE_EQ(recv.end_s, send.end_s);
    EXPECT_DOUBLE_EQ(send.bytes / send.duration_s(), 1000.0);
  }
  EXPECT_DOUBLE_EQ(tl.events[6].start_s, 0.5);
  EXPECT_DOUBLE_EQ(tl.events[7].start_s, 0.5);
  EXPECT_DOUBLE_EQ(tl.events[7].end_s, 1.5);
}

}  // namespace
}  // namespace splitsim
