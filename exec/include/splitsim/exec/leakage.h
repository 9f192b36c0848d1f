#pragma once
// What crosses a cut says about the client's data: the metrics
// `splitsim train --leakage` reports per boundary (exec/TRAINING.md
// "Leakage", where each is defined with its source). Pure functions of the
// tensors given; deterministic for a seed.
//
// - forward (activations, after the codec): how much of the input batch the
//   tensor that crossed still carries: the bias-corrected distance
//   correlation (NoPeek's measure) and a reconstruction attack (a decoder
//   trained on an attacker's disjoint samples, scored in PSNR against a
//   trivial baseline);
// - backward (gradients, after the codec): how well the labels of the
//   samples can be told from the gradients alone: Li et al.'s norm and
//   direction attacks, as ROC AUC (0.5: chance).
#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace splitsim {

// Bias-corrected distance correlation R*_n of Székely & Rizzo (2014, "Partial
// distance correlation with methods for dissimilarities"; the U-centred
// estimator of dCor^2) between the rows of x [n, ...] and of z [n, ...]
// (each row flattened; n >= 4). 1 for z = x (or any distance-preserving
// map of it); under independence its mean is 0 and its standard deviation
// about 1 / sqrt(n (n - 3) / 2), so it can be slightly negative.
double distance_correlation(const torch::Tensor& x, const torch::Tensor& z);

// Area under the ROC curve of `scores` for telling the `positive` items
// from the others: the probability that a random positive scores above a
// random negative (ties count a half; the Mann-Whitney statistic). NaN
// without a positive or without a negative.
double roc_auc(const std::vector<double>& scores, const std::vector<bool>& positive);

// Li et al. (arXiv 2102.08504), "Label Leakage and Protection in Two-party
// Split Learning", on gradients g [n, ...] (one row per sample) with
// `labels` [n]:
// - norm attack: the gradient's L2 norm as the score of the positive class
//   (their attack on binary labels: class 1 against class 0). With more
//   classes, each class against the rest, oriented the way its norms lean
//   (max(AUC, 1 - AUC): an attacker who has seen a few labelled gradients
//   knows which way), averaged over the classes present; chance is then a
//   little above 0.5 (about 0.5 + 0.4 / sqrt(samples of a class)).
double norm_attack_auc(const torch::Tensor& g, const torch::Tensor& labels);
// - direction attack: the cosine similarity of two samples' gradients as
//   the score that they share a label, over every pair of rows (the
//   attacker compares the gradients of one batch with each other).
double direction_attack_auc(const torch::Tensor& g, const torch::Tensor& labels);
// The scores and pair labels the direction attack ranks, appended (so the
// pairs of many batches pool into one AUC).
void direction_attack_pairs(const torch::Tensor& g, const torch::Tensor& labels,
                            std::vector<double>* scores, std::vector<bool>* same);

struct Reconstruction {
  double mse = 0;      // mean squared error of the decoder's reconstructions of the test inputs
  double psnr_db = 0;  // 10 log10(range^2 / mse), range: the test inputs' max - min
  double baseline_mse = 0;      // of the trivial attacker: the attacker set's mean input
  double baseline_psnr_db = 0;  // for every test sample
};

// A model-inversion attack (as UnSplit and its successors; here a learned
// decoder, not an optimisation per sample): a small decoder is trained on
// the attacker's samples (train_z [n, ...] transmitted -> train_x [n, C, H,
// W] inputs) and scored on disjoint test samples. The activations are first
// standardised by the attacker set's mean and standard deviation (per channel
// of a [c, h, w] activation, else per feature). The decoder answers the
// attacker set's mean input plus, for a [c, h, w] activation, a 3x3
// convolution to 16 channels, ReLU, bilinear resize to the input's H x W, a
// 3x3 convolution to C (for any other shape, a linear map of the flattened
// activation); that last layer starts at zero, so the decoder starts as the
// trivial attacker. Adam (lr 3e-3), batches of 32, `epochs` passes;
// deterministic for `seed`.
Reconstruction reconstruction_attack(const torch::Tensor& train_z, const torch::Tensor& train_x,
                                     const torch::Tensor& test_z, const torch::Tensor& test_x,
                                     uint64_t seed, int epochs = 10);

}  // namespace splitsim
