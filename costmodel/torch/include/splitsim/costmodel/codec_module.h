#pragma once
// The compression catalogue as real LibTorch modules (see codec.h for the
// formulas). Sender:   y = carry(x)  (differentiable; trainable inserts only)
//                      wire = pack(y) (no grad) -> goes on the wire
// Receiver:            y_hat = unpack(wire, batch) (no grad, carried shape)
//                      x_hat = expand(y_hat) (differentiable; inserts only)
// The gradient of y_hat goes back (through the backward codec's pack/unpack)
// and the sender calls y.backward(grad).
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "splitsim/costmodel/codec.h"

namespace splitsim {

torch::ScalarType to_torch(WireDType t);
WireDType to_wire(torch::ScalarType t);

class CodecEncoder : public torch::nn::Module {
 public:
  virtual torch::Tensor carry(const torch::Tensor& x) { return x; }
  virtual std::vector<torch::Tensor> pack(const torch::Tensor& y) = 0;
  // Training step, for decaying codecs.
  void set_step(int64_t step) { step_ = step; }

 protected:
  int64_t step_ = 0;
};

class CodecDecoder : public torch::nn::Module {
 public:
  virtual torch::Tensor unpack(const std::vector<torch::Tensor>& wire, int64_t batch) = 0;
  virtual torch::Tensor expand(const torch::Tensor& y_hat) { return y_hat; }
  void set_step(int64_t step) { step_ = step; }

 protected:
  int64_t step_ = 0;
};

// `shape` is the per-sample shape of the activation at the cut. Weights of the
// trainable inserts are drawn from `seed`; sender and receiver pass the same seed.
std::shared_ptr<CodecEncoder> make_encoder(const CodecSpec& spec, const std::vector<int64_t>& shape,
                                           uint64_t seed = 0);
std::shared_ptr<CodecDecoder> make_decoder(const CodecSpec& spec, const std::vector<int64_t>& shape,
                                           uint64_t seed = 0);

}  // namespace splitsim
