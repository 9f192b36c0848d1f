#pragma once
// Timeline: what happened during a training run, event by event. Both the
// simulator (sim/) and the real execution (exec/) produce one; Metrics and
// the Chrome trace are computed from it, so sim and exec report the same
// figures under the same names. A plain value type: no SimGrid, no LibTorch.
#include <cstdint>
#include <string>
#include <vector>

namespace splitsim {

enum class EventKind : int32_t {
  kForward,    // a stage's forward of one micro-batch (model units only)
  kBackward,   // a stage's backward of one micro-batch
  kRecompute,  // fr: the forward replayed inside the backward
  kUpdate,     // a stage's optimizer step (microbatch = -1)
  kEncode,     // codec work before a send (sender side)
  kDecode,     // codec work after a receive (receiver side)
  kSend,       // a transfer, on the sending party's side
  kRecv,       // the same transfer, on the receiving party's side
  kWeight,     // zb_h1: a stage's weight-gradient pass of one micro-batch
  kAverage,    // splitfed: the server averaging the clients' weights (stage, client -1)
};
// The last kind: every kind's value lies in [kForward, kLastEventKind].
inline constexpr EventKind kLastEventKind = EventKind::kAverage;
// "fwd", "bwd", "recompute", "update", "encode", "decode", "send", "recv",
// "weight", "average".
const char* event_kind_name(EventKind kind);
// True for the kinds that occupy a party's processor (all but send/recv).
bool is_compute(EventKind kind);

// One interval. Kept trivially copyable (isolated simulations ship events
// through a pipe as raw bytes): names live in Timeline::parties.
struct TimelineEvent {
  EventKind kind = EventKind::kForward;
  int32_t party = 0;      // index into Timeline::parties: where it ran
  int32_t peer = -1;      // send: receiving party; recv: sending party; else -1
  int32_t stage = 0;      // stage index in the Plan (send: sender, recv: receiver)
  int32_t boundary = -1;  // send/recv/encode/decode: the Plan boundary index (-1: weights)
  int32_t backward = 0;   // send/recv/encode/decode: 1 for the gradient direction
  int32_t client = 0;     // which client's batch (0 with one client)
  int32_t reserved = 0;
  int64_t batch = 0;       // batch index of that client, from 0
  int64_t microbatch = 0;  // micro-batch index within the batch; -1 for updates
  int64_t bytes = 0;       // send/recv: bytes on the wire
  double start_s = 0;
  double end_s = 0;

  double duration_s() const { return end_s - start_s; }
};

// A training mode's averaging of the round closed by `batch` on `party`
// (no stage's, no client's), from start_s to end_s.
TimelineEvent average_event(int32_t party, int64_t batch, double start_s, double end_s);

struct Timeline {
  std::vector<std::string> parties;  // "client", "server", "client3", "gpu1", ...
  // Parties that own the data (the client role; replicas with several clients).
  std::vector<int32_t> client_parties;
  int64_t clients = 1;
  std::vector<TimelineEvent> events;

  // Index of `name` in parties, or -1.
  int32_t party_index(const std::string& name) const;
  // Index of `name`, appending it when missing.
  int32_t add_party(const std::string& name);
};

// The name shared by sim and exec traces:
//   "F s1 mb3", "B s1 mb3", "R s1 mb3", "update s1",
//   "encode fwd b0 mb3", "decode bwd b1 mb0", "xfer fwd b0 mb3" (send and recv),
//   "xfer weights" (a training mode's weights, boundary -1), "average",
// where sN is the stage, bN the boundary (Plan.boundaries index), mbN the micro-batch.
// The batch and the client are trace arguments, not part of the name.
std::string event_name(const TimelineEvent& e);

// Sorts events by (start, end, party, kind, client, batch, microbatch, stage,
// boundary): a canonical order, so equal timelines compare and print equal.
void sort_events(Timeline* timeline);

}  // namespace splitsim
