// Issue #39: a dataset file (--data) that is not a regular file, whose
// header lies about its size, or whose gzip stream would inflate without
// end is an InputError naming the file, found at once (no multi-GB read).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "splitsim/costmodel/errors.h"
#include "splitsim/exec/dataset.h"

namespace splitsim::testing {
namespace {

namespace fs = std::filesystem;

std::string be32_bytes(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string idx_images(uint32_t n, uint32_t rows, uint32_t cols, size_t pixels) {
  return be32_bytes(2051) + be32_bytes(n) + be32_bytes(rows) + be32_bytes(cols) +
         std::string(pixels, '\x10');
}

std::string idx_labels(uint32_t n, char label = 1) {
  return be32_bytes(2049) + be32_bytes(n) + std::string(n, label);
}

// A gzip stream of `content` followed by `zero_mib` MiB of zero bytes. The
// zeros are one compressed block of 1 MiB (flushed, so it refers to nothing
// before it) repeated: about 1 KiB per MiB, so a stream that inflates to
// gigabytes is written in milliseconds. Its trailer's size and CRC are
// wrong when there are zeros; a reader stops long before them.
std::string gzip_with_zeros(const std::string& content, uint64_t zero_mib) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out;
  auto run = [&](const void* data, size_t n, int flush) {
    zs.next_in = static_cast<Bytef*>(const_cast<void*>(data));
    zs.avail_in = static_cast<uInt>(n);
    char buf[1 << 16];
    do {
      zs.next_out = reinterpret_cast<Bytef*>(buf);
      zs.avail_out = sizeof buf;
      deflate(&zs, flush);
      out.append(buf, sizeof buf - zs.avail_out);
    } while (zs.avail_out == 0);
  };
  run(content.data(), content.size(), Z_FULL_FLUSH);
  if (zero_mib > 0) {
    const size_t start = out.size();
    const std::string mib(size_t{1} << 20, '\0');
    run(mib.data(), mib.size(), Z_FULL_FLUSH);
    const std::string block = out.substr(start);
    for (uint64_t i = 1; i < zero_mib; ++i) out += block;
  }
  run(nullptr, 0, Z_FINISH);
  deflateEnd(&zs);
  return out;
}

class DatasetLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("splitsim_data_limits_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    put("labels", idx_labels(3));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string put(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  // `read` throws an InputError naming `file` with `phrase`, within 10 s.
  static void expect_refused(const std::function<void()>& read, const std::string& file,
                             const std::string& phrase) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      read();
      ADD_FAILURE() << file << ": read without an error";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), file) << e.what();
      EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10);
  }
  void expect_images_refused(const std::string& images, const std::string& phrase) const {
    const std::string labels = path("labels");
    expect_refused([&] { read_idx(images, labels, kFashionMnistClasses); }, images, phrase);
  }

  fs::path dir_;
};

TEST_F(DatasetLimitsTest, FifoIsRefusedWithoutWaitingForAWriter) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  expect_images_refused(path("fifo"), "is a FIFO");
  expect_refused([&] { read_cifar10({path("fifo")}); }, path("fifo"), "is a FIFO");
}

TEST_F(DatasetLimitsTest, LinkToADeviceIsRefused) {
  fs::create_symlink("/dev/zero", path("zero"));
  expect_images_refused(path("zero"), "is a character device");
  expect_refused([&] { read_cifar10({path("zero")}); }, path("zero"), "is a character device");
  fs::create_directory(path("folder"));
  expect_images_refused(path("folder"), "is a directory");
}

TEST_F(DatasetLimitsTest, HeaderThatOverflowsIsRefused) {
  expect_images_refused(put("huge", idx_images(0xffffffff, 0xffffffff, 0xffffffff, 0)),
                        "more than the limit");
  // 2^16 x 2^16 x 2^16 = 2^48 pixels: no overflow, but far over the limit.
  expect_images_refused(put("big", idx_images(65536, 65536, 65536, 0)), "more than the limit");
}

TEST_F(DatasetLimitsTest, HeaderLargerThanTheFileIsRefusedBeforeReading) {
  expect_images_refused(put("short", idx_images(1000, 28, 28, 100)), "but the file has 116 bytes");
  expect_images_refused(put("long", idx_images(3, 2, 2, 13)), "but the file has 29 bytes");
  expect_images_refused(put("stub", be32_bytes(2051)), "shorter than its 16 bytes header");
}

TEST_F(DatasetLimitsTest, ZeroSizedImagesAreRefused) {
  expect_images_refused(put("flat", idx_images(3, 0, 0, 0)), "none may be 0");
  expect_images_refused(put("none", idx_images(0, 28, 28, 0)), "none may be 0");
}

