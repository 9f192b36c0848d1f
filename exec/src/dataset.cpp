#include "splitsim/exec/dataset.h"

#include <filesystem>

#include "data_file.h"
#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

uint32_t be32(const uint8_t* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

// Refuses the first label of `labels[0, n)` that is not a class (0 to classes - 1).
void check_labels(const uint8_t* labels, int64_t n, int64_t stride, int64_t classes,
                  const std::string& file, const char* item) {
  for (int64_t i = 0; i < n; ++i)
    if (labels[i * stride] >= classes)
      throw InputError(file, std::string(item) + " " + std::to_string(i) + " has label " +
                                 std::to_string(labels[i * stride]) +
                                 "; the dataset's classes are 0 to " + std::to_string(classes - 1));
}

class ImageSource : public BatchSource {
 public:
  // shuffle: a fresh permutation per (client, epoch); else the samples in order.
  ImageSource(LabeledImages data, std::vector<int64_t> shape, uint64_t seed, bool shuffle)
      : data_(std::move(data)), shape_(std::move(shape)), seed_(seed), shuffle_(shuffle) {}
  std::pair<torch::Tensor, torch::Tensor> batch(int client, int64_t index,
                                                int64_t batch_size) override {
    torch::Tensor idx = picks(client, index, batch_size);
    torch::Tensor x = data_.images.index_select(0, idx);
    const int64_t c = shape_.at(0), h = shape_.at(1), w = shape_.at(2);
    if (x.size(2) != h || x.size(3) != w)
      x = torch::nn::functional::interpolate(x, torch::nn::functional::InterpolateFuncOptions()
                                                    .size(std::vector<int64_t>{h, w})
                                                    .mode(torch::kBilinear)
                                                    .align_corners(false));
    if (x.size(1) != c) x = x.mean(1, true).expand({-1, c, -1, -1});
    return {x.contiguous(), data_.labels.index_select(0, idx)};
  }
  torch::Tensor target(int client, int64_t index, int64_t batch_size) override {
    return data_.labels.index_select(0, picks(client, index, batch_size));
  }

 private:
  // The samples of batch `index`: a slice of the (permuted) samples.
  torch::Tensor picks(int client, int64_t index, int64_t batch_size) {
    const int64_t n = data_.labels.size(0);
    const int64_t first = index * batch_size;
    std::vector<int64_t> picks;
    for (int64_t i = first; i < first + batch_size; ++i) {
      if (!shuffle_) {
        picks.push_back(i % n);
        continue;
      }
      const int64_t epoch = i / n;
      if (epoch != perm_epoch_ || client != perm_client_) {  // cached per (client, epoch)
        torch::Generator gen = at::detail::createCPUGenerator(seed_ * 1000003 + client * 7919 +
                                                              static_cast<uint64_t>(epoch));
        perm_ = torch::randperm(n, gen);
        perm_epoch_ = epoch;
        perm_client_ = client;
      }
      picks.push_back(perm_[i % n].item<int64_t>());
    }
    return torch::tensor(picks, torch::kLong);
  }

  LabeledImages data_;
  std::vector<int64_t> shape_;
  uint64_t seed_;
  bool shuffle_;
  torch::Tensor perm_;
  int64_t perm_epoch_ = -1;
  int perm_client_ = -1;
};

class SyntheticSource : public BatchSource {
 public:
  SyntheticSource(const SplitModel& model, uint64_t seed, int64_t distinct)
      : model_(model), seed_(seed), distinct_(distinct) {}
  std::pair<torch::Tensor, torch::Tensor> batch(int client, int64_t index,
                                                int64_t batch_size) override {
    const uint64_t s = seed(client, index);
    return {model_.make_input(batch_size, s), model_.make_target(batch_size, s)};
  }
  torch::Tensor target(int client, int64_t index, int64_t batch_size) override {
    return model_.make_target(batch_size, seed(client, index));  // its own generator
  }

 private:
  uint64_t seed(int client, int64_t index) const {
    if (distinct_ > 0) index %= distinct_;
    return seed_ * 1000003 + static_cast<uint64_t>(client) * 7919 + index;
  }

  const SplitModel& model_;
  uint64_t seed_;
  int64_t distinct_;
};

}  // namespace

