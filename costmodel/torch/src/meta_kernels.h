#pragma once
// The Meta kernels of meta_kernels.cpp register when their object file is
// linked; measure_model calls this so that it is.
namespace splitsim {
void link_meta_kernels();
}  // namespace splitsim
