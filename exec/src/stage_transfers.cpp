#include "stage_transfers.h"

namespace splitsim::exec_internal {

TimelineEvent stage_event(const StageWire& wire, EventKind kind, const Op& op, double t0,
                          double t1) {
  TimelineEvent e;
  e.kind = kind;
  e.party = wire.party();
  e.stage = wire.stage();
  e.client = wire.client();
  e.batch = op.batch;
  e.microbatch = op.microbatch;
  e.start_s = t0;
  e.end_s = t1;
  return e;
}

size_t StageTransfers::record(EventKind kind, const Op& op, double t0, double t1, int b,
                              bool backward, int peer_stage, int64_t bytes) {
  TimelineEvent e = stage_event(wire_, kind, op, t0, t1);
  e.boundary = b;
  e.backward = backward ? 1 : 0;
  e.peer = wire_.party_of(peer_stage);
  e.bytes = bytes;
  out_->events.push_back(e);
  return out_->events.size() - 1;
}

void StageTransfers::post_receive(size_t j, const Op& op, int b, bool backward, int peer_stage) {
  PostedRecv r;
  r.buffers = wire_.buffers(b, backward, op.batch, op.microbatch, &r.bytes);
  r.post_s = ctx_.now_s();
  r.transfer = ctx_.transport->recv(r.buffers, wire_.rank_of(peer_stage), tag(b, backward, op));
  recvs_[j] = std::move(r);
}

std::vector<torch::Tensor> StageTransfers::take_receive(size_t j, const Op& op, int b,
                                                        bool backward, int peer_stage) {
  PostedRecv r = std::move(recvs_.at(j));
  recvs_.erase(j);
  r.transfer->wait(ctx_.options.timeout);
  if (wire_.remote(peer_stage))
    record(EventKind::kRecv, op, r.post_s, ctx_.seconds_at(r.transfer->completed_at()), b, backward,
           peer_stage, r.bytes);
  std::vector<torch::Tensor> out;
  for (auto& t : r.buffers) out.push_back(t.to(ctx_.device));
  return out;
}

void StageTransfers::send(const Op& op, int b, bool backward, std::vector<torch::Tensor> wire,
                          int peer_stage) {
  const int64_t bytes = wire_.to_wire(b, backward, op.batch, op.microbatch, &wire);
  const double t0 = ctx_.now_s();
  auto transfer = ctx_.transport->send(wire, wire_.rank_of(peer_stage), tag(b, backward, op));
  if (!wire_.remote(peer_stage)) return;  // kept: the transfer object holds the tensors
  const size_t e = record(EventKind::kSend, op, t0, t0, b, backward, peer_stage, bytes);
  sends_.push_back({transfer, e});
}

void StageTransfers::drop_completed_sends() {
  while (!sends_.empty() && sends_.front().transfer->ready()) wait_oldest_send();
}

void StageTransfers::wait_sends(size_t n) {
  while (sends_.size() > n) wait_oldest_send();
}

// The send event ends when its transfer completed.
void StageTransfers::wait_oldest_send() {
  PendingSend s = sends_.front();
  sends_.pop_front();
  s.transfer->wait(ctx_.options.timeout);
  out_->events[s.event].end_s = ctx_.seconds_at(s.transfer->completed_at());
}

}  // namespace splitsim::exec_internal