LabeledImages read_idx(const std::string& images_file, const std::string& labels_file,
                       int64_t classes) {
  uint64_t n = 0, rows = 0, cols = 0;
  const auto img = read_data_file(images_file, 16, [&](const uint8_t* h) -> uint64_t {
    if (be32(h) != 2051)
      throw InputError(images_file, "not an IDX image file (magic 2051 expected)");
    n = be32(h + 4), rows = be32(h + 8), cols = be32(h + 12);
    const std::string shape = std::to_string(n) + " images of " + std::to_string(rows) + "x" +
                              std::to_string(cols) + " pixels";
    if (n == 0 || rows == 0 || cols == 0)
      throw InputError(images_file, "its header declares " + shape + "; none may be 0");
    uint64_t pixels = 0;
    if (__builtin_mul_overflow(n, rows, &pixels) || __builtin_mul_overflow(pixels, cols, &pixels) ||
        pixels > kMaxDataFileBytes - 16)
      throw InputError(images_file, "its header declares " + shape + ": more than the limit of " +
                                        std::to_string(kMaxDataFileBytes) +
                                        " bytes for a dataset file");
    return 16 + pixels;
  });
  const auto lab = read_data_file(labels_file, 8, [&](const uint8_t* h) -> uint64_t {
    if (be32(h) != 2049)
      throw InputError(labels_file, "not an IDX label file (magic 2049 expected)");
    if (be32(h + 4) != n)
      throw InputError(labels_file, "its header declares " + std::to_string(be32(h + 4)) +
                                        " labels; " + images_file + " holds " + std::to_string(n) +
                                        " images");
    return 8 + n;
  });
  const auto count = static_cast<int64_t>(n);
  check_labels(lab.data() + 8, count, 1, classes, labels_file, "sample");
  LabeledImages out;
  out.images = torch::from_blob(const_cast<uint8_t*>(img.data()) + 16,
                                {count, 1, static_cast<int64_t>(rows), static_cast<int64_t>(cols)},
                                torch::kUInt8)
                   .to(torch::kFloat)
                   .div_(255.0);
  out.labels = torch::from_blob(const_cast<uint8_t*>(lab.data()) + 8, {count}, torch::kUInt8)
                   .to(torch::kLong);
  return out;
}

LabeledImages read_cifar10(const std::vector<std::string>& files) {
  constexpr int64_t kRecord = 3073;
  std::vector<torch::Tensor> images, labels;
  for (const auto& f : files) {
    const auto b = read_data_file(f, 0, nullptr);
    if (b.empty() || b.size() % kRecord != 0)
      throw InputError(f, "not a CIFAR-10 binary batch (size " + std::to_string(b.size()) +
                              " is not a multiple of 3073-byte records)");
    const int64_t n = static_cast<int64_t>(b.size()) / kRecord;
    check_labels(b.data(), n, kRecord, kCifar10Classes, f, "record");
    torch::Tensor raw =
        torch::from_blob(const_cast<uint8_t*>(b.data()), {n, kRecord}, torch::kUInt8).clone();
    labels.push_back(raw.select(1, 0).to(torch::kLong));
    images.push_back(raw.slice(1, 1).reshape({n, 3, 32, 32}).to(torch::kFloat).div_(255.0));
  }
  if (images.empty()) throw InputError("data", "no CIFAR-10 batch files given");
  return {torch::cat(images), torch::cat(labels)};
}

std::string installed_fashion_mnist_dir() {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  return std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz") ? dir : "";
}

std::unique_ptr<BatchSource> make_image_source(LabeledImages data, std::vector<int64_t> input_shape,
                                               uint64_t seed) {
  return std::make_unique<ImageSource>(std::move(data), std::move(input_shape), seed, true);
}

