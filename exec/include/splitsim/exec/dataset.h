#pragma once
// Training data for exec: synthetic batches (default), Fashion-MNIST (IDX
// files, as the Debian package dataset-fashion-mnist installs them, gzip or
// not) and CIFAR-10 binary batches (data_batch_*.bin, 3073-byte records).
// Every source is deterministic: batch `index` of client `c` is the same on
// every process, so the party holding the last stage reads the same labels
// as the party feeding the first (labels never cross the wire, as in the
// cost model).
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "splitsim/costmodel/model_zoo.h"

namespace splitsim {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // {input [B, ...], target [B]} of batch `index` for client `client`.
  virtual std::pair<torch::Tensor, torch::Tensor> batch(int client, int64_t index,
                                                        int64_t batch_size) = 0;
  // The target of that batch alone, for a party that holds a client's last
  // stage but not its first: it neither draws nor keeps the input.
  virtual torch::Tensor target(int client, int64_t index, int64_t batch_size) = 0;
};

struct LabeledImages {
  torch::Tensor images;  // [N, C, H, W] float in [0, 1]
  torch::Tensor labels;  // [N] int64
};

// Classes of the datasets read here (labels 0 to 9).
constexpr int64_t kFashionMnistClasses = 10;
constexpr int64_t kCifar10Classes = 10;

// Reads an IDX image file (magic 2051, [N, rows, cols] u8) and its label
// file (magic 2049, [N] u8, each below `classes`); gzip files are inflated.
// Throws InputError naming the file for anything but a regular file, a bad
// magic number, a header that declares no pixels, more than 256 MiB or
// another size than the file holds (a gzip stream stops inflating there),
// or a label out of range (exec/README.md "Data").
LabeledImages read_idx(const std::string& images_file, const std::string& labels_file,
                       int64_t classes);
// Reads CIFAR-10 binary batches: records of 1 label byte (below 10) + 3072
// pixel bytes (3x32x32, channel-major), gzip or not, at most 256 MiB a
// file. Throws InputError naming the file.
LabeledImages read_cifar10(const std::vector<std::string>& files);

// Where the Debian package dataset-fashion-mnist puts the files, or "" when
// it is not installed.
std::string installed_fashion_mnist_dir();

// Samples drawn by a seeded permutation, resized (bilinear) and channel-
// replicated to `input_shape` ([C, H, W], per sample).
std::unique_ptr<BatchSource> make_image_source(LabeledImages data, std::vector<int64_t> input_shape,
                                               uint64_t seed);
// The samples in order, batch `index` = samples [index * B, (index + 1) * B)
// (wrapping): held-out evaluation, the same on every process.
std::unique_ptr<BatchSource> make_ordered_image_source(LabeledImages data,
                                                       std::vector<int64_t> input_shape);
// The first `n` samples (all of them when n <= 0 or n is not less than their count).
LabeledImages first_samples(LabeledImages data, int64_t n);
// SplitModel::make_input / make_target with per-(client, batch) seeds. With
// `distinct_batches` > 0, batch i is batch i mod distinct_batches: a fixed
// set a working training run fits, so its loss falls (random labels are not
// learnable otherwise).
std::unique_ptr<BatchSource> make_synthetic_source(const SplitModel& model, uint64_t seed,
                                                   int64_t distinct_batches = 0);

// The labeled images of `dataset` ("fashion_mnist" | "cifar10"), `split`
// "train" or "test" (Fashion-MNIST t10k-*, CIFAR-10 test_batch.bin).
// `data_dir` (--data) overrides the default location; cifar10 requires it.
// Throws InputError naming "data" or $.dataset.
LabeledImages load_labeled_images(const std::string& dataset, const std::string& data_dir,
                                  const std::string& split);

// Refuses (InputError at $.model.num_classes) a model whose classifier has
// fewer outputs than `dataset` ("fashion_mnist" | "cifar10") has classes:
// its labels would reach the loss out of range. `spec` resolved
// (resolve_model_defaults); a model without num_classes (TorchScript) passes.
void check_model_classes(const std::string& dataset, const ModelSpec& spec);

// The source for `dataset` ("synthetic" | "fashion_mnist" | "cifar10").
// `data_dir` (--data) overrides the default location; cifar10 requires it.
// `distinct_batches` > 0 (--distinct-batches) applies to synthetic data only.
// Throws InputError naming "data", "distinct_batches" or $.dataset.
std::unique_ptr<BatchSource> make_batch_source(const std::string& dataset, const SplitModel& model,
                                               const std::string& data_dir, uint64_t seed,
                                               int64_t distinct_batches = 0);

}  // namespace splitsim
