#pragma once
// Formulas shared by the cost model (codec.cpp) and the real modules
// (codec_module*.cpp), so that both sides size their tensors the same way.
// Defined in codec.cpp; not part of the public API.
#include <cstdint>
#include <vector>

namespace splitsim::codec_internal {

// Product of the dimensions (1 for a scalar shape).
int64_t numel_of(const std::vector<int64_t>& shape);

// topk: k = clamp(ceil(keep_ratio * n), 1, n). The product is nudged down by a
// relative 1e-12 so that 0.6 * 10 gives 6, not 7 through rounding noise.
int64_t topk_keep_count(double keep_ratio, int64_t n);

// topk positions travel as a bitmap of ceil(n/8) bytes iff that is smaller
// than k int32 indices (ceil(n/8) < 4k); otherwise as k int32 indices.
bool topk_uses_bitmap(int64_t k, int64_t n);

// decaying_linear: round(full * rate^min(step / every_steps, iterations)),
// at least 1. `step / every_steps` is an integer division (the size shrinks
// in whole steps); step == kSteadyState gives the final size.
int64_t decayed_size(int64_t full, double rate, int64_t step, int64_t every_steps,
                     int64_t iterations);

// power_iteration views [C,H,W] as the matrix [C, H*W] and [T,H] as [T,H].
struct MatrixSides {
  int64_t rows = 0, cols = 0;
};
MatrixSides matrix_sides(const std::vector<int64_t>& shape);

// conv_insert output side: (in - kernel) / stride + 1, and the output_padding
// of the ConvTranspose2d that brings it back to exactly `in`:
// in - ((out - 1) * stride + kernel) = (in - kernel) % stride, always < stride.
int64_t conv_out_size(int64_t in, int64_t kernel, int64_t stride);
int64_t conv_output_padding(int64_t in, int64_t kernel, int64_t stride);

}  // namespace splitsim::codec_internal