TEST_F(DatasetLimitsTest, LabelsOutOfTheClassesAreRefused) {
  const std::string images = put("images", idx_images(3, 2, 2, 12));
  const std::string labels = put("bad_labels", idx_labels(3, '\xff'));
  expect_refused([&] { read_idx(images, labels, kFashionMnistClasses); }, labels,
                 "sample 0 has label 255; the dataset's classes are 0 to 9");
  const std::string other = put("other_count", idx_labels(2));
  expect_refused([&] { read_idx(images, other, kFashionMnistClasses); }, other,
                 "declares 2 labels");
  std::string record(3073, '\0');
  record[0] = 10;
  const std::string cifar = put("data_batch_1.bin", std::string(3073, '\x01') + record);
  expect_refused([&] { read_cifar10({cifar}); }, cifar, "record 1 has label 10");
}

TEST_F(DatasetLimitsTest, GzipFilesAreReadAndTheirSizeChecked) {
  const std::string images = put("images.gz", gzip_with_zeros(idx_images(3, 2, 2, 12), 0));
  const std::string labels = put("labels.gz", gzip_with_zeros(idx_labels(3), 0));
  const LabeledImages d = read_idx(images, labels, kFashionMnistClasses);
  EXPECT_EQ(d.images.sizes(), (std::vector<int64_t>{3, 1, 2, 2}));
  EXPECT_EQ(d.labels[2].item<int64_t>(), 1);
  // Fewer pixels than the header declares.
  expect_images_refused(put("short.gz", gzip_with_zeros(idx_images(3, 2, 2, 11), 0)),
                        "but it inflates to 27 bytes");
  // A stream cut in the middle.
  const std::string whole = gzip_with_zeros(idx_images(300, 28, 28, 300 * 784), 0);
  expect_images_refused(put("cut.gz", whole.substr(0, whole.size() / 2)), "ends early");
}

// A 2 MB file whose header declares 10 images of 28x28 but inflates to 2
// GiB: the reader stops at the declared size plus one byte.
TEST_F(DatasetLimitsTest, GzipBombStopsAtTheDeclaredSize) {
  const std::string bomb = put("bomb.gz", gzip_with_zeros(idx_images(10, 28, 28, 0), 2048));
  EXPECT_LT(fs::file_size(bomb), 4u << 20);
  expect_images_refused(bomb, "inflates past the 7856 bytes its header declares");
}

// CIFAR-10 files have no header: a stream is stopped at the hard cap (256 MiB).
TEST_F(DatasetLimitsTest, GzipBombWithoutAHeaderStopsAtTheCap) {
  const std::string bomb = put("data_batch_1.bin", gzip_with_zeros("", 300));
  expect_refused([&] { read_cifar10({bomb}); }, bomb, "inflates past the limit of 268435456 bytes");
}

// A fixed-seed fuzz of the readers: an IDX pair, its gzip form and a CIFAR-10
// batch, each with bytes changed, cut, repeated or appended. Each read
// succeeds or is an InputError naming the mutated file; nothing else.
TEST_F(DatasetLimitsTest, MutatedFilesAreReadOrRefusedNamingThem) {
  std::mt19937 rng(3939);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  auto mutate = [&](std::string b) {
    switch (pick(4)) {
      case 0:
        for (int k = 0; k < 3; ++k) b[pick(b.size())] = static_cast<char>(pick(256));
        break;
      case 1: b.resize(pick(b.size())); break;
      case 2: b.insert(pick(b.size()), b.substr(pick(b.size()), 1 + pick(4096))); break;
      default: b.erase(pick(b.size()), 1 + pick(64));
    }
    return b;
  };
  std::string cifar;
  for (int i = 0; i < 4; ++i) cifar += static_cast<char>(i) + std::string(3072, '\x20');
  const std::string images = idx_images(4, 28, 28, 4 * 784), labels = idx_labels(4);
  int read = 0, refused = 0;
  for (int i = 0; i < 150; ++i) {
    std::string file;
    std::function<void()> reader;
    switch (i % 4) {
      case 0:
        file = put("m-images", mutate(images));
        put("m-labels", labels);
        reader = [&] { read_idx(file, path("m-labels"), kFashionMnistClasses); };
        break;
      case 1:
        file = put("m-labels", mutate(labels));
        put("m-images", images);
        reader = [&] { read_idx(path("m-images"), file, kFashionMnistClasses); };
        break;
      case 2:
        file = put("m-images.gz", mutate(gzip_with_zeros(images, 0)));
        put("m-labels", labels);
        reader = [&] { read_idx(file, path("m-labels"), kFashionMnistClasses); };
        break;
      default:
        file = put("m-batch.bin", mutate(cifar));
        reader = [&] { read_cifar10({file}); };
    }
    try {
      reader();
      ++read;
    } catch (const InputError& e) {
      ++refused;
      EXPECT_EQ(e.where(), file) << "mutation " << i << ": " << e.what();
    }
  }
  EXPECT_GT(refused, 75);
  RecordProperty("read", read);
}

}  // namespace
}  // namespace splitsim::testing
