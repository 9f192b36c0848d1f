// The data readers on small files written here, and the installed
// Fashion-MNIST when the Debian package is present.
#include "splitsim/exec/dataset.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "exec_test_util.h"
#include "splitsim/costmodel/errors.h"

namespace splitsim::testing {
namespace {

std::string temp_dir() {
  auto d =
      std::filesystem::temp_directory_path() / ("splitsim_dataset_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

void put_be32(std::ofstream& f, uint32_t v) {
  const unsigned char b[4] = {static_cast<unsigned char>(v >> 24),
                              static_cast<unsigned char>(v >> 16),
                              static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
  f.write(reinterpret_cast<const char*>(b), 4);
}

TEST(DatasetTest, ReadsIdxImagesAndLabels) {
  const std::string dir = temp_dir();
  {
    std::ofstream img(dir + "/img", std::ios::binary), lab(dir + "/lab", std::ios::binary);
    put_be32(img, 2051);
    put_be32(img, 3);
    put_be32(img, 2);
    put_be32(img, 2);
    for (int i = 0; i < 12; ++i) img.put(static_cast<char>(i * 20));
    put_be32(lab, 2049);
    put_be32(lab, 3);
    for (int i = 0; i < 3; ++i) lab.put(static_cast<char>(i + 4));
  }
  const LabeledImages d = read_idx(dir + "/img", dir + "/lab", kFashionMnistClasses);
  ASSERT_EQ(d.images.sizes(), (std::vector<int64_t>{3, 1, 2, 2}));
  EXPECT_FLOAT_EQ(d.images[1][0][1][1].item<float>(), 7 * 20 / 255.0f);
  EXPECT_EQ(d.labels[2].item<int64_t>(), 6);
  // Resized and channel-replicated to the model's input.
  auto source = make_image_source(d, {3, 8, 8}, 1);
  auto [x, y] = source->batch(0, 0, 5);
  EXPECT_EQ(x.sizes(), (std::vector<int64_t>{5, 3, 8, 8}));
  EXPECT_EQ(y.size(0), 5);
  EXPECT_TRUE(torch::equal(source->batch(0, 0, 5).first, x));  // deterministic
  EXPECT_THROW(read_idx(dir + "/lab", dir + "/img", kFashionMnistClasses), InputError);
  std::filesystem::remove_all(dir);
}

TEST(DatasetTest, ReadsCifar10Records) {
  const std::string dir = temp_dir();
  {
    std::ofstream f(dir + "/data_batch_1.bin", std::ios::binary);
    for (int r = 0; r < 2; ++r) {
      f.put(static_cast<char>(r + 3));
      for (int i = 0; i < 3072; ++i) f.put(static_cast<char>(i == 1024 ? 255 : 0));
    }
  }
  const LabeledImages d = read_cifar10({dir + "/data_batch_1.bin"});
  ASSERT_EQ(d.images.sizes(), (std::vector<int64_t>{2, 3, 32, 32}));
  EXPECT_EQ(d.labels[1].item<int64_t>(), 4);
  EXPECT_FLOAT_EQ(d.images[0][1][0][0].item<float>(), 1.0f);  // channel 1, pixel 0
  std::ofstream(dir + "/bad.bin") << "short";
  EXPECT_THROW(read_cifar10({dir + "/bad.bin"}), InputError);
  std::filesystem::remove_all(dir);
}

TEST(DatasetTest, ReadsTheInstalledFashionMnist) {
  const std::string dir = installed_fashion_mnist_dir();
  if (dir.empty())
    GTEST_SKIP()
        << "dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)";
  const LabeledImages d = read_idx(dir + "/t10k-images-idx3-ubyte.gz",
                                   dir + "/t10k-labels-idx1-ubyte.gz", kFashionMnistClasses);
  EXPECT_EQ(d.images.sizes(), (std::vector<int64_t>{10000, 1, 28, 28}));
  EXPECT_EQ(d.labels.max().item<int64_t>(), 9);
}

// --distinct-batches: synthetic batch i is batch i mod N (the same inputs
// and labels), for synthetic data only.
TEST(DatasetTest, SyntheticDataRepeatsAfterDistinctBatches) {
  ModelSpec spec;
  spec.name = "resnet20";
  const SplitModel model = build_model(resolve_model_defaults(spec, "$.model"), 1);
  auto repeating = make_batch_source("synthetic", model, "", 5, 2);
  auto fresh = make_batch_source("synthetic", model, "", 5);
  const auto b0 = repeating->batch(0, 0, 3), b1 = repeating->batch(0, 1, 3);
  const auto b2 = repeating->batch(0, 2, 3), b5 = repeating->batch(0, 5, 3);
  EXPECT_TRUE(torch::equal(b0.first, b2.first) && torch::equal(b0.second, b2.second));
  EXPECT_TRUE(torch::equal(b1.first, b5.first) && torch::equal(b1.second, b5.second));
  EXPECT_FALSE(torch::equal(b0.first, b1.first));
  EXPECT_TRUE(torch::equal(b0.first, fresh->batch(0, 0, 3).first));  // the same first batches
  EXPECT_FALSE(torch::equal(b2.first, fresh->batch(0, 2, 3).first));
  try {
    make_batch_source("cifar10", model, "", 5, 2);
    ADD_FAILURE() << "--distinct-batches taken for a real dataset";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "distinct_batches");
  }
}

// Counts the draws: whole batches (input and target) and targets alone.
class CountingBatch : public BatchSource {
 public:
  explicit CountingBatch(std::unique_ptr<BatchSource> source) : source_(std::move(source)) {}
  std::pair<torch::Tensor, torch::Tensor> batch(int client, int64_t index, int64_t size) override {
    ++batches;
    return source_->batch(client, index, size);
  }
  torch::Tensor target(int client, int64_t index, int64_t size) override {
    ++targets;
    return source_->target(client, index, size);
  }
  std::atomic<int> batches{0}, targets{0};

 private:
  std::unique_ptr<BatchSource> source_;
};

// A party that holds a client's last stage but not its first draws the
// target alone (the plan counts the batch's input on stage 0 only); a
// U-shape's client draws the whole batch once for both of its stages. The
// labels are those of the whole draw: training is the unsplit model's
// (transparency_test.cpp, TwoPartSplitWithCodecNoneGivesTheUnsplitGradients,
// runs this split).
TEST(BatchDrawTest, OnlyTheFirstStagesPartyDrawsTheInput) {
  Scenario sc = small_scenario("resnet20", 4);
  const SplitModel model = build_model(sc.model, sc.seed);
  for (const std::vector<int>& cuts : {std::vector<int>{3}, std::vector<int>{3, 6}}) {
    CountingBatch data(make_synthetic_source(model, sc.seed));
    RunOptions o;
    o.timeout = std::chrono::milliseconds(20000);
    o.data = &data;
    for (const auto& r : run_loopback(
             sc, make_test_plan(sc, cuts, CodecSpec{}, CodecSpec{}, 2, Schedule::kGpipe, 3), o))
      ASSERT_TRUE(r.complete) << r.error;
    const bool ushape = cuts.size() == 2;
    EXPECT_EQ(data.batches.load(), 3) << cuts.size() << " cuts";
    EXPECT_EQ(data.targets.load(), ushape ? 0 : 3) << cuts.size() << " cuts";
  }
}

}  // namespace
}  // namespace splitsim::testing
