#pragma once
// Mixed-precision compute in exec (the scenario's "compute_precision"): a
// stage's forward runs under LibTorch's autocast, so that matmuls and
// convolutions compute in half precision while the weights, gradients and
// optimizer stay FP32 (exec/README.md "Mixed precision"). CUDA takes fp16
// and bf16; LibTorch 1.13's CPU autocast takes bf16 only, so fp16 on a CPU
// computes in FP32.
#include <torch/torch.h>

#include <string>

namespace splitsim {

// Whether `precision` ("fp32" | "fp16" | "bf16") runs under autocast on `device`.
bool autocast_applies(const torch::Device& device, const std::string& precision);

// Autocast on for its lifetime, on this thread (autocast state is
// per-thread), where autocast_applies; a no-op otherwise. Restores the
// previous state and clears autocast's cache of cast weights at the end.
class AutocastGuard {
 public:
  AutocastGuard(const torch::Device& device, const std::string& precision);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;
  bool active() const { return active_; }

 private:
  bool active_ = false, cuda_ = false;
  bool was_enabled_ = false;
  at::ScalarType old_dtype_ = at::kFloat;
};

}  // namespace splitsim