std::unique_ptr<BatchSource> make_ordered_image_source(LabeledImages data,
                                                       std::vector<int64_t> input_shape) {
  return std::make_unique<ImageSource>(std::move(data), std::move(input_shape), 0, false);
}

LabeledImages first_samples(LabeledImages data, int64_t n) {
  if (n <= 0 || n >= data.labels.size(0)) return data;
  return {data.images.narrow(0, 0, n).clone(), data.labels.narrow(0, 0, n).clone()};
}

std::unique_ptr<BatchSource> make_synthetic_source(const SplitModel& model, uint64_t seed,
                                                   int64_t distinct_batches) {
  return std::make_unique<SyntheticSource>(model, seed, distinct_batches);
}

LabeledImages load_labeled_images(const std::string& dataset, const std::string& data_dir,
                                  const std::string& split) {
  namespace fs = std::filesystem;
  const bool test = split == "test";
  if (dataset == "fashion_mnist") {
    const std::string dir = data_dir.empty() ? installed_fashion_mnist_dir() : data_dir;
    if (dir.empty())
      throw InputError("data",
                       "Fashion-MNIST not found: apt-get install dataset-fashion-mnist "
                       "or pass --data DIR with train-images-idx3-ubyte[.gz]");
    auto pick = [&](const std::string& base) {
      return fs::exists(dir + "/" + base) ? dir + "/" + base : dir + "/" + base + ".gz";
    };
    const std::string prefix = test ? "t10k" : "train";
    return read_idx(pick(prefix + "-images-idx3-ubyte"), pick(prefix + "-labels-idx1-ubyte"),
                    kFashionMnistClasses);
  }
  if (dataset == "cifar10") {
    if (data_dir.empty())
      throw InputError("data", "dataset cifar10 needs --data DIR with data_batch_1.bin ...");
    std::vector<std::string> files;
    if (test) {
      if (fs::exists(data_dir + "/test_batch.bin")) files.push_back(data_dir + "/test_batch.bin");
    } else {
      for (int i = 1; i <= 5; ++i) {
        const std::string f = data_dir + "/data_batch_" + std::to_string(i) + ".bin";
        if (fs::exists(f)) files.push_back(f);
      }
    }
    if (files.empty())
      throw InputError(
          "data",
          std::string("no ") + (test ? "test_batch.bin" : "data_batch_*.bin") + " in " + data_dir);
    return read_cifar10(files);
  }
  throw InputError("$.dataset",
                   "\"" + dataset + "\" has no labeled images (fashion_mnist or cifar10)");
}

void check_model_classes(const std::string& dataset, const ModelSpec& spec) {
  const int64_t classes = dataset == "cifar10" ? kCifar10Classes : kFashionMnistClasses;
  if (spec.num_classes > 0 && spec.num_classes < classes)
    throw InputError("$.model.num_classes", std::to_string(spec.num_classes) + " classes, but " +
                                                dataset + " has " + std::to_string(classes) +
                                                " (labels 0 to " + std::to_string(classes - 1) +
                                                "); give at least " + std::to_string(classes));
}

std::unique_ptr<BatchSource> make_batch_source(const std::string& dataset, const SplitModel& model,
                                               const std::string& data_dir, uint64_t seed,
                                               int64_t distinct_batches) {
  if (dataset == "synthetic") return make_synthetic_source(model, seed, distinct_batches);
  if (distinct_batches > 0)
    throw InputError("distinct_batches",
                     "applies to synthetic data; this scenario's dataset is " + dataset +
                         " (leave the flag out)");
  if (model.task != TaskKind::kImageClassification)
    throw InputError("$.dataset", "\"" + dataset + "\" needs an image classification model, not " +
                                      model.spec.name);
  check_model_classes(dataset, model.spec);
  return make_image_source(load_labeled_images(dataset, data_dir, "train"),
                           model_input_shape(model.spec), seed);
}

}  // namespace splitsim
