#pragma once
// A (stage, client) instance's transfers in flight (stage_instance.cpp): the
// receives posted ahead of the ops that take them, and the sends not yet
// known to be complete. A transfer to or from another party is a Timeline
// event: a receive from its post to its arrival, a send from its call to its
// completion.
#include <torch/torch.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "party_context.h"
#include "splitsim/costmodel/schedule.h"
#include "stage_wire.h"

namespace splitsim::exec_internal {

// An event of this instance's, with its party, stage, client and op filled.
TimelineEvent stage_event(const StageWire& wire, EventKind kind, const Op& op, double t0,
                          double t1);

class StageTransfers {
 public:
  StageTransfers(PartyContext& ctx, const StageWire& wire, InstanceResult* out)
      : ctx_(ctx), wire_(wire), out_(out) {}

  // Posts the receive of boundary b (the gradient's when `backward`) from
  // `peer_stage` that op j will take.
  void post_receive(size_t j, const Op& op, int b, bool backward, int peer_stage);
  // Waits for op j's receive; returns its buffers on the party's device.
  std::vector<torch::Tensor> take_receive(size_t j, const Op& op, int b, bool backward,
                                          int peer_stage);

  // Checks the packed tensors against the cost model's layout (the wire
  // bytes formula) and sends them; the send completes in the background,
  // the transfer holding the tensors.
  void send(const Op& op, int b, bool backward, std::vector<torch::Tensor> wire, int peer_stage);
  // Frees every send at the front of the queue whose transfer completed.
  // A sent tensor goes once it crossed, not at the next update: a
  // backward's input gradient would otherwise still be held during the next
  // backward, which the plan does not count.
  void drop_completed_sends();
  // Waits for the oldest sends until at most `n` are in flight.
  void wait_sends(size_t n);

 private:
  struct PostedRecv {
    std::shared_ptr<Transfer> transfer;
    std::vector<torch::Tensor> buffers;
    double post_s = 0;
    int64_t bytes = 0;
  };
  struct PendingSend {
    std::shared_ptr<Transfer> transfer;
    size_t event = 0;
  };

  int tag(int b, bool backward, const Op& op) const {
    return wire_.tag(b, backward, op.batch, op.microbatch);
  }
  size_t record(EventKind kind, const Op& op, double t0, double t1, int b, bool backward,
                int peer_stage, int64_t bytes);
  void wait_oldest_send();

  PartyContext& ctx_;
  const StageWire& wire_;
  InstanceResult* out_;
  std::map<size_t, PostedRecv> recvs_;  // by op index
  std::deque<PendingSend> sends_;
};

}  // namespace splitsim::exec_internal
