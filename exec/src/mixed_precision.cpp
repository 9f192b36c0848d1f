#include "splitsim/exec/mixed_precision.h"

#include <ATen/autocast_mode.h>

namespace splitsim {

bool autocast_applies(const torch::Device& device, const std::string& precision) {
  if (device.is_cuda()) return precision == "fp16" || precision == "bf16";
  return device.is_cpu() && precision == "bf16";
}

AutocastGuard::AutocastGuard(const torch::Device& device, const std::string& precision) {
  if (!autocast_applies(device, precision)) return;
  active_ = true;
  cuda_ = device.is_cuda();
  const at::ScalarType dtype = precision == "fp16" ? at::kHalf : at::kBFloat16;
  if (cuda_) {
    was_enabled_ = at::autocast::is_enabled();
    old_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(true);
  } else {
    was_enabled_ = at::autocast::is_cpu_enabled();
    old_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(true);
  }
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  // As torch.autocast's exit: the cast weights are dropped when the
  // outermost region ends (they would go stale after the optimizer step).
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  if (cuda_) {
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(old_dtype_);
  } else {
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(old_dtype_);
  }
}

}  // namespace splitsim
