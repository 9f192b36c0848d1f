// Meta kernels (shapes only) for the ATen ops that the zoo's transformers run
// and LibTorch 1.13 gives no Meta kernel in C++ (Python registers its own in
// torch/_meta_registrations.py, which a C++ program does not load). Each
// gives its output's shape and dtype as the CPU kernel does, and nothing
// else: measure_model observes the op by name and input shapes, so the
// kernel only has to let the step go on. Checked against the CPU step,
// profile for profile (tests/costmodel/measure_shapes_test.cpp).
#include "meta_kernels.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include <array>
#include <tuple>
#include <vector>

namespace splitsim {
namespace {

at::Tensor index_select_meta(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  std::vector<int64_t> sizes = self.sizes().vec();
  if (!sizes.empty())
    sizes[static_cast<size_t>(at::maybe_wrap_dim(dim, self.dim()))] = index.numel();
  return at::empty(sizes, self.options());
}

// Registered so that the meta step takes the same path as the CPU's: without
// it, LibTorch runs its composite (batch norm over a reshaped input), whose
// backward ops are others than the CPU's native_layer_norm_backward.
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_meta(
    const at::Tensor& input, at::IntArrayRef normalized_shape, const c10::optional<at::Tensor>&,
    const c10::optional<at::Tensor>&, double) {
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  std::vector<int64_t> stat = input.sizes().vec();
  for (int64_t d = axis; d < input.dim(); ++d) stat[static_cast<size_t>(d)] = 1;
  return {at::empty(input.sizes(), input.options()), at::empty(stat, input.options()),
          at::empty(stat, input.options())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward_meta(
    const at::Tensor&, const at::Tensor& input, at::IntArrayRef, const at::Tensor&,
    const at::Tensor&, const c10::optional<at::Tensor>& weight,
    const c10::optional<at::Tensor>& bias, std::array<bool, 3> mask) {
  auto like = [](bool wanted, const c10::optional<at::Tensor>& t) {
    return wanted && t && t->defined() ? at::empty(t->sizes(), t->options()) : at::Tensor();
  };
  return {mask[0] ? at::empty(input.sizes(), input.options()) : at::Tensor(), like(mask[1], weight),
          like(mask[2], bias)};
}

at::Tensor embedding_dense_backward_meta(const at::Tensor& grad_output, const at::Tensor&,
                                         int64_t num_weights, int64_t, bool) {
  return at::empty({num_weights, grad_output.size(-1)}, grad_output.options());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("index_select", index_select_meta);
  m.impl("native_layer_norm", native_layer_norm_meta);
  m.impl("native_layer_norm_backward", native_layer_norm_backward_meta);
  m.impl("embedding_dense_backward", embedding_dense_backward_meta);
}

void link_meta_kernels() {}

}  // namespace splitsim
