#pragma once
// What a (stage, client) instance needs to put its tensors on the wire and
// take them off, shared by the training (stage_instance.cpp) and the
// held-out evaluation (stage_evaluation.cpp): the plan's micro-batches, the
// wire layout of a boundary (the cost model's), the tags, receive buffers,
// and the codec's packed tensors checked against the layout.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "party_context.h"
#include "splitsim/costmodel/codec.h"

namespace splitsim::exec_internal {

class StageWire {
 public:
  StageWire(const PartyContext& ctx, int stage, int client);

  int stage() const { return k_; }
  int client() const { return c_; }
  int stages() const { return K_; }
  int64_t chunks() const { return m_; }
  int64_t mb_size(int64_t mb) const;
  int64_t mb_offset(int64_t mb) const;  // first sample of micro-batch mb in its batch
  int party() const;                    // this instance's party
  int party_of(int stage) const;        // the party holding `stage` for this client
  int rank_of(int stage) const;
  bool remote(int stage) const { return party_of(stage) != party(); }

  // The layout of boundary b in one direction for micro-batch `mb` at step `batch`.
  std::vector<WireTensor> layout(int b, bool backward, int64_t batch, int64_t mb) const;
  // The transport tag of that transfer (< 2^26).
  int tag(int b, bool backward, int64_t batch, int64_t mb) const;
  // Empty CPU tensors in the layout; adds their bytes to *bytes.
  std::vector<torch::Tensor> buffers(int b, bool backward, int64_t batch, int64_t mb,
                                     int64_t* bytes) const;
  // The codec's packed tensors moved to the CPU in the layout's dtypes and
  // shapes; returns their bytes. Throws std::logic_error when they do not
  // match the layout (the wire bytes formula).
  int64_t to_wire(int b, bool backward, int64_t batch, int64_t mb,
                  std::vector<torch::Tensor>* wire) const;

 private:
  const PartyContext& ctx_;
  const Plan& plan_;
  int k_, c_, K_;
  int64_t m_;
};

// Held-out evaluation after `done` training batches (RunOptions::eval_every),
// run by every stage instance after that batch's update: each eval batch
// goes forward micro-batch by micro-batch, in eval mode, without gradients,
// the codecs at step `done`; the last stage scores them into out->evals.
// `serial` counts the eval batches so far (their tags, past every training
// batch's).
void evaluate_stage(PartyContext& ctx, const StageWire& wire, int64_t done, int64_t* serial,
                    InstanceResult* out);

}  // namespace splitsim::exec_internal
