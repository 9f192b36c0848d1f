#include "stage_wire.h"

#include <stdexcept>
#include <string>

namespace splitsim::exec_internal {

StageWire::StageWire(const PartyContext& ctx, int stage, int client)
    : ctx_(ctx),
      plan_(*ctx.plan),
      k_(stage),
      c_(client),
      K_(static_cast<int>(ctx.plan->stages.size())),
      m_(ctx.plan->chunks()) {}

int64_t StageWire::mb_size(int64_t mb) const {
  return plan_.microbatch_sizes[static_cast<size_t>(mb)];
}

int64_t StageWire::mb_offset(int64_t mb) const {
  int64_t off = 0;
  for (int64_t i = 0; i < mb; ++i) off += mb_size(i);
  return off;
}

int StageWire::party() const { return party_of(k_); }
int StageWire::party_of(int stage) const { return ctx_.topo->party_of(stage, c_); }
int StageWire::rank_of(int stage) const { return ctx_.topo->rank_of(stage, c_); }

std::vector<WireTensor> StageWire::layout(int b, bool backward, int64_t batch, int64_t mb) const {
  const PlanBoundary& bd = plan_.boundaries[static_cast<size_t>(b)];
  const std::vector<int64_t>& shape =
      ctx_.spec->boundaries[static_cast<size_t>(b)].activation_shape;
  const WireDType act = ctx_.spec->activation_dtype;
  if (!backward) return wire_layout(bd.forward.codec, shape, mb_size(mb), act, batch);
  // A decaying codec carries a shape of its own at each step.
  return wire_layout(bd.backward.codec, carried_shape(bd.forward.codec, shape, batch), mb_size(mb),
                     act, batch);
}

int StageWire::tag(int b, bool backward, int64_t batch, int64_t mb) const {
  const int64_t nb = static_cast<int64_t>(plan_.boundaries.size());
  const int64_t t = (((batch * m_ + mb) * nb + b) * 2 + backward) * ctx_.topo->clients + c_;
  return static_cast<int>(t % (int64_t{1} << 26));
}

std::vector<torch::Tensor> StageWire::buffers(int b, bool backward, int64_t batch, int64_t mb,
                                              int64_t* bytes) const {
  std::vector<torch::Tensor> out;
  for (const WireTensor& w : layout(b, backward, batch, mb)) {
    out.push_back(torch::empty(w.shape, torch::dtype(to_torch(w.dtype))));
    *bytes += w.bytes();
  }
  return out;
}

int64_t StageWire::to_wire(int b, bool backward, int64_t batch, int64_t mb,
                           std::vector<torch::Tensor>* wire) const {
  const auto want = layout(b, backward, batch, mb);
  if (wire->size() != want.size())
    throw std::logic_error("codec packed " + std::to_string(wire->size()) +
                           " tensors, layout has " + std::to_string(want.size()));
  int64_t bytes = 0;
  for (size_t i = 0; i < wire->size(); ++i) {
    torch::Tensor t = (*wire)[i].detach().to(torch::kCPU, to_torch(want[i].dtype));
    if (t.numel() != want[i].numel())
      throw std::logic_error("boundary " + std::to_string(b) + ": packed tensor " +
                             std::to_string(i) + " has " + std::to_string(t.numel()) +
                             " values, the cost model says " + std::to_string(want[i].numel()));
    (*wire)[i] = t.reshape(want[i].shape).contiguous();
    bytes += static_cast<int64_t>((*wire)[i].nbytes());
  }
  return bytes;
}

}  // namespace splitsim::exec_internal
