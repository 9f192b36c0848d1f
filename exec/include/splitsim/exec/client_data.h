#pragma once
// The training samples spread over a run's clients (`splitsim train` with
// several clients): IID, or skewed in labels as federated learning's
// benchmarks draw it (each class's samples shared out in Dirichlet(alpha)
// proportions; Hsu et al., arXiv 1909.06335). Deterministic for a seed.
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "splitsim/exec/dataset.h"

namespace splitsim {

struct ClientPartition {
  std::vector<std::vector<int64_t>> samples;       // per client: indices into the dataset
  std::vector<std::vector<int64_t>> class_counts;  // per client: samples of each class
};

// alpha <= 0: a seeded permutation cut into `clients` parts of equal size
// (the remainder left out); alpha > 0: each class's samples, shuffled, cut
// in proportions drawn from Dirichlet(alpha, ..., alpha), a draw per class.
// Draws again (up to 100 times) while a client holds fewer than
// `min_samples`; throws InputError("alpha") if none gives every client that
// many, and InputError("clients") when the dataset cannot.
// REQUIRES: labels [N] int64 in [0, classes), clients >= 1.
ClientPartition partition_samples(const torch::Tensor& labels, int64_t classes, int clients,
                                  double alpha, uint64_t seed, int64_t min_samples);

// Client c's batches come from its own samples (a fresh permutation of them
// per pass, as make_image_source's).
std::unique_ptr<BatchSource> make_client_image_source(const LabeledImages& data,
                                                      const ClientPartition& partition,
                                                      std::vector<int64_t> input_shape,
                                                      uint64_t seed);

}  // namespace splitsim
